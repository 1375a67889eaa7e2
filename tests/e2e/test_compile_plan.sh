#!/usr/bin/env bash
# ftc compile --hw/--vram/--ram/--ctx/--calibrate and ftc inspect of the
# partition it stores (issue 4, items 3, 5 and 6):
#  - the plan holds the partition; inspect --json shows it and it respects
#    each VRAM budget (the regions add up to vram_used <= the budget);
#  - --calibrate stores routing counts and lets the planner pin experts;
#  - compiling twice (with and without calibration) gives identical bytes;
#  - a RAM budget the model cannot fit is refused with the shortfall, and
#    nothing is written;
#  - --svg writes a well-formed SVG; the text table names the regions.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
ftc=$build/compiler/ftc
ftgen=$build/tests/ftgen
hw=$src/hwprofiles/presets/rtx4060_laptop.textproto
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
j() { jq -r "$1" "$2"; }

"$ftgen" --quiet --seed 7 --size tiny --format f32 --gguf "$tmp/m.gguf"

# Budgets: 3 MiB and 8 MiB give GPU plans; 1 MiB is below the scratch, so
# everything runs on the CPU.
for vram in 3M 8M 1M; do
  b=$tmp/b$vram
  "$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$b" --quiet --hw "$hw" --vram $vram --ctx 128
  "$ftc" inspect "$b" --json > "$b.json"
  f=$b.json
  [ "$(j .has_partition "$f")" = true ] || fail "$vram: no partition"
  bytes=$(( ${vram%M} * 1048576 ))
  [ "$(j .vram_budget "$f")" = $bytes ] || fail "$vram: vram_budget $(j .vram_budget "$f") != $bytes"
  [ "$(j .ctx "$f")" = 128 ] || fail "$vram: ctx"
  sum=$(jq '.vram_regions | .dense + .pinned + .slots + .kv + .stream + .scratch' "$f")
  [ "$sum" = "$(j .vram_used "$f")" ] || fail "$vram: regions add up to $sum, vram_used $(j .vram_used "$f")"
  [ "$sum" -le $bytes ] || fail "$vram: $sum bytes of VRAM used, budget $bytes"
  [ "$(j '.ram_needed <= .ram_budget' "$f")" = true ] || fail "$vram: RAM over budget"
  [ "$(j '.qstar | length' "$f")" = 2 ] || fail "$vram: qstar per layer"
  [ "$(j '.hit_rate | length' "$f")" = 2 ] || fail "$vram: hit_rate per layer"
  [ "$(j '[.hit_rate[], .qstar[]] | all(. >= 0 and . <= 1)' "$f")" = true ] || fail "$vram: fractions"
  for k in n_slots predicted_decode_tok_s predicted_prefill_tok_s bottleneck calibration_tokens; do
    [ "$(j "has(\"$k\")" "$f")" = true ] || fail "$vram: no $k"
  done
  [ "$(j .calibration_tokens "$f")" = 0 ] || fail "$vram: calibration without --calibrate"
  [ "$(j '.n_slots * .slot_bytes == .vram_regions.slots' "$f")" = true ] || fail "$vram: slots"
done
[ "$(j .cpu_only "$tmp/b1M.json")" = true ] || fail "1M: expected a CPU-only plan"
[ "$(j .vram_used "$tmp/b1M.json")" = 0 ] || fail "1M: VRAM used on a CPU-only plan"
[ "$(j .cpu_only "$tmp/b3M.json")" = false ] || fail "3M: expected a GPU plan"
[ "$(j '.n_slots + .n_pinned > 0' "$tmp/b3M.json")" = true ] || fail "3M: no expert in VRAM"
experts() { jq '.vram_regions.slots + .vram_regions.pinned' "$1"; }
[ "$(experts "$tmp/b8M.json")" -ge "$(experts "$tmp/b3M.json")" ] || fail "8M holds fewer experts than 3M"

# Calibration: a repetitive text routes unevenly, so the planner pins.
for i in $(seq 1 60); do
  echo "the cat sat on the mat and the dog ran to the park; hello world $((i % 7))"
done > "$tmp/calib.txt"
"$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/c1" --quiet --hw "$hw" --vram 3M --ctx 128 --calibrate "$tmp/calib.txt"
"$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/c2" --quiet --hw "$hw" --vram 3M --ctx 128 --calibrate "$tmp/calib.txt"
cmp "$tmp/c1/plan.ftp" "$tmp/c2/plan.ftp" || fail "calibrated plan not deterministic"
cmp "$tmp/c1/weights.ftw" "$tmp/c2/weights.ftw" || fail "calibrated weights not deterministic"
cmp "$tmp/c1/weights.ftw" "$tmp/b3M/weights.ftw" || fail "calibration changed the weights"
"$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/b3M.again" --quiet --hw "$hw" --vram 3M --ctx 128
cmp "$tmp/b3M/plan.ftp" "$tmp/b3M.again/plan.ftp" || fail "plan not deterministic"
"$ftc" inspect "$tmp/c1" --json > "$tmp/c1.json"
ntok=$(j .calibration_tokens "$tmp/c1.json")
[ "$ntok" -gt 100 ] || fail "calibration counted $ntok tokens"
[ "$(j .n_pinned "$tmp/b3M.json")" = 0 ] || fail "pinned experts without calibration"
[ "$(j .n_pinned "$tmp/c1.json")" -gt 0 ] || fail "calibration did not pin any expert"
"$ftc" verify "$tmp/c1" > /dev/null || fail "calibrated bundle does not verify"

# Calibration alone (no --hw) stores the counts and no partition.
"$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/c3" --quiet --calibrate "$tmp/calib.txt"
"$ftc" inspect "$tmp/c3" --json > "$tmp/c3.json"
[ "$(j .has_partition "$tmp/c3.json")" = false ] || fail "partition without --hw"
[ "$(j .calibration_tokens "$tmp/c3.json")" = "$ntok" ] || fail "calibration without --hw"

# Refusals: RAM too small (shortfall named, nothing written), budgets
# without --hw, a missing calibration file.
rc=0
"$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/small" --quiet --hw "$hw" --ram 64K 2> "$tmp/small.err" || rc=$?
[ $rc -ne 0 ] || fail "--ram 64K accepted"
grep -q "short by" "$tmp/small.err" || fail "no shortfall: $(cat "$tmp/small.err")"
grep -q "budget 65536 bytes" "$tmp/small.err" || fail "no byte figures: $(cat "$tmp/small.err")"
[ ! -e "$tmp/small" ] || fail "a refused compile wrote $tmp/small"
rc=0; "$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/x" --vram 3M 2> /dev/null || rc=$?
[ $rc = 2 ] || fail "--vram without --hw: exit $rc"
rc=0; "$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/x" --calibrate "$tmp/none.txt" 2> "$tmp/x.err" || rc=$?
[ $rc = 1 ] && grep -q none.txt "$tmp/x.err" || fail "missing calibration file: exit $rc"

# Human table and SVG.
"$ftc" inspect "$tmp/c1" --svg "$tmp/c1.svg" > "$tmp/c1.txt"
for w in "VRAM region" "LRU expert slots" "pinned experts" "hit rate" "predicted decode" "bottleneck" "calibrated on calib.txt"; do
  grep -q "$w" "$tmp/c1.txt" || fail "inspect table lacks '$w'"
done
grep -q "<svg" "$tmp/c1.svg" || fail "no <svg"
grep -q "</svg>" "$tmp/c1.svg" || fail "no </svg>"
grep -q "expected hit rate" "$tmp/c1.svg" || fail "SVG lacks the legend"
if command -v xmllint > /dev/null; then
  xmllint --noout "$tmp/c1.svg" || fail "SVG is not well-formed XML"
fi
rc=0; "$ftc" inspect "$tmp/c3" --svg "$tmp/c3.svg" > /dev/null 2>&1 || rc=$?
[ $rc = 1 ] || fail "--svg of a bundle without partition: exit $rc"
echo "ok"
