#!/usr/bin/env bash
# Throughput of `envkit debug specs`: how many request lines per second it answers.
# Usage: bench/specs_throughput.sh [ENVKIT_BINARY] [LINES]
# Feeds the generated PEP 440 vectors (all five ops) repeated up to LINES lines,
# runs 5 times, prints the median. Results are recorded in docs/benchmarks.md.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
envkit=${1:-$here/build/src/cli/envkit}
lines=${2:-200000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$here/tests/data/specs/pep440_vectors.jsonl" "$lines" >"$work/requests" <<'PY'
import json, sys
requests = [json.dumps(json.loads(l)["request"]) for l in open(sys.argv[1]).readlines()[1:]]
n = int(sys.argv[2])
for i in range(n):
    print(requests[i % len(requests)])
PY
times=()
for _ in 1 2 3 4 5; do
  start=$(date +%s.%N)
  "$envkit" debug specs <"$work/requests" >"$work/answers"
  end=$(date +%s.%N)
  times+=("$(python3 -c "print($end - $start)")")
  [ "$(wc -l <"$work/answers")" -eq "$lines" ] || { echo "wrong answer count" >&2; exit 1; }
done
median=$(printf '%s\n' "${times[@]}" | sort -g | sed -n 3p)
python3 -c "print(f'lines=$lines median_seconds={$median:.3f} lines_per_second={$lines / $median:.0f}')"
