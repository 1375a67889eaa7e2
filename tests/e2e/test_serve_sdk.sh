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
# start_server LOG ARGS...: starts ft serve on a free port (its pid in pids;
# not in a subshell, so that the trap can stop it)
start_server() {
  local log=$1; shift
  "$build/runtime/ft" serve "$tmp/b" --port 0 --threads 1 "$@" > "$log" 2>&1 &
  pids+=($!)
}
# url_of LOG: waits for the server's address line and prints its URL
url_of() {
  for _ in $(seq 300); do
    if grep -qs '^listening on http://' "$1"; then sed -n 's/^listening on //p' "$1"; return; fi
    sleep 0.1
  done
  fail "ft serve did not print its address: $(cat "$1")"
}
start_server "$tmp/plain.log" --api-key sekret --parallel 2
start_server "$tmp/scripted.log" --script "$tmp/script.txt"
plain=$(url_of "$tmp/plain.log")
scripted=$(url_of "$tmp/scripted.log")
echo "servers: $plain (key) and $scripted (--script)"
(cd "$npmdir" && timeout 300 node sdk_test.mjs "$plain" "$scripted" sekret) || fail "SDK checks"
# Both servers stop cleanly on SIGTERM and print nothing but their address
# (in the ASan build: no leak, no UBSan report).
for i in 0 1; do
  kill "${pids[$i]}"
  set +e; wait "${pids[$i]}"; rc=$?; set -e
  [ "$rc" = 0 ] || fail "ft serve exited with $rc after SIGTERM"
done
pids=()
for log in "$tmp/plain.log" "$tmp/scripted.log"; do
  if grep -v '^listening' "$log" | grep -q .; then fail "ft serve printed: $(head -20 "$log")"; fi
done
