#!/usr/bin/env bash
# ft serve and damaged weights (issue 18): while idle the server checks the
# expert blobs lazy verification has not reached yet, so one flipped byte
# in an expert shows in /health (503 "degraded", the blob named) and in
# /metrics before any request routes to it; a clean bundle ends with every
# blob checked and /health 200.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
ft=$build/runtime/ft
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v curl > /dev/null || fail "curl is needed"

"$build/tests/ftgen" --quiet --seed 9 --size tiny --format q8_0 --gguf "$tmp/m.gguf"
"$build/compiler/ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/clean" --quiet
cp -r "$tmp/clean" "$tmp/bad"
# A byte inside layer 1's expert stacks (the first expert's blob).
at=$("$build/compiler/ftc" inspect "$tmp/bad" --json --tensors |
     jq '.tensors[] | select(.name == "blk.1.ffn_up_exps.weight") | .offset + 10')
[ -n "$at" ] || fail "no expert tensor offset"
byte=$(od -An -tu1 -j "$at" -N1 "$tmp/bad/weights.ftw" | tr -d ' ')
printf "$(printf '\\%03o' $(( byte ^ 16 )))" | dd of="$tmp/bad/weights.ftw" bs=1 seek="$at" conv=notrunc status=none

pid=
start() { # BUNDLE: starts ft serve on it, sets url
  "$ft" serve "$1" --port 0 --threads 1 > "$tmp/log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do grep -qs '^listening on' "$tmp/log" && break; sleep 0.1; done
  url=$(sed -n 's/^listening on //p' "$tmp/log")
  [ -n "$url" ] || fail "no address: $(cat "$tmp/log")"
}
stop() { kill "$pid"; wait "$pid" || fail "ft serve exited with $?"; pid=; }
trap '[ -z "$pid" ] || kill $pid 2> /dev/null || true' EXIT
health() { curl -s -o "$tmp/health" -w '%{http_code}' "$url/health"; }

start "$tmp/bad"
code=
for _ in $(seq 100); do code=$(health); [ "$code" = 503 ] && break; sleep 0.1; done
[ "$code" = 503 ] || fail "a damaged expert is not reported: $code $(cat "$tmp/health")"
jq -e '.status == "degraded" and .weights.damaged == 1 and (.weights.error | test("layer 1 expert 0 "))' \
  "$tmp/health" > /dev/null || fail "/health: $(cat "$tmp/health")"
curl -s "$url/metrics" | grep -qx 'ft_weight_blobs_damaged 1' || fail "/metrics has no damaged blob"
grep -q "layer 1 expert 0" "$tmp/log" || fail "the server's log does not name the blob"
stop

start "$tmp/clean"
for _ in $(seq 100); do
  [ "$(health)" = 200 ] && jq -e '.weights.unchecked == 0' "$tmp/health" > /dev/null && break; sleep 0.1
done
jq -e '.status == "ok" and .weights.unchecked == 0 and .weights.damaged == 0 and .weights.checked > 0' \
  "$tmp/health" > /dev/null || fail "clean bundle: $(cat "$tmp/health")"
curl -s "$url/metrics" | grep -qx 'ft_weight_blobs_unchecked 0' || fail "/metrics: blobs left unchecked"
stop
echo "ok: ft serve reports damaged weights"
