#!/usr/bin/env bash
# Wall time of CI as it runs on a clean clone: `.ci/run` (setup, format check, build,
# test-count check, every test) with CI=true and no compiler cache, so the build is
# from scratch. Goal (issue 16): under 10 minutes on a 2-core machine. Also times
# `scripts/build` alone in a second clone (the RelWithDebInfo build the demo uses).
# Usage: bench/ci_time.sh [REPO]   (default: this checkout's HEAD)
set -euo pipefail
repo=${1:-$(cd "$(dirname "$0")/.." && pwd)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seconds() { python3 -c 'import sys, time; print(f"{time.time() - float(sys.argv[1]):.0f}")' "$1"; }

git clone -q "$repo" "$work/ci"
start=$(date +%s.%N)
(cd "$work/ci" && CI=true CCACHE_DISABLE=1 .ci/run >"$work/ci.log" 2>&1) || {
  tail -30 "$work/ci.log"
  echo "ci_time: .ci/run failed" >&2
  exit 1
}
echo "ci: $(seconds "$start") s ($(grep -E 'tests passed' "$work/ci.log"); $(grep -E '^Total Test time' "$work/ci.log"))"

git clone -q "$repo" "$work/build"
start=$(date +%s.%N)
(cd "$work/build" && CCACHE_DISABLE=1 ./scripts/build >/dev/null 2>&1)
echo "scripts/build (RelWithDebInfo, unity): $(seconds "$start") s"
