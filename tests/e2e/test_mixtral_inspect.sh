#!/usr/bin/env bash
# End to end: ftgen --arch mixtral writes the tiny Mixtral fixture as a
# llama GGUF and as an HF MixtralForCausalLM directory; ftc inspect reads
# both as mixtral with the generator's hyperparameters and parameter
# counts, and their IR texts differ in one thing only: the RoPE pairing
# (1 = interleaved, on the GGUF's llama.cpp-permuted q/k rows; 2 = NeoX on
# HF's originals). ftc compile of the GGUF with the default kernel targets
# succeeds: the CUDA kernels cover RoPE over adjacent pairs (where this
# ftc has NVRTC: cubins for the six default targets and compute_80 PTX;
# which kernels the images define is test_mixtral_cuda's check).
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
ftc=$build/compiler/ftc
ftgen=$build/tests/ftgen
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
jqget() { jq -r "$1" "$2"; }

d=$tmp/mixtral
"$ftgen" --quiet --arch mixtral --seed 5 --size tiny --gguf "$d.gguf" --hf "$d.hf" --shards 3
"$ftc" inspect "$d.gguf" --json > "$d.gguf.json"
"$ftc" inspect "$d.hf" --json > "$d.hf.json"
for f in "$d.gguf.json" "$d.hf.json"; do
  [ "$(jqget .arch "$f")" = mixtral ] || fail "$f: arch $(jqget .arch "$f")"
  [ "$(jqget .n_layers "$f")" = 2 ] || fail "$f: n_layers"
  [ "$(jqget .d_model "$f")" = 64 ] || fail "$f: d_model"
  [ "$(jqget .n_heads "$f")" = 4 ] || fail "$f: n_heads"
  [ "$(jqget .n_kv_heads "$f")" = 2 ] || fail "$f: n_kv_heads"
  [ "$(jqget .head_dim "$f")" = 16 ] || fail "$f: head_dim"
  [ "$(jqget .n_experts "$f")" = 8 ] || fail "$f: n_experts"
  [ "$(jqget .n_experts_used "$f")" = 2 ] || fail "$f: n_experts_used"
  [ "$(jqget .expert_ffn "$f")" = 32 ] || fail "$f: expert_ffn"
  [ "$(jqget .context_length "$f")" = 256 ] || fail "$f: context_length"
  # No q/k norms: per layer norms are attn_norm + ffn_norm only.
  V=$(jqget .vocab_size "$f"); D=64; L=2; H=4; KV=2; HD=16; E=8; U=2; F=32
  per_layer=$(( D + H*HD*D + 2*KV*HD*D + D*H*HD + D + E*D + 3*E*F*D ))
  total=$(( 2*V*D + D + L*per_layer ))
  active=$(( total - L*(E-U)*3*F*D ))
  [ "$(jqget .total_params "$f")" = $total ] || fail "$f: total_params $(jqget .total_params "$f") != $total"
  [ "$(jqget .active_params "$f")" = $active ] || fail "$f: active_params $(jqget .active_params "$f") != $active"
  [ "$(jqget .n_tensors "$f")" = $(( 3 + L*10 )) ] || fail "$f: n_tensors"
done

"$ftc" inspect "$d.gguf" --ir > "$d.gguf.ir"
"$ftc" inspect "$d.hf" --ir > "$d.hf.ir"
grep -q ' rope 1 ' "$d.gguf.ir" || fail "GGUF IR: RoPE is not interleaved"
grep -q ' rope 2 ' "$d.hf.ir" || fail "HF IR: RoPE is not NeoX"
grep -q 'qk_norm 0 .* norm_topk 1 ' "$d.hf.ir" || fail "HF IR: q/k norm or router normalisation"
diff <(sed 's/ rope [12] / rope R /' "$d.gguf.ir") <(sed 's/ rope [12] / rope R /' "$d.hf.ir") \
  || fail "GGUF and HF IR differ in more than the RoPE pairing"

"$ftc" compile "$d.gguf" -o "$d.bundle" --quiet 2> "$d.compile.err" ||
  fail "ftc compile with the default targets: $(cat "$d.compile.err")"
"$ftc" inspect "$d.bundle" --json > "$d.bundle.json"
[ "$(jqget .arch "$d.bundle.json")" = mixtral ] || fail "bundle arch $(jqget .arch "$d.bundle.json")"
if [ "${FT_TEST_NVRTC:-0}" = 1 ]; then
  [ "$(jq -c .cuda_archs "$d.bundle.json")" = '["sm_80","sm_86","sm_89","sm_90","sm_100","sm_120"]' ] ||
    fail "bundle cuda_archs: $(jq -c .cuda_archs "$d.bundle.json")"
  [ "$(jq -c .cuda_ptx "$d.bundle.json")" = '["compute_80"]' ] || fail "bundle cuda_ptx: $(jq -c .cuda_ptx "$d.bundle.json")"
fi

# --arch qwen3moe (the default) still writes qwen3moe.
"$ftgen" --quiet --arch qwen3moe --gguf "$tmp/q.gguf"
"$ftc" inspect "$tmp/q.gguf" --json | jq -e '.arch == "qwen3moe"' > /dev/null || fail "qwen3moe fixture"
echo "ok"
