#!/usr/bin/env bash
# The cuda backend through the ft command line, on the fake CUDA driver
# (tests/cuda_fake, FT_CUDA_LIB): `ft run --backend cuda` gives the cpu
# backend's tokens with every expert resident and with a quarter of them in
# slots; `ft bench --backend cuda --json` reports measured figures and the
# cache's real counts, also across a re-plan; without a driver, or with a
# bundle compiled without CUDA kernels, ft says so in one line and runs on
# the CPU. Skips where ftc cannot compile CUDA kernels (no NVRTC), unless
# CMake found NVRTC for this build (FT_TEST_NVRTC=1): then it fails.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
ftc=$build/compiler/ftc
ftgen=$build/tests/ftgen
ft=$build/runtime/ft
fake=$build/tests/cuda_fake/libftcudafake.so
slow=$src/tests/data/slow_cpu_fast_pcie.textproto
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$ftgen" --quiet --seed 5 --size tiny --format bf16 --gguf "$tmp/m.gguf"
if ! "$ftc" compile --cuda-arch sm_90 "$tmp/m.gguf" -o "$tmp/b" --quiet 2> "$tmp/ftc.err"; then
  grep -q NVRTC "$tmp/ftc.err" || fail "ftc compile: $(cat "$tmp/ftc.err")"
  [ "${FT_TEST_NVRTC:-0}" = 1 ] && fail "ftc cannot compile CUDA kernels although this build has NVRTC: $(cat "$tmp/ftc.err")"
  echo "skipped: this ftc cannot compile CUDA kernels (no NVRTC)"; exit 0
fi
[ -f "$fake" ] || fail "the fake driver $fake was not built"
"$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/bnone" --quiet
prompt="In the beginning"
"$ft" run "$tmp/b" -p "$prompt" -n 24 --json --kernels reference > "$tmp/cpu.json"
cpu=$(jq -c .tokens "$tmp/cpu.json")

# No driver, and no kernels in the bundle: one line, then the CPU's tokens.
for case in nodriver nokernels; do
  lib=$fake; bundle=$tmp/b
  [ $case = nodriver ] && lib=libft_no_such_cuda_driver.so.1
  [ $case = nokernels ] && bundle=$tmp/bnone
  FT_CUDA_LIB=$lib "$ft" run "$bundle" -p "$prompt" -n 24 --json --backend cuda > "$tmp/fb.json" 2> "$tmp/fb.err"
  [ "$(wc -l < "$tmp/fb.err")" = 1 ] && grep -q "running on the cpu backend" "$tmp/fb.err" || fail "$case: $(cat "$tmp/fb.err")"
  [ "$(jq -c .tokens "$tmp/fb.json")" = "$cpu" ] || fail "$case: the fallback changed the tokens"
done

export FT_CUDA_LIB=$fake FT_CUDA_FAKE_VRAM=$((256 << 20))
for args in "--vram 64M" "--vram 2230K --hw $slow" "--vram 2230K"; do
  # shellcheck disable=SC2086
  "$ft" run "$tmp/b" -p "$prompt" -n 24 --json --backend cuda --ctx 64 $args > "$tmp/cuda.json" 2> "$tmp/cuda.err" || fail "$args: $(cat "$tmp/cuda.err")"
  [ ! -s "$tmp/cuda.err" ] || fail "$args: fell back: $(cat "$tmp/cuda.err")"
  [ "$(jq -c .tokens "$tmp/cuda.json")" = "$cpu" ] || fail "cuda tokens differ from cpu with $args"
done

"$ft" bench "$tmp/b" --backend cuda --vram 64M --prompt 16 --gen 16 --reps 1 --json > "$tmp/all.json"
[ "$(jq '.backend == "cuda" and .predicted == false and .n_slots == 16 and .hit_rate == 1' "$tmp/all.json")" = true ] || fail "resident bench: $(cat "$tmp/all.json")"
"$ft" bench "$tmp/b" --backend cuda --hw "$slow" --vram 2230K --prompt 16 --gen 16 --reps 1 --json > "$tmp/quarter.json"
[ "$(jq '.n_slots <= 4 and .misses_to_gpu > 0 and .bytes_copied_per_token > 0' "$tmp/quarter.json")" = true ] || fail "quarter bench: $(cat "$tmp/quarter.json")"
"$ft" bench "$tmp/b" --backend cuda --hw "$slow" --vram 2230K --prompt 16 --gen 16 --reps 1 --replan-at 8:64M --json > "$tmp/replan.json"
[ "$(jq '.replans == 1 and .n_slots == 16' "$tmp/replan.json")" = true ] || fail "bench --replan-at: $(cat "$tmp/replan.json")"
# ft chat: /vram re-plans the live engine, /stats shows measured counts.
printf 'hello there\n/vram 2230K\n/stats\nand again\n/quit\n' | "$ft" chat "$tmp/b" --backend cuda --vram 64M --ctx 64 -n 8 > "$tmp/chat.out" 2> "$tmp/chat.err" || fail "chat: $(cat "$tmp/chat.err")"
grep -q "slots.*measured" "$tmp/chat.out" || fail "chat /stats: $(cat "$tmp/chat.out")"
# A budget that cannot keep every layer on the GPU is refused, saying so.
set +e
"$ft" run "$tmp/b" -p x --backend cuda --vram 1M 2> "$tmp/err" > /dev/null; rc=$?
set -e
[ $rc = 1 ] && grep -q "runs every layer" "$tmp/err" || fail "a too small budget: rc $rc: $(cat "$tmp/err")"
echo "1 passed, 0 failed"
