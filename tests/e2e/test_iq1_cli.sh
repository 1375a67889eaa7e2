#!/usr/bin/env bash
# IQ1_S and IQ1_M through the command line: ftgen --format writes them
# (our least-squares grid fit), ftc compile keeps them (ftc inspect lists
# them), and ft run on the cpu and the sim backend gives the same tokens.
# The bundle's CPU module computes them (generated kernels, as many as a
# Q8_0 model of the same shapes gets) and ft run gives the same tokens on
# the generated kernels as on the reference ones (they are bit-identical:
# test_codegen_quants).
# The numerics are test_quants_iq1's and test_forward_formats'; the cuda
# backend's test_cuda_formats'.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
ftc=$build/compiler/ftc
ftgen=$build/tests/ftgen
ft=$build/runtime/ft
hw=$src/hwprofiles/presets/rtx4060_laptop.textproto
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$ftgen" --quiet --seed 5 --size small --format q8_0 --gguf "$tmp/q8_0.gguf"
"$ftc" compile --cuda-arch none "$tmp/q8_0.gguf" -o "$tmp/b_q8_0" --quiet
n_q8=$("$ftc" inspect "$tmp/b_q8_0" --json | jq .cpu_kernels)
for f in iq1_s iq1_m; do
  "$ftgen" --quiet --seed 5 --size small --format $f --gguf "$tmp/$f.gguf"
  "$ftc" compile --cuda-arch none "$tmp/$f.gguf" -o "$tmp/b_$f" --quiet
  "$ftc" inspect "$tmp/b_$f" > "$tmp/inspect_$f.txt"
  grep -q "$f x 16" "$tmp/inspect_$f.txt" || fail "$f: ftc inspect does not list the $f tensors"
  n=$("$ftc" inspect "$tmp/b_$f" --json | jq .cpu_kernels)
  [ "$n" = "$n_q8" ] || fail "$f: the CPU module has $n kernels, a q8_0 bundle $n_q8"
  "$ft" run "$tmp/b_$f" -p "In the beginning" -n 12 --json --kernels generated > "$tmp/cpu_$f.json"
  "$ft" run "$tmp/b_$f" -p "In the beginning" -n 12 --json --kernels reference > "$tmp/ref_$f.json"
  [ "$(jq -c .tokens "$tmp/cpu_$f.json")" = "$(jq -c .tokens "$tmp/ref_$f.json")" ] \
    || fail "$f: generated kernels' tokens differ from the reference kernels'"
  "$ft" run "$tmp/b_$f" -p "In the beginning" -n 12 --json --backend sim --hw "$hw" --vram 64M \
    --ctx 64 > "$tmp/sim_$f.json"
  [ "$(jq '.tokens | length' "$tmp/cpu_$f.json")" = 12 ] || fail "$f: not 12 tokens"
  [ "$(jq -c .tokens "$tmp/cpu_$f.json")" = "$(jq -c .tokens "$tmp/sim_$f.json")" ] \
    || fail "$f: sim tokens differ from cpu"
done
echo ok
