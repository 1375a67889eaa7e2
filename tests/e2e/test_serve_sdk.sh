#!/usr/bin/env bash
# ft serve against the real OpenAI and Anthropic SDKs from npm (openai,
# @anthropic-ai/sdk, pinned by tests/serve/package-lock.json and installed
# here with npm ci): two servers on a fixture with a 2048-token context,
# one sampling for real behind an API key, one with --script so that tool
# calls are deterministic; tests/serve/sdk_test.mjs makes the calls.
# Skips (exit 77) only when node or npm is missing.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  echo "SKIP: node and npm are needed for the SDK tests (scripts/install-deps.sh installs them)"
  exit 77
fi

# The SDKs, installed once per build tree (again when the lock file changes).
npmdir=$build/tests/serve-npm
if ! cmp -s "$src/tests/serve/package-lock.json" "$npmdir/package-lock.json" || [ ! -d "$npmdir/node_modules" ]; then
  rm -rf "$npmdir"; mkdir -p "$npmdir"
  cp "$src/tests/serve/package.json" "$src/tests/serve/package-lock.json" "$npmdir/"
  (cd "$npmdir" && npm ci --no-audit --no-fund --loglevel=error) || fail "npm ci in $npmdir"
fi
cp "$src/tests/serve/sdk_test.mjs" "$npmdir/"

"$build/tests/ftgen" --quiet --seed 11 --size tiny --format q8_0 --ctx 2048 --gguf "$tmp/m.gguf"
"$build/compiler/ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/b" --quiet
cat > "$tmp/script.txt" <<'SCRIPT'
<think>
I should list the files.
</think>

<tool_call>
{"name": "ls", "arguments": {"path": "."}}
</tool_call><|im_end|>
%%
The directory has two files.<|im_end|>
SCRIPT

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done; wait 2> /dev/null || true; }
trap cleanup EXIT
# start_server LOG ARGS...: starts ft serve on a free port; prints its URL
start_server() {
  local log=$1; shift
  "$build/runtime/ft" serve "$tmp/b" --port 0 --threads 1 "$@" > "$log" 2>&1 &
  pids+=($!)
  for _ in $(seq 300); do
    if grep -qs '^listening on http://' "$log"; then sed -n 's/^listening on //p' "$log"; return; fi
    kill -0 "${pids[-1]}" 2> /dev/null || fail "ft serve exited: $(cat "$log")"
    sleep 0.1
  done
  fail "ft serve did not print its address: $(cat "$log")"
}
plain=$(start_server "$tmp/plain.log" --api-key sekret --parallel 2)
scripted=$(start_server "$tmp/scripted.log" --script "$tmp/script.txt")
echo "servers: $plain (key) and $scripted (--script)"
(cd "$npmdir" && timeout 300 node sdk_test.mjs "$plain" "$scripted" sekret) || fail "SDK checks"
