#!/usr/bin/env bash
# ftc profile end to end: --quick --json has the keys other tools read, and
# -o writes a text profile that the planner's loader accepts (through a
# round trip in test_textproto). How its DRAM figure compares with an
# independent STREAM triad is a benchmark, not a test: scripts/check-profile.sh.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
ftc=$build/compiler/ftc
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$ftc" profile --quick --json > "$tmp/p.json" 2> "$tmp/p.err" || fail "ftc profile: $(cat "$tmp/p.err")"
for k in dram_read_gbs dram_read_1t_gbs cpu gpus gpu_note version; do
  [ "$(jq "has(\"$k\")" "$tmp/p.json")" = true ] || fail "profile --json lacks $k"
done
jq -e '.dram_read_gbs > 0 and .dram_read_1t_gbs > 0' "$tmp/p.json" > /dev/null || fail "bandwidths not positive"
jq -e '.cpu.dram_read_gbs.source == "MEASURED" and .cpu.dram_read_gbs.n_runs >= 3' "$tmp/p.json" > /dev/null \
  || fail "dram figure lacks provenance"
jq -e '[.cpu.gemv[] | .weight_gbs.median > 0] | all and length >= 14' "$tmp/p.json" > /dev/null || fail "gemv figures"
jq -e '[.gpus[] | has("h2d_gbs") and (.h2d_gbs > 0)] | all' "$tmp/p.json" > /dev/null || fail "gpu h2d_gbs"
if [ "$(jq '.gpus | length' "$tmp/p.json")" = 0 ]; then
  jq -e '.gpu_note | startswith("no GPU")' "$tmp/p.json" > /dev/null || fail "no GPU and no note saying why"
fi
grep -q "DRAM read" "$tmp/p.err" || fail "no human summary on stderr"

# Text form to a file, summary on stdout.
"$ftc" profile --quick --no-gpu -o "$tmp/p.textproto" > "$tmp/summary.txt"
grep -q "^cpu {" "$tmp/p.textproto" || fail "text profile"
grep -q "source: MEASURED" "$tmp/p.textproto" || fail "text profile lacks provenance"
grep -q "DRAM read" "$tmp/summary.txt" || fail "summary"
# Usage errors.
if "$ftc" profile --threads 0 2> /dev/null; then fail "--threads 0 accepted"; fi
if "$ftc" profile extra 2> /dev/null; then fail "extra argument accepted"; fi

echo "1 passed, 0 failed"
