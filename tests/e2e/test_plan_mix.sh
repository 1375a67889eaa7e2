#!/usr/bin/env bash
# ftc plan --format q4_k_m plans with the mix's per-tensor formats: the
# weight bytes it predicts are exactly those `ftc compile --format q4_k_m`
# writes (small fixture: rows of 256, so Q4_K experts with Q6_K ffn_down
# where use_more_bits, Q8_0 attn_k/attn_v for 8 experts), from a GGUF and
# from an HF directory; a mix differs from its plain base type; a mix with
# --dense-format, or on a config.json alone (no tensor table), is refused.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
ftc=$build/compiler/ftc
ftgen=$build/tests/ftgen
hw=$src/hwprofiles/presets/rtx4060_laptop.textproto
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$ftgen" --quiet --seed 3 --size small --format f32 --gguf "$tmp/m.gguf" --hf "$tmp/hf"
"$ftc" compile --cuda-arch none "$tmp/m.gguf" --format q4_k_m -o "$tmp/b" --quiet
"$ftc" inspect "$tmp/b" --json > "$tmp/b.json"
want=$(jq .weight_bytes "$tmp/b.json")
# the fixture really is mixed: Q4_K, Q5_K, Q6_K and Q8_0 matrices
jq -e '.tensor_formats | has("q4_k") and has("q6_k") and has("q8_0")' "$tmp/b.json" > /dev/null ||
  fail "fixture not mixed: $(jq -c .tensor_formats "$tmp/b.json")"
for m in "$tmp/m.gguf" "$tmp/hf"; do
  "$ftc" plan "$m" --hw "$hw" --format q4_k_m --json > "$tmp/p.json" || fail "plan $m"
  got=$(jq .weight_bytes "$tmp/p.json")
  [ "$got" = "$want" ] || fail "$m: plan weight_bytes $got, compiled bundle $want"
  [ "$(jq -r .mix "$tmp/p.json")" = q4_k_m ] || fail "$m: mix $(jq -r .mix "$tmp/p.json")"
  [ "$(jq -r .expert_format "$tmp/p.json")" = q4_k ] || fail "$m: expert_format"
done
"$ftc" plan "$tmp/m.gguf" --hw "$hw" --format q4_k_m | grep -q 'mix q4_k_m' || fail "human output"
# the plain base type is another plan (every matrix Q4_K)
"$ftc" plan "$tmp/m.gguf" --hw "$hw" --format q4_k --json > "$tmp/q.json"
[ "$(jq .weight_bytes "$tmp/q.json")" != "$want" ] || fail "q4_k plans like q4_k_m"
[ "$(jq -r .mix "$tmp/q.json")" = null ] || fail "q4_k has a mix"
# refusals
rc=0; "$ftc" plan "$tmp/hf/config.json" --hw "$hw" --format q4_k_m 2> "$tmp/e1" || rc=$?
[ $rc != 0 ] && grep -q "tensor table" "$tmp/e1" || fail "config.json + mix: rc $rc $(cat "$tmp/e1")"
rc=0; "$ftc" plan "$tmp/m.gguf" --hw "$hw" --format q4_k_m --dense-format q8_0 2> "$tmp/e2" || rc=$?
[ $rc != 0 ] && grep -q "dense-format" "$tmp/e2" || fail "mix + --dense-format: rc $rc $(cat "$tmp/e2")"
echo "ok"
