#!/usr/bin/env bash
# ft serve on fixtures that carry their family's published chat template
# (ftgen: qwen35moe -> Qwen3.5's, gpt-oss -> harmony, glm4moe -> GLM-4.6's):
# the family is found
# from the template, /apply-template renders it, and a scripted reply in
# the family's own call syntax comes back as OpenAI tool_calls (and as an
# Anthropic tool_use block, streamed as input_json_delta, and a Responses
# function_call item), reasoning apart.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
ft=$build/runtime/ft
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v curl > /dev/null || fail "curl is needed"
command -v jq > /dev/null || fail "jq is needed"

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done; wait 2> /dev/null || true; }
trap cleanup EXIT
# bundle NAME ARCH: a compiled fixture of ARCH
bundle() {
  "$build/tests/ftgen" --quiet --arch "$2" --seed 5 --ctx 4096 --gguf "$tmp/$1.gguf"
  "$build/compiler/ftc" compile --cuda-arch none "$tmp/$1.gguf" -o "$tmp/$1" --quiet
}
# serve NAME SCRIPT: starts ft serve on bundle NAME with --script
serve() {
  "$ft" serve "$tmp/$1" --port 0 --threads 1 --parallel 1 --script "$2" > "$tmp/$1.log" 2>&1 &
  pids+=($!)
}
# the three bundles compile side by side
bundle q35 qwen35moe & b1=$!
bundle oss gpt-oss & b2=$!
bundle glm glm4moe & b3=$!
wait $b1 && wait $b2 && wait $b3 || fail "a fixture did not compile"
url_of() {
  for _ in $(seq 300); do
    if grep -qs '^listening on http://' "$1"; then sed -n 's/^listening on //p' "$1"; return; fi
    sleep 0.1
  done
  fail "ft serve did not print its address: $(cat "$1")"
}

tools='[{"type":"function","function":{"name":"get_weather","description":"Weather now",
 "parameters":{"type":"object","properties":{"city":{"type":"string","description":"City"},
 "days":{"type":"integer","description":"Days"}},"required":["city"]}}}]'
body() { jq -nc --argjson tools "$tools" --arg q "$1" \
  '{messages:[{role:"user",content:$q}],tools:$tools,max_tokens:200}'; }

# Qwen3.5: the reply opens inside <think> (the template's generation prompt)
cat > "$tmp/q35.txt" <<'SCRIPT'
I need the weather tool.
</think>

<tool_call>
<function=get_weather>
<parameter=city>
Oslo
</parameter>
<parameter=days>
2
</parameter>
</function>
</tool_call><|im_end|>
SCRIPT
# harmony: analysis, then a call to functions.get_weather (<|call|> is text
# here: the fixture's vocabulary has no harmony tokens; <|im_end|> ends it)
cat > "$tmp/oss.txt" <<'SCRIPT'
<|channel|>analysis<|message|>I need the weather tool.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Oslo", "days": 2}<|call|><|im_end|>
SCRIPT
# GLM: the generation prompt ends at <|assistant|>; the model opens <think>
cat > "$tmp/glm.txt" <<'SCRIPT'
<think>I need the weather tool.</think>
<tool_call>get_weather
<arg_key>city</arg_key>
<arg_value>Oslo</arg_value>
<arg_key>days</arg_key>
<arg_value>2</arg_value>
</tool_call><|im_end|>
SCRIPT
serve q35 "$tmp/q35.txt"
serve oss "$tmp/oss.txt"
serve glm "$tmp/glm.txt"
q35=$(url_of "$tmp/q35.log")
oss=$(url_of "$tmp/oss.log")
glm=$(url_of "$tmp/glm.log")

for fam in q35 oss glm; do
  url=${!fam}
  t=$(curl -s "$url/apply-template" -d "$(body 'Weather in Oslo?')")
  case $fam in
    q35) want='<function=example_function_name>' ;;
    oss) want='type get_weather = (_: {' ;;
    glm) want='<arg_key>{arg-key-1}</arg_key>' ;;
  esac
  jq -r .prompt <<< "$t" | grep -qF "$want" || fail "$fam: /apply-template lacks '$want': $t"
  r=$(curl -s "$url/v1/chat/completions" -d "$(body 'Weather in Oslo?')")
  [ "$(jq -r '.choices[0].finish_reason' <<< "$r")" = tool_calls ] || fail "$fam: no tool call: $r"
  [ "$(jq -r '.choices[0].message.tool_calls[0].function.name' <<< "$r")" = get_weather ] ||
    fail "$fam: tool name: $r"
  args=$(jq -r '.choices[0].message.tool_calls[0].function.arguments' <<< "$r")
  [ "$(jq -c . <<< "$args")" = '{"city":"Oslo","days":2}' ] || fail "$fam: arguments '$args': $r"
  [ "$(jq -r '.choices[0].message.reasoning_content' <<< "$r")" = "I need the weather tool." ] ||
    fail "$fam: reasoning: $r"
  # Anthropic, streamed: a tool_use block whose input arrives as input_json_delta
  a=$(curl -sN "$url/v1/messages" -d "$(jq -nc --arg q 'Weather?' '{model:"m",max_tokens:200,stream:true,
    messages:[{role:"user",content:$q}],tools:[{name:"get_weather",description:"Weather now",
    input_schema:{type:"object",properties:{city:{type:"string"},days:{type:"integer"}}}}]}')")
  grep -q '"type":"tool_use"' <<< "$a" || grep -q '"type": *"tool_use"' <<< "$a" || fail "$fam: no tool_use: $a"
  json=$(sed -n 's/^data: //p' <<< "$a" | jq -r 'select(.delta.type == "input_json_delta") | .delta.partial_json' | tr -d '\n')
  [ "$(jq -c . <<< "$json")" = '{"city":"Oslo","days":2}' ] || fail "$fam: streamed input '$json'"
  # Responses: a function_call output item
  o=$(curl -s "$url/v1/responses" -d '{"model":"m","input":"Weather?","tools":[{"type":"function",
    "name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},
    "days":{"type":"integer"}}}}]}')
  call=$(jq -c '[.output[] | select(.type == "function_call")][0]' <<< "$o")
  [ "$(jq -r .name <<< "$call")" = get_weather ] || fail "$fam: responses: $o"
  [ "$(jq -r .arguments <<< "$call" | jq -c .)" = '{"city":"Oslo","days":2}' ] || fail "$fam: responses arguments: $o"
  echo "ok: $fam"
done
for i in 0 1 2; do
  kill "${pids[$i]}"
  set +e; wait "${pids[$i]}"; rc=$?; set -e
  [ $rc -eq 0 ] || fail "server $i exited with $rc"
done
pids=()
trap - EXIT
echo "ok: ft serve with the Qwen3.5, harmony and GLM templates"
