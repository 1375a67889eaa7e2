#!/usr/bin/env bash
# response_format {"type": "json_object"} over HTTP: the sampler's token
# filter keeps the reply a JSON object. With logit biases that make a
# random-weight fixture want "{", then "}" and the end, the constrained
# reply is exactly "{}" and stops (the unconstrained one repeats "{");
# sampled replies that stop parse as JSON objects, streamed or not; a
# biased token that cannot continue JSON never appears; json_schema
# replies match their schema; unsupported schema keywords and unknown types
# are refused with 400.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
ft=$build/runtime/ft
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v curl > /dev/null || fail "curl is needed"

"$build/tests/ftgen" --quiet --seed 11 --size tiny --format q8_0 --ctx 2048 --gguf "$tmp/m.gguf"
"$build/compiler/ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/b" --quiet
"$ft" serve "$tmp/b" --port 0 --threads 1 > "$tmp/log" 2>&1 &
pid=$!
trap 'kill $pid 2> /dev/null || true; wait $pid 2> /dev/null || true' EXIT
for _ in $(seq 300); do grep -qs '^listening on' "$tmp/log" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$tmp/log")
[ -n "$url" ] || fail "no address: $(cat "$tmp/log")"

id() { curl -s "$url/tokenize" -d "$(jq -n --arg c "$1" '{content: $c, parse_special: true}')" | jq -e 'if (.tokens | length) == 1 then .tokens[0] else error("not one token") end'; }
open=$(id '{'); close=$(id '}'); x=$(id 'x'); eog=$(id '<|im_end|>')
chat() { # FORMAT_JSON BIAS_JSON MAX_TOKENS [SEED]
  jq -n --argjson f "$1" --argjson b "$2" --argjson m "$3" --argjson s "${4:-0}" \
    '{messages: [{role: "user", content: "Reply with a JSON object."}], max_tokens: $m,
      temperature: (if $s == 0 then 0 else 1 end), seed: $s, logit_bias: $b}
     + (if $f == null then {} else {response_format: $f} end)' > "$tmp/req.json"
  curl -s "$url/v1/chat/completions" -d @"$tmp/req.json"
}
bias=$(jq -n --arg o "$open" --arg c "$close" --arg e "$eog" '{($o): 100, ($c): 90, ($e): 80}')
r=$(chat '{"type":"json_object"}' "$bias" 20)
[ "$(jq -r '.choices[0].message.content' <<< "$r")" = "{}" ] || fail "constrained: $r"
[ "$(jq -r '.choices[0].finish_reason' <<< "$r")" = stop ] || fail "constrained, finish: $r"
r=$(chat null "$bias" 6)
[ "$(jq -r '.choices[0].message.content' <<< "$r")" = "{{{{{{" ] || fail "unconstrained: $r"
# "x" wanted above all: never where JSON cannot have it (outside strings;
# the model pads with whitespace, as much as the filter allows, instead)
r=$(chat '{"type":"json_object"}' "$(jq -n --arg x "$x" --arg c "$close" '{($x): 100, ($c): 50}')" 20)
jq -e '.choices[0].message.content | gsub("[ \n\t\r]"; "") == "{}"' <<< "$r" > /dev/null || fail "a banned token: $r"

# Sampled: each reply that stops is a JSON object.
stops=0
for seed in $(seq 1 12); do
  r=$(chat '{"type":"json_object"}' '{}' 48 "$seed")
  c=$(jq -r '.choices[0].message.content' <<< "$r")
  case $(jq -r '.choices[0].finish_reason' <<< "$r") in
    stop) jq -e 'type == "object"' <<< "$c" > /dev/null || fail "seed $seed: not a JSON object: $c"; stops=$((stops + 1)) ;;
    length) [[ $c =~ ^[[:space:]]*\{ ]] || fail "seed $seed: does not start an object: $c" ;;
    *) fail "seed $seed: $r" ;;
  esac
done
echo "sampled: $stops of 12 replies closed their object within 48 tokens"
# streamed, the same
jq '. + {stream: true}' <<< "$(jq -n --argjson b "$bias" '{messages: [{role: "user", content: "x"}], max_tokens: 20, temperature: 0, logit_bias: $b, response_format: {type: "json_object"}}')" > "$tmp/s.json"
text=$(curl -sN "$url/v1/chat/completions" -d @"$tmp/s.json" | sed -n 's/^data: //p' | grep -v '^\[DONE\]' | jq -rj '.choices[0].delta.content // empty')
[ "$text" = "{}" ] || fail "streamed: $text"

# json_schema: sampled replies that stop match the schema (every required
# member, of its type, nothing else); an unsupported keyword is a 400 that
# names its JSON path.
schema='{"type":"json_schema","json_schema":{"name":"p","strict":true,"schema":{"type":"object","additionalProperties":false,"required":["ok","n","color"],"properties":{"ok":{"type":"boolean"},"n":{"type":"integer"},"color":{"enum":["red","green"]}}}}}'
stops=0
for seed in $(seq 1 6); do
  r=$(chat "$schema" '{}' 96 "$seed")
  c=$(jq -r '.choices[0].message.content' <<< "$r")
  [ "$(jq -r '.choices[0].finish_reason' <<< "$r")" = stop ] || continue
  jq -e '(.ok | type) == "boolean" and (.n | type) == "number" and (.n | floor) == .n
         and (.color == "red" or .color == "green") and (keys - ["ok", "n", "color"] == [])' <<< "$c" > /dev/null ||
    fail "seed $seed: does not match the schema: $c"
  stops=$((stops + 1))
done
[ "$stops" -gt 0 ] || fail "no json_schema reply closed its object within 96 tokens"
echo "json_schema: $stops of 6 sampled replies closed, each matching the schema"
code=$(curl -s -o "$tmp/e.json" -w '%{http_code}' "$url/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object","properties":{"a":{"type":"string","pattern":"x"}}}}}}')
[ "$code" = 400 ] && jq -e '.error.param == "response_format.json_schema.schema.properties.a.pattern"' "$tmp/e.json" > /dev/null || fail "json_schema: $code $(cat "$tmp/e.json")"
code=$(curl -s -o "$tmp/e.json" -w '%{http_code}' "$url/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"yaml"}}')
[ "$code" = 400 ] || fail "an unknown type: $code $(cat "$tmp/e.json")"
kill "$pid"; wait "$pid" || fail "the server exited with $?"
trap - EXIT
echo "ok: response_format json_object"
