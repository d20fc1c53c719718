#!/usr/bin/env bash
# What reading the kernels in CUDA binaries costs (issue 34: install reads the fatbinaries of
# every CUDA ELF file it installs, before the switch). Times `envkit debug fatbin` over every
# shared library of a CUDA tree (default /usr/local/cuda/lib64: 2.4 GB, cuFFT's 23,983
# fatbinaries included), RUNS times, and prints the median of the whole pass and the peak
# memory of the slowest file. The files are read once first, so the page cache holds them:
# this is envkit's parsing, not the disk.
# Usage: bench/kernel_read.sh [ENVKIT] [CUDA_LIB_DIR] [RUNS]
set -euo pipefail
envkit=$(realpath "${1:-build/src/cli/envkit}")
lib=${2:-/usr/local/cuda/lib64}
runs=${3:-5}
mapfile -t files < <(find "$lib/" -maxdepth 1 -type f -name 'lib*.so*' | sort)
[ "${#files[@]}" -gt 0 ] || { echo "kernel_read: no libraries in $lib" >&2; exit 77; }
cat "${files[@]}" >/dev/null
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for _ in $(seq "$runs"); do
  start=$(date +%s.%N)
  for file in "${files[@]}"; do "$envkit" debug fatbin "$file" >/dev/null 2>&1 || true; done
  echo "$(date +%s.%N) - $start" | bc
done | median | xargs printf "all %d libraries in %s: %s s (median of $runs)\n" "${#files[@]}" "$lib"
peak=0 slowest=''
for file in "${files[@]}"; do
  kb=$(/usr/bin/time -f %M "$envkit" debug fatbin "$file" 2>&1 >/dev/null | tail -1)
  if [ "$kb" -gt "$peak" ]; then peak=$kb slowest=$file; fi
done
echo "peak memory: $((peak / 1024)) MiB ($(basename "$slowest"))"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
