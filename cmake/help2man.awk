# help2man.awk: writes a program's man page (man(7) macros) from its own
# help, so the page cannot drift from what the program prints. Run at build
# time on the program just built (CMakeLists.txt):
#
#   awk -v prog=build/runtime/ft -v name=ft -v version=0.1.0 -f help2man.awk > ft.1
#
# It runs `PROG help` (the overview) and `PROG help CMD` for each command
# the overview's "commands:" section lists, and reads the layout those texts
# keep (runtime/cli/cli_help.c, compiler/ftc_help.c):
#   - the overview's first line is "NAME - what it is";
#   - "usage: ..." lines (continued by indented lines) give the synopsis;
#   - lines at column 0 are paragraphs, a blank line ends one;
#   - "section name:" at column 0 starts a section: in the overview a man
#     section (.SH), in a command's help a labelled list;
#   - "  TERM  description" (two spaces) is a list entry, continued by lines
#     indented four or more spaces;
#   - under "examples:", a two-space line says what the commands after it
#     (indented four, shown verbatim) do.
# The overview's "commands:" section becomes COMMANDS with one subsection
# per command holding that command's whole help. Works with any POSIX awk
# (mawk included). Exits 1, saying why, when a help text is missing or does
# not start as it should.

function fail(msg) {
  print "help2man.awk: " prog ": " msg > "/dev/stderr"
  failed = 1
  exit 1
}

# Reads the output of `PROG help [CMD]` into buf[0..n-1]; returns n.
function read_help(cmd, buf,    line, n, sh) {
  sh = "'" prog "' help" (cmd == "" ? "" : " " cmd)
  n = 0
  while ((sh | getline line) > 0)
    buf[n++] = line
  close(sh)
  return n
}

