#!/usr/bin/env bash
# ft serve's prefix cache and semantic anchors over HTTP (issue 11, item
# 4), on an attention model (Qwen3-style fixture) and on a hybrid with
# recurrent layers (qwen35moe: Gated DeltaNet state, which only anchors can
# bring back):
#   - a multi-turn tool conversation: the second request reports
#     cached_tokens > 0 and its greedy reply is the one a cold server
#     (--prefix-cache off) gives;
#   - the last tool result edited: the request restores at least up to the
#     anchor before that tool result, and /metrics counts an anchor hit;
#   - Anthropic: Claude Code's per-request billing header in the first
#     system block does not defeat the cache;
#   - side requests (no tools, small max_tokens) under a small KV budget
#     evict each other, not the conversation's anchors.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
ft=$build/runtime/ft
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v curl > /dev/null || fail "curl is needed"

"$build/tests/ftgen" --quiet --seed 11 --size tiny --format q8_0 --ctx 2048 --gguf "$tmp/a.gguf"
"$build/compiler/ftc" compile --cuda-arch none "$tmp/a.gguf" -o "$tmp/attn" --quiet
"$build/tests/ftgen" --quiet --arch qwen35moe --seed 5 --ctx 2048 --gguf "$tmp/r.gguf"
"$build/compiler/ftc" compile --cuda-arch none "$tmp/r.gguf" -o "$tmp/hybrid" --quiet

pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; wait "$p" 2> /dev/null || true; done' EXIT
# start NAME BUNDLE [ft serve args...]: sets url
start() {
  local name=$1 bundle=$2; shift 2
  "$ft" serve "$bundle" --port 0 --threads 1 "$@" > "$tmp/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 300); do grep -qs '^listening on' "$tmp/$name.log" && break; sleep 0.1; done
  url=$(sed -n 's/^listening on //p' "$tmp/$name.log")
  [ -n "$url" ] || fail "$name: no address: $(cat "$tmp/$name.log")"
}
stop() { kill "${pids[-1]}"; wait "${pids[-1]}" || fail "the server exited with $?"; unset 'pids[-1]'; }
post() { curl -s "$1$2" -d @"$3"; }
metric() { curl -s "$1/metrics" | sed -n "s/^$2 //p"; }

tools='[{"type":"function","function":{"name":"ls","description":"List the files in a directory","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}]'
sys='{"role":"system","content":"You are a coding agent working in a C repository. Use the tools to look around before answering. Keep replies short."}'
user='{"role":"user","content":"Which files are in this directory?"}'
call='{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{\"path\": \".\"}"}}]}'
result() { printf '{"role":"tool","tool_call_id":"c1","content":"%s"}' "$1"; }
body() { printf '{"messages":[%s],"tools":%s,"max_tokens":12,"temperature":0}' "$1" "$tools"; }
body "$sys,$user" > "$tmp/r1.json"
body "$sys,$user,$call,$(result 'main.c\\nutil.c\\nMakefile')" > "$tmp/r2.json"
body "$sys,$user,$call,$(result 'main.c\\nutil.c\\nutil.h\\nREADME.md\\nMakefile')" > "$tmp/r3.json"

