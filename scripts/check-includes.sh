#!/usr/bin/env bash
# check-includes.sh: enforces the folder contract of DESIGN.md section 3.
# Resolves every #include "..." in the project's source folders to the file
# it lands on (the including file's folder first, then the include paths
# the CMake targets add) and checks that the including folder may depend on
# the included one. Prints each violation as
#   file:line: includes X (folder A may not depend on B)
# and exits 1. Known violations that are being removed are listed, each
# with its reason, in scripts/include-exceptions.txt; an exception that no
# longer matches an include is stale and fails the check too, so that list
# can only shrink. Needs only bash, find, grep and awk.
# Usage: scripts/check-includes.sh [REPO_ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

# Who may include whom. A folder is a top-level folder, except inside
# runtime/, where it is runtime/<sub>. Every folder may include itself.
# Outside the runtime, any runtime/<sub> counts as "runtime".
rules='
runtime            :
ir                 : runtime
models             : ir runtime
codegen            : ir runtime
hwprofiles         : runtime
compiler           : runtime ir models codegen hwprofiles
runtime/include    :
runtime/base       : runtime/include
runtime/format     : runtime/base runtime/include
runtime/plan       : runtime/base runtime/format runtime/include
runtime/text       : runtime/base runtime/format runtime/include
runtime/backends   : runtime/base runtime/format runtime/include
runtime/moe        : runtime/plan runtime/format runtime/base runtime/backends runtime/include
runtime/kv         : runtime/base runtime/format runtime/include
runtime/exec       : runtime/backends runtime/kv runtime/moe runtime/format runtime/plan runtime/base runtime/text runtime/include
runtime/sched      : runtime/exec runtime/kv runtime/moe runtime/base runtime/include
runtime/serve      : runtime/include
runtime/cli        : runtime/*
'
# Where an include that is not next to its includer is looked for, in the
# order the targets' include paths give (CMakeLists.txt of each folder).
# plan.pb-c.h and hwprofile.pb-c.h are generated from runtime/format.
search='runtime/include runtime ir models codegen/cpu codegen/cuda compiler compiler/frontends hwprofiles'
exceptions=scripts/include-exceptions.txt

dirs='runtime ir models codegen hwprofiles compiler'
{
  echo "#rules"; printf '%s\n' "$rules"
  echo "#search"; echo "$search"
  echo "#files"; find $dirs -type f \( -name '*.c' -o -name '*.h' -o -name '*.cuh' -o -name '*.inc' \) | sort
  echo "#exceptions"; [ -f "$exceptions" ] && grep -n '' "$exceptions" || true
  echo "#includes"
  find $dirs -type f \( -name '*.c' -o -name '*.h' -o -name '*.cuh' \) -print0 | sort -z |
    xargs -0 grep -nH -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' || true
} | awk -v exfile="$exceptions" '
function norm(p,   n, i, a, out, k) {        # resolve "." and ".."
  n = split(p, a, "/"); k = 0
  for (i = 1; i <= n; i++) {
    if (a[i] == "." || a[i] == "") continue
    if (a[i] == ".." && k > 0 && st[k] != "..") { k--; continue }
    st[++k] = a[i]
  }
  out = ""; for (i = 1; i <= k; i++) out = out (i > 1 ? "/" : "") st[i]
  return out
}
function dirof(p) { sub(/\/[^\/]*$/, "", p); return p }
function folder(p,   a) {
  split(p, a, "/")
  return a[1] == "runtime" ? "runtime/" a[2] : a[1]
}
function allowed(from, to,   tf) {
  if (from == to) return 1
  if (from ~ /^runtime\// && to !~ /^runtime\//) return 0
  if (from !~ /^runtime\// && to ~ /^runtime\//) to = "runtime"
  if (from == to) return 1
  if ((from, "*") in allow && index(to, "runtime/") == 1) return 1
  return (from, to) in allow
}
/^#rules$/ { sec = "r"; next }
/^#search$/ { sec = "s"; next }
/^#files$/ { sec = "f"; next }
/^#exceptions$/ { sec = "e"; next }
/^#includes$/ { sec = "i"; next }
sec == "r" && NF {
  split($0, lr, ":"); gsub(/[[:space:]]/, "", lr[1])
  n = split(lr[2], tos, " ")
  for (i = 1; i <= n; i++) { t = tos[i]; if (t == "runtime/*") t = "*"; allow[lr[1], t] = 1 }
  next
}
sec == "s" { ns = split($0, sp, " "); next }
sec == "f" { have[$0] = 1; next }
sec == "e" {
  ln = $0; sub(/:.*/, "", ln); line = substr($0, length(ln) + 2)
  sub(/#.*/, "", line); gsub(/^[[:space:]]+|[[:space:]]+$/, "", line)
  if (line == "") next
  if (split(line, ep, /[[:space:]]*->[[:space:]]*/) != 2) {
    printf "%s:%s: malformed exception (want \"file -> included\")\n", exfile, ln; bad = 1; next
  }
  exc[ep[1], ep[2]] = ln; exn++
  next
}
sec == "i" {
  f = $0; sub(/:.*/, "", f); rest = substr($0, length(f) + 2)
  l = rest; sub(/:.*/, "", l)
  inc = rest; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
  tgt = norm(dirof(f) "/" inc)
  if (!(tgt in have)) {
    tgt = ""
    for (i = 1; i <= ns; i++) { c = norm(sp[i] "/" inc); if (c in have) { tgt = c; break } }
    if (tgt == "" && inc ~ /^(plan|hwprofile)\.pb-c\.h$/) tgt = "runtime/format/" inc
  }
  if (tgt == "") next                      # a system or third-party header
  a = folder(f); b = folder(tgt)
  if (allowed(a, b)) next
  if ((f, tgt) in exc) { used[f, tgt] = 1; next }
  bb = (a !~ /^runtime\// && b ~ /^runtime\//) ? "runtime" : b
  printf "%s:%s: includes %s (folder %s may not depend on %s)\n", f, l, tgt, a, bb
  bad = 1
}
END {
  for (k in exc) if (!(k in used)) {
    split(k, kp, SUBSEP)
    printf "%s:%s: stale exception %s -> %s (no such include any more: delete the line)\n",
           exfile, exc[k], kp[1], kp[2]
    bad = 1
  }
  exit bad ? 1 : 0
}'
