#!/usr/bin/env bash
# bench-report.sh: a set of `ft bench --json` results as a Markdown table
# (stdout) and an SVG bar plot of their prefill and decode tok/s.
#
#   scripts/bench-report.sh [--svg FILE] [--title TEXT] RESULT.json...
#
# One row per file, named after it (without .json), in the order given:
# backend (sim rows are predictions and say so), model, threads and
# kernels, prompt and decoded tokens x runs, prefill and decode tok/s
# (medians), the share of the DRAM bandwidth measured in the same run (cpu)
# or the expert cache's hit rate (sim, cuda), the machine, and the build.
# Below it, per row, what reproduces it: the command line, the bundle's
# plan and weights hashes, the build's revision, compiler and flags. The
# plot (--svg, default bench-report.svg) has one bar per row in a prefill
# and a decode panel, predicted bars in another colour. A file that is not
# an ft bench --json result (or one from an ft before the record's keys)
# is refused naming the file and the missing key. Needs bash, jq and awk.
# Exit codes: 0 ok, 1 a bad file, 2 usage.
set -euo pipefail
usage() { echo "usage: $0 [--svg FILE] [--title TEXT] RESULT.json..." >&2; exit 2; }
svg=bench-report.svg
title="ft bench"
while [ $# -gt 0 ]; do
  case $1 in
  --svg) [ $# -ge 2 ] || usage; svg=$2; shift 2 ;;
  --title) [ $# -ge 2 ] || usage; title=$2; shift 2 ;;
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
  --) shift; break ;;
  -*) usage ;;
  *) break ;;
  esac
