#!/usr/bin/env bash
# bench-formats.sh: decode (and prefill) speed per weight format with
# `ft bench`, as issue 14 asks: one source model compiled into each format
# (`ftc compile --format F`, mixes included), each bundle benchmarked on the
# cpu backend, and the results as scripts/bench-report.sh's table (tok/s,
# weight bytes per token, share of the DRAM bandwidth measured in each run).
#
#   scripts/bench-formats.sh [--build DIR] [--size tiny|small|bench]
#       [--formats F,F,...] [--prompt N] [--gen N] [--reps R] [--out DIR]
#
# The source is ftgen's fixture of that size (default bench) in f32, so each
# format is quantized from the same floats. Defaults: every format
# `ftc compile --format` takes (its error message lists them) plus q4_k_m,
# --prompt 512 --gen 128 --reps 3, --out bench-formats. Writes DIR/F.json
# per format, DIR/formats.md (the table) and DIR/formats.svg; prints the
# table. A format that fails to compile or run stops it, naming the format.
# Run it on a quiet machine: the figures are only as good as the machine's
# idleness. Exit codes: 0 ok, 1 a failure, 2 usage.
set -euo pipefail
usage() { echo "usage: $0 [--build DIR] [--size tiny|small|bench] [--formats F,...] [--prompt N] [--gen N] [--reps R] [--out DIR]" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build size=bench formats= prompt=512 gen=128 reps=3 out=bench-formats
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case $1 in
  --build) build=$2 ;; --size) size=$2 ;; --formats) formats=$2 ;;
  --prompt) prompt=$2 ;; --gen) gen=$2 ;; --reps) reps=$2 ;; --out) out=$2 ;;
  *) usage ;;
  esac
  shift 2
done
case $size in tiny|small|bench) ;; *) usage ;; esac
ftc=$build/compiler/ftc ft=$build/runtime/ft ftgen=$build/tests/ftgen
for p in "$ftc" "$ft" "$ftgen"; do [ -x "$p" ] || { echo "bench-formats.sh: $p not built" >&2; exit 1; }; done
mkdir -p "$out"
if [ -z "$formats" ]; then
  # the list ftc compile prints for an unknown --format: "... or f32, ..., nvfp4 or fp8, not 'x'"
  msg=$("$ftc" compile --cuda-arch none /dev/null --format '?' -o "$out/none" 2>&1 || true)
  formats=$(printf '%s\n' "$msg" | sed -n 's/.*q5_k_m) or \(.*\), not .*/\1/p' | sed 's/ or /, /; s/ //g')
  [ -n "$formats" ] || { echo "bench-formats.sh: cannot read the format list from: $msg" >&2; exit 1; }
  formats=$formats,q4_k_m
fi
"$ftgen" --quiet --seed 1 --size "$size" --format f32 --gguf "$out/source.gguf"
results=()
IFS=, read -r -a list <<< "$formats"
for f in "${list[@]}"; do
  echo "== $f" >&2
  rm -rf "$out/$f.bundle"
  "$ftc" compile --cuda-arch none --quiet "$out/source.gguf" --format "$f" -o "$out/$f.bundle" ||
    { echo "bench-formats.sh: $f: ftc compile failed" >&2; exit 1; }
  "$ft" bench "$out/$f.bundle" --prompt "$prompt" --gen "$gen" --reps "$reps" --json > "$out/$f.json" ||
    { echo "bench-formats.sh: $f: ft bench failed" >&2; exit 1; }
  rm -rf "$out/$f.bundle"
  results+=("$out/$f.json")
done
bash "$src/scripts/bench-report.sh" --title "ft bench per weight format ($size fixture)" --svg "$out/formats.svg" \
  "${results[@]}" > "$out/formats.md"
cat "$out/formats.md"
