#!/usr/bin/env bash
# ftc plan from config.json alone (the four docs/configs models), from an
# HF directory and from a GGUF header: exit status, --json keys, a RAM
# budget too small (fits false, the shortfall named), and bad sizes
# (usage error 2).
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
ftc=$build/compiler/ftc
ftgen=$build/tests/ftgen
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

# A machine to plan for: a preset when the tree has it, else a profile
# written here (a 24 GB GPU on PCIe 4.0 x16 beside a DDR5 desktop).
hw=$src/hwprofiles/presets/rtx4090.textproto
if [ ! -f "$hw" ]; then
  hw=$tmp/desktop.textproto
  cat > "$hw" <<'PROFILE'
version: 1
machine: "e2e test desktop"
tool: "preset"
cpu {
  model: "test cpu"
  n_cores { median: 16 min: 16 max: 16 n_runs: 1 source: SPEC }
  ram_bytes { median: 68719476736 min: 68719476736 max: 68719476736 n_runs: 1 source: SPEC }
  dram_read_gbs { median: 70 min: 70 max: 70 n_runs: 1 source: SPEC }
  dram_read_1t_gbs { median: 20 min: 20 max: 20 n_runs: 1 source: SPEC }
}
gpus {
  name: "test gpu 24 GB"
  cc_major: 8 cc_minor: 9
  vram_total_bytes { median: 25769803776 min: 25769803776 max: 25769803776 n_runs: 1 source: SPEC }
  vram_free_bytes { median: 25000000000 min: 25000000000 max: 25000000000 n_runs: 1 source: SPEC }
  hbm_gbs { median: 1000 min: 1000 max: 1000 n_runs: 1 source: SPEC }
  h2d_gbs { median: 25 min: 25 max: 25 n_runs: 1 source: SPEC }
  d2h_gbs { median: 25 min: 25 max: 25 n_runs: 1 source: SPEC }
  gather_gbs { median: 20 min: 20 max: 20 n_runs: 1 source: SPEC }
  launch_us { median: 5 min: 5 max: 5 n_runs: 1 source: SPEC }
  gemm_tflops { median: 150 min: 150 max: 150 n_runs: 1 source: SPEC }
}
PROFILE
fi

