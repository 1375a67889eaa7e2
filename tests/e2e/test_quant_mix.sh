#!/usr/bin/env bash
# ftc compile --format q4_k_m end to end from the command line: an f32
# fixture becomes a mixed bundle whose formats ftc inspect lists per role
# (human and --json), and ft runs it on the generated kernels. The tiny
# fixture (d_model 64, 8 experts) shows llama-quantize's rules and
# fallbacks: rows of 64 take Q4_K's fallback Q5_0, the 8-expert attn_k and
# attn_v Q8_0, attn_output Q5_K's fallback Q5_1, the output head Q8_0 (rows not whole 256-blocks), layer 1's
# ffn_down (use_more_bits) Q6_K's fallback Q8_0; norms and routers f32.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
ftc=$build/compiler/ftc
ftgen=$build/tests/ftgen
ft=$build/runtime/ft
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$ftgen" --quiet --seed 3 --size tiny --format f32 --gguf "$tmp/m.gguf"
"$ftc" compile --cuda-arch none "$tmp/m.gguf" --format q4_k_m -o "$tmp/b" --quiet
"$ftc" inspect "$tmp/b" --json > "$tmp/b.json"
rf() { jq -c ".role_formats[\"$1\"]" "$tmp/b.json"; }
[ "$(rf embeddings)" = '{"q5_0":1}' ] || fail "embeddings: $(rf embeddings)"
[ "$(rf attention)" = '{"q5_0":2,"q5_1":2,"q8_0":4}' ] || fail "attention: $(rf attention)"
[ "$(rf experts)" = '{"q5_0":5,"q8_0":1}' ] || fail "experts: $(rf experts)"
[ "$(rf output)" = '{"q8_0":1}' ] || fail "output: $(rf output)"
[ "$(rf norms)" = '{"f32":9}' ] || fail "norms: $(rf norms)"
[ "$(rf router)" = '{"f32":2}' ] || fail "router: $(rf router)"
"$ftc" inspect "$tmp/b" > "$tmp/b.txt"
grep -q '^formats    embeddings     q5_0 x 1$' "$tmp/b.txt" || fail "human inspect: $(cat "$tmp/b.txt")"
grep -q '^           experts        q5_0 x 5, q8_0 x 1$' "$tmp/b.txt" || fail "human experts line"
# the source model's per-role formats too
"$ftc" inspect "$tmp/m.gguf" --json | jq -e '.role_formats.experts == {"f32": 6}' > /dev/null ||
  fail "model role_formats"
# a name that is neither a mix nor a format: refused naming both lists
rc=0; "$ftc" compile --cuda-arch none "$tmp/m.gguf" --format q4_k_x -o "$tmp/x" 2> "$tmp/x.err" || rc=$?
[ $rc = 2 ] && grep -q "q4_k_m" "$tmp/x.err" && grep -q "iq4_xs" "$tmp/x.err" || fail "bad --format: rc $rc"
[ ! -e "$tmp/x" ] || fail "a refused compile wrote its output"
"$ft" run "$tmp/b" -p "hello" -n 4 --kernels generated > "$tmp/run.txt" 2> "$tmp/run.err" ||
  fail "ft run: $(cat "$tmp/run.err")"
echo "ok"
