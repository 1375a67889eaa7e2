#!/usr/bin/env bash
# bench-compare.sh: ft bench on a bundle against a second command, runs
# alternated, medians and ratios, with the decode figures as a share of the
# DRAM read bandwidth measured in the same runs.
#
#   scripts/bench-compare.sh [options] BUNDLE [-- COMMAND [ARG...]]
#
# Each of --runs rounds runs `ft bench BUNDLE --json --reps 1` and then
# COMMAND, alternating which goes first (round 1: ft first, round 2: COMMAND
# first, ...), so that a drift of the machine (heat, other load) reaches
# both alike. Every run is printed as it ends; then the medians, the ratio
# ft / COMMAND for prefill and decode, and the decode traffic as a fraction
# of the bandwidth ceiling: ft bench measures the machine's DRAM read
# bandwidth in each of its runs (an independent triad-style read) and
# reports the weight bytes a decoded token reads; COMMAND's decode share
# uses those same bytes, which holds when it runs the same model file.
#
# COMMAND's output (stdout) is read in whichever of these forms it has:
#   - ft bench --json (an object with prefill_tok_s and decode_tok_s): e.g.
#     a build of another revision, `-- /old/build/runtime/ft bench B --json`;
#   - llama-bench's JSON or JSONL (`-o json` / `-o jsonl`: records with
#     n_prompt, n_gen and avg_ts; n_gen 0 is prefill, n_prompt 0 decode);
#   - llama-bench's Markdown table (its default: rows whose test column is
#     ppN or tgN and whose t/s column is "X ± Y");
#   - lines "prefill_tok_s: X" and "decode_tok_s: X" (or with =), for any
#     other engine behind a small wrapper.
# A round whose COMMAND fails, or prints none of these, stops the script
# naming the round and showing the start of what it printed. COMMAND may
# report only one of prefill and decode; the other ratio is then absent.
#
# options:
#   --runs N       rounds (default 5; medians over them)
#   --prompt N     prompt tokens per ft run (default 512)
#   --gen N        decoded tokens per ft run (default 128)
#   --threads N    ft's threads (default: ft's own, one per online CPU)
#   --ft PATH      the ft to run (default: ft beside this script's build/,
#                  else ft on PATH)
#   --json         one JSON object at the end instead of the report
#   --             the rest of the line is COMMAND; without it only ft runs
#                  (its medians and bandwidth share, run to run)
# Give COMMAND the same prompt and generated lengths and thread count (for
# llama-bench: -p 512 -n 128 -t 2 -r 1). Needs bash, jq and awk.
# Exit codes: 0 ok, 1 a run failed or its output was not understood, 2 usage.
set -euo pipefail
usage() { echo "usage: $0 [--runs N] [--prompt N] [--gen N] [--threads N] [--ft PATH] [--json] BUNDLE [-- COMMAND...]" >&2; exit 2; }
posint() { [[ $2 =~ ^[1-9][0-9]{0,5}$ ]] || { echo "bench-compare.sh: $1 wants a positive integer, not '$2'" >&2; exit 2; }; }
here=$(cd "$(dirname "$0")" && pwd)
runs=5 prompt=512 gen=128 threads="" ft="" json=0 bundle=""
while [ $# -gt 0 ]; do
  case $1 in
  --runs) [ $# -ge 2 ] || usage; posint "$1" "$2"; runs=$2; shift 2 ;;
  --prompt) [ $# -ge 2 ] || usage; posint "$1" "$2"; prompt=$2; shift 2 ;;
  --gen) [ $# -ge 2 ] || usage; posint "$1" "$2"; gen=$2; shift 2 ;;
  --threads) [ $# -ge 2 ] || usage; posint "$1" "$2"; threads=$2; shift 2 ;;
  --ft) [ $# -ge 2 ] || usage; ft=$2; shift 2 ;;
  --json) json=1; shift ;;
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
  --) shift; break ;;
  -*) usage ;;
  *) [ -z "$bundle" ] || usage; bundle=$1; shift ;;
  esac
