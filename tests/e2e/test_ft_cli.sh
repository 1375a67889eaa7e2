#!/usr/bin/env bash
# End to end through the ft command line on the tiny fixture: run (text and
# JSON, chat, stop strings), logits, bench, and the bad inputs the issue
# names (empty prompt, invalid UTF-8, unknown token ids, prompt longer than
# the context, corrupted bundles).
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
ftc=$build/compiler/ftc
ftgen=$build/tests/ftgen
ft=$build/runtime/ft
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$ftgen" --quiet --seed 11 --size tiny --format q8_0 --gguf "$tmp/m.gguf"
"$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/b" --quiet

# Greedy generation is reproducible and --json reports what was generated.
"$ft" run "$tmp/b" -p "The quick brown fox" -n 12 --json > "$tmp/run1.json"
"$ft" run "$tmp/b" -p "The quick brown fox" -n 12 --json --threads 1 > "$tmp/run2.json"
[ "$(jq -c .tokens "$tmp/run1.json")" = "$(jq -c .tokens "$tmp/run2.json")" ] || fail "greedy run differs across thread counts"
n=$(jq '.tokens | length' "$tmp/run1.json")
[ "$n" -ge 1 ] && [ "$n" -le 12 ] || fail "generated $n tokens"
for k in text prefill_tok_s decode_tok_s n_prompt_tokens; do
  [ "$(jq "has(\"$k\")" "$tmp/run1.json")" = true ] || fail "run --json lacks $k"
done
# Sampling with a seed is reproducible; a different seed usually differs.
"$ft" run "$tmp/b" -p "Once upon a time" -n 16 --temp 1.0 --seed 5 --json > "$tmp/s1.json"
"$ft" run "$tmp/b" -p "Once upon a time" -n 16 --temp 1.0 --seed 5 --json > "$tmp/s2.json"
[ "$(jq -c .tokens "$tmp/s1.json")" = "$(jq -c .tokens "$tmp/s2.json")" ] || fail "seeded sampling not reproducible"
# Chat formatting and plain streaming output.
"$ft" run "$tmp/b" -p "Hello" -n 8 --chat > "$tmp/chat.txt" 2> "$tmp/chat.err" || fail "chat run: $(cat "$tmp/chat.err")"
grep -q "tok/s" "$tmp/chat.err" || fail "run does not report tok/s"
# The streamed text (detokenizer, then the stop matcher) is the --json
# text; with a stop string taken from it, the output ends just before it.
"$ft" run "$tmp/b" -p "Once upon a time" -n 16 --temp 1.0 --seed 5 > "$tmp/s1.txt" 2>/dev/null
printf '\n' >> "$tmp/s1.txt" # jq -r ends the text with a newline
cmp -s "$tmp/s1.txt" <(jq -r .text "$tmp/s1.json") || fail "streamed text differs from the --json text"
text=$(jq -r .text "$tmp/s1.json")
stop=$(LC_ALL=C.UTF-8 bash -c 's=$1; printf %s "${s:4:3}"' _ "$text")
[ -n "$stop" ] || fail "no stop string from '$text'"
"$ft" run "$tmp/b" -p "Once upon a time" -n 16 --temp 1.0 --seed 5 --stop "$stop" --json > "$tmp/stop.json"
[ "$(jq .stopped "$tmp/stop.json")" = true ] || fail "--stop '$stop' did not stop"
[ "$(jq -r .text "$tmp/stop.json")" = "${text%%"$stop"*}" ] || fail "--stop '$stop': text $(jq .text "$tmp/stop.json")"
# Logprobs: greedy takes the most likely token, so it heads its own top
# list; a -inf logit bias on it bans it, and a presence penalty is taken.
"$ft" run "$tmp/b" -p "The quick brown fox" -n 12 --json --top-logprobs 3 > "$tmp/lp.json"
[ "$(jq -c .tokens "$tmp/lp.json")" = "$(jq -c .tokens "$tmp/run1.json")" ] || fail "--top-logprobs changed the tokens"
[ "$(jq '[.logprobs[] | (.top | length) == 3 and .top[0].id == .id and .top[0].logprob == .logprob
          and .logprob <= 0 and .top[1].logprob <= .top[0].logprob] | all' "$tmp/lp.json")" = true ] ||
  fail "greedy logprobs: $(jq -c '.logprobs[0]' "$tmp/lp.json")"
first=$(jq '.tokens[0]' "$tmp/run1.json")
"$ft" run "$tmp/b" -p "The quick brown fox" -n 1 --json --logit-bias "$first=-inf" > "$tmp/ban.json"
[ "$(jq '.tokens[0]' "$tmp/ban.json")" != "$first" ] || fail "--logit-bias $first=-inf did not ban it"
# (greedy repeats tokens within 40 here; a presence penalty of 100 stops that)
"$ft" run "$tmp/b" -p "The quick brown fox" -n 40 --json > "$tmp/rep.json"
"$ft" run "$tmp/b" -p "The quick brown fox" -n 40 --json --presence-penalty 100 --frequency-penalty 0.5 > "$tmp/pen.json"
[ "$(jq '.tokens | length > (unique | length)' "$tmp/rep.json")" = true ] || fail "greedy did not repeat a token"
[ "$(jq '.tokens | length == (unique | length)' "$tmp/pen.json")" = true ] || fail "--presence-penalty 100 repeated a token"

# Logits of every position: n x vocab float32.
"$ft" logits "$tmp/b" --tokens 1,2,3,4,5 -o "$tmp/logits.bin" 2>/dev/null
vocab=$("$ftc" inspect "$tmp/b" --json | jq .vocab_size)
[ "$(stat -c %s "$tmp/logits.bin")" = $((5 * vocab * 4)) ] || fail "logits file size"
# The last row equals the logits of a run over the same tokens (greedy pick).
"$ft" logits "$tmp/b" --tokens 1,2,3 -o "$tmp/l3.bin" 2>/dev/null
cmp <(head -c $((3 * vocab * 4)) "$tmp/logits.bin") "$tmp/l3.bin" || fail "logits of a prefix differ"

# Bench reports the keys other tools rely on.
"$ft" bench "$tmp/b" --prompt 16 --gen 4 --reps 1 --json > "$tmp/bench.json"
for k in decode_tok_s prefill_tok_s weight_bytes_per_token dram_fraction dram_read_gbs; do
  [ "$(jq "has(\"$k\")" "$tmp/bench.json")" = true ] || fail "bench --json lacks $k"
done

# Bad inputs: a message and exit 1, never a crash.
expect_fail() { # expected-substring command...
  local want=$1; shift
  set +e; "$@" > /dev/null 2> "$tmp/err"; local rc=$?; set -e
  [ $rc = 1 ] || fail "'$*' exited $rc, wanted 1: $(cat "$tmp/err")"
  grep -qi -- "$want" "$tmp/err" || fail "'$*': error lacks '$want': $(cat "$tmp/err")"
}
expect_fail "empty" "$ft" run "$tmp/b" -p ""
expect_fail "utf-8" "$ft" run "$tmp/b" -p "$(printf 'bad \xff byte')"
expect_fail "vocabulary" "$ft" run "$tmp/b" --prompt-tokens "1,2,$vocab"
expect_fail "logit_bias.0. is for token $vocab" "$ft" run "$tmp/b" -p "hi" --logit-bias "$vocab=1"
set +e; "$ft" run "$tmp/b" -p "hi" --logit-bias 7 2> "$tmp/err"; rc=$?; set -e
[ $rc = 2 ] && grep -q "ID=BIAS" "$tmp/err" || fail "--logit-bias 7: exit $rc, $(cat "$tmp/err")"
expect_fail "top_logprobs 21" "$ft" run "$tmp/b" -p "hi" --top-logprobs 21
expect_fail "vocabulary" "$ft" logits "$tmp/b" --tokens "1,-1" -o "$tmp/x.bin"
expect_fail "context" "$ft" run "$tmp/b" -p "$(printf 'word %.0s' $(seq 1 40))" --ctx 8
cp -r "$tmp/b" "$tmp/bad"
printf '\x07' | dd of="$tmp/bad/plan.ftp" bs=1 seek=8 conv=notrunc status=none
expect_fail "plan.ftp" "$ft" run "$tmp/bad" -p "hi"
cp "$tmp/b/plan.ftp" "$tmp/bad/plan.ftp"
truncate -s -4096 "$tmp/bad/weights.ftw"
expect_fail "weights.ftw" "$ft" run "$tmp/bad" -p "hi"
echo "1 passed, 0 failed"
