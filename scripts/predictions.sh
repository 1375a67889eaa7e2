#!/usr/bin/env bash
# Regenerates the predictions table of docs/predictions.md: `ftc plan` for
# the four docs/configs models on the hardware presets, in the formats
# people run them in. Only the text between the GENERATED markers is
# replaced; the rest of the page is written by hand.
#
#   scripts/predictions.sh [BUILD_DIR]      (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
ftc=$build/compiler/ftc
doc=$root/docs/predictions.md
ctx=4096
[ -x "$ftc" ] || { echo "predictions.sh: no ftc at $ftc (build first)" >&2; exit 1; }
command -v jq > /dev/null || { echo "predictions.sh: needs jq" >&2; exit 1; }

# label | config dir | ftc format options | what the format stands for
models=(
  "Qwen3-30B-A3B|qwen3-30b-a3b|--format q4_k --dense-format q6_k|Q4_K_M-like (q4_k experts, q6_k rest)"
  "Qwen3.6-35B-A3B|qwen3.6-35b-a3b|--format q4_k --dense-format q6_k|Q4_K_M-like (q4_k experts, q6_k rest)"
  "gpt-oss-120b|gpt-oss-120b||native MXFP4 experts, bf16 rest"
  "DeepSeek-V4-Flash|deepseek-v4-flash||native FP4 (mxfp4) experts, FP8 rest"
  "DeepSeek-V4-Flash|deepseek-v4-flash|--ram 192G|native FP4 experts, FP8 rest, with 192 GB of RAM instead of the preset's"
  "DeepSeek-V4-Flash|deepseek-v4-flash|--format q2_k --dense-format q8_0|q2_k experts (2.6 bits), q8_0 rest"
)
# label | pattern matched against preset file names
machines=(
  "RTX 4060 Laptop 8 GB|4060"
  "RTX 3090 24 GB|3090"
  "RTX 4090 24 GB|4090"
  "RTX 5090 32 GB|5090"
  "RTX PRO 6000 96 GB|6000"
  "DGX Spark 128 GB|spark"
  "H200 141 GB|h200"
)

