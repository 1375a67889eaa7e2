#!/usr/bin/env bash
# End to end: generate the tiny fixture as GGUF and as an HF directory,
# inspect both, compile both, and check what issue #2 promises:
#  - inspect reports the generator's hyperparameters and parameter counts;
#  - GGUF and HF imports of the same weights give identical IR and
#    identical FTW bytes (f32, f16, bf16; q8_0 via --format q8_0);
#  - compiling twice gives byte-identical bundles, which inspect reads back;
#  - verify catches a modified or truncated weights file.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
ftc=$build/compiler/ftc
ftgen=$build/tests/ftgen
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
jqget() { jq -r "$1" "$2"; }

for fmt in f32 f16 bf16 q8_0; do
  d=$tmp/$fmt
  "$ftgen" --quiet --seed 7 --size tiny --format $fmt --gguf "$d.gguf" --hf "$d.hf" --shards 2
  "$ftc" inspect "$d.gguf" --json > "$d.gguf.json"
  "$ftc" inspect "$d.hf" --json > "$d.hf.json"
  for f in "$d.gguf.json" "$d.hf.json"; do
    [ "$(jqget .arch "$f")" = qwen3moe ] || fail "$f: arch"
    [ "$(jqget .n_layers "$f")" = 2 ] || fail "$f: n_layers"
    [ "$(jqget .d_model "$f")" = 64 ] || fail "$f: d_model"
    [ "$(jqget .n_heads "$f")" = 4 ] || fail "$f: n_heads"
    [ "$(jqget .n_kv_heads "$f")" = 2 ] || fail "$f: n_kv_heads"
    [ "$(jqget .head_dim "$f")" = 16 ] || fail "$f: head_dim"
    [ "$(jqget .n_experts "$f")" = 8 ] || fail "$f: n_experts"
    [ "$(jqget .n_experts_used "$f")" = 2 ] || fail "$f: n_experts_used"
    [ "$(jqget .expert_ffn "$f")" = 32 ] || fail "$f: expert_ffn"
    [ "$(jqget .context_length "$f")" = 256 ] || fail "$f: context_length"
    # Parameter counts from the hyperparameters, independently of ftc.
    V=$(jqget .vocab_size "$f"); D=64; L=2; H=4; KV=2; HD=16; E=8; U=2; F=32
    per_layer=$(( D + H*HD*D + 2*KV*HD*D + D*H*HD + 2*HD + D + E*D + 3*E*F*D ))
    total=$(( 2*V*D + D + L*per_layer ))
    active=$(( total - L*(E-U)*3*F*D ))
    [ "$(jqget .total_params "$f")" = $total ] || fail "$f: total_params $(jqget .total_params "$f") != $total"
    [ "$(jqget .active_params "$f")" = $active ] || fail "$f: active_params $(jqget .active_params "$f") != $active"
    [ "$(jqget .tokenizer.n_tokens "$f")" = "$V" ] || fail "$f: tokenizer size"
  done
  if [ $fmt != q8_0 ]; then
    "$ftc" inspect "$d.gguf" --ir > "$d.gguf.ir"
    "$ftc" inspect "$d.hf" --ir > "$d.hf.ir"
    diff -u "$d.gguf.ir" "$d.hf.ir" > "$d.ir.diff" || fail "$fmt: GGUF and HF IR differ: $(head -20 "$d.ir.diff")"
    [ "$(jq -c .tensor_formats "$d.gguf.json")" = "$(jq -c .tensor_formats "$d.hf.json")" ] || fail "$fmt: formats differ"
    extra=()
  else
    extra=(--format q8_0)
    [ "$(jq -r '.tensor_formats.q8_0' "$d.gguf.json")" -gt 0 ] || fail "q8_0 gguf has no q8_0 tensors"
  fi
  "$ftc" compile --cuda-arch none "$d.gguf" -o "$d.b1" --quiet
  "$ftc" compile --cuda-arch none "$d.gguf" -o "$d.b2" --quiet
  "$ftc" compile --cuda-arch none "$d.hf" -o "$d.b3" --quiet "${extra[@]}"
  cmp "$d.b1/plan.ftp" "$d.b2/plan.ftp" || fail "$fmt: plan not deterministic"
  cmp "$d.b1/weights.ftw" "$d.b2/weights.ftw" || fail "$fmt: weights not deterministic"
  cmp "$d.b1/weights.ftw" "$d.b3/weights.ftw" || fail "$fmt: GGUF and HF bundles hold different weight bytes"
  "$ftc" inspect "$d.b1" --json > "$d.b1.json"
  [ "$(jqget .kind "$d.b1.json")" = bundle ] || fail "$fmt: bundle kind"
  [ "$(jqget .total_params "$d.b1.json")" = "$(jqget .total_params "$d.gguf.json")" ] || fail "$fmt: bundle params"
  [ "$(jqget .active_params "$d.b1.json")" = "$(jqget .active_params "$d.gguf.json")" ] || fail "$fmt: bundle active params"
  [ "$(jqget .weights_hash "$d.b1.json" | wc -c)" = 33 ] || fail "$fmt: weights_hash"
  [ "$(jqget .plan_hash "$d.b1.json" | wc -c)" = 17 ] || fail "$fmt: plan_hash"
  "$ftc" verify "$d.b1" >/dev/null || fail "$fmt: verify of a good bundle"
  echo "ok $fmt"
done

# A modified weight byte: the cheap open still passes (header hash), the
# full verify must not.
b=$tmp/q8_0.b2
size=$(stat -c %s "$b/weights.ftw")
printf '\x5a' | dd of="$b/weights.ftw" bs=1 seek=$((size - 100)) conv=notrunc status=none
if "$ftc" verify "$b" 2> "$tmp/verify.err"; then fail "verify accepted a modified weights file"; fi
grep -q "weights.ftw" "$tmp/verify.err" || fail "verify error does not name the file: $(cat "$tmp/verify.err")"
# A truncated weights file is refused at open.
truncate -s $((size - 4096)) "$b/weights.ftw"
if "$ftc" inspect "$b" 2> "$tmp/trunc.err" >/dev/null; then fail "inspect accepted a truncated weights file"; fi
grep -q "weights.ftw" "$tmp/trunc.err" || fail "truncation error does not name the file"
# Bad inputs give a message and exit 1, never a crash.
set +e
"$ftc" inspect "$tmp/does-not-exist.gguf" 2>/dev/null; [ $? = 1 ] || fail "missing file exit code"
head -c 1000 /dev/urandom > "$tmp/garbage.gguf"
"$ftc" inspect "$tmp/garbage.gguf" 2> "$tmp/garbage.err"; [ $? = 1 ] || fail "garbage exit code"
grep -q "garbage.gguf" "$tmp/garbage.err" || fail "garbage error does not name the file"
"$ftc" compile --cuda-arch none "$tmp/f32.gguf" -o "$tmp/x" --format q8_1 2>/dev/null; [ $? = 2 ] || fail "bad --format exit code"
set -e
echo "1 passed, 0 failed"