for bundle in attn hybrid; do
  start "$bundle-cold" "$tmp/$bundle" --prefix-cache off
  cold2=$(post "$url" /v1/chat/completions "$tmp/r2.json")
  cold3=$(post "$url" /v1/chat/completions "$tmp/r3.json")
  [ "$(jq -r '.usage.prompt_tokens_details.cached_tokens' <<< "$cold2")" = 0 ] || fail "$bundle: a cold server reused tokens: $cold2"
  # the prompt up to the edited tool result: where its anchor is
  prompt=$(post "$url" /apply-template "$tmp/r3.json" | jq -r .prompt)
  prompt=${prompt%%"<|im_start|>user"$'\n'"<tool_response>"*}
  jq -n --arg p "$prompt" '{content: $p, add_special: true, parse_special: true}' > "$tmp/tok.json"
  upto=$(post "$url" /tokenize "$tmp/tok.json" | jq '.tokens | length')
  [ "$bundle" = attn ] && upto_attn=$upto
  stop

  start "$bundle" "$tmp/$bundle"
  r1=$(post "$url" /v1/chat/completions "$tmp/r1.json")
  [ "$(jq -r '.usage.prompt_tokens_details.cached_tokens' <<< "$r1")" = 0 ] || fail "$bundle: the first request reused tokens: $r1"
  r2=$(post "$url" /v1/chat/completions "$tmp/r2.json")
  c2=$(jq -r '.usage.prompt_tokens_details.cached_tokens' <<< "$r2")
  [ "$c2" -gt 0 ] || fail "$bundle: the second request reused nothing: $r2"
  [ "$(jq -c .choices <<< "$r2")" = "$(jq -c .choices <<< "$cold2")" ] ||
    fail "$bundle: the second reply differs from a cold server's: $r2 / $cold2"
  hits=$(metric "$url" ft_anchor_hits_total)
  r3=$(post "$url" /v1/chat/completions "$tmp/r3.json")
  c3=$(jq -r '.usage.prompt_tokens_details.cached_tokens' <<< "$r3")
  [ "$c3" -ge "$upto" ] || fail "$bundle: the edited tool result restored $c3 tokens, the anchor before it is at $upto: $r3"
  [ "$c3" -lt "$(jq -r .usage.prompt_tokens <<< "$r3")" ] || fail "$bundle: restored the whole prompt: $r3"
  [ "$(jq -c .choices <<< "$r3")" = "$(jq -c .choices <<< "$cold3")" ] ||
    fail "$bundle: the edited request's reply differs from a cold server's: $r3 / $cold3"
  # On the hybrid only the anchor can restore (the recurrent state); on the
  # attention model full cached pages may reach past it, into the tool
  # message's unchanged opening.
  if [ "$bundle" = hybrid ]; then
    [ "$c3" = "$upto" ] || fail "$bundle: the edit restored $c3, not the anchor at $upto"
    [ "$(metric "$url" ft_anchor_hits_total)" -gt "$hits" ] || fail "$bundle: /metrics counts no anchor hit for the edit"
  fi
  [ "$(metric "$url" ft_prefix_cache_hits_total)" -ge 2 ] || fail "$bundle: ft_prefix_cache_hits_total"
  [ "$(metric "$url" ft_kv_anchors)" -gt 0 ] || fail "$bundle: ft_kv_anchors"
  [ "$bundle" = attn ] && page=$(metric "$url" ft_kv_page_bytes)

  # Responses API: the same count as input_tokens_details.cached_tokens.
  jq -n --argjson t "$tools" '{instructions: "You are a coding agent working in a C repository. Use the tools to look around before answering. Keep replies short.", input: "Which files are in this directory?", tools: [$t[0].function | {type: "function", name, description, parameters}], max_output_tokens: 4, temperature: 0}' > "$tmp/resp.json"
  post "$url" /v1/responses "$tmp/resp.json" > /dev/null
  rr=$(post "$url" /v1/responses "$tmp/resp.json")
  [ "$(jq -r .usage.input_tokens_details.cached_tokens <<< "$rr")" -gt 0 ] || fail "$bundle: responses: $rr"

  # Anthropic: Claude Code's billing header changes every request; two
  # requests that differ only there share their whole system prompt.
  for nonce in 1111 2222; do
    jq -n --arg n "$nonce" '{model: "ft", max_tokens: 4, temperature: 0,
      system: [{type: "text", text: ("x-anthropic-billing-header: cc_version=2.1.0; cc_entrypoint=cli; cch=" + $n + ";")},
               {type: "text", text: "You are Claude Code, a coding agent.", cache_control: {type: "ephemeral"}},
               {type: "text", text: "Work in the repository. Use the tools."}],
      tools: [{name: "ls", description: "List files", input_schema: {type: "object", properties: {path: {type: "string"}}}}],
      messages: [{role: "user", content: "What is here?"}]}' > "$tmp/a$nonce.json"
  done
  a1=$(curl -s "$url/v1/messages" -d @"$tmp/a1111.json")
  a2=$(curl -s "$url/v1/messages" -d @"$tmp/a2222.json")
  [ "$(jq -r .type <<< "$a2")" = message ] || fail "$bundle: anthropic: $a2"
  ca=$(jq -r .usage.cache_read_input_tokens <<< "$a2")
  [ "$ca" -gt 0 ] || fail "$bundle: the billing header defeated the cache: $a2"
  [ "$(jq -c .content <<< "$a1")" = "$(jq -c .content <<< "$a2")" ] || fail "$bundle: billing header changed the reply: $a1 / $a2"
  stop
done

# Side requests under a small KV budget: a conversation, then many short
# requests without tools (titles) that each need new pages; they take the
# low cache priority, evict each other first, and the conversation's next
# request still restores its anchors.
[ "$page" -gt 0 ] || fail "ft_kv_page_bytes: $page"
start budget "$tmp/attn" --parallel 1 --kv-budget $((page * 96))
post "$url" /v1/chat/completions "$tmp/r2.json" > /dev/null
for i in $(seq 16); do
  printf '{"messages":[{"role":"user","content":"Write a five word title for note %s about %s and %s, then a subtitle for %s."}],"max_tokens":2,"temperature":0}' \
    "$i" "$((i * 7919))" "$((i * 104729))" "$((i * 31))" > "$tmp/side.json"
  s=$(post "$url" /v1/chat/completions "$tmp/side.json")
  [ "$(jq -r .object <<< "$s")" = chat.completion ] || fail "side request $i: $s"
done
[ "$(metric "$url" ft_kv_evictions_total)" -gt 0 ] || fail "the side requests evicted nothing: the budget is too large for this test"
r3=$(post "$url" /v1/chat/completions "$tmp/r3.json")
c3=$(jq -r '.usage.prompt_tokens_details.cached_tokens' <<< "$r3")
[ "$c3" -ge "$upto_attn" ] || fail "side requests evicted the conversation: the edit restored $c3 tokens, wanted >= $upto_attn: $r3"
stop
echo "ok: prefix cache and anchors over HTTP (attention and recurrent), billing header, side requests"
