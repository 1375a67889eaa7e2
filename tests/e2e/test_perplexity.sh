#!/usr/bin/env bash
# ft perplexity on the tiny fixture: the perplexity equals one computed here
# from `ft logits` rows with awk (llama.cpp's method: windows of ctx tokens,
# the second half of each scored); a bundle against itself (as a bundle and
# as a saved file) has KL divergence 0 and the same top token everywhere;
# q8_0 against f32 has a small positive one, the same whether the base is
# the f32 bundle or its saved logits (two engines of different bundles in
# one process each run their own kernels); a model that adds BOS has it at
# the start of every window; and bad inputs (an empty or too
# short text, invalid UTF-8, a saved file from another vocabulary, ctx or
# text, a damaged file, conflicting options) are clear errors.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
ftc=$build/compiler/ftc
ftgen=$build/tests/ftgen
ft=$build/runtime/ft
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$ftgen" --quiet --seed 11 --size tiny --format f32 --gguf "$tmp/m.gguf"
"$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/f32" --quiet
"$ftc" compile --cuda-arch none "$tmp/m.gguf" --format q8_0 -o "$tmp/q8" --quiet
for i in $(seq 1 4); do
  echo "The quick brown fox jumps over the lazy dog number $i, then runs to the forest where 42 rabbits live."
done > "$tmp/text.txt"
ctx=32

"$ft" perplexity "$tmp/f32" --file "$tmp/text.txt" --ctx $ctx --save-logits "$tmp/f32.kld" --json > "$tmp/f32.json"
for k in perplexity n_tokens n_windows ctx; do
  [ "$(jq "has(\"$k\")" "$tmp/f32.json")" = true ] || fail "--json lacks $k: $(cat "$tmp/f32.json")"
done
nw=$(jq .n_windows "$tmp/f32.json")
half=$((ctx / 2)); scored=$((ctx - 1 - ctx / 2))
[ "$(jq .n_tokens "$tmp/f32.json")" = $((nw * scored)) ] || fail "n_tokens is not $nw x $scored"
[ "$nw" -ge 2 ] && [ "$nw" = $(($(jq .n_text_tokens "$tmp/f32.json") / ctx)) ] || fail "n_windows $nw"
vocab=$("$ftc" inspect "$tmp/f32" --json | jq .vocab_size)

# The saved file: its header, then the windows' tokens; its size.
u32() { od -An -tu4 -j "$2" -N 4 "$1" | tr -d ' '; }
[ "$(head -c 8 "$tmp/f32.kld")" = FTKLBASE ] || fail "saved file magic"
[ "$(u32 "$tmp/f32.kld" 12)" = "$vocab" ] && [ "$(u32 "$tmp/f32.kld" 16)" = $ctx ] &&
  [ "$(u32 "$tmp/f32.kld" 20)" = "$nw" ] || fail "saved file header"
[ "$(stat -c %s "$tmp/f32.kld")" = $((32 + 4 * nw * ctx + 4 * nw * scored * vocab)) ] || fail "saved file size"

# The perplexity, independently: each window's tokens (from the file) through
# ft logits, then -log softmax of the next token at positions ctx/2..ctx-2
# with awk (double precision), summed over the windows.
total=0
for ((w = 0; w < nw; w++)); do
  mapfile -t tok < <(od -An -td4 -v -w4 -j $((32 + 4 * w * ctx)) -N $((4 * ctx)) "$tmp/f32.kld" | tr -d ' ')
  ids=$(IFS=,; echo "${tok[*]}")
  "$ft" logits "$tmp/f32" --tokens "$ids" -o "$tmp/w.bin" 2> /dev/null
  targets=$(IFS=,; echo "${tok[*]:half+1:scored}")
  nll=$(od -An -tf4 -v -w$((4 * vocab)) -j $((4 * half * vocab)) -N $((4 * scored * vocab)) "$tmp/w.bin" |
    awk -v targets="$targets" '
      BEGIN { split(targets, t, ",") }
      { max = $1; for (i = 2; i <= NF; i++) if ($i > max) max = $i
        s = 0; for (i = 1; i <= NF; i++) s += exp($i - max)
        nll -= $(t[NR] + 1) - max - log(s) }
      END { printf "%.12f", nll }')
  total=$(awk -v a="$total" -v b="$nll" 'BEGIN { printf "%.12f", a + b }')
  if [ $w = 0 ]; then # the saved rows are ft logits' rows (another batching: close, maybe not equal)
    cmp -s <(tail -c +$((32 + 4 * nw * ctx + 1)) "$tmp/f32.kld" | head -c $((4 * scored * vocab))) \
      <(tail -c +$((4 * half * vocab + 1)) "$tmp/w.bin" | head -c $((4 * scored * vocab))) ||
      paste <(od -An -tf4 -v -w4 -j $((32 + 4 * nw * ctx)) -N $((4 * scored * vocab)) "$tmp/f32.kld") \
        <(od -An -tf4 -v -w4 -j $((4 * half * vocab)) -N $((4 * scored * vocab)) "$tmp/w.bin") |
      awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-4 * (1 + ($2 < 0 ? -$2 : $2))) { print "row value " NR ": " $1 " vs " $2; bad = 1 } }
           END { exit bad }' || fail "saved logits differ from ft logits"
  fi
