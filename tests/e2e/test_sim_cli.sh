#!/usr/bin/env bash
# The sim backend through the ft command line: with a VRAM budget far below
# the experts' size, `ft run` gives the cpu backend's tokens, `ft bench`
# reports predicted figures with the cache's behaviour, a budget change in
# the middle of a bench and a /vram command in `ft chat` work, bad budgets
# are refused, and a bundle compiled for a budget runs with the partition
# its plan stores (ftc inspect and ft bench report the same slots), for
# an f16 and an f32 KV cache.
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
# The plan is authoritative: at the compiled budget (by default or given)
# the sim takes the stored partition, so ft bench reports the slots ftc
# inspect shows, and says nothing; another budget solves again and says so
# in one line on stderr.
"$ftc" inspect "$tmp/bhw" --json > "$tmp/bhw_inspect.json"
slots=$(jq '.n_slots + .n_pinned' "$tmp/bhw_inspect.json")
[ "$(jq .plan "$tmp/bhw_bench.json")" = '"stored"' ] || fail "bench at the compiled budget solved again"
[ "$(jq .n_slots "$tmp/bhw_bench.json")" = "$slots" ] || fail "bench n_slots $(jq .n_slots "$tmp/bhw_bench.json") != inspect $slots"
"$ft" bench "$tmp/bhw" --backend sim --vram 2250K --prompt 16 --gen 8 --reps 1 --json > "$tmp/bhw_same.json" 2> "$tmp/bhw_same.err"
[ "$(jq .plan "$tmp/bhw_same.json")" = '"stored"' ] && [ "$(jq .n_slots "$tmp/bhw_same.json")" = "$slots" ] ||
  fail "bench --vram 2250K: $(cat "$tmp/bhw_same.json")"
[ ! -s "$tmp/bhw_same.err" ] || fail "bench at the compiled budget printed: $(cat "$tmp/bhw_same.err")"
"$ft" bench "$tmp/bhw" --backend sim --vram 2400K --prompt 16 --gen 8 --reps 1 --json > "$tmp/bhw_other.json" 2> "$tmp/bhw_other.err"
[ "$(jq .plan "$tmp/bhw_other.json")" = '"solved"' ] || fail "bench --vram 2400K took the stored plan"
[ "$(wc -l < "$tmp/bhw_other.err")" = 1 ] && grep -q "^ft: plan: solved again for 2.3 MiB of VRAM (compiled for 2.2 MiB)$" "$tmp/bhw_other.err" ||
  fail "re-solve not reported in one line: $(cat "$tmp/bhw_other.err")"
# The runtime's solve is ftc's: the same bundle compiled for 2400K and 64
# tokens has the slots a bench re-solving for 2400K and 40 + 23 + 1 tokens gets.
"$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/bhw2400" --quiet --hw "$hw" --vram 2400K --ctx 64
"$ftc" inspect "$tmp/bhw2400" --json > "$tmp/bhw2400_inspect.json"
"$ft" bench "$tmp/bhw" --backend sim --vram 2400K --prompt 40 --gen 23 --reps 1 --json > "$tmp/bhw_other64.json" 2> /dev/null
[ "$(jq .plan "$tmp/bhw_other64.json")" = '"solved"' ] || fail "bench --vram 2400K (64 tokens) took the stored plan"
[ "$(jq .n_slots "$tmp/bhw_other64.json")" = "$(jq '.n_slots + .n_pinned' "$tmp/bhw2400_inspect.json")" ] ||
  fail "the runtime's solve for 2400K ($(jq .n_slots "$tmp/bhw_other64.json") slots) differs from ftc's ($(jq .n_slots "$tmp/bhw2400_inspect.json"))"

# The KV cache's element type (ftc compile --kv, f16 by default): inspect
# shows it, the planner and the sim size KV alike for either (the n_slots
# checks above ran on an f16 bundle), and a session of an f32 bundle holds
# twice the KV bytes of the same session of an f16 one.
[ "$(jq -r '.kv_format + " " + (.kv_elem_bytes | tostring)' "$tmp/bhw_inspect.json")" = "f16 2" ] ||
  fail "default kv_format: $(jq -c '[.kv_format, .kv_elem_bytes]' "$tmp/bhw_inspect.json")"
"$ftc" inspect "$tmp/bhw" | grep -q '^kv cache   f16, 2 bytes an element' || fail "ftc inspect does not show the KV format"
"$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/bhw32" --quiet --hw "$hw" --vram 2250K --ctx 64 --kv f32
"$ftc" inspect "$tmp/bhw32" --json > "$tmp/bhw32_inspect.json"
[ "$(jq -r '.kv_format + " " + (.kv_elem_bytes | tostring)' "$tmp/bhw32_inspect.json")" = "f32 4" ] ||
  fail "--kv f32: $(jq -c '[.kv_format, .kv_elem_bytes]' "$tmp/bhw32_inspect.json")"
"$ft" bench "$tmp/bhw32" --backend sim --prompt 16 --gen 8 --reps 1 --json > "$tmp/bhw32_bench.json"
[ "$(jq .n_slots "$tmp/bhw32_bench.json")" = "$(jq '.n_slots + .n_pinned' "$tmp/bhw32_inspect.json")" ] ||
  fail "f32 KV: bench n_slots $(jq .n_slots "$tmp/bhw32_bench.json") != inspect's"
kv16=$(jq .kv_bytes "$tmp/bhw_bench.json"); kv32=$(jq .kv_bytes "$tmp/bhw32_bench.json")
[ "$kv16" -gt 0 ] && [ $((2 * kv16)) = "$kv32" ] || fail "KV bytes: f16 $kv16, f32 $kv32 (expected half)"
"$ft" bench "$tmp/b" --prompt 16 --gen 8 --reps 1 --json > "$tmp/cpu_bench.json"
[ "$(jq .kv_bytes "$tmp/cpu_bench.json")" = "$kv16" ] || fail "cpu bench KV bytes $(jq .kv_bytes "$tmp/cpu_bench.json") != sim's $kv16"
rc=0; "$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/x" --kv bf16 2> /dev/null || rc=$?
[ $rc = 2 ] || fail "--kv bf16: exit $rc, expected 2"

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
