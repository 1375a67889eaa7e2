#!/usr/bin/env bash
# ft serve on a model with recurrent layers (a Qwen3.5-style hybrid: Gated
# DeltaNet keeps per-session state, which a rewind cannot truncate): a
# request that shares a prefix with an earlier one restores an anchor
# (state included) instead of failing, and the reply is the one a fresh
# session gives; with --prefix-cache off each request starts over.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
ft=$build/runtime/ft
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v curl > /dev/null || fail "curl is needed"

"$build/tests/ftgen" --quiet --arch qwen35moe --seed 5 --gguf "$tmp/m.gguf"
"$build/compiler/ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/b" --quiet

"$ft" serve "$tmp/b" --port 0 --threads 1 --parallel 1 > "$tmp/log" 2>&1 &
pid=$!
trap 'kill $pid 2> /dev/null || true; wait $pid 2> /dev/null || true' EXIT
for _ in $(seq 300); do grep -qs '^listening on' "$tmp/log" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$tmp/log")
[ -n "$url" ] || fail "no address: $(cat "$tmp/log")"

chat() { curl -s "$url/v1/chat/completions" -d "{\"messages\":[{\"role\":\"user\",\"content\":\"$1\"}],\"max_tokens\":6,\"temperature\":0}"; }
a=$(chat "Hello there")
[ "$(jq -r '.object' <<< "$a")" = chat.completion ] || fail "first request: $a"
# The same prompt again: the kept session shares all but the last token.
b=$(chat "Hello there")
[ "$(jq -r '.object' <<< "$b")" = chat.completion ] || fail "the same prompt again: $b"
[ "$(jq -c '.choices[0].message.content' <<< "$a")" = "$(jq -c '.choices[0].message.content' <<< "$b")" ] ||
  fail "the replies differ: $a / $b"
# The prompt's end and its messages were anchored (with the state).
[ "$(jq -r '.usage.prompt_tokens_details.cached_tokens' <<< "$b")" -gt 0 ] || fail "the same prompt again reused nothing: $b"
# A prompt that shares only a prefix.
c=$(chat "Hello there, friend")
[ "$(jq -r '.object' <<< "$c")" = chat.completion ] || fail "a shared prefix: $c"
kill "$pid"; wait "$pid" || fail "the server exited with $?"
trap - EXIT

# Without the prefix cache (off), and with kept sessions rewound (rewind,
# what cuda does: a recurrent session cannot be truncated, so it starts
# over instead of failing): every request from the start, the same reply.
for mode in off rewind; do
  "$ft" serve "$tmp/b" --port 0 --threads 1 --parallel 1 --prefix-cache $mode > "$tmp/log" 2>&1 &
  pid=$!
  trap 'kill $pid 2> /dev/null || true; wait $pid 2> /dev/null || true' EXIT
  for _ in $(seq 300); do grep -qs '^listening on' "$tmp/log" && break; sleep 0.1; done
  url=$(sed -n 's/^listening on //p' "$tmp/log")
  [ -n "$url" ] || fail "$mode: no address: $(cat "$tmp/log")"
  d=$(chat "Hello there")
  d=$(chat "Hello there")
  [ "$(jq -r '.usage.prompt_tokens_details.cached_tokens' <<< "$d")" = 0 ] || fail "$mode: a recurrent session claims reuse: $d"
  [ "$(jq -c '.choices[0].message.content' <<< "$a")" = "$(jq -c '.choices[0].message.content' <<< "$d")" ] ||
    fail "$mode: the reply differs: $a / $d"
  e=$(chat "Hello there, friend")
  [ "$(jq -r '.object' <<< "$e")" = chat.completion ] || fail "$mode: a shared prefix: $e"
  kill "$pid"; wait "$pid" || fail "$mode: the server exited with $?"
  trap - EXIT
done
echo "ok: ft serve on a recurrent model"
