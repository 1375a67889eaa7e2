#!/usr/bin/env bash
# ft serve over plain HTTP (curl), the hostile side on loopback: the bind
# refusal without a key, /health open and everything else behind the key
# (Bearer and x-api-key), 401/404/405/413 in each protocol's shape, query
# strings ignored, oversized headers, a loop of malformed bodies, clients
# that disconnect mid-stream beside well-formed requests whose output must
# not change, and the server alive and answering after all of it.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
ft=$build/runtime/ft
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v curl > /dev/null || fail "curl is needed"

"$build/tests/ftgen" --quiet --seed 11 --size tiny --format q8_0 --ctx 4096 --gguf "$tmp/m.gguf"
"$build/compiler/ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/b" --quiet

# A non-loopback bind needs a key.
set +e; "$ft" serve "$tmp/b" --host 0.0.0.0 --port 0 > "$tmp/refuse.out" 2>&1; rc=$?; set -e
[ "$rc" = 2 ] && grep -q "without --api-key" "$tmp/refuse.out" || fail "0.0.0.0 without a key: exit $rc: $(cat "$tmp/refuse.out")"

"$ft" serve "$tmp/b" --port 0 --threads 1 --api-key k3y --max-body 4K --parallel 2 > "$tmp/log" 2>&1 &
pid=$!
trap 'kill $pid 2> /dev/null || true; wait $pid 2> /dev/null || true' EXIT
for _ in $(seq 300); do grep -qs '^listening on' "$tmp/log" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$tmp/log")
[ -n "$url" ] || fail "no address: $(cat "$tmp/log")"