table=$(mktemp)
trap 'rm -f "$table"' EXIT
{
  echo "| Model | Weights | Machine (preset) | Fits | VRAM used / budget GiB | RAM needed GiB | Expert hit rate | Decode tok/s (predicted) | Prefill tok/s (predicted) | Bottleneck |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  for m in "${models[@]}"; do
    IFS='|' read -r mlabel mdir mopts mdesc <<< "$m"
    for h in "${machines[@]}"; do
      IFS='|' read -r hlabel hpat <<< "$h"
      preset=$(ls "$root"/hwprofiles/presets/*.textproto 2> /dev/null | grep -i -- "$hpat" | head -1 || true)
      if [ -z "$preset" ]; then
        echo "| $mlabel | $mdesc | $hlabel | (no preset) | | | | | | |"
        continue
      fi
      # shellcheck disable=SC2086
      out=$("$ftc" plan "$root/docs/configs/$mdir/config.json" --hw "$preset" --ctx $ctx $mopts --json 2> /dev/null || true)
      if [ -z "$out" ]; then
        echo "| $mlabel | $mdesc | $hlabel ($(basename "$preset")) | error | | | | | | |"
        continue
      fi
      echo "$out" | jq -r --arg m "$mlabel" --arg d "$mdesc" --arg h "$hlabel ($(basename "$preset" .textproto))" '
        def gib: . / 1073741824 | . * 10 | round / 10;
        def r1: . * 10 | round / 10;
        "| \($m) | \($d) | \($h) | \(if .fits then "yes" elif .ram_shortfall > 0 then "**no**: short by \(.ram_shortfall | gib) GiB of RAM" else "**no**: \(.why)" end) | \(.vram_used | gib) / \(.vram_budget | gib) | \(.ram_needed | gib) | \(.hit_rate_mean * 100 | round)% | \(.predicted_decode_tok_s | r1) | \(.predicted_prefill_tok_s | r1) | \(.bottleneck) |"'
    done
  done
} > "$table"

# The rows with a published figure, beside it.
cmp=$(mktemp)
trap 'rm -f "$table" "$cmp"' EXIT
# label | config | preset pattern | options | published
comparisons=(
  "Qwen3.6-35B-A3B, RTX 4060 Laptop 8 GB, Q4_K_M-like|qwen3.6-35b-a3b|4060|--format q4_k --dense-format q6_k|about 39"
  "Qwen3.6-35B-A3B, RTX 5090, Q4_K_M-like|qwen3.6-35b-a3b|5090|--format q4_k --dense-format q6_k|77-83"
  "DeepSeek-V4-Flash, RTX 5090, native FP4 + FP8, preset RAM (128 GB)|deepseek-v4-flash|5090||22-25"
  "DeepSeek-V4-Flash, RTX 5090, native FP4 + FP8, 192 GB RAM|deepseek-v4-flash|5090|--ram 192G|22-25"
  "DeepSeek-V4-Flash, RTX 5090, q2_k experts + q8_0, preset RAM|deepseek-v4-flash|5090|--format q2_k --dense-format q8_0|22-25 (format unknown)"
)
{
  echo "| Model, machine, weights | Published decode tok/s | Predicted decode tok/s | Bottleneck | Expert hit rate | Copied per token MiB |"
  echo "|---|---|---|---|---|---|"
  for c in "${comparisons[@]}"; do
    IFS='|' read -r clabel cdir cpat copts cpub <<< "$c"
    preset=$(ls "$root"/hwprofiles/presets/*.textproto 2> /dev/null | grep -i -- "$cpat" | head -1 || true)
    [ -n "$preset" ] || { echo "| $clabel | $cpub | (no preset) | | | |"; continue; }
    # shellcheck disable=SC2086
    out=$("$ftc" plan "$root/docs/configs/$cdir/config.json" --hw "$preset" --ctx $ctx $copts --json 2> /dev/null || true)
    [ -n "$out" ] || { echo "| $clabel | $cpub | error | | | |"; continue; }
    echo "$out" | jq -r --arg l "$clabel" --arg p "$cpub" '
      "| \($l) | \($p) | \(if .fits then (.predicted_decode_tok_s * 10 | round / 10 | tostring) else "does not fit: \(.why)" end) | \(.bottleneck) | \(.hit_rate_mean * 100 | round)% | \(.copy_bytes_per_token / 1048576 | round) |"'
  done
} > "$cmp"

replace_block() { # file begin-marker end-marker content-file intro
  awk -v b="$2" -v e="$3" -v t="$4" -v intro="$5" '
    $0 == b { print; print ""; if (intro != "") { print intro; print "" } while ((getline l < t) > 0) print l; print ""; skip = 1; next }
    $0 == e { skip = 0 }
    !skip { print }' "$1" > "$1.tmp"
  mv "$1.tmp" "$1"
}

begin='<!-- BEGIN GENERATED by scripts/predictions.sh: do not edit by hand -->'
end='<!-- END GENERATED -->'
[ -f "$doc" ] || printf '%s\n%s\n' "$begin" "$end" > "$doc"
grep -qF -- "$begin" "$doc" && grep -qF -- "$end" "$doc" ||
  { echo "predictions.sh: $doc lacks the GENERATED markers" >&2; exit 1; }
replace_block "$doc" "$begin" "$end" "$table" \
  "Context reserved: $ctx tokens, one sequence, each preset's own VRAM and RAM unless the row says otherwise. Every tok/s figure is a prediction of \`ftc plan\` from the preset's specification figures, not a measurement."
cbegin='<!-- BEGIN GENERATED COMPARISON by scripts/predictions.sh: do not edit by hand -->'
cend='<!-- END GENERATED COMPARISON -->'
if grep -qF -- "$cbegin" "$doc" && grep -qF -- "$cend" "$doc"; then
  replace_block "$doc" "$cbegin" "$cend" "$cmp" ""
fi
echo "predictions.sh: wrote $(wc -l < "$table") table lines into $doc"
