#!/usr/bin/env bash
# Compares the DRAM read bandwidth `ftc profile` reports with a STREAM-style
# triad measured independently (scripts/stream_triad.c: three arrays of
# 256 MiB, far past any cache), three times, and prints both and their ratio.
# A benchmark, not a test: run it on a quiet machine.
# Usage: scripts/check-profile.sh [BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -pthread "$here/stream_triad.c" -o "$tmp/stream_triad"
for attempt in 1 2 3; do
  triad=$("$tmp/stream_triad" 256 10)
  ours=$("$build/compiler/ftc" profile --no-gpu --json 2> /dev/null | jq .dram_read_gbs)
  awk -v a="$ours" -v b="$triad" -v n="$attempt" 'BEGIN {
    d = (a - b) / b; printf "run %d: ftc profile %.2f GB/s, STREAM triad %.2f GB/s, difference %+.1f%% (%s)\n",
      n, a, b, 100 * d, (d <= 0.25 && d >= -0.25) ? "within 25%" : "outside 25%" }'
done