# roff-safe text: backslashes, option words (their dashes are minus signs,
# so that they can be copied), and a control character at a line's start.
function esc(s,    n, w, i, out, j) {
  gsub(/\\/, "\\e", s)
  n = split(s, w, " ")
  out = ""
  for (i = 1; i <= n; i++) {
    if (w[i] ~ /^[[(]*-/)
      gsub(/-/, "\\-", w[i])
    out = out (i > 1 ? " " : "") w[i]
  }
  if (out ~ /^[.']/)
    out = "\\&" out
  return out
}

# Verbatim (examples): every dash is a minus sign.
function esc_verbatim(s) {
  gsub(/\\/, "\\e", s)
  gsub(/-/, "\\-", s)
  if (s ~ /^[.']/)
    s = "\\&" s
  return s
}

# A synopsis or a list term: literal words (commands, options, values) in
# bold, placeholders (UPPER case, "options") in italics, punctuation roman.
function fmt_words(s,    n, w, i, out, pre, suf, core) {
  gsub(/\\/, "\\e", s)
  n = split(s, w, " ")
  out = ""
  for (i = 1; i <= n; i++) {
    core = w[i]
    pre = ""; suf = ""
    while (core ~ /^[[(<{]/) { pre = pre substr(core, 1, 1); core = substr(core, 2) }
    while (core ~ /[])>},.]$/ && length(core) > 1) {
      suf = substr(core, length(core), 1) suf
      core = substr(core, 1, length(core) - 1)
    }
    if (core ~ /^-/) {
      gsub(/-/, "\\-", core)
      core = "\\fB" core "\\fR"
    } else if (core == "options" || (core ~ /[A-Z]/ && core ~ /^[A-Z0-9_=:.,|]+$/)) {
      core = "\\fI" core "\\fR"
    } else if (core ~ /[A-Za-z0-9]/) {
      core = "\\fB" core "\\fR"
    }
    out = out (i > 1 ? " " : "") pre core suf
  }
  if (out ~ /^[.']/)
    out = "\\&" out
  return out
}

function trim(s) {
  sub(/^ +/, "", s)
  sub(/ +$/, "", s)
  return s
}

# "exit status" -> "EXIT STATUS" (top) or "Exit status" (in a command).
function heading(s, top) {
  sub(/:$/, "", s)
  if (top)
    return toupper(s)
  return toupper(substr(s, 1, 1)) substr(s, 2)
}

# Closes an open verbatim block.
function end_verbatim() {
  if (in_verbatim) {
    print ".fi"
    print ".RE"
    in_verbatim = 0
  }
}

# One line of a help body (after its usage lines): top is 1 in the
# overview, where sections are man sections and "commands:" expands into
# each command's help.
function body_line(line, top,    term, desc, p, k) {
  if (line ~ /^$/) {
    end_verbatim()
    new_para = 1
    return
  }
  if (line ~ /^[a-z][a-z ]*:$/) {
    end_verbatim()
    section = line
    sub(/:$/, "", section)
    if (top) {
      printf ".SH %s\n", (heading(line, 1) ~ / / ? "\"" heading(line, 1) "\"" : heading(line, 1))
      if (section == "commands") {
        for (k = 0; k < n_cmds; k++)
          command_section(cmds[k])
      }
    } else {
      print ".PP"
      printf ".B \"%s\"\n", heading(line, 0)
      after_label = 1
    }
    new_para = 0
    return
  }
  if (top && section == "commands")
    return # the list itself: each command has its subsection
  if (section == "examples" && line ~ /^    /) {
    if (!in_verbatim) {
      print ".PP"
      print ".RS 4"
      print ".nf"
      in_verbatim = 1
    }
    print esc_verbatim(substr(line, 5))
    return
  }
  end_verbatim()
  if (section == "examples" && line ~ /^  [^ ]/) {
    print ".PP"
    print esc(trim(line))
    return
  }
  if (section != "" && line ~ /^  [^ ]/) {
    term = substr(line, 3)
    desc = ""
    p = index(term, "  ")
    if (p > 0) {
      desc = trim(substr(term, p))
      term = substr(term, 1, p - 1)
    }
    print ".TP"
    print fmt_words(term)
    if (desc != "")
      print esc(desc)
    new_para = 0
    return
  }
  if (line ~ /^    /) { # an entry's description goes on
    print esc(trim(line))
    return
  }
  if (new_para)
    print ".PP"
  else if (after_label)
    print ".br"
  new_para = 0
  after_label = 0
  print esc(trim(line))
}

# The usage lines at the top of buf, as synopsis lines (after "usage: "),
# into syn[]; returns the index of the first line after them.
function usage_lines(buf, n, first, syn,    i, m) {
  m = 0
  i = first
  if (i >= n || buf[i] !~ /^usage: /)
    return -1
  syn[m++] = substr(buf[i], 8)
  for (i++; i < n && buf[i] ~ /^ +[^ ]/; i++) {
    if (buf[i] ~ /^       [^ ]/ && buf[i] ~ ("^       " name " "))
      syn[m++] = trim(buf[i])
    else
      syn[m - 1] = syn[m - 1] " " trim(buf[i])
  }
  n_syn = m
  return i
}

# A section of a command's help that an earlier command's help already
# holds word for word (the options every command shares) becomes a
# reference to it: buf[first..end) is replaced in place; returns the new n.
function shared_sections(cmd, buf, n,    i, j, key, out, m, k) {
  m = 0
  for (i = 0; i < n; ) {
    if (buf[i] !~ /^[a-z][a-z ]*:$/) {
      out[m++] = buf[i++]
      continue
    }
    key = buf[i]
    for (j = i + 1; j < n && buf[j] != ""; j++)
      key = key "\n" buf[j]
    if (key in seen_section) {
      out[m++] = buf[i]
      out[m++] = "As for " name " " seen_section[key] "."
    } else {
      seen_section[key] = cmd
      for (k = i; k < j; k++)
        out[m++] = buf[k]
    }
    i = j
  }
  for (i = 0; i < m; i++)
    buf[i] = out[i]
  return m
}

function command_section(cmd,    buf, n, i, syn, k) {
  n = read_help(cmd, buf)
  if (n == 0)
    fail("`" name " help " cmd "` printed nothing")
  n = shared_sections(cmd, buf, n)
  i = usage_lines(buf, n, 0, syn)
  if (i < 0 || syn[0] !~ ("^" name " " cmd "( |$)"))
    fail("`" name " help " cmd "` does not start with \"usage: " name " " cmd "\"")
  printf ".SS \"%s %s\"\n", name, cmd
  for (k = 0; k < n_syn; k++) {
    print (k == 0 ? ".PP" : ".br")
    print fmt_words(syn[k])
  }
  section = ""
  new_para = 1
  for (; i < n; i++)
    body_line(buf[i], 0)
  end_verbatim()
  section = "commands"
}

BEGIN {
  if (prog == "" || name == "" || version == "")
    fail("set -v prog=PATH -v name=NAME -v version=X.Y.Z")
  n = read_help("", top)
  if (n == 0)
    fail("`" name " help` printed nothing")
  if (top[0] !~ ("^" name " - "))
    fail("the overview does not start with \"" name " - \"")
  summary = substr(top[0], length(name) + 4)
  # The commands the overview lists.
  n_cmds = 0
  for (i = 1; i < n; i++) {
    if (top[i] == "commands:") {
      for (j = i + 1; j < n && top[j] ~ /^  [^ ]/; j++) {
        split(substr(top[j], 3), w, " ")
        cmds[n_cmds++] = w[1]
      }
    }
  }
  if (n_cmds == 0)
    fail("the overview lists no commands")

  printf ".\\\" Generated from `%s help` by cmake/help2man.awk: do not edit.\n", name
  printf ".TH %s 1 \"\" \"freetoken %s\" \"freetoken manual\"\n", toupper(name), version
  print ".SH NAME"
  print name " \\- " esc(summary)
  print ".SH SYNOPSIS"
  i = 1
  while (i < n && top[i] == "") i++
  i = usage_lines(top, n, i, syn)
  if (i < 0)
    fail("the overview has no usage lines after its first")
  for (k = 0; k < n_syn; k++) {
    print (k == 0 ? ".PP" : ".br")
    print fmt_words(syn[k])
  }
  print ".SH DESCRIPTION"
  section = ""
  new_para = 0
  for (; i < n; i++)
    body_line(top[i], 1)
  end_verbatim()
}

END {
  if (failed)
    exit 1
}
