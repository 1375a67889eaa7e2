#!/usr/bin/env bash
# ft bench --agent-edit on a tiny fixture with a 2048-token context (ftgen
# --ctx): the conversation is evaluated message by message with
# anchors, the edited request restores the anchor before its last tool
# result and gives logits bit-identical to computing it cold, and an
# appended tool result restores the whole conversation. Timings on this
# size are not checked (a benchmark, not a test); the restored counts are.
# Also: --kv-budget too small for one page is refused clearly.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
ftc=$build/compiler/ftc
ftgen=$build/tests/ftgen
ft=$build/runtime/ft
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$ftgen" --quiet --seed 3 --size tiny --format q8_0 --ctx 2048 --gguf "$tmp/m.gguf"
"$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/b" --quiet

"$ft" bench "$tmp/b" --agent-edit --ctx 1200 --reps 2 --threads 2 --json > "$tmp/agent.json"
for k in ttft_cold_ms ttft_anchor_ms ttft_append_ms anchor_restored_tokens append_restored_tokens; do
  [ "$(jq "has(\"$k\")" "$tmp/agent.json")" = true ] || fail "--agent-edit --json lacks $k"
done
[ "$(jq .anchor_logits_identical "$tmp/agent.json")" = true ] || fail "restored logits differ from cold"
[ "$(jq '.messages > 4 and .anchors == .messages' "$tmp/agent.json")" = true ] || fail "too few messages or anchors"
# The edit restores everything before the last tool result, an append the
# whole conversation.
[ "$(jq '.anchor_restored_tokens > .conversation_tokens * 0.8 and .anchor_restored_tokens < .conversation_tokens' "$tmp/agent.json")" = true ] ||
  fail "the edit restored $(jq .anchor_restored_tokens "$tmp/agent.json") of $(jq .conversation_tokens "$tmp/agent.json") tokens"
[ "$(jq '.append_restored_tokens >= .conversation_tokens' "$tmp/agent.json")" = true ] || fail "the append did not restore the conversation"
"$ft" bench "$tmp/b" --agent-edit --ctx 300 --reps 1 --threads 2 > "$tmp/agent.txt"
grep -q 'bit-identical to cold' "$tmp/agent.txt" || fail "the report: $(cat "$tmp/agent.txt")"

if "$ft" bench "$tmp/b" --agent-edit --ctx 300 --kv-budget 1K > "$tmp/small.txt" 2> "$tmp/small.err"; then
  fail "a KV budget below one page was accepted"
fi
grep -q 'smaller than one page' "$tmp/small.err" || fail "the small budget's error: $(cat "$tmp/small.err")"
echo ok
