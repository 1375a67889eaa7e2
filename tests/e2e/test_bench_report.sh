#!/usr/bin/env bash
# The reproducible benchmark artifact: `ft bench --json` on a tiny bundle
# records the bundle (the hashes ftc inspect reports), this machine (the
# CPU facts /proc/cpuinfo and getconf give, the DRAM bandwidth of the same
# run), the profile the plan was solved for or the sim modelled (null when
# none), the build (this build tree's version, type and options) and the
# exact command line; scripts/bench-report.sh turns two such results (one
# measured on the cpu backend, one predicted by sim) into a Markdown table
# whose rows carry their numbers, and a well-formed SVG with a bar per run
# and panel, even for a file name full of XML's special characters; files
# that are not results are refused naming the file and the key.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
ftc=$build/compiler/ftc
ftgen=$build/tests/ftgen
ft=$build/runtime/ft
report=$src/scripts/bench-report.sh
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v xmllint > /dev/null || fail "xmllint is needed (scripts/install-deps.sh installs libxml2-utils)"
hw=$src/hwprofiles/presets/rtx4060_laptop.textproto

"$ftgen" --quiet --seed 7 --size tiny --format q8_0 --gguf "$tmp/m.gguf"
"$ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/b" --quiet
"$ftc" compile --cuda-arch none "$tmp/m.gguf" --hw "$hw" --vram 2250K -o "$tmp/bhw" --quiet
"$ftc" inspect "$tmp/b" --json > "$tmp/inspect.json"

cpu_args=(bench "$tmp/b" --prompt 16 --gen 4 --reps 2 --threads 1 --json)
"$ft" "${cpu_args[@]}" > "$tmp/cpu.json"
"$ft" bench "$tmp/b" --backend sim --hw "$hw" --vram 2250K --prompt 16 --gen 8 --reps 1 --json > "$tmp/sim.json"
"$ft" bench "$tmp/bhw" --prompt 8 --gen 2 --reps 1 --json > "$tmp/cpu_hw.json"
j() { jq -r "$1" "$2"; }

# The bundle: what ftc inspect says it is.
for k in plan_hash weights_hash arch; do
  [ "$(j ".bundle.$k" "$tmp/cpu.json")" = "$(j ".$k" "$tmp/inspect.json")" ] ||
    fail "bundle.$k $(j ".bundle.$k" "$tmp/cpu.json") != ftc inspect's $(j ".$k" "$tmp/inspect.json")"
