#!/usr/bin/env bash
# The agent-edit scenario through ft serve's HTTP API (issue 11's
# benchmark): a long tool conversation (a system prompt with tools, then
# rounds of a user message, an assistant tool call and a tool result) is
# sent once; then
#   edit:   the same with the last tool result edited,
#   append: the same with one more tool call and result,
# each timed to its first token (non-streamed, max_tokens 1: the reply is
# the first token). Against one server per --prefix-cache mode: anchors
# (the default), rewind (kept sessions truncated to the shared prefix) and
# off (cold). Prints one JSON line per mode and scenario with the TTFT
# (median of REPS, each a different edit) and cached_tokens.
#
#   scripts/bench-serve-agent.sh BUNDLE [TOKENS [REPS [THREADS]]]
#
# TOKENS: the conversation's rough length (default 1500); the servers run
# with ft serve's default context (the model's, at most 4096), so keep the
# conversation and an appended round within it. A benchmark, not a test:
# nothing is checked.
set -euo pipefail
bundle=${1:?usage: $0 BUNDLE [TOKENS [REPS [THREADS]]]}
tokens=${2:-1500}
reps=${3:-3}
threads=${4:-2}
ft=${FT:-$(dirname "$0")/../build/runtime/ft}
tmp=$(mktemp -d)
pid=
# the server running, if any, goes with the script (an interrupted run
# included); the scratch folder too unless KEEP is set
trap '[ -z "$pid" ] || { kill "$pid" 2> /dev/null; wait "$pid" 2> /dev/null; }; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT

# Tokens per word of the bundle's vocabulary, measured on a first server.
calibrate() {
  "$ft" serve "$bundle" --port 0 --threads "$threads" > "$tmp/log" 2>&1 &
  pid=$!
  local url
  for _ in $(seq 600); do grep -qs '^listening on' "$tmp/log" && break; sleep 0.1; done
  url=$(sed -n 's/^listening on //p' "$tmp/log")
  local text="the file returns value struct index buffer tokens error static const page session if while return size count layer tool path result cache anchor prefix engine step"
  local n
  n=$(curl -s "$url/tokenize" -d "{\"content\": \"$text $text $text $text\"}" | jq '.tokens | length')
  kill "$pid"; wait "$pid" || true
  awk -v n="$n" 'BEGIN { print n / 112 }'
}
ratio=$(calibrate)
# The conversation: about a quarter of TOKENS of system prompt and tools,
# the rest in rounds of ~TOKENS/12 (the words measured in tokens first).
python3 - "$tokens" "$reps" "$tmp" "$ratio" <<'EOF'
import json, random, sys
tokens, reps, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ratio = float(sys.argv[4])  # tokens per word of this vocabulary
rng = random.Random(1)
W = "the file returns value struct index buffer tokens error static const page session if while return size count layer tool path result cache anchor prefix engine step".split()
words = lambda n: " ".join(rng.choice(W) + ("\n" if i % 12 == 11 else "") for i in range(n))
tools = [{"type": "function", "function": {"name": f"tool{i}", "description": words(30),
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}} for i in range(4)]
sys_words = int(max(tokens // 4 - 4 * 45 * ratio, 20) / ratio)
msgs = [{"role": "system", "content": words(sys_words)}]
round_words = int(max(tokens // 12, 30) / ratio)
n = tokens // 4
k = 0
while n < tokens:
    k += 1
    msgs += [{"role": "user", "content": words(round_words // 6)},
             {"role": "assistant", "content": "", "tool_calls": [{"id": f"c{k}", "type": "function",
               "function": {"name": "tool1", "arguments": json.dumps({"path": f"src/f{k}.c"})}}]},
             {"role": "tool", "tool_call_id": f"c{k}", "content": words(round_words)}]
    n += int((round_words + round_words // 6) * ratio) + 40
def body(m):
    return json.dumps({"messages": m, "tools": tools, "max_tokens": 1, "temperature": 0})
open(f"{out}/base.json", "w").write(body(msgs))
for r in range(reps):
    e = [dict(x) for x in msgs]
    e[-1]["content"] = words(round_words)
    open(f"{out}/edit{r}.json", "w").write(body(e))
    a = msgs + [{"role": "assistant", "content": "", "tool_calls": [{"id": "cx", "type": "function",
                 "function": {"name": "tool2", "arguments": json.dumps({"path": f"x{r}"})}}]},
                {"role": "tool", "tool_call_id": "cx", "content": words(round_words // 2)}]
    open(f"{out}/append{r}.json", "w").write(body(a))
EOF

median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
for mode in anchors rewind off; do
  "$ft" serve "$bundle" --port 0 --threads "$threads" --parallel 1 \
    --prefix-cache "$mode" > "$tmp/log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do grep -qs '^listening on' "$tmp/log" && break; sleep 0.1; done
  url=$(sed -n 's/^listening on //p' "$tmp/log")
  [ -n "$url" ] || { echo "no server: $(cat "$tmp/log")" >&2; kill "$pid"; exit 1; }
  for scenario in edit append; do
    : > "$tmp/t"
    for r in $(seq 0 $((reps - 1))); do
      curl -s "$url/v1/chat/completions" -d @"$tmp/base.json" > /dev/null # the conversation so far
      curl -s -o "$tmp/r.json" -w '%{time_total}\n' "$url/v1/chat/completions" -d @"$tmp/$scenario$r.json" >> "$tmp/t"
      cached=$(jq -r '.usage.prompt_tokens_details.cached_tokens' "$tmp/r.json")
      prompt=$(jq -r '.usage.prompt_tokens' "$tmp/r.json")
    done
    printf '{"mode": "%s", "scenario": "%s", "prompt_tokens": %s, "cached_tokens": %s, "ttft_ms": %.1f}\n' \
      "$mode" "$scenario" "$prompt" "$cached" "$(median < "$tmp/t" | awk '{print $1 * 1000}')"
  done
  kill "$pid"; wait "$pid" || true
done