# req METHOD PATH [curl args...]: prints "STATUS BODY"
req() { local m=$1 p=$2; shift 2; curl -s -o "$tmp/body" -w '%{http_code}' -X "$m" "$url$p" "$@"; echo " $(cat "$tmp/body")"; }
expect() { # WHAT WANT_STATUS JQ_FILTER  (reads "STATUS BODY" on stdin)
  local what=$1 want=$2 filter=$3 got; got=$(cat)
  [ "${got%% *}" = "$want" ] || fail "$what: status ${got%% *}, wanted $want: ${got#* }"
  [ "$(jq -r "$filter" <<< "${got#* }")" = true ] || fail "$what: $filter on ${got#* }"
}
auth=(-H "Authorization: Bearer k3y")
chat='{"messages":[{"role":"user","content":"Hello"}],"max_tokens":8,"temperature":0}'

req GET /health | expect "health without a key" 200 '.status == "ok"'
req GET /v1/models | expect "models without a key" 401 '.error.type == "authentication_error" and .error.code == "invalid_api_key"'
req GET /v1/models -H "Authorization: Bearer k3y-" | expect "a longer key" 401 '.error.code == "invalid_api_key"'
req GET /v1/models -H "Authorization: Bearer k3" | expect "a prefix of the key" 401 '.error.code == "invalid_api_key"'
req POST /v1/messages -d '{}' | expect "messages without a key" 401 '.type == "error" and .error.type == "authentication_error"'
req GET /v1/models "${auth[@]}" | expect "models" 200 '.data[0].object == "model" and .data[0].context_length == 4096'
req GET /v1/models -H "x-api-key: k3y" -H "anthropic-version: 2023-06-01" | expect "models, Anthropic shape" 200 '.data[0].type == "model" and .has_more == false'
req GET /nowhere "${auth[@]}" | expect "unknown route" 404 '.error.type == "not_found_error"'
req GET /v1/chat/completions "${auth[@]}" | expect "GET on a POST route" 405 '.error.message | test("POST")'
big=$(head -c 6000 /dev/zero | tr '\0' 'a')
req POST /v1/chat/completions "${auth[@]}" -d "{\"messages\":[{\"role\":\"user\",\"content\":\"$big\"}]}" | expect "oversized body" 413 '.error.message | test("larger than 4096")'
req POST /v1/messages -H "x-api-key: k3y" -d "{\"messages\":[{\"role\":\"user\",\"content\":\"$big\"}]}" | expect "oversized body, Anthropic" 413 '.error.type == "request_too_large"'
req POST "/v1/messages?beta=true" -H "x-api-key: k3y" -d '{"max_tokens":4,"messages":[{"role":"user","content":"Hi"}]}' | expect "query string ignored" 200 '.type == "message"'
req POST /v1/chat/completions "${auth[@]}" -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":5000}' | expect "max_tokens past the context is clamped" 200 '.usage.completion_tokens <= 4096'
huge_header=$(head -c 70000 /dev/zero | tr '\0' 'h')
set +e; code=$(curl -s -o /dev/null -w '%{http_code}' "$url/health" -H "X-Big: $huge_header"); set -e
[ "$code" != 200 ] || fail "a 70 kB header was accepted"

# The reference: a greedy reply alone.
req POST /v1/chat/completions "${auth[@]}" -d "$chat" | expect "greedy" 200 '.choices[0].message.content | type == "string"'
want=$(jq -c '.choices[0].message.content' "$tmp/body")

# Prefix reuse: a conversation that goes on is evaluated from where the
# last request's session left off (at least the whole earlier prompt).
turn1='{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Name a color"}],"max_tokens":6,"temperature":0}'
req POST /v1/chat/completions "${auth[@]}" -d "$turn1" | expect "turn 1" 200 '.usage.prompt_tokens > 0'
n1=$(jq .usage.prompt_tokens "$tmp/body")
reply=$(jq -c '.choices[0].message.content' "$tmp/body")
turn2="{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Name a color\"},{\"role\":\"assistant\",\"content\":$reply},{\"role\":\"user\",\"content\":\"Another\"}],\"max_tokens\":6,\"temperature\":0}"
req POST /v1/chat/completions "${auth[@]}" -d "$turn2" | expect "turn 2 reuses turn 1" 200 ".usage.prompt_tokens_details.cached_tokens >= $n1"

# Forced tool calls: the prompt opens the call (named: up to its arguments),
# so it is longer than with tool_choice auto; a name not among the tools is a 400.
tools='[{"type":"function","function":{"name":"ls","parameters":{"type":"object"}}}]'
req POST /v1/chat/completions "${auth[@]}" -d "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":$tools,\"max_tokens\":3}" |
  expect "tool_choice auto" 200 '.usage.prompt_tokens > 0'
n_auto=$(jq .usage.prompt_tokens "$tmp/body")
req POST /v1/chat/completions "${auth[@]}" -d "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":$tools,\"max_tokens\":3,\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"ls\"}}}" |
  expect "tool_choice named" 200 ".usage.prompt_tokens > $n_auto + 5"
req POST /v1/chat/completions "${auth[@]}" -d "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":$tools,\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"rm\"}}}" |
  expect "tool_choice naming no tool" 400 '.error.param == "tool_choice"'
req POST /v1/messages -H "x-api-key: k3y" -d '{"max_tokens":3,"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"x"}]}' |
  expect "tool_choice any without tools" 400 '.error.type == "invalid_request_error"'

# /v1/completions: raw text, no template; greedy, it is what ft run prints
# for the same prompt (the server's generation path against the CLI's).
"$ft" run "$tmp/b" -p "The quick brown fox" -n 12 --json --threads 1 > "$tmp/run.json"
req POST /v1/completions "${auth[@]}" -d '{"prompt":"The quick brown fox","max_tokens":12,"temperature":0,"logprobs":2}' |
  expect "completions" 200 ".object == \"text_completion\" and .choices[0].text == $(jq .text "$tmp/run.json") and (.choices[0].logprobs.tokens | length) == .usage.completion_tokens"
req POST /v1/completions "${auth[@]}" -d "{\"prompt\":$(jq -c .tokens "$tmp/run.json" | jq -c '.[0:3]'),\"max_tokens\":2,\"temperature\":0,\"echo\":true}" |
  expect "completions from token ids" 200 '.usage.prompt_tokens == 3'
req POST /v1/completions "${auth[@]}" -d '{"prompt":"x","suffix":"y"}' | expect "completions suffix" 400 '.error.param == "suffix"'
req POST /v1/completions "${auth[@]}" -d '{"prompt":["a","b"]}' | expect "several prompts" 400 '.error.param == "prompt"'

# Malformed bodies in a loop: each one a 400 in the OpenAI shape.
bad=('{' '[]' 'null' '{"messages":5}' '{"messages":[{"role":1}]}' '{"messages":[{}]}'
     '{"messages":[{"role":"user","content":"x"}],"temperature":-1}' '{"x":"\ud800"}'
     "$(printf '{"a":%.0s' $(seq 80))" '{"messages":[{"role":"user","content":"x"}],"n":3}')
for i in $(seq 10); do
  for b in "${bad[@]}"; do
    code=$(curl -s -o "$tmp/bad" -w '%{http_code}' "$url/v1/chat/completions" "${auth[@]}" -d "$b")
    [ "$code" = 400 ] && jq -e '.error.type == "invalid_request_error"' "$tmp/bad" > /dev/null ||
      fail "malformed '$b': $code $(cat "$tmp/bad")"
  done
done

# Streams cut off by their clients, beside well-formed requests.
# 24 streams over the three streaming protocols, cut off after 0.1-0.9 s.
for i in $(seq 24); do
  case $((i % 3)) in
    0) path=/v1/chat/completions; b='{"messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":900,"stream":true}' ;;
    1) path=/v1/messages; b='{"messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":900,"stream":true}' ;;
    2) path=/v1/responses; b='{"input":"Tell me a story","max_output_tokens":900,"stream":true}' ;;
  esac
  curl -s -N --max-time 0.$((i % 9 + 1)) "$url$path" "${auth[@]}" -d "$b" > /dev/null 2>&1 &
