#!/usr/bin/env bash
# The chat page in headless Chromium against ft serve --script (with an
# API key) on a fixture bundle: tests/serve/page_test.mjs drives Chromium
# over the DevTools protocol on a pipe: it loads /, types a message (a 401
# shown as an error), types the key and the message again and waits for the
# streamed reply in the DOM (text, reasoning in its collapsed block, the
# stats line with tok/s and cached tokens), stops a long reply with the Stop
# button (the server counts a cancelled request), sends a third turn that
# reuses the conversation's prefix, checks no CSP violation or script error
# happened, and writes a screenshot into the test's output folder (its path
# printed). Skips (exit 77) where chromium or node is missing
# (scripts/install-deps.sh installs both).
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
ft=$build/runtime/ft
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$chrome" ] || ! command -v node > /dev/null; then
  echo "SKIP: chromium and node are needed for the page test (scripts/install-deps.sh installs them)"
  exit 77
fi

"$build/tests/ftgen" --quiet --seed 11 --size tiny --format q8_0 --ctx 32768 --gguf "$tmp/m.gguf"
"$build/compiler/ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/b" --quiet
{
  printf '<think>\nThe user says hello; a friendly answer will do.\n</think>\n\n'
  printf 'Hello from the chat page! Streaming works.<|im_end|>\n%%%%\n'
  printf 'Once upon a time'
  for i in $(seq 4500); do printf ' there was a story number %d' "$i"; done
  printf '. The end.<|im_end|>\n'
} > "$tmp/script.txt"
"$ft" serve "$tmp/b" --port 0 --threads 1 --ctx 32768 --api-key page-k3y --script "$tmp/script.txt" > "$tmp/log" 2>&1 &
pid=$!
trap 'kill $pid 2> /dev/null || true; wait $pid 2> /dev/null || true' EXIT
for _ in $(seq 300); do grep -qs '^listening on' "$tmp/log" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$tmp/log")
[ -n "$url" ] || fail "no address: $(cat "$tmp/log")"

timeout 120 node "$src/tests/serve/page_test.mjs" "$chrome" "$url" page-k3y "$tmp/profile" "$tmp/page.png" ||
  fail "the page in Chromium (server log: $(tail -5 "$tmp/log"))"
[ -s "$tmp/page.png" ] || fail "no screenshot"
kill "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" = 0 ] || fail "ft serve exited with $rc after SIGTERM"
if grep -v '^listening' "$tmp/log" | grep -q .; then fail "ft serve printed: $(head -20 "$tmp/log")"; fi
echo "screenshot: $tmp/page.png"
