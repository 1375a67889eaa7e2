#!/usr/bin/env bash
# scripts/quality-table.sh on the tiny fixture with three formats: f32
# first (KL divergence 0, every top token the same), q8_0 with the figures
# ft perplexity gives for it against f32's saved logits, and q4_k, which
# rows of 64 cannot hold, listed with ftc's reason instead of figures.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$build/tests/ftgen" --quiet --seed 5 --size tiny --format f32 --hf "$tmp/hf"
head -c 1200 "$src/tests/data/heldout_en.txt" > "$tmp/text.txt"
"$src/scripts/quality-table.sh" --build "$build" --ctx 32 --formats "q8_0 q4_k" --text "$tmp/text.txt" \
  --model-name "tiny fixture" --about "A test." --keep "$tmp/keep" -o "$tmp/q.md" "$tmp/hf"
grep -q '^Model: \*\*tiny fixture\*\* (qwen3moe, [0-9]* parameters), vocabulary 563\.$' "$tmp/q.md" || fail "model line: $(cat "$tmp/q.md")"
grep -q '^A test\.$' "$tmp/q.md" || fail "no --about line"
grep -q '^| f32 | [0-9]* | 1.000 | [0-9.]* ± [0-9.]* | 0 | 0 | 100.00% |$' "$tmp/q.md" || fail "f32 row: $(grep '^| f32' "$tmp/q.md")"
grep -q '^| q4_k | - | - | - | - | - | - |$' "$tmp/q.md" || fail "q4_k row"
grep -q '^- q4_k: .*block of 256' "$tmp/q.md" || fail "q4_k's reason"
[ "$(grep -c '^| ' "$tmp/q.md")" = 4 ] || fail "rows: $(grep '^| ' "$tmp/q.md")"

# The q8_0 row is what ft perplexity says about the kept bundle against
# f32's kept logits.
ft=$build/runtime/ft
"$ft" perplexity "$tmp/keep/q8_0" --file "$tmp/text.txt" --kl-base "$tmp/keep/f32.kld" --json > "$tmp/q8.json"
cmp -s "$tmp/q8.json" "$tmp/keep/q8_0.json" || fail "q8_0: $(cat "$tmp/q8.json") vs $(cat "$tmp/keep/q8_0.json")"
bytes=$(( $(stat -c %s "$tmp/keep/q8_0/plan.ftp") + $(stat -c %s "$tmp/keep/q8_0/weights.ftw") ))
row=$(grep '^| q8_0 ' "$tmp/q.md")
awk -F'|' -v b="$bytes" -v p="$(jq .perplexity "$tmp/q8.json")" -v k="$(jq .kld_mean "$tmp/q8.json")" \
  -v s="$(jq .same_top "$tmp/q8.json")" '{
    split($5, a, " "); d = a[1] - p; if (d < 0) d = -d
    e = $6 - k; if (e < 0) e = -e
    gsub(/ /, "", $8)
    exit !($3 + 0 == b && d < 1e-3 && e <= 1e-3 * k && $6 > 0 && $8 == sprintf("%.2f%%", 100 * s)) }' <<< "$row" ||
  fail "q8_0 row '$row' is not $bytes bytes and $(cat "$tmp/q8.json")"
echo "1 passed, 0 failed"
