#!/usr/bin/env bash
# scripts/bench-formats.sh on the tiny fixture: one bundle per format,
# ft bench --json each, bench-report's table with a row per format; Q4_0
# reads fewer weight bytes per token than Q8_0; a format that cannot be
# compiled (NVFP4: the tiny experts' rows of 32 are not whole blocks of 64)
# stops it with exit 1 naming the format. (Speeds on this loaded
# machine mean nothing; the script is for a quiet one.)
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
run() { bash "$src/scripts/bench-formats.sh" --build "$build" --size tiny --prompt 16 --gen 8 --reps 1 "$@"; }

run --formats q8_0,q4_0,q4_k_m --out "$tmp/o" > "$tmp/table.md" 2> "$tmp/err" || fail "script: $(cat "$tmp/err")"
for f in q8_0 q4_0 q4_k_m; do
  jq -e '.decode_tok_s > 0 and .weight_bytes_per_token > 0' "$tmp/o/$f.json" > /dev/null || fail "$f.json"
  grep -q "^| $f |" "$tmp/table.md" || fail "no row $f in: $(cat "$tmp/table.md")"
done
[ -s "$tmp/o/formats.svg" ] || fail "no svg"
q8=$(jq .weight_bytes_per_token "$tmp/o/q8_0.json") q4=$(jq .weight_bytes_per_token "$tmp/o/q4_0.json")
[ "$q4" -lt "$q8" ] || fail "q4_0 reads $q4 bytes per token, q8_0 $q8"
rc=0; run --formats q8_0,nvfp4 --out "$tmp/bad" > /dev/null 2> "$tmp/bad.err" || rc=$?
[ $rc = 1 ] && grep -q "nvfp4: ftc compile failed" "$tmp/bad.err" || fail "bad format: rc $rc $(cat "$tmp/bad.err")"
echo "ok"
