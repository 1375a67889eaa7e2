#!/usr/bin/env bash
# ft launch claude|codex|opencode with fake agents on PATH: each records
# its arguments and environment and makes one request the way the real
# agent would (Anthropic messages with ANTHROPIC_*; Responses through the
# -c model_provider overrides; chat completions through
# OPENCODE_CONFIG_CONTENT). ft launch starts ft serve on the bundle (with
# FT_API_KEY as its key) and stops it after the agent, or uses a server
# already answering /health and leaves it running; the agent's exit status
# comes back; a missing agent is 127, an unknown one 2.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
ft=$build/runtime/ft
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp/bin" "$tmp/rec"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v curl > /dev/null || fail "curl is needed"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
alive() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/health" | grep -q 200; }

"$build/tests/ftgen" --quiet --seed 11 --size tiny --format q8_0 --ctx 2048 --gguf "$tmp/m.gguf"
"$build/compiler/ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/b" --quiet

export REC=$tmp/rec
cat > "$tmp/bin/claude" <<'EOF'
#!/usr/bin/env bash
{ printf 'arg:%s\n' "$@"; env | grep -E '^(ANTHROPIC_|CLAUDE_CODE_|API_TIMEOUT_MS=)' | sort; } > "$REC/claude.env"
curl -s "$ANTHROPIC_BASE_URL/v1/messages" -H "Authorization: Bearer $ANTHROPIC_AUTH_TOKEN" \
  -d "{\"model\":\"$ANTHROPIC_MODEL\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" > "$REC/claude.reply"