done
[ -n "$bundle" ] || usage
other=("$@")
command -v jq > /dev/null || { echo "bench-compare.sh: jq is needed (scripts/install-deps.sh)" >&2; exit 1; }
if [ -z "$ft" ]; then
  if [ -x "$here/../build/runtime/ft" ]; then ft=$here/../build/runtime/ft
  elif command -v ft > /dev/null; then ft=$(command -v ft)
  else echo "bench-compare.sh: no ft found (build it, or give --ft PATH)" >&2; exit 1; fi
fi
[ -x "$ft" ] || { echo "bench-compare.sh: --ft $ft is not an executable" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say() { [ "$json" = 1 ] || echo "$@"; }
# Prints "PREFILL DECODE" from COMMAND's output (either may be "-").
parse_other() {
  local f=$1
  # One JSON value or JSON lines?
  if jq -e -s 'length > 0' "$f" > /dev/null 2>&1; then
    jq -r -s '
      def med: sort | if length == 0 then null else .[(length - 1) / 2 | floor] end;
      (if length == 1 and (.[0] | type) == "array" then .[0] else . end) as $v
      | if ($v | length) == 1 and ($v[0] | type) == "object" and ($v[0] | has("decode_tok_s")) then
          [$v[0].prefill_tok_s, $v[0].decode_tok_s]
        else
          [ ([$v[] | objects | select((.n_prompt // 0) > 0 and (.n_gen // 0) == 0) | .avg_ts] | med),
            ([$v[] | objects | select((.n_gen // 0) > 0 and (.n_prompt // 0) == 0) | .avg_ts] | med) ]
        end
      | map(if . == null then "-" else tostring end) | join(" ")' "$f" 2> /dev/null && return 0
  fi
  awk '
    function num(s) { gsub(/[^0-9.eE+-]/, "", s); return s }
    # llama-bench Markdown: | ... | pp512 | 123.45 ± 1.2 |
    /^\|/ {
      n = split($0, c, "|")
      for (i = 2; i < n; i++) {
        t = c[i]; gsub(/^ +| +$/, "", t)
        if (t ~ /^pp[0-9]+$/ || t ~ /^tg[0-9]+$/) {
          v = c[n - 1]; split(v, a, "±"); x = num(a[1])
          if (x != "") { if (t ~ /^pp/) pre = x; else dec = x }
        }
      }
    }
    /^[ \t]*prefill_tok_s[ \t]*[:=]/ { sub(/^[^:=]*[:=]/, ""); pre = num($0) }
    /^[ \t]*decode_tok_s[ \t]*[:=]/ { sub(/^[^:=]*[:=]/, ""); dec = num($0) }
    END { print (pre == "" ? "-" : pre), (dec == "" ? "-" : dec) }' "$f"
}

ft_args=(bench "$bundle" --json --reps 1 --prompt "$prompt" --gen "$gen")
[ -z "$threads" ] || ft_args+=(--threads "$threads")
run_ft() { # round
  if ! "$ft" "${ft_args[@]}" > "$tmp/ft.$1.json" 2> "$tmp/ft.$1.err"; then
    echo "bench-compare.sh: round $1: ft bench failed: $(head -c 600 "$tmp/ft.$1.err")" >&2; exit 1
  fi
  jq -r '[.prefill_tok_s, .decode_tok_s, (.weight_bytes_per_token // 0), (.dram_read_gbs // 0)]
         | map(tostring) | join(" ")' "$tmp/ft.$1.json" >> "$tmp/ft.rows"
  read -r p d b g < <(tail -n 1 "$tmp/ft.rows")
  say "$(printf 'round %d  ft       prefill %10.1f tok/s  decode %8.1f tok/s  (DRAM %.1f GB/s)' "$1" "$p" "$d" "$g")"
}
run_other() { # round
  if ! "${other[@]}" > "$tmp/other.$1.out" 2> "$tmp/other.$1.err"; then
    echo "bench-compare.sh: round $1: '${other[*]}' failed: $(head -c 600 "$tmp/other.$1.err")" >&2; exit 1
  fi
  local r; r=$(parse_other "$tmp/other.$1.out")
  if [ "$r" = "- -" ]; then
    echo "bench-compare.sh: round $1: no prefill or decode figure in the output of '${other[*]}':" >&2
    head -n 8 "$tmp/other.$1.out" >&2; exit 1
  fi
  echo "$r" >> "$tmp/other.rows"
  read -r p d <<< "$r"
  say "$(printf 'round %d  command  prefill %10s tok/s  decode %8s tok/s' "$1" "$p" "$d")"
}

say "ft: $ft ${ft_args[*]}"
[ ${#other[@]} -eq 0 ] || say "command: ${other[*]}"
: > "$tmp/ft.rows"; : > "$tmp/other.rows"
for ((r = 1; r <= runs; r++)); do
  if [ ${#other[@]} -eq 0 ]; then run_ft "$r"
  elif ((r % 2)); then run_ft "$r"; run_other "$r"
  else run_other "$r"; run_ft "$r"; fi
done

# Medians (the lower middle for an even count, as ft bench's own), ratios
# and bandwidth shares.
awk -v json="$json" -v has_other=${#other[@]} -v runs="$runs" '
function med(a, n,   i, j, t) {
  if (n == 0) return ""
  for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
  return a[int((n + 1) / 2)]
}
function jn(x) { return x == "" ? "null" : x }
FNR == 1 { file++ }
file == 1 { nf++; fp[nf] = $1; fd[nf] = $2; fb[nf] = $3; fg[nf] = $4
            fs[nf] = ($4 > 0) ? $2 * $3 / ($4 * 1e9) : "" }
file == 2 { if ($1 != "-") { np++; op[np] = $1 } if ($2 != "-") { nd++; od[nd] = $2 } }
END {
  mp = med(fp, nf); md = med(fd, nf); mb = med(fb, nf); mg = med(fg, nf)
  for (i = 1; i <= nf; i++) if (fs[i] != "") { ns++; s[ns] = fs[i] }
  ms = med(s, ns)
  op_m = med(op, np); od_m = med(od, nd)
  rp = (op_m != "" && op_m > 0) ? mp / op_m : ""
  rd = (od_m != "" && od_m > 0) ? md / od_m : ""
  os = (od_m != "" && mg > 0) ? od_m * mb / (mg * 1e9) : ""
  if (json == 1) {
    printf "{\"runs\": %d, \"ft\": {\"prefill_tok_s\": %s, \"decode_tok_s\": %s, \"weight_bytes_per_token\": %s, \"dram_read_gbs\": %s, \"decode_dram_fraction\": %s}", runs, jn(mp), jn(md), jn(mb), jn(mg), jn(ms)
    if (has_other) printf ", \"command\": {\"prefill_tok_s\": %s, \"decode_tok_s\": %s, \"decode_dram_fraction\": %s}, \"ratio\": {\"prefill\": %s, \"decode\": %s}", jn(op_m), jn(od_m), jn(os), jn(rp), jn(rd)
    printf "}\n"
    exit
  }
  printf "\nmedians of %d rounds\n", runs
  printf "  ft       prefill %10.1f tok/s  decode %8.1f tok/s", mp, md
  if (ms != "") printf "  %.1f%% of DRAM read bandwidth (%.1f GB/s, %d bytes/token)", 100 * ms, mg, mb
  printf "\n"
  if (has_other) {
    printf "  command  prefill %10s tok/s  decode %8s tok/s", op_m == "" ? "-" : sprintf("%.1f", op_m), od_m == "" ? "-" : sprintf("%.1f", od_m)
    if (os != "") printf "  %.1f%% of DRAM read bandwidth (at ft'"'"'s bytes/token)", 100 * os
    printf "\n  ft / command: prefill %s, decode %s\n", rp == "" ? "-" : sprintf("%.3fx", rp), rd == "" ? "-" : sprintf("%.3fx", rd)
  }
}' "$tmp/ft.rows" "$tmp/other.rows"