done
[ $# -ge 1 ] || usage
command -v jq > /dev/null || { echo "bench-report.sh: jq is needed (scripts/install-deps.sh)" >&2; exit 1; }

# One result as a tab-separated line: the fields the table and the plot
# use, in the order the awk program below reads them.
read -r -d '' filter <<'JQ' || true
def need(f; name): f as $v | if $v == null then error("no .\(name) (not an ft bench --json result, or from an older ft)") else $v end;
def word: if test("^[A-Za-z0-9_./:=,+@%-]+$") then . else @sh end;
if length != 1 then error("holds \(length) JSON values, not one") else .[0] end
| if type != "object" then error("is not a JSON object") else . end
| [ need(.backend; "backend"),
    (if .predicted == true then "predicted" else "measured" end),
    need(.prefill_tok_s; "prefill_tok_s"), need(.decode_tok_s; "decode_tok_s"),
    need(.prefill_tokens; "prefill_tokens"), need(.decode_tokens; "decode_tokens"), need(.reps; "reps"),
    (.n_threads // ""), (.kernels // .cpu_expert_kernels // ""),
    (.dram_fraction // ""), (.hit_rate // ""),
    need(.bundle.arch; "bundle.arch"), (.bundle.source // ""),
    need(.bundle.plan_hash; "bundle.plan_hash"), need(.bundle.weights_hash; "bundle.weights_hash"),
    need(.machine.cpu_model; "machine.cpu_model"), (.machine.n_cores // ""),
    (.profile.machine // ""),
    need(.build.version; "build.version"), (.build.revision // ""), (.build.build_type // ""),
    (.build.compiler // ""), (.build.c_flags // ""),
    (need(.argv; "argv") | map(tostring | word) | join(" "))
  ] | map(tostring) | @tsv
JQ

rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
for f in "$@"; do
  name=$(basename "$f"); name=${name%.json}
  [ -r "$f" ] || { echo "bench-report.sh: $f: cannot be read" >&2; exit 1; }
  if ! line=$(jq -r -s "$filter" "$f" 2>&1); then
    echo "bench-report.sh: $f: ${line#jq: error (at <unknown>): }" >&2
    exit 1
  fi
  printf '%s\t%s\n' "$name" "$line" >> "$rows"
done

awk -F '\t' -v svg="$svg" -v title="$title" '
function md(s) { gsub(/\|/, "\\|", s); return s }
function xml(s) { gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); gsub(/>/, "\\&gt;", s); gsub(/"/, "\\&quot;", s); return s }
function pct(x) { return x == "" ? "" : sprintf("%.0f%%", 100 * x) }
{
  n++
  name[n] = $1; backend[n] = $2; kind[n] = $3; pre[n] = $4 + 0; dec[n] = $5 + 0
  shape[n] = $6 "/" $7 " x" $8; threads[n] = $9; kernels[n] = $10
  share[n] = $11 != "" ? pct($11) " of DRAM" : ($12 != "" ? pct($12) " hits" : "")
  model[n] = $13 ($14 != "" ? " (" $14 ")" : ""); plan[n] = $15; weights[n] = $16
  machine[n] = kind[n] == "predicted" ? "modelled: " ($19 != "" ? $19 : "the bundle'"'"'s machine") : $17 ($18 != "" ? ", " $18 " cores" : "")
  build[n] = $20 ($21 != "" ? " " $21 : "") ($22 != "" ? " " $22 : "")
  compiler[n] = $23; flags[n] = $24; argv[n] = $25
  if (pre[n] > max_pre) max_pre = pre[n]
  if (dec[n] > max_dec) max_dec = dec[n]
}
END {
  printf "# %s\n\n", md(title)
  printf "![prefill and decode tok/s](%s)\n\n", svg
  print "| run | backend | model | threads | kernels | prompt/gen x runs | prefill tok/s | decode tok/s | DRAM share / hit rate | machine | build |"
  print "|---|---|---|---:|---|---|---:|---:|---:|---|---|"
  for (i = 1; i <= n; i++)
    printf "| %s | %s | %s | %s | %s | %s | %.1f | %.2f | %s | %s | %s |\n", md(name[i]),
      backend[i] (kind[i] == "predicted" ? " (predicted)" : ""), md(model[i]), threads[i], md(kernels[i]),
      shape[i], pre[i], dec[i], share[i], md(machine[i]), md(build[i])
  print ""
  print "## Reproducing"
  for (i = 1; i <= n; i++) {
    printf "\n- **%s**: `%s`\n", md(name[i]), argv[i]
    printf "  - bundle: plan `%s`, weights `%s`\n", plan[i], weights[i]
    printf "  - build: %s, %s, `%s`\n", md(build[i]), md(compiler[i]), flags[i]
  }

  # The plot: a prefill panel and a decode panel, one bar per run, scaled
  # to the panel'"'"'s largest value.
  bar_h = 18; gap = 6; label_w = 230; bar_w = 420; width = label_w + bar_w + 110
  panel_h = 28 + n * (bar_h + gap)
  height = 40 + 2 * panel_h + 24
  printf "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" > svg
  printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n", width, height, width, height > svg
  printf "<title>%s</title>\n", xml(title) > svg
  printf "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", width, height > svg
  printf "<text x=\"10\" y=\"22\" font-size=\"15\" font-weight=\"bold\">%s</text>\n", xml(title) > svg
  for (p = 0; p < 2; p++) {
    y0 = 40 + p * panel_h
    max = p == 0 ? max_pre : max_dec
    if (max <= 0) max = 1
    printf "<text x=\"10\" y=\"%d\" font-weight=\"bold\">%s</text>\n", y0 + 14, p == 0 ? "prefill tok/s" : "decode tok/s" > svg
    printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888888\"/>\n", label_w, y0 + 22, label_w, y0 + panel_h - gap > svg
    for (i = 1; i <= n; i++) {
      v = p == 0 ? pre[i] : dec[i]
      y = y0 + 24 + (i - 1) * (bar_h + gap)
      w = bar_w * v / max
      colour = kind[i] == "predicted" ? "#ee854a" : "#4878d0"
      label = name[i] (kind[i] == "predicted" ? " (predicted)" : "")
      printf "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", label_w - 6, y + 13, xml(label) > svg
      printf "<rect class=\"bar\" x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>%s: %s</title></rect>\n", label_w, y, w, bar_h, colour, xml(label), (p == 0 ? sprintf("%.1f", v) : sprintf("%.2f", v)) > svg
      printf "<text x=\"%.1f\" y=\"%d\">%s</text>\n", label_w + w + 4, y + 13, (p == 0 ? sprintf("%.1f", v) : sprintf("%.2f", v)) > svg
    }
  }
  printf "<text x=\"10\" y=\"%d\" fill=\"#555555\">blue: measured; orange: predicted by the sim backend for a modelled machine</text>\n", height - 8 > svg
  print "</svg>" > svg
  close(svg)
}' "$rows"
echo "bench-report.sh: wrote $svg" >&2
