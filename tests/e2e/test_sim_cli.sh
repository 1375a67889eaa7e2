#!/usr/bin/env bash
# The sim backend through the ft command line: with a VRAM budget far below
# the experts' size, `ft run` gives the cpu backend's tokens, `ft bench`
# reports predicted figures with the cache's behaviour, a budget change in
# the middle of a bench and a /vram command in `ft chat` work, and bad
# budgets are refused.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
ftc=$build/compiler/ftc
ftgen=$build/tests/ftgen
ft=$build/runtime/ft
hw=$src/hwprofiles/presets/rtx4060_laptop.textproto
slow=$src/tests/data/slow_cpu_fast_pcie.textproto
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$ftgen" --quiet --seed 5 --size tiny --format q8_0 --gguf "$tmp/m.gguf"
"$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/b" --quiet

"$ft" run "$tmp/b" -p "In the beginning" -n 20 --json > "$tmp/cpu.json"
for vram in 2200K 2250K 64M; do
  "$ft" run "$tmp/b" -p "In the beginning" -n 20 --json --backend sim --hw "$hw" --vram $vram --ctx 64 > "$tmp/sim.json"
  [ "$(jq -c .tokens "$tmp/cpu.json")" = "$(jq -c .tokens "$tmp/sim.json")" ] || fail "sim tokens differ from cpu at --vram $vram"
done

"$ft" bench "$tmp/b" --backend sim --hw "$hw" --vram 2250K --prompt 16 --gen 16 --reps 2 --json > "$tmp/bench.json"
for k in hit_rate bytes_copied_per_token decode_tok_s prefill_tok_s n_slots; do
  [ "$(jq "has(\"$k\")" "$tmp/bench.json")" = true ] || fail "sim bench --json lacks $k"
done
[ "$(jq .predicted "$tmp/bench.json")" = true ] || fail "sim bench not labelled predicted"
[ "$(jq .order_violations "$tmp/bench.json")" = 0 ] || fail "ordering check fired"
"$ft" run "$tmp/b" -p "In the beginning" -n 20 --json --backend sim --hw "$slow" --vram 2200K --ctx 64 > "$tmp/slow.json"
[ "$(jq -c .tokens "$tmp/cpu.json")" = "$(jq -c .tokens "$tmp/slow.json")" ] || fail "sim tokens differ from cpu when misses are copied"
"$ft" bench "$tmp/b" --backend sim --hw "$slow" --vram 2200K --prompt 16 --gen 16 --reps 1 --json > "$tmp/slow_bench.json"
[ "$(jq '.misses_to_gpu > 0 and .bytes_copied_per_token > 0' "$tmp/slow_bench.json")" = true ] || fail "no expert was copied on the slow-CPU machine"
"$ft" bench "$tmp/b" --backend sim --hw "$hw" --vram 2250K --prompt 16 --gen 16 --reps 1 --replan-at 8:64M --json > "$tmp/replan.json"
[ "$(jq .replans "$tmp/replan.json")" = 1 ] || fail "bench --replan-at did not re-plan"
"$ft" bench "$tmp/b" --backend sim --hw "$hw" --vram 2250K --prompt 16 --gen 4 --reps 1 | grep -q PREDICTED || fail "human output not labelled"

# A bundle compiled for a machine (ftc compile --hw --vram) runs on the sim
# backend with that machine and budget by default.
"$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/bhw" --quiet --hw "$hw" --vram 2250K --ctx 64
"$ft" run "$tmp/bhw" -p "In the beginning" -n 20 --json --backend sim --ctx 64 > "$tmp/bhw.json"
[ "$(jq -c .tokens "$tmp/cpu.json")" = "$(jq -c .tokens "$tmp/bhw.json")" ] || fail "sim on the compiled-in profile changed the tokens"
"$ft" bench "$tmp/bhw" --backend sim --prompt 16 --gen 8 --reps 1 --json > "$tmp/bhw_bench.json"
[ "$(jq .vram_bytes "$tmp/bhw_bench.json")" = $((2250 * 1024)) ] || fail "the compiled-in VRAM budget was not used"

printf 'hello there\n/vram 64M\n/stats\nand again\n/quit\n' | "$ft" chat "$tmp/b" --backend sim --hw "$hw" --vram 2250K --ctx 64 -n 8 > "$tmp/chat.out" 2> "$tmp/chat.err" || fail "chat: $(cat "$tmp/chat.err")"
grep -q "slots" "$tmp/chat.out" || fail "chat /stats printed nothing"

# A budget below the device's scratch still runs (everything on the CPU)
# and gives the same tokens; a malformed size is a usage error.
"$ft" run "$tmp/b" -p "In the beginning" -n 20 --json --backend sim --hw "$hw" --vram 1K --ctx 64 > "$tmp/tiny.json"
[ "$(jq -c .tokens "$tmp/cpu.json")" = "$(jq -c .tokens "$tmp/tiny.json")" ] || fail "cpu-only plan changed the tokens"
set +e
"$ft" run "$tmp/b" -p "x" --backend sim --hw "$hw" --vram 12X 2> "$tmp/err" >/dev/null; rc=$?
set -e
[ $rc = 2 ] || fail "a malformed --vram gave exit $rc"
set +e
"$ft" run "$tmp/b" -p "x" --backend sim 2> "$tmp/err" >/dev/null; rc=$?
set -e
[ $rc = 1 ] && grep -q -- "--hw" "$tmp/err" || fail "sim without --hw: $(cat "$tmp/err")"
echo "1 passed, 0 failed"
