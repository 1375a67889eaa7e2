#!/usr/bin/env bash
# scripts/bench-compare.sh on a tiny bundle against stand-in commands that
# print each output form it reads (llama-bench's Markdown table, its JSON
# and JSONL, ft bench --json, plain "decode_tok_s = X" lines): the rounds
# alternate which command goes first, the medians are those of the rounds
# printed, the ratios are ft's medians over the command's, the command's
# decode share of DRAM is its tok/s at ft's bytes per token over the
# bandwidth ft measured; a failing command, one whose output holds no
# figure, a missing bundle and bad options stop it with the right code.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
ftc=$build/compiler/ftc
ftgen=$build/tests/ftgen
ft=$build/runtime/ft
cmp=$src/scripts/bench-compare.sh
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$ftgen" --quiet --seed 3 --size tiny --format q8_0 --gguf "$tmp/m.gguf"
"$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/b" --quiet
common=(--ft "$ft" --prompt 16 --gen 4 --threads 1)

cat > "$tmp/md.sh" <<'T'
#!/bin/sh
cat <<'X'
| model                |       size | backend | threads |  test |             t/s |
| -------------------- | ---------: | ------- | ------: | ----: | --------------: |
| qwen3moe Q8_0        |   1.00 MiB | CPU     |       1 |  pp16 | 1000.00 ± 12.34 |
| qwen3moe Q8_0        |   1.00 MiB | CPU     |       1 |   tg4 |   250.00 ± 1.00 |
X
T
printf '#!/bin/sh\necho %s\n' "'[{\"n_prompt\":16,\"n_gen\":0,\"avg_ts\":2000.5},{\"n_prompt\":0,\"n_gen\":4,\"avg_ts\":300}]'" > "$tmp/json.sh"
printf '#!/bin/sh\necho %s\necho %s\n' "'{\"n_prompt\":16,\"n_gen\":0,\"avg_ts\":800}'" "'{\"n_prompt\":0,\"n_gen\":4,\"avg_ts\":80}'" > "$tmp/jsonl.sh"
printf '#!/bin/sh\necho "decode_tok_s = 123.5"\n' > "$tmp/lines.sh"
printf '#!/bin/sh\necho "nothing to see"\n' > "$tmp/none.sh"
chmod +x "$tmp"/*.sh

# Markdown, human report: three rounds, alternating order.
"$cmp" "${common[@]}" --runs 3 "$tmp/b" -- "$tmp/md.sh" > "$tmp/md.out" || fail "markdown run"
grep -E '^round [0-9]' "$tmp/md.out" | awk '{print $2, $3}' | tr '\n' ' ' > "$tmp/order"
[ "$(cat "$tmp/order")" = "1 ft 1 command 2 command 2 ft 3 ft 3 command " ] || fail "round order: $(cat "$tmp/order")"
grep -q "command  prefill     1000.0 tok/s  decode    250.0 tok/s" "$tmp/md.out" || fail "markdown medians: $(cat "$tmp/md.out")"
grep -q "ft / command: prefill [0-9.]*x, decode [0-9.]*x" "$tmp/md.out" || fail "markdown ratios"

# JSON forms: the ratios and shares follow from the medians.
check_json() { # file prefill decode
  jq -e --argjson p "$2" --argjson d "$3" '
    def close(a; b): ((a - b) | fabs) <= 1e-4 * (b | fabs) + 1e-9;
    .runs == 2 and .command.prefill_tok_s == $p and .command.decode_tok_s == $d
    and close(.ratio.prefill; .ft.prefill_tok_s / $p) and close(.ratio.decode; .ft.decode_tok_s / $d)
    and close(.command.decode_dram_fraction; $d * .ft.weight_bytes_per_token / (.ft.dram_read_gbs * 1e9))
    and .ft.decode_dram_fraction > 0
    and .ft.weight_bytes_per_token > 0' "$1" > /dev/null || fail "$1: $(cat "$1")"
}
"$cmp" "${common[@]}" --runs 2 --json "$tmp/b" -- "$tmp/json.sh" > "$tmp/j.json" || fail "json run"
check_json "$tmp/j.json" 2000.5 300
"$cmp" "${common[@]}" --runs 2 --json "$tmp/b" -- "$tmp/jsonl.sh" > "$tmp/jl.json" || fail "jsonl run"
check_json "$tmp/jl.json" 800 80
# Another ft as the command (ft bench --json): its own figures come back.
"$cmp" "${common[@]}" --runs 2 --json "$tmp/b" -- "$ft" bench "$tmp/b" --json --prompt 16 --gen 4 --reps 1 --threads 1 > "$tmp/ft.json" \
  || fail "ft as the command"
jq -e '.command.prefill_tok_s > 0 and .command.decode_tok_s > 0 and .ratio.prefill > 0 and .ratio.decode > 0' "$tmp/ft.json" > /dev/null \
  || fail "ft as the command: $(cat "$tmp/ft.json")"
# Decode only: no prefill ratio.
"$cmp" "${common[@]}" --runs 2 --json "$tmp/b" -- "$tmp/lines.sh" > "$tmp/l.json" || fail "lines run"
jq -e '.command.prefill_tok_s == null and .ratio.prefill == null and .command.decode_tok_s == 123.5' "$tmp/l.json" > /dev/null \
  || fail "decode-only: $(cat "$tmp/l.json")"
# ft alone.
"$cmp" "${common[@]}" --runs 2 --json "$tmp/b" > "$tmp/alone.json" || fail "ft alone"
jq -e 'has("command") | not' "$tmp/alone.json" > /dev/null || fail "ft alone has a command"

# Failures.
expect() { # code what... command
  local code=$1 what=$2; shift 2
  set +e; "$@" > "$tmp/x.out" 2> "$tmp/x.err"; local rc=$?; set -e
  [ "$rc" = "$code" ] || fail "$what: exit $rc, wanted $code: $(cat "$tmp/x.err")"
}
expect 1 "unparsable output" "$cmp" "${common[@]}" --runs 1 "$tmp/b" -- "$tmp/none.sh"
grep -q "no prefill or decode figure" "$tmp/x.err" || fail "unparsable message: $(cat "$tmp/x.err")"
expect 1 "failing command" "$cmp" "${common[@]}" --runs 1 "$tmp/b" -- false
grep -q "round 1: 'false' failed" "$tmp/x.err" || fail "failing command message: $(cat "$tmp/x.err")"
expect 1 "missing bundle" "$cmp" "${common[@]}" --runs 1 "$tmp/nonexistent"
grep -q "nonexistent" "$tmp/x.err" || fail "missing bundle message"
expect 2 "--runs 0" "$cmp" "${common[@]}" --runs 0 "$tmp/b"
expect 2 "no bundle" "$cmp" "${common[@]}"
echo "1 passed, 0 failed"
