#!/usr/bin/env bash
# The help of ft and ftc, which their man pages are generated from, is
# complete and true: every command the overview lists answers `help CMD`
# and `CMD --help` (the same text, exit 0) with its usage line first; the
# commands that take options list every option their getopt tables accept
# and no other (long options from the source's longopts table, short ones
# from its getopt string), with examples; an unknown command or option is a
# usage error (2). The man pages generated at build time are up to date
# with the programs (regenerated here and compared).
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

# The text of C function FN in FILE: from its definition to the first "}"
# at column 0.
function_text() { awk -v fn="$2" '$0 ~ "^[a-z].*[ *]" fn "\\(" && $0 !~ /;$/ { on = 1 } on { print } on && /^}/ { exit }' "$1"; }

# The options the getopt tables in FILE's function FN accept, one a line:
# --long (the longopts table, with FT_CLI_ENGINE_LONGOPTS expanded) and -x
# (the getopt_long short string).
accepted() {
  local text
  text=$(function_text "$1" "$2")
  [ -n "$text" ] || fail "no function $2 in $1"
  {
    grep -oE '\{"[a-z0-9-]+", *(no|required|optional)_argument' <<< "$text" | sed -E 's/^\{"([^"]*)".*/--\1/'
    if grep -q FT_CLI_ENGINE_LONGOPTS <<< "$text"; then
      sed -n '/^#define FT_CLI_ENGINE_LONGOPTS/,/^$/p' "$src/runtime/cli/cli.h" |
        grep -oE '\{"[a-z0-9-]+", *(no|required|optional)_argument' | sed -E 's/^\{"([^"]*)".*/--\1/'
    fi
    grep -oE 'getopt_long\(argc, argv, "[^"]*"' <<< "$text" | sed -E 's/.*"([^"]*)"/\1/' |
      tr -d ':' | grep -o . | sed 's/^/-/' || true
  } | sort -u
}

# The options a help text lists: the -x and --long words of its entries'
# terms ("  -p, --prompt TEXT").
documented() { grep -E '^  -' | grep -oE '(^|[ ,])--?[a-z0-9][a-z0-9-]*' | sed -E 's/^[ ,]//' | sort -u; }

# The commands an overview lists.
commands() { "$1" help | sed -n '/^commands:$/,/^$/p' | sed -n 's/^  \([a-z]*\) .*/\1/p'; }

check_program() { # PROG NAME, then "CMD FILE FUNCTION" lines on stdin for the commands with options
  local prog=$1 name=$2 cmd file fn n=0
  "$prog" help > "$tmp/$name.txt" || fail "$name help: exit $?"
  head -n 1 "$tmp/$name.txt" | grep -q "^$name - " || fail "$name help does not start with '$name - '"
  for sec in "commands:" "exit status:" "examples:" "see also:"; do
    grep -qx "$sec" "$tmp/$name.txt" || fail "$name help has no '$sec' section"
  done
  local cmds
  cmds=$(commands "$prog")
  [ -n "$cmds" ] || fail "$name help lists no commands"
  for cmd in $cmds; do
    "$prog" help "$cmd" > "$tmp/$name.$cmd.txt" || fail "$name help $cmd: exit $?"
    "$prog" "$cmd" --help > "$tmp/$name.$cmd.h.txt" || fail "$name $cmd --help: exit $?"
    cmp -s "$tmp/$name.$cmd.txt" "$tmp/$name.$cmd.h.txt" || fail "$name $cmd --help differs from $name help $cmd"
    head -n 1 "$tmp/$name.$cmd.txt" | grep -q "^usage: $name $cmd\b" || fail "$name help $cmd: first line $(head -n 1 "$tmp/$name.$cmd.txt")"
  done
  while read -r cmd file fn; do
    n=$((n + 1))
    grep -qw "$cmd" <<< "$cmds" || fail "$name help does not list $cmd"
    grep -qx "examples:" "$tmp/$name.$cmd.txt" || fail "$name help $cmd has no examples"
    accepted "$src/$file" "$fn" > "$tmp/$name.$cmd.accepted"
    documented < "$tmp/$name.$cmd.txt" > "$tmp/$name.$cmd.documented"
    [ -s "$tmp/$name.$cmd.accepted" ] || fail "no options found for $name $cmd in $file:$fn"
    diff "$tmp/$name.$cmd.accepted" "$tmp/$name.$cmd.documented" > "$tmp/$name.$cmd.diff" ||
      fail "$name $cmd: options accepted (<) and documented (>) differ: $(cat "$tmp/$name.$cmd.diff")"
    # Each documented option is accepted: not an unknown-option usage error.
    # (Two paths that do not exist: an option's value takes the first, and
    # the command stops at a usage error or at the missing file.)
    while read -r opt; do
      set +e; "$prog" "$cmd" "$opt" "$tmp/none1" "$tmp/none2" > /dev/null 2> "$tmp/opt.err"; set -e
      if grep -qE "unrecognized option|invalid option" "$tmp/opt.err"; then fail "$name $cmd $opt: $(cat "$tmp/opt.err")"; fi
    done < "$tmp/$name.$cmd.documented"
  done
  [ "$n" -gt 0 ] || fail "no commands checked for $name"
  # Usage errors exit 2.
  for bad in "nosuch" "help nosuch" "version extra"; do
    set +e
    # shellcheck disable=SC2086
    "$prog" $bad > /dev/null 2>&1; local rc=$?
    set -e
    [ "$rc" = 2 ] || fail "$name $bad: exit $rc, wanted 2"
  done
  set +e; "$prog" > /dev/null 2>&1; local rc=$?; set -e
  [ "$rc" = 2 ] || fail "$name without a command: exit $rc, wanted 2"
}

check_program "$build/runtime/ft" ft <<'EOF'
run runtime/cli/cli_run.c ft_run_parse
chat runtime/cli/cli_chat.c ft_cli_chat
serve runtime/cli/cli_serve.c ft_cli_serve
logits runtime/cli/cli_logits.c ft_cli_logits
perplexity runtime/cli/cli_perplexity.c ft_ppl_parse
bench runtime/cli/cli_bench.c ft_bench_parse
EOF
check_program "$build/compiler/ftc" ftc <<'EOF'
inspect compiler/ftc_main.c ftc_inspect
compile compiler/ftc_main.c ftc_compile_args
profile compiler/cmd_profile.c ftc_cmd_profile
plan compiler/cmd_plan.c ftc_plan_args
EOF

# The man pages in the build tree are what the programs' help gives now.
for name in ft ftc; do
  prog=$build/runtime/ft; [ "$name" = ftc ] && prog=$build/compiler/ftc
  [ -f "$build/man/$name.1" ] || fail "no man page $build/man/$name.1"
  awk -v prog="$prog" -v name=$name -v version="$("$prog" version | cut -d' ' -f2)" \
    -f "$src/cmake/help2man.awk" > "$tmp/$name.1" || fail "help2man.awk $name"
  cmp -s "$tmp/$name.1" "$build/man/$name.1" || fail "$build/man/$name.1 is not what $name's help gives now"
done
echo "ok: ft and ftc help complete, man pages current"