done
awk -v total="$total" -v n=$((nw * scored)) -v got="$(jq .perplexity "$tmp/f32.json")" 'BEGIN {
  want = exp(total / n); d = (got - want) / want; if (d < 0) d = -d
  printf "perplexity %.6f, from ft logits %.6f\n", got, want
  exit !(d < 1e-5) }' || fail "perplexity differs from the one computed from ft logits"

# A bundle against itself: KL 0 and the same top token everywhere, as a
# bundle and through its saved file.
for base in "$tmp/f32" "$tmp/f32.kld"; do
  "$ft" perplexity "$tmp/f32" --file "$tmp/text.txt" --ctx $ctx --kl-base "$base" --json > "$tmp/self.json"
  [ "$(jq '.kld_mean == 0 and .kld_median == 0 and .kld_p99 == 0 and .kld_max == 0 and .same_top == 1
          and .base_perplexity == .perplexity' "$tmp/self.json")" = true ] ||
    fail "f32 against $base: $(cat "$tmp/self.json")"
  [ "$(jq .perplexity "$tmp/self.json")" = "$(jq .perplexity "$tmp/f32.json")" ] || fail "perplexity changed with a base"
done

# q8_0 against f32: small and positive, median <= p99 <= max, mostly the same
# top token; the same figures from the bundle and from the saved file (the
# file's ctx is taken when --ctx is left out).
"$ft" perplexity "$tmp/q8" --file "$tmp/text.txt" --kl-base "$tmp/f32.kld" --json > "$tmp/q8.json"
"$ft" perplexity "$tmp/q8" --file "$tmp/text.txt" --ctx $ctx --kl-base "$tmp/f32" --json > "$tmp/q8b.json"
[ "$(jq -c . "$tmp/q8.json")" = "$(jq -c . "$tmp/q8b.json")" ] ||
  fail "q8_0 against the f32 file and bundle differ: $(cat "$tmp/q8.json") $(cat "$tmp/q8b.json")"
[ "$(jq --argjson p "$(jq .perplexity "$tmp/f32.json")" '.kld_mean > 0 and .kld_mean < 0.05 and
      .kld_median <= .kld_p99 and .kld_p99 <= .kld_max and .kld_median > 0 and .same_top > 0.8 and
      .same_top < 1 and .base_perplexity == $p and .perplexity != $p' "$tmp/q8.json")" = true ] ||
  fail "q8_0 against f32: $(cat "$tmp/q8.json")"
"$ft" perplexity "$tmp/q8" --file "$tmp/text.txt" --kl-base "$tmp/f32.kld" > "$tmp/q8.txt"
grep -q "^KL divergence from the base: mean" "$tmp/q8.txt" && grep -q "^same top token: " "$tmp/q8.txt" ||
  fail "text report: $(cat "$tmp/q8.txt")"

# A model that adds BOS: the text gets one, and every window starts with it
# (llama.cpp's substitution), as the saved tokens show.
"$ftgen" --quiet --seed 11 --size tiny --format f32 --hf "$tmp/hf"
sed -i 's/"add_bos_token": false/"add_bos_token": true/' "$tmp/hf/tokenizer_config.json"
"$ftc" compile --cuda-arch none "$tmp/hf" -o "$tmp/bos" --quiet
bos=$("$ftc" inspect "$tmp/bos" --json | jq .tokenizer.bos_id)
"$ft" perplexity "$tmp/bos" --file "$tmp/text.txt" --ctx $ctx --save-logits "$tmp/bos.kld" --json > "$tmp/bos.json"
[ "$(jq .n_text_tokens "$tmp/bos.json")" = $(($(jq .n_text_tokens "$tmp/f32.json") + 1)) ] || fail "no BOS added: $(cat "$tmp/bos.json")"
nwb=$(jq .n_windows "$tmp/bos.json")
for ((w = 0; w < nwb; w++)); do
  [ "$(od -An -td4 -j $((32 + 4 * w * ctx)) -N 4 "$tmp/bos.kld" | tr -d ' ')" = "$bos" ] || fail "window $w does not start with BOS $bos"
done

# Bad inputs: a message and exit 1 (or 2 for usage errors), never a crash.
expect() { # exit-code expected-substring command...
  local code=$1 want=$2; shift 2
  set +e; "$@" > /dev/null 2> "$tmp/err"; local rc=$?; set -e
  [ $rc = "$code" ] || fail "'$*' exited $rc, wanted $code: $(cat "$tmp/err")"
  grep -qi -- "$want" "$tmp/err" || fail "'$*': error lacks '$want': $(cat "$tmp/err")"
}
: > "$tmp/empty.txt"
expect 1 "the text is empty" "$ft" perplexity "$tmp/f32" --file "$tmp/empty.txt"
head -c 60 "$tmp/text.txt" > "$tmp/short.txt"
expect 1 "needs at least 64 (two windows)" "$ft" perplexity "$tmp/f32" --file "$tmp/short.txt" --ctx $ctx
printf 'bad \xff byte %.0s' $(seq 1 40) > "$tmp/bad.txt"
expect 1 "bad.txt" "$ft" perplexity "$tmp/f32" --file "$tmp/bad.txt" --ctx $ctx
expect 1 "cannot open" "$ft" perplexity "$tmp/f32" --file "$tmp/none.txt"
expect 1 "the model's context is 256" "$ft" perplexity "$tmp/f32" --file "$tmp/text.txt" --ctx 1024
expect 2 "at least 4" "$ft" perplexity "$tmp/f32" --file "$tmp/text.txt" --ctx 3
expect 2 "exclude each other" "$ft" perplexity "$tmp/f32" --file "$tmp/text.txt" --kl-base "$tmp/f32" --save-logits "$tmp/x.kld"
expect 2 "are needed" "$ft" perplexity "$tmp/f32"
expect 1 "saved with --ctx 32, not 16" "$ft" perplexity "$tmp/q8" --file "$tmp/text.txt" --ctx 16 --kl-base "$tmp/f32.kld"
sed 's/fox/cat/' "$tmp/text.txt" > "$tmp/other.txt"
expect 1 "saved from another text" "$ft" perplexity "$tmp/q8" --file "$tmp/other.txt" --kl-base "$tmp/f32.kld"
{ cat "$tmp/text.txt" "$tmp/text.txt"; } > "$tmp/longer.txt"
expect 1 "not the same text" "$ft" perplexity "$tmp/q8" --file "$tmp/longer.txt" --kl-base "$tmp/f32.kld"
cp "$tmp/f32.kld" "$tmp/vocab.kld"
printf '\x01' | dd of="$tmp/vocab.kld" bs=1 seek=24 conv=notrunc status=none
expect 1 "saved for another vocabulary" "$ft" perplexity "$tmp/q8" --file "$tmp/text.txt" --kl-base "$tmp/vocab.kld"
head -c -4 "$tmp/f32.kld" > "$tmp/trunc.kld"
expect 1 "truncated" "$ft" perplexity "$tmp/q8" --file "$tmp/text.txt" --kl-base "$tmp/trunc.kld"
cp "$tmp/f32.kld" "$tmp/nan.kld"
printf '\x00\x00\xc0\x7f' | dd of="$tmp/nan.kld" bs=1 seek=$((32 + 4 * nw * ctx + 8)) conv=notrunc status=none
expect 1 "not finite" "$ft" perplexity "$tmp/q8" --file "$tmp/text.txt" --kl-base "$tmp/nan.kld"
cp "$tmp/f32.kld" "$tmp/tok.kld"
printf '\xff\xff\xff\x7f' | dd of="$tmp/tok.kld" bs=1 seek=36 conv=notrunc status=none
expect 1 "offset 36: token 2147483647 is outside the vocabulary" "$ft" perplexity "$tmp/q8" --file "$tmp/text.txt" --kl-base "$tmp/tok.kld"
echo "1 passed, 0 failed"