for m in qwen3-30b-a3b qwen3.6-35b-a3b gpt-oss-120b deepseek-v4-flash; do
  cfg=$src/docs/configs/$m/config.json
  rc=0
  "$ftc" plan "$cfg" --hw "$hw" --ram 512G --json > "$tmp/$m.json" 2> "$tmp/$m.err" || rc=$?
  [ "$rc" = 0 ] || fail "$m: ftc plan exited $rc: $(cat "$tmp/$m.err")"
  for k in fits predicted_decode_tok_s predicted_prefill_tok_s bottleneck vram_dense vram_slots \
           vram_kv n_slots ram_needed; do
    [ "$(jq "has(\"$k\")" "$tmp/$m.json")" = true ] || fail "$m: --json lacks $k"
  done
  [ "$(jq .fits "$tmp/$m.json")" = true ] || fail "$m: does not fit 512 GiB of RAM"
  jq -e '.predicted_decode_tok_s > 0 and .predicted_prefill_tok_s > 0' "$tmp/$m.json" > /dev/null ||
    fail "$m: predictions not positive"
  # The human form names fits, the partition, predicted speeds and the bottleneck.
  "$ftc" plan "$cfg" --hw "$hw" --ram 512G --format q4_k > "$tmp/$m.txt" ||
    fail "$m: human output exited non-zero"
  for w in "fits:" "LRU expert slots" "predicted decode" "predicted prefill" "bottleneck"; do
    grep -q "$w" "$tmp/$m.txt" || fail "$m: output lacks '$w'"
  done
done

# Shapes as computed: ~30.5 B parameters for Qwen3-30B-A3B, ~117 B for gpt-oss-120b.
jq -e '.params > 30.0e9 and .params < 31.0e9' "$tmp/qwen3-30b-a3b.json" > /dev/null || fail "qwen3-30b params"
jq -e '.params > 116.0e9 and .params < 118.0e9' "$tmp/gpt-oss-120b.json" > /dev/null || fail "gpt-oss params"
[ "$(jq -r .expert_format "$tmp/gpt-oss-120b.json")" = mxfp4 ] || fail "gpt-oss experts not mxfp4 by default"

# RAM too small: fits false, exit 1, and the shortfall named.
rc=0
"$ftc" plan "$src/docs/configs/gpt-oss-120b/config.json" --hw "$hw" --ram 8G --json \
  > "$tmp/small.json" 2> /dev/null || rc=$?
[ "$rc" = 1 ] || fail "too little RAM: exit $rc, expected 1"
[ "$(jq .fits "$tmp/small.json")" = false ] || fail "too little RAM: fits is not false"
jq -e '.ram_shortfall > 0 and (.why | length) > 0' "$tmp/small.json" > /dev/null || fail "no shortfall given"
rc=0
"$ftc" plan "$src/docs/configs/gpt-oss-120b/config.json" --hw "$hw" --ram 8G > "$tmp/small.txt" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "too little RAM (text): exit $rc"
grep -q "short by" "$tmp/small.txt" || fail "text output does not say by how much: $(cat "$tmp/small.txt")"

# Bad sizes and arguments are usage errors (2).
for bad in "" 0 -8G 8X 8GiBs 1e400 1e3G 0x10G 8. G 8.G.1 " 8G" "8 G" inf 99999999999T; do
  rc=0
  "$ftc" plan "$src/docs/configs/qwen3-30b-a3b/config.json" --hw "$hw" --vram "$bad" > /dev/null 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "--vram '$bad': exit $rc, expected 2"
done
rc=0; "$ftc" plan "$src/docs/configs/qwen3-30b-a3b/config.json" --hw "$hw" --ctx 12x > /dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "--ctx 12x: exit $rc"
rc=0; "$ftc" plan "$src/docs/configs/qwen3-30b-a3b/config.json" --hw "$hw" --format q9_z > /dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "--format q9_z: exit $rc"
rc=0; "$ftc" plan "$src/docs/configs/qwen3-30b-a3b/config.json" > /dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "no --hw: exit $rc"
# Good sizes in every unit are accepted.
for good in 512M 8G 24GiB 24GB 1.5T 3000000000; do
  "$ftc" plan "$src/docs/configs/qwen3-30b-a3b/config.json" --hw "$hw" --vram "$good" --ram 512G \
    --json > /dev/null || fail "--vram $good refused"
done

# A broken config is an error (1) naming the key; a missing model names the path.
printf '{"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 64}' > "$tmp/broken.json"
rc=0; "$ftc" plan "$tmp/broken.json" --hw "$hw" > /dev/null 2> "$tmp/broken.err" || rc=$?
[ "$rc" = 1 ] && grep -q "num_hidden_layers" "$tmp/broken.err" || fail "broken config: exit $rc: $(cat "$tmp/broken.err")"
rc=0; "$ftc" plan "$tmp/nope" --hw "$hw" > /dev/null 2> "$tmp/nope.err" || rc=$?
[ "$rc" = 1 ] && grep -q "nope" "$tmp/nope.err" || fail "missing model: exit $rc"

# The tiny fixture as an HF directory and as a GGUF give the same plan.
"$ftgen" --quiet --seed 3 --size tiny --format q8_0 --gguf "$tmp/t.gguf" --hf "$tmp/t_hf"
"$ftc" plan "$tmp/t.gguf" --hw "$hw" --format q8_0 --json > "$tmp/t1.json"
"$ftc" plan "$tmp/t_hf" --hw "$hw" --format q8_0 --json > "$tmp/t2.json"
for k in weight_bytes kv_bytes_per_token params predicted_decode_tok_s vram_dense; do
  [ "$(jq ".$k" "$tmp/t1.json")" = "$(jq ".$k" "$tmp/t2.json")" ] || fail "GGUF and HF plans differ in $k"
done

# So do the Qwen3.5 hybrid's (the GGUF planned from its imported IR): KV
# only for the full-attention layer (2 KV heads x (16 + 16) x 2 bytes), a
# fixed recurrent state per sequence for the DeltaNet one.
"$ftgen" --quiet --arch qwen35moe --size tiny --format q8_0 --gguf "$tmp/q.gguf" --hf "$tmp/q_hf"
"$ftc" plan "$tmp/q.gguf" --hw "$hw" --format q8_0 --json > "$tmp/q1.json" || fail "qwen35moe GGUF: no plan"
"$ftc" plan "$tmp/q_hf" --hw "$hw" --format q8_0 --json > "$tmp/q2.json" || fail "qwen35moe HF: no plan"
for k in weight_bytes kv_bytes_per_token state_bytes params predicted_decode_tok_s vram_dense; do
  [ "$(jq ".$k" "$tmp/q1.json")" = "$(jq ".$k" "$tmp/q2.json")" ] || fail "qwen35moe GGUF and HF plans differ in $k"
done
[ "$(jq .kv_bytes_per_token "$tmp/q1.json")" = 128 ] || fail "qwen35moe KV per token: $(jq .kv_bytes_per_token "$tmp/q1.json")"
[ "$(jq .state_bytes "$tmp/q1.json")" = 5632 ] || fail "qwen35moe state: $(jq .state_bytes "$tmp/q1.json")"
echo "ok"
