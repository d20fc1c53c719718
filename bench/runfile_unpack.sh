#!/usr/bin/env bash
# `envkit debug extract` of a makeself runfile against decoding its payload
# alone: a runfile of /usr/local/cuda's largest libraries (about SIZE_MB MiB,
# default 400) made by Debian's makeself, gzip (level 6, makeself's usual) and
# xz (level 1, to keep making it quick; decoding speed barely depends on the
# level). For each: `envkit debug extract` (header, payload through libarchive
# into files on disk, CRC + MD5 + SHA256 checked) against `tail -c +OFFSET |
# gzip -dc > /dev/null` (or xz -dc) of the same bytes, medians of 3 runs, and
# envkit's peak RSS from /usr/bin/time -v. Needs makeself and /usr/local/cuda.
# Usage: bench/runfile_unpack.sh [ENVKIT_BINARY]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
envkit=${1:-$here/build/src/cli/envkit}
size_mb=${SIZE_MB:-400}
command -v makeself >/dev/null || { echo "needs makeself (scripts/setup)" >&2; exit 77; }
[ -d /usr/local/cuda/lib64 ] || { echo "needs /usr/local/cuda/lib64" >&2; exit 77; }
work=$(mktemp -d -p "${BENCH_TMP:-/tmp}")
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

mkdir -p "$work/payload/lib64"
total=0
for lib in $(ls -S /usr/local/cuda/lib64/*.so.* 2>/dev/null); do
  [ -L "$lib" ] && continue
  bytes=$(stat -c %s "$lib")
  [ $((total + bytes)) -gt $((size_mb << 20)) ] && continue
  cp "$lib" "$work/payload/lib64/"
  total=$((total + bytes))
done
echo '#!/bin/sh' > "$work/payload/install.sh"
echo "payload: $((total >> 20)) MiB of /usr/local/cuda libraries"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
seconds() { local start end; start=$(date +%s.%N); "$@"; end=$(date +%s.%N); echo "$end - $start" | bc; }

for compression in gzip xz; do
  level=6; [ $compression = xz ] && level=1
  run="$work/cuda_test_$compression.run"
  makeself --quiet --nox11 --sha256 --$compression --complevel $level "$work/payload" "$run" \
    "bench runfile" ./install.sh
  skip=$(grep -a -m1 '^skip=' "$run" | cut -d'"' -f2)
  offset=$(( $(head -n "$skip" "$run" | wc -c) + 1 ))
  decode() { tail -c +"$offset" "$run" | $compression -dc > /dev/null; }
  unpack() { rm -rf "$work/out"; "$envkit" debug extract "$run" "$work/out" > /dev/null 2>&1; }
  decode; unpack  # warm the page cache
  floor=$(for i in 1 2 3; do seconds decode; done | median)
  ours=$(for i in 1 2 3; do rm -rf "$work/out"; sync; seconds unpack; done | median)
  rss=$( { /usr/bin/time -v "$envkit" debug extract "$run" "$work/out2" > /dev/null; } 2>&1 |
        awk -F': ' '/Maximum resident/ {print $2}')
  rm -rf "$work/out2"
  printf '%-4s runfile %5d MiB  %s -dc: %6.2f s  envkit debug extract: %6.2f s  ratio %.2f  peak RSS %d MiB\n' \
    $compression $(( $(stat -c %s "$run") >> 20 )) $compression "$floor" "$ours" \
    "$(echo "$ours / $floor" | bc -l)" $((rss >> 10))
done
