#!/usr/bin/env bash
# The checks against npm packages we did not write, run again from the
# packages themselves (ctest external_npm; skipped, exit 77, where node or
# npm is missing; the packages are installed with npm ci from
# package-lock.json into BUILD_DIR/tests/external-npm):
#
#  1. @huggingface/tokenizers still gives the committed golden ids
#     (golden/tokenizer-ids.json) for tokenizer-corpus.json from the
#     committed tokenizer.json: the goldens that
#     tests/unit/test_tokenizer_external.c compares freetoken's tokenizer
#     with are current (gen-tokenizer-golden.sh rewrites them);
#  2. @huggingface/gguf's reading of fixture GGUF files (model metadata,
#     tokenizer, and every tensor's name, type and shape, gguf-view.mjs) is
#     what `ftc inspect --json --tensors` reads in them, and each tensor's
#     byte size by ftc fits the space gguf.js finds between its data offset
#     and the next (the size plus less than the 32-byte alignment); GLM-4.5's
#     MTP layer, which ftc skips by design, is left out of both.
#
#   tests/external/check-npm.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  echo "SKIP: node and npm are needed (scripts/install-deps.sh installs them)"
  exit 77
fi
# shellcheck source=npm-env.sh
. "$here/npm-env.sh"
npm_dir=$(ft_npm_dir "$build")

# 1. The tokenizer goldens.
node "$npm_dir/encode-corpus.mjs" "$here/golden/tokenizer.json" "$here/golden/tokenizer_config.json" \
  "$here/tokenizer-corpus.json" > "$tmp/tokenizer-ids.json"
diff "$here/golden/tokenizer-ids.json" "$tmp/tokenizer-ids.json" > "$tmp/tok.diff" ||
  fail "@huggingface/tokenizers now gives other ids than golden/tokenizer-ids.json (or the corpus changed; run gen-tokenizer-golden.sh): $(head -c 2000 "$tmp/tok.diff")"
echo "tokenizer: $(grep -c '"ids"' "$tmp/tokenizer-ids.json") texts as golden"

# 2. GGUF files as gguf.js and ftc read them.
ftgen=$build/tests/ftgen
"$ftgen" --quiet --size tiny --format f32 --gguf "$tmp/f32.gguf"
"$ftgen" --quiet --size tiny --format bf16 --gguf "$tmp/bf16.gguf"
"$ftgen" --quiet --size tiny --format q8_0 --gguf "$tmp/q8_0.gguf"
"$ftgen" --quiet --size tiny --format mxfp4 --gguf "$tmp/mxfp4.gguf"
"$ftgen" --quiet --size small --mix q4_k_m --gguf "$tmp/q4_k_m.gguf"
"$ftgen" --quiet --size tiny --arch glm4moe --dense-layers 1 --format q8_0 --gguf "$tmp/glm4moe.gguf"
read -r -d '' compare <<'JQ' || true
def abs: if . < 0 then -. else . end;
$v[0] as $v | $f[0] as $f |
($f.tensors | map({key: .name, value: .}) | from_entries) as $ft |
[ $v | keys[] | select(. != "tensors" and . != "rope_theta" and . != "norm_eps" and . != "mtp_layers") ] as $exact |
  [ $exact[] as $k | select($v[$k] != $f[$k]) | "\($k): gguf.js \($v[$k] | tojson), ftc \($f[$k] | tojson)" ]
+ [ ("rope_theta", "norm_eps") as $k | select($v[$k] != null)
    | select(($f[$k] == null) or ((($v[$k] - $f[$k]) | abs) > 1e-6 * ($v[$k] | abs)))
    | "\($k): gguf.js \($v[$k]), ftc \($f[$k])" ]
+ [ $v.tensors[] as $t | $ft[$t.name] as $x |
    if $t.mtp then (if $x != null then "\($t.name): an MTP tensor, which ftc should skip" else empty end)
    elif $x == null then "\($t.name): not in ftc inspect"
    elif $x.format != $t.format or $x.shape != $t.shape then
      "\($t.name): gguf.js \($t.format) \($t.shape | tojson), ftc \($x.format) \($x.shape | tojson)"
    elif $x.bytes > $t.span or $t.span >= $x.bytes + 32 then
      "\($t.name): ftc says \($x.bytes) bytes, gguf.js finds \($t.span) before the next tensor"
    else empty end ]
+ (if ($f.tensors | length) != $v.n_tensors then
     ["tensors: gguf.js \($v.n_tensors) (besides MTP ones), ftc \($f.tensors | length)"] else [] end)
| .[]
JQ
for g in f32 bf16 q8_0 mxfp4 q4_k_m glm4moe; do
  node "$npm_dir/gguf-view.mjs" "$tmp/$g.gguf" > "$tmp/$g.view.json"
  "$build/compiler/ftc" inspect "$tmp/$g.gguf" --json --tensors > "$tmp/$g.ftc.json"
  jq -rn --slurpfile v "$tmp/$g.view.json" --slurpfile f "$tmp/$g.ftc.json" "$compare" > "$tmp/$g.diff"
  [ ! -s "$tmp/$g.diff" ] || fail "$g.gguf: gguf.js and ftc inspect differ: $(head -n 20 "$tmp/$g.diff")"
  echo "gguf $g: $(jq '.tensors | length' "$tmp/$g.view.json") tensors and $(jq 'del(.tensors) | keys | length' "$tmp/$g.view.json") model keys agree"
done
echo "1 passed, 0 failed"
