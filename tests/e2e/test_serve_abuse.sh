#!/usr/bin/env bash
# ft serve under 10,000 hostile requests (tests/serve/abuse.mjs: mutated
# bodies to every POST endpoint over keep-alive connections): each one
# answered with a protocol-shaped 4xx (or a 2xx), never a 5xx or a dropped
# connection, and the server still answering and exiting cleanly after
# (in the ASan build, with no leak). Skips (exit 77) only without node.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! command -v node > /dev/null; then echo "SKIP: node is needed for the abuse client"; exit 77; fi

"$build/tests/ftgen" --quiet --seed 11 --size tiny --format q8_0 --ctx 1024 --gguf "$tmp/m.gguf"
"$build/compiler/ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/b" --quiet
"$build/runtime/ft" serve "$tmp/b" --port 0 --threads 1 > "$tmp/log" 2>&1 &
pid=$!
trap 'kill $pid 2> /dev/null || true; wait $pid 2> /dev/null || true' EXIT
for _ in $(seq 300); do grep -qs '^listening on' "$tmp/log" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$tmp/log")
[ -n "$url" ] || fail "no address: $(cat "$tmp/log")"
timeout 300 node "$src/tests/serve/abuse.mjs" "$url" 10000 7 || fail "abuse client"
curl -sf "$url/health" > /dev/null || fail "the server does not answer after the abuse"
kill $pid
set +e; wait $pid; rc=$?; set -e
trap - EXIT
[ "$rc" = 0 ] || fail "ft serve exited with $rc after SIGTERM: $(grep -v '^listening' "$tmp/log" | head -20)"
if grep -v '^listening' "$tmp/log" | grep -q .; then fail "ft serve printed: $(head -20 "$tmp/log")"; fi
echo "ok: 10,000 hostile requests, the server unharmed"
