#!/usr/bin/env bash
# How long `envkit install` takes to decide its sources before downloading
# (issue 33: "checks the hosts it needs first, in parallel, a few seconds").
# Locks the seeds' tensorflow-gpu 1.6 example (examples/mask-rcnn-tf1) for a
# driver 390 workstation, then times `envkit install --frozen` RUNS times
# asking every host again (--refresh) and RUNS times with the answers kept for
# this network. On a network without NVIDIA's hosts the install stops there
# (exit 1, nothing downloaded); on an open one, use a throwaway cache: it
# would download. Prints the median of each.
# Usage: bench/sources_check.sh [ENVKIT] [RUNS]
set -euo pipefail
envkit=$(realpath "${1:-build/src/cli/envkit}")
runs=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$(dirname "$0")/../examples/mask-rcnn-tf1" "$work/project"
rm -f "$work/project/envkit.yaml" "$work/project/envkit.lock"
cd "$work/project"
"$envkit" init >/dev/null 2>&1
ENVKIT_OVERRIDE_DRIVER=390.48 ENVKIT_OVERRIDE_CUDA_ARCH=6.1 "$envkit" lock >/dev/null 2>&1
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_runs() {
  for _ in $(seq "$runs"); do
    start=$(date +%s.%N)
    "$envkit" install --frozen "$@" >/dev/null 2>&1 || true
    echo "$(date +%s.%N) - $start" | bc
  done | median
}
echo "asking every host (--refresh): $(time_runs --refresh) s (median of $runs)"
echo "answers kept for this network: $(time_runs) s (median of $runs)"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