EOF
cat > "$tmp/bin/codex" <<'EOF'
#!/usr/bin/env bash
printf 'arg:%s\n' "$@" > "$REC/codex.env"
base=; key_var=; model=
while [ $# -gt 0 ]; do
  if [ "$1" = -c ]; then
    case $2 in
      model_providers.freetoken.base_url=*) base=${2#*=}; base=${base//\"/} ;;
      model_providers.freetoken.env_key=*) key_var=${2#*=}; key_var=${key_var//\"/} ;;
      model=*) model=${2#*=}; model=${model//\"/} ;;
    esac
    shift
  fi
  shift
done
curl -s "$base/responses" -H "Authorization: Bearer ${!key_var}" \
  -d "{\"model\":\"$model\",\"input\":\"hi\",\"max_output_tokens\":4}" > "$REC/codex.reply"
exit "${FAKE_RC:-0}"
EOF
cat > "$tmp/bin/opencode" <<'EOF'
#!/usr/bin/env bash
printf 'arg:%s\n' "$@" > "$REC/opencode.env"
printf '%s' "$OPENCODE_CONFIG_CONTENT" > "$REC/opencode.json"
p=$(jq -r '.provider.freetoken' <<< "$OPENCODE_CONFIG_CONTENT")
model=$(jq -r '.model' <<< "$OPENCODE_CONFIG_CONTENT"); model=${model#freetoken/}
curl -s "$(jq -r .options.baseURL <<< "$p")/chat/completions" -H "Authorization: Bearer $(jq -r .options.apiKey <<< "$p")" \
  -d "{\"model\":\"$model\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" > "$REC/opencode.reply"
EOF
chmod +x "$tmp/bin/"*
export PATH=$tmp/bin:$PATH

# 1. Claude Code: a server started on the bundle with the key, stopped after.
port=$(free_port)
FT_API_KEY=s3cret TMPDIR=$tmp "$ft" launch claude "$tmp/b" --port "$port" --model qwen -- -p "list the files" 2> "$tmp/launch1.err" ||
  fail "launch claude: exit $?: $(cat "$tmp/launch1.err")"
grep -q "starting ft serve" "$tmp/launch1.err" || fail "launch claude did not start a server: $(cat "$tmp/launch1.err")"
[ -f "$tmp/ft-launch-$port.log" ] || fail "no server log in TMPDIR"
for want in "arg:-p" "arg:list the files" "ANTHROPIC_BASE_URL=http://127.0.0.1:$port" "ANTHROPIC_AUTH_TOKEN=s3cret" \
  ANTHROPIC_MODEL=qwen ANTHROPIC_DEFAULT_HAIKU_MODEL=qwen ANTHROPIC_DEFAULT_SONNET_MODEL=qwen ANTHROPIC_DEFAULT_OPUS_MODEL=qwen \
  CLAUDE_CODE_SUBAGENT_MODEL=qwen CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1; do
  grep -qxF "$want" "$REC/claude.env" || fail "claude's environment lacks '$want': $(cat "$REC/claude.env")"
done
! grep -q '^ANTHROPIC_API_KEY=' "$REC/claude.env" || fail "ANTHROPIC_API_KEY passed on"
[ "$(jq -r .type "$REC/claude.reply")" = message ] || fail "claude's request: $(cat "$REC/claude.reply")"
[ "$(jq -r .model "$REC/claude.reply")" = qwen ] || fail "claude's model: $(cat "$REC/claude.reply")"
! alive "$port" || fail "the server ft launch started still runs after the agent"

# 2. Codex on a server already running (no key): used and left running;
#    the agent's exit status comes back.
port=$(free_port)
"$ft" serve "$tmp/b" --port "$port" --threads 1 > "$tmp/serve.log" 2>&1 &
spid=$!
trap 'kill $spid 2> /dev/null || true; wait $spid 2> /dev/null || true' EXIT
for _ in $(seq 300); do alive "$port" && break; sleep 0.1; done
set +e; FAKE_RC=3 "$ft" launch codex --port "$port" -- exec "list the files" 2> "$tmp/launch2.err"; rc=$?; set -e
[ "$rc" = 3 ] || fail "launch codex: exit $rc, wanted the agent's 3: $(cat "$tmp/launch2.err")"
grep -q "using the ft serve" "$tmp/launch2.err" || fail "launch codex did not use the running server: $(cat "$tmp/launch2.err")"
for want in 'arg:model="freetoken"' 'arg:model_provider="freetoken"' "arg:model_providers.freetoken.base_url=\"http://127.0.0.1:$port/v1\"" \
  'arg:model_providers.freetoken.wire_api="responses"' 'arg:model_providers.freetoken.env_key="FREETOKEN_API_KEY"' \
  'arg:model_providers.freetoken.supports_websockets=false' arg:exec "arg:list the files"; do
  grep -qxF "$want" "$REC/codex.env" || fail "codex's arguments lack '$want': $(cat "$REC/codex.env")"
done
[ "$(tail -1 "$REC/codex.env")" = "arg:list the files" ] || fail "the agent's own arguments come last: $(cat "$REC/codex.env")"
[ "$(jq -r .object "$REC/codex.reply")" = response ] || fail "codex's request: $(cat "$REC/codex.reply")"
alive "$port" || fail "the server ft launch found was stopped"

# 3. OpenCode on the same server: the provider config in the environment.
"$ft" launch opencode --port "$port" -- run "hi" 2> "$tmp/launch3.err" || fail "launch opencode: $(cat "$tmp/launch3.err")"
jq -e '.provider.freetoken.npm == "@ai-sdk/openai-compatible" and .model == "freetoken/freetoken"
  and .provider.freetoken.models.freetoken.limit.context == 2048' "$REC/opencode.json" > /dev/null ||
  fail "opencode's config: $(cat "$REC/opencode.json")"
[ "$(jq -r .object "$REC/opencode.reply")" = chat.completion ] || fail "opencode's request: $(cat "$REC/opencode.reply")"

# 4. Errors: an agent not on PATH, an unknown agent, no server and no bundle.
rm "$tmp/bin/opencode"
set +e; "$ft" launch opencode --port "$port" 2> "$tmp/launch4.err"; rc=$?; set -e
[ "$rc" = 127 ] && grep -q "cannot run 'opencode'" "$tmp/launch4.err" || fail "a missing agent: exit $rc: $(cat "$tmp/launch4.err")"
set +e; "$ft" launch aider --port "$port" 2> "$tmp/launch5.err"; rc=$?; set -e
[ "$rc" = 2 ] && grep -q "claude, codex or opencode" "$tmp/launch5.err" || fail "an unknown agent: exit $rc"
kill "$spid"; wait "$spid" || fail "the server exited with $?"
trap - EXIT
set +e; "$ft" launch claude --port "$port" 2> "$tmp/launch6.err"; rc=$?; set -e
[ "$rc" = 2 ] && grep -q "give a BUNDLE" "$tmp/launch6.err" || fail "no server, no bundle: exit $rc: $(cat "$tmp/launch6.err")"
echo "ok: ft launch claude, codex, opencode"
