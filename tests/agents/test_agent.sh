#!/usr/bin/env bash
# A real coding agent against ft serve (ctest agents_claude, agents_codex,
# agents_opencode; label "agents", opt-in: ctest -L agents). The agent
# (installed by install.sh, the agents_npm fixture) is run by `ft launch`,
# which points it at the server, in its non-interactive mode with its
# JSON event output:
#   claude    claude -p ... --output-format stream-json --verbose --allowedTools Read
#   codex     codex exec --skip-git-repo-check --json ...
#   opencode  opencode run --format json ...
# The server (a tiny random-weight fixture, a 32768-token context: the
# agents' system prompts and tools run to 15,000-28,000 tokens) runs with
# --script: its first reply is a call of one of the agent's own tools
# (Read, exec_command, read) on a file holding a marker, its second a final
# answer; requests with no tools (OpenCode's title) take a "%% no-tools"
# reply. Checked in the agent's own output: the tool ran and its result
# (the marker) went back, the final answer came out, and the usage the
# agent reports says the second request read most of its prompt from the
# prefix cache. Skips (77) only without node/npm.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR AGENT}
agent=${2:?usage: $0 BUILD_DIR claude|codex|opencode}
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
tmp=$(cd "$tmp" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  echo "SKIP: node and npm are needed for the agent tests"
  exit 77
fi
bin=$build/tests/agents-npm/node_modules/.bin
[ -x "$bin/$agent" ] || fail "$bin/$agent is missing: ctest -L agents runs agents_npm (tests/agents/install.sh) first"

"$build/tests/ftgen" --quiet --seed 11 --size tiny --format q8_0 --ctx 32768 --gguf "$tmp/m.gguf"
"$build/compiler/ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/b" --quiet
work=$tmp/work
mkdir -p "$work" "$tmp/home"
marker="freetoken agent check 4711"
echo "$marker" > "$work/hello.txt"
case $agent in
  claude) call='{"name": "Read", "arguments": {"file_path": "'"$work"'/hello.txt"}}' ;;
  codex) call='{"name": "exec_command", "arguments": {"cmd": "cat hello.txt"}}' ;;
  opencode) call='{"name": "read", "arguments": {"filePath": "'"$work"'/hello.txt"}}' ;;
  *) fail "unknown agent $agent" ;;
esac
cat > "$tmp/script.txt" <<SCRIPT
<think>
I should read the file.
</think>

<tool_call>
$call
</tool_call><|im_end|>
%%
<think>
The tool returned the file.
</think>

The file holds the marker.<|im_end|>
%% no-tools
Reading a file<|im_end|>
SCRIPT

pid=
trap '[ -z "$pid" ] || { kill "$pid" 2> /dev/null; wait "$pid" 2> /dev/null; } || true' EXIT
"$build/runtime/ft" serve "$tmp/b" --port 0 --threads 2 --ctx 32768 --script "$tmp/script.txt" > "$tmp/serve.log" 2>&1 &
pid=$!
for _ in $(seq 300); do grep -qs '^listening on http://' "$tmp/serve.log" && break; sleep 0.1; done
port=$(sed -n 's/^listening on http:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/serve.log")
[ -n "$port" ] || fail "ft serve did not start: $(cat "$tmp/serve.log")"

# The agent in a home of its own: no user configuration, no login.
export PATH=$bin:$PATH HOME=$tmp/home CODEX_HOME=$tmp/home/.codex \
  XDG_CONFIG_HOME=$tmp/home/.config XDG_DATA_HOME=$tmp/home/.local/share \
  XDG_CACHE_HOME=$tmp/home/.cache XDG_STATE_HOME=$tmp/home/.local/state
mkdir -p "$CODEX_HOME"
unset ANTHROPIC_API_KEY OPENAI_API_KEY FT_API_KEY
ask="Read hello.txt and tell me what it says"
case $agent in
  claude) args=(-p "$ask" --output-format stream-json --verbose --allowedTools Read) ;;
  codex) args=(exec --skip-git-repo-check --json "$ask") ;;
  opencode) args=(run --format json "$ask") ;;
esac
set +e
(cd "$work" && timeout 600 "$build/runtime/ft" launch "$agent" --port "$port" -- "${args[@]}") \
  > "$tmp/agent.out" 2> "$tmp/agent.err" < /dev/null
rc=$?
set -e
[ "$rc" = 0 ] || fail "$agent exited with $rc: $(tail -20 "$tmp/agent.err") $(tail -c 2000 "$tmp/agent.out")"

python3 - "$agent" "$tmp/agent.out" "$marker" <<'EOF'
import json, sys
agent, path, marker = sys.argv[1:]
ev = []
for line in open(path):
    try:
        ev.append(json.loads(line))
    except ValueError:
        pass  # a launcher's or agent's note
def fail(msg):
    sys.exit(f"FAIL ({agent}): {msg}\n" + open(path).read()[-3000:])
if agent == "claude":
    results = [c for e in ev if e.get("type") == "user"
               for c in e["message"]["content"] if isinstance(c, dict) and c.get("type") == "tool_result"]
    if not any(marker in json.dumps(r["content"]) for r in results):
        fail("no Read tool_result holding the marker")
    first = next(e["message"]["usage"] for e in ev if e.get("type") == "assistant")
    res = next((e for e in ev if e.get("type") == "result"), None)
    if not res or res.get("subtype") != "success" or "holds the marker" not in res.get("result", ""):
        fail("no successful result with the final answer")
    prompt, cached = first["input_tokens"], res["usage"]["cache_read_input_tokens"]
    turns = res.get("num_turns")
elif agent == "codex":
    ex = [e["item"] for e in ev if e.get("type") == "item.completed" and e["item"].get("type") == "command_execution"]
    if not any(marker in x.get("aggregated_output", "") and x.get("exit_code") == 0 for x in ex):
        fail("no command_execution with the marker in its output")
    if not any(e.get("type") == "item.completed" and e["item"].get("type") == "agent_message"
               and "holds the marker" in e["item"].get("text", "") for e in ev):
        fail("no agent_message with the final answer")
    u = next(e["usage"] for e in ev if e.get("type") == "turn.completed")
    # input_tokens: both requests' prompts together, about equal halves
    prompt, cached, turns = u["input_tokens"] // 2, u["cached_input_tokens"], 2
elif agent == "opencode":
    tools = [e["part"] for e in ev if e.get("type") == "tool_use"]
    if not any(t["tool"] == "read" and t["state"]["status"] == "completed" and marker in t["state"]["output"]
               for t in tools):
        fail("no completed read tool part with the marker")
    if not any(e.get("type") == "text" and "holds the marker" in e["part"]["text"] for e in ev):
        fail("no text part with the final answer")
    steps = [e["part"]["tokens"] for e in ev if e.get("type") == "step_finish"]
    if len(steps) < 2:
        fail("fewer than two steps")
    prompt, cached, turns = steps[0]["input"], steps[1]["cache"]["read"], len(steps)
# The second request shares all of the first's prompt but the reply's
# last tokens: most of it comes from the cache.
print(f"{agent}: {turns} requests, first prompt {prompt} tokens, second: {cached} cached")
if not (prompt > 1000 and cached > prompt // 2):
    fail(f"the second request reused {cached} tokens of a {prompt}-token prompt")
EOF
