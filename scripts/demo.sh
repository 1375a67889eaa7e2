#!/usr/bin/env bash
# The main job on the trained demo model (demo/model, a 15 M-parameter
# Qwen3-MoE trained on this repository's data: demo/README.md): install what
# is missing, build, compile the model for this machine, answer a question
# (ft run --chat), make one complete tool-call round trip through ft serve
# (the model asks for the calculator, this script runs it and sends the
# result back, the model answers with it), and measure prefill and decode
# speed (ft bench).
#
# --random runs the synthetic Qwen3-MoE fixture instead (random weights,
# seeded, nothing downloaded; --size bench is about 0.9 GB in Q8_0): for
# benchmarks, its answers are fluent nonsense.
# Usage: scripts/demo.sh [--format F] [--question TEXT] [--random [--size tiny|bench]]
#   --format: the weight format ftc compile stores (default bf16 for the
#   demo model, q8_0 for --random); --question: the question of the tool
#   call (default "What is 234 times 17?").
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: $0 [--format f32|f16|bf16|q8_0|...] [--question TEXT] [--random [--size tiny|bench]]" >&2; exit 2; }
random=0; size=bench; format=""; question="What is 234 times 17?"
while [ $# -gt 0 ]; do
  case "$1" in
    --random) random=1; shift ;;
    --size) [ $# -ge 2 ] || usage; size=$2; shift 2 ;;
    --format) [ $# -ge 2 ] || usage; format=$2; shift 2 ;;
    --question) [ $# -ge 2 ] || usage; question=$2; shift 2 ;;
    *) usage ;;
  esac
done
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
ftc=build/compiler/ftc ft=build/runtime/ft

if [ $random = 1 ]; then
  format=${format:-q8_0}
  out=out/demo-$size-$format
  mkdir -p "$out"
  echo "== generating the random-weight fixture ($size, $format) as GGUF"
  build/tests/ftgen --seed 1 --size "$size" --format "$format" --gguf "$out/model.gguf"
  echo "== ftc compile $out/model.gguf -o $out/bundle"
  $ftc compile "$out/model.gguf" -o "$out/bundle"
  $ftc inspect "$out/bundle"
  echo "== ft run $out/bundle -p ... (the weights are random: expect fluent nonsense)"
  $ft run "$out/bundle" -p "The history of the steam engine" -n 48 --chat
  echo "== ft bench $out/bundle"
  $ft bench "$out/bundle" --prompt 128 --gen 32 --reps 3
  exit 0
fi

format=${format:-bf16}
out=out/demo-model-$format
mkdir -p "$out"
echo "== ftc compile demo/model -o $out/bundle --format $format"
$ftc compile demo/model -o "$out/bundle" --format "$format"
$ftc inspect "$out/bundle"

echo
echo "== ft run --chat: a question"
$ft run "$out/bundle" --chat -p "What is the capital of France?" -n 64
echo

echo "== ft serve: a tool call round trip (OpenAI chat completions, curl)"
command -v curl > /dev/null || { echo "demo.sh: curl is needed for the tool call (scripts/install-deps.sh)" >&2; exit 1; }
log=$out/serve.log
$ft serve "$out/bundle" --port 0 > "$log" 2>&1 &
pid=$!
trap 'kill $pid 2> /dev/null || true; wait $pid 2> /dev/null || true' EXIT
for _ in $(seq 300); do grep -qs '^listening on' "$log" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$log")
[ -n "$url" ] || { echo "demo.sh: ft serve did not start: $(cat "$log")" >&2; exit 1; }
tools='[{"type": "function", "function": {"name": "calculator", "description": "Evaluate an arithmetic expression with + - * / and parentheses.", "parameters": {"type": "object", "properties": {"expression": {"type": "string", "description": "The expression, for example 12 * (3 + 4)"}}, "required": ["expression"]}}},
 {"type": "function", "function": {"name": "convert_units", "description": "Convert a quantity from one unit to another.", "parameters": {"type": "object", "properties": {"value": {"type": "number", "description": "The quantity to convert"}, "from_unit": {"type": "string", "description": "The unit of the value, for example km"}, "to_unit": {"type": "string", "description": "The unit wanted, for example mi"}}, "required": ["value", "from_unit", "to_unit"]}}},
 {"type": "function", "function": {"name": "dictionary", "description": "Look up the definition of an English word.", "parameters": {"type": "object", "properties": {"word": {"type": "string", "description": "The word to define"}}, "required": ["word"]}}}]'
chat() { curl -s "$url/v1/chat/completions" -d "$(jq -n --argjson m "$1" --argjson t "$tools" \
  '{model: "demo", messages: $m, tools: $t, temperature: 0, max_tokens: 96}')"; }
# The round trip; returns 1 (after saying why) when the model does not ask
# for the calculator with an arithmetic expression: a model this small may not.
round_trip() {
  local messages r1 call name args expr result r2
  messages=$(jq -n --arg q "$question" '[{"role": "user", "content": $q}]')
  echo "user: $question"
  r1=$(chat "$messages")
  call=$(jq -c '.choices[0].message.tool_calls[0] // empty' <<< "$r1")
  if [ -z "$call" ]; then
    echo "(the model answered without calling a tool: $(jq -c '.choices[0].message.content' <<< "$r1"))"
    return 1
  fi
  name=$(jq -r '.function.name' <<< "$call")
  args=$(jq -r '.function.arguments' <<< "$call")
  echo "assistant calls: $name $args"
  # The calculator: digits, + - * / ( ) . and spaces only, evaluated by awk.
  expr=$(jq -r '.expression // empty' <<< "$args" 2> /dev/null || true)
  if [ "$name" != calculator ] || ! [[ $expr =~ ^[0-9.+*/()\ -]+$ ]]; then
    echo "(not a calculator call with an arithmetic expression: this script runs only the calculator)"
    return 1
  fi
  result=$(awk "BEGIN { v = $expr; if (v == int(v)) printf \"%d\", v; else printf \"%.4f\", v }")
  echo "tool (calculator): $result"
  messages=$(jq -n --arg q "$question" --argjson m "$(jq '.choices[0].message' <<< "$r1")" \
    --arg id "$(jq -r '.id' <<< "$call")" --arg res "$result" \
    '[{"role": "user", "content": $q}, $m, {"role": "tool", "tool_call_id": $id, "content": $res}]')
  r2=$(chat "$messages")
  echo "assistant: $(jq -r '.choices[0].message.content' <<< "$r2")"
}
round_trip || echo "(no complete round trip this time)"
kill $pid 2> /dev/null || true
wait $pid 2> /dev/null || true
trap - EXIT
echo

echo "== ft bench $out/bundle"
$ft bench "$out/bundle" --prompt 128 --gen 32 --reps 3