done
[ "$(j .bundle.plan_hash "$tmp/cpu.json")" = "$(j .bundle.plan_hash "$tmp/sim.json")" ] || fail "same bundle, other plan_hash"
[ "$(j .bundle.plan_hash "$tmp/cpu_hw.json")" != "$(j .bundle.plan_hash "$tmp/cpu.json")" ] || fail "a plan solved for a machine has the same hash"
[ "$(j .bundle.path "$tmp/cpu.json")" = "$tmp/b" ] || fail "bundle.path $(j .bundle.path "$tmp/cpu.json")"
[ "$(j .bundle.plan_bytes "$tmp/cpu.json")" = "$(stat -c %s "$tmp/b/plan.ftp")" ] || fail "bundle.plan_bytes"
[ "$(j .bundle.weights_bytes "$tmp/cpu.json")" = "$(stat -c %s "$tmp/b/weights.ftw")" ] || fail "bundle.weights_bytes"
version=$(sed -n 's/^project(freetoken VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ "$(j .bundle.producer "$tmp/cpu.json")" = "ftc $version" ] || fail "bundle.producer $(j .bundle.producer "$tmp/cpu.json")"
[ "$(j .bundle.source "$tmp/cpu.json")" = m.gguf ] || fail "bundle.source $(j .bundle.source "$tmp/cpu.json")"

# This machine, as the OS reports it; the DRAM figure is the run's own.
[ "$(j .machine.n_cores "$tmp/cpu.json")" = "$(getconf _NPROCESSORS_ONLN)" ] || fail "machine.n_cores"
if [ -r /proc/cpuinfo ] && grep -q '^model name' /proc/cpuinfo; then
  model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
  [ "$(j .machine.cpu_model "$tmp/cpu.json")" = "$model" ] || fail "machine.cpu_model '$(j .machine.cpu_model "$tmp/cpu.json")' != '$model'"
  flags=" $(sed -n 's/^flags[[:space:]]*: //p' /proc/cpuinfo | head -n 1) "
  for isa in avx2 fma avx512f; do
    has=false; [[ $flags == *" $isa "* ]] && has=true
    [ "$(jq --arg i $isa '.machine.isa | index($i) != null' "$tmp/cpu.json")" = $has ] || fail "machine.isa and /proc/cpuinfo disagree on $isa"
  done
fi
[ "$(j '.machine.dram_read_gbs == .dram_read_gbs and .machine.dram_read_gbs > 0' "$tmp/cpu.json")" = true ] ||
  fail "machine.dram_read_gbs is not the run's: $(jq -c .machine "$tmp/cpu.json")"
[ "$(j '.machine.dram_read_gbs_min <= .machine.dram_read_gbs and .machine.dram_read_gbs <= .machine.dram_read_gbs_max' "$tmp/cpu.json")" = true ] ||
  fail "machine.dram_read_gbs outside its min..max"
[ "$(j .machine.ram_bytes "$tmp/cpu.json")" = $(($(getconf _PHYS_PAGES) * $(getconf PAGESIZE))) ] || fail "machine.ram_bytes"

# The profile: none for a plan solved at open on the cpu backend; the --hw
# preset the sim modelled; the one a plan was compiled for.
[ "$(j .profile "$tmp/cpu.json")" = null ] || fail "profile without --hw: $(jq -c .profile "$tmp/cpu.json")"
preset_cpu=$(sed -n 's/^  model: "\(.*\)"$/\1/p' "$hw" | head -n 1)
preset_gpu=$(sed -n 's/^  name: "\(.*\)"$/\1/p' "$hw" | head -n 1)
preset_machine=$(sed -n 's/^machine: "\(.*\)"$/\1/p' "$hw")
[ -n "$preset_cpu" ] && [ -n "$preset_gpu" ] && [ -n "$preset_machine" ] || fail "cannot read $hw"
[ "$(j '.profile.source + " " + .profile.path' "$tmp/sim.json")" = "hw $hw" ] || fail "sim profile: $(jq -c .profile "$tmp/sim.json")"
[ "$(j .profile.cpu_model "$tmp/sim.json")" = "$preset_cpu" ] || fail "sim profile.cpu_model"
[ "$(j '.profile.gpus[0].name' "$tmp/sim.json")" = "$preset_gpu" ] || fail "sim profile.gpus"
[ "$(j '.profile.source' "$tmp/cpu_hw.json")" = bundle ] && [ "$(j .profile.machine "$tmp/cpu_hw.json")" = "$preset_machine" ] ||
  fail "compiled-for profile: $(jq -c .profile "$tmp/cpu_hw.json")"

# The build: this build tree's.
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
[ "$(j .build.version "$tmp/cpu.json")" = "$version" ] || fail "build.version"
[ "$(j .build.build_type "$tmp/cpu.json")" = "$(cache CMAKE_BUILD_TYPE)" ] || fail "build.build_type"
for opt in FT_SANITIZE FT_CUDA FT_NATIVE; do
  [ "$(j ".build.cmake_options.$opt" "$tmp/cpu.json")" = "$(cache $opt)" ] || fail "build.cmake_options.$opt"
done
[ -n "$(j .build.compiler "$tmp/cpu.json")" ] && [ -n "$(j .build.c_flags "$tmp/cpu.json")" ] || fail "build.compiler, c_flags empty"
rev=$(j .build.revision "$tmp/cpu.json")
if [ "$rev" != unknown ]; then
  [[ $rev =~ ^([0-9a-f]{12})(-dirty)?$ ]] || fail "build.revision '$rev'"
  if git -C "$src" rev-parse --git-dir > /dev/null 2>&1; then
    git -C "$src" cat-file -e "${BASH_REMATCH[1]}^{commit}" || fail "build.revision $rev is no commit of $src"
  fi
fi

# The command line, word for word.
[ "$(jq -c .argv "$tmp/cpu.json")" = "$(printf '%s\n' ft "${cpu_args[@]}" | jq -R . | jq -sc .)" ] ||
  fail "argv $(jq -c .argv "$tmp/cpu.json")"

# The report: one row per file, in order, with its numbers; the plot.
cp "$tmp/cpu.json" "$tmp/a&b<c>.json"
"$report" --svg "$tmp/plot.svg" --title "tiny & <fixture>" "$tmp/cpu.json" "$tmp/sim.json" "$tmp/a&b<c>.json" \
  > "$tmp/report.md" 2> "$tmp/report.err" || fail "bench-report.sh: $(cat "$tmp/report.err")"
row() { grep "^| $1 |" "$tmp/report.md"; }
[ "$(grep -c '^| ' "$tmp/report.md")" = 4 ] || fail "not a header and 3 rows: $(cat "$tmp/report.md")"
[ "$(grep '^| ' "$tmp/report.md" | sed -n '2,4p' | cut -d'|' -f2 | tr -d ' ' | tr '\n' ,)" = "cpu,sim,a&b<c>," ] ||
  fail "rows not in the order given: $(cat "$tmp/report.md")"
for f in cpu sim; do
  r=$(row $f) || fail "no row $f"
  IFS='|' read -r -a cells <<< "$r"
  # The table rounds to 0.1 and 0.01; compared as numbers within half a
  # unit of the last place (plus a hair): bash's printf rounds a JSON
  # value such as 55496.205 in long double and awk in double, so the two
  # can differ in a tie's last digit.
  near() { awk -v a="$1" -v b="$2" -v u="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= u / 2 + 1e-9 * (b < 0 ? -b : b) + 1e-12) }'; }
  near "${cells[7]}" "$(j .prefill_tok_s "$tmp/$f.json")" 0.1 || fail "row $f prefill '${cells[7]}'"
  near "${cells[8]}" "$(j .decode_tok_s "$tmp/$f.json")" 0.01 || fail "row $f decode '${cells[8]}'"
  [[ ${cells[7]} =~ ^\ [0-9]+\.[0-9]\ $ && ${cells[8]} =~ ^\ [0-9]+\.[0-9]{2}\ $ ]] || fail "row $f: speeds not to 0.1 and 0.01: '${cells[7]}' '${cells[8]}'"
  [ "${cells[6]}" = " $(j '"\(.prefill_tokens)/\(.decode_tokens) x\(.reps)"' "$tmp/$f.json") " ] || fail "row $f shape '${cells[6]}'"
  grep -qF "$(j .bundle.plan_hash "$tmp/$f.json")" "$tmp/report.md" || fail "no plan hash for $f"
done
[[ $(row cpu) == *"| cpu | qwen3moe (m.gguf) | 1 |"* ]] || fail "cpu row: $(row cpu)"
[[ $(row cpu) == *"% of DRAM |"* ]] || fail "cpu row lacks the DRAM share: $(row cpu)"
[[ $(row sim) == *"| sim (predicted) |"* && $(row sim) == *"modelled: $preset_machine"* ]] || fail "sim row: $(row sim)"
grep -qF -- "- **cpu**: \`ft bench $tmp/b --prompt 16 --gen 4 --reps 2 --threads 1 --json\`" "$tmp/report.md" ||
  fail "no command line for cpu: $(cat "$tmp/report.md")"
xmllint --noout "$tmp/plot.svg" || fail "the SVG is not well-formed XML"
[ "$(grep -c '<rect class="bar"' "$tmp/plot.svg")" = 6 ] || fail "not 3 runs x 2 panels of bars"
grep -q '>sim (predicted)</text>' "$tmp/plot.svg" || fail "the sim bar is not labelled predicted"
grep -q '>a&amp;b&lt;c&gt;</text>' "$tmp/plot.svg" || fail "a file name is not escaped in the SVG"
# The largest value of each panel spans the whole bar width (420).
[ "$(grep -c 'class="bar" x="230" y="[0-9]*" width="420.0"' "$tmp/plot.svg")" -ge 2 ] || fail "bars not scaled to the largest"

# Files that are not results: refused, naming the file and the key.
echo '{}' > "$tmp/empty.json"
jq 'del(.bundle)' "$tmp/cpu.json" > "$tmp/old.json"
echo 'not json' > "$tmp/text.json"
cat "$tmp/cpu.json" "$tmp/cpu.json" > "$tmp/two.json"
for bad in empty:.backend old:.bundle text:text two:"2 JSON values"; do
  f=${bad%%:*}; want=${bad#*:}
  set +e; "$report" --svg "$tmp/x.svg" "$tmp/cpu.json" "$tmp/$f.json" > /dev/null 2> "$tmp/bad.err"; rc=$?; set -e
  [ $rc = 1 ] || fail "$f.json: exit $rc"
  grep -qF "$tmp/$f.json" "$tmp/bad.err" && grep -qF -- "$want" "$tmp/bad.err" || fail "$f.json: $(cat "$tmp/bad.err")"
done
set +e; "$report" > /dev/null 2>&1; rc=$?; set -e
[ $rc = 2 ] || fail "no files: exit $rc"
echo "ok: bench record and report"