done
for i in 1 2 3; do
  curl -s "$url/v1/chat/completions" "${auth[@]}" -d "$chat" > "$tmp/ok$i.json" &
done
wait $(jobs -p | grep -v "^$pid$") 2> /dev/null || true
for i in 1 2 3; do
  [ "$(jq -c '.choices[0].message.content' "$tmp/ok$i.json")" = "$want" ] ||
    fail "greedy reply $i beside cut-off streams: $(cat "$tmp/ok$i.json") (alone: $want)"
done
# A client that goes away half-way: the server notices (the stream is cancelled) and goes on.
(printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k3y\r\nContent-Length: 100\r\n\r\n{"messages":'; sleep 0.3) |
  timeout 5 bash -c "cat > /dev/tcp/127.0.0.1/${url##*:}" 2> /dev/null || true
# A streaming client that closes its socket right after sending: its
# request is cancelled (end-of-generation tokens banned, so only the
# disconnect can end it before max_tokens).
req POST /tokenize "${auth[@]}" -d '{"content":"<|im_end|><|endoftext|>"}' | expect "tokenize the end tokens" 200 '.tokens | length == 2'
ban=$(jq -c '[.tokens[] | {key: tostring, value: -100}] | from_entries' "$tmp/body")
body="{\"messages\":[{\"role\":\"user\",\"content\":\"Go on\"}],\"max_tokens\":4000,\"stream\":true,\"logit_bias\":$ban}"
# send_and_close BODY: the request, then the socket closed at once
send_and_close() {
  exec 3<> "/dev/tcp/127.0.0.1/${url##*:}"
  printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k3y\r\nContent-Length: %d\r\n\r\n%s' "${#1}" "$1" >&3
  exec 3>&-
}
# wait_cancelled N: until /v1/stats counts N cancelled requests and none active
wait_cancelled() {
  for _ in $(seq 50); do
    req GET /v1/stats "${auth[@]}" | expect "stats" 200 '.requests.active >= 0'
    [ "$(jq ".requests.cancelled >= $1 and .requests.active == 0" "$tmp/body")" = true ] && return
    sleep 0.1
  done
  fail "a disconnected client's request was not cancelled (wanted $1): $(cat "$tmp/body")"
}
send_and_close "$body"
wait_cancelled 1
jq -e '.requests.completed >= 3 and .tokens.generated > 0' "$tmp/body" > /dev/null || fail "stats: $(cat "$tmp/body")"
# the same for a whole (not streamed) reply, which sends nothing until it is done
send_and_close "${body/\"stream\":true/\"stream\":false}"
wait_cancelled 2
req GET /health | expect "health at the end" 200 '.status == "ok"'
req POST /v1/chat/completions "${auth[@]}" -d "$chat" | expect "greedy at the end" 200 ".choices[0].message.content == $want"
kill -0 $pid || fail "the server died"

# Without a key: the Host header must name loopback (DNS rebinding); the
# operations endpoints.
"$ft" serve "$tmp/b" --port 0 --threads 1 > "$tmp/log2" 2>&1 &
pid2=$!
trap 'kill $pid $pid2 2> /dev/null || true; wait 2> /dev/null || true' EXIT
for _ in $(seq 300); do grep -qs '^listening on' "$tmp/log2" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$tmp/log2")
port=${url##*:}
req GET /health -H "Host: evil.example:$port" | expect "a foreign Host" 403 '.error.type == "permission_error"'
req GET /health -H "Host: localhost:$port" | expect "Host: localhost" 200 '.status == "ok"'
req GET /health -H "Host: [::1]:$port" | expect "Host: [::1]" 200 '.status == "ok"'
req POST /tokenize -d '{"content":"Hello <|im_end|>"}' | expect "tokenize" 200 '.tokens | length >= 2'
toks=$(jq -c .tokens "$tmp/body")
req POST /detokenize -d "{\"tokens\":$toks}" | expect "detokenize" 200 '.content == "Hello <|im_end|>"'
req POST /detokenize -d '{"tokens":[99999]}' | expect "detokenize, bad id" 400 '.error.param == "tokens"'
req POST /apply-template -d "$chat" | expect "apply-template" 200 '.prompt == "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"'
echo "ok: ft serve HTTP limits, auth, errors and disconnects"
