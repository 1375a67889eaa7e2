#!/usr/bin/env bash
# cmake --install into a fresh prefix, then everything an embedder sees:
# the installed files, the man pages (rendered, a section per command), libfreetoken.so's SONAME, its exports (exactly the
# functions freetoken.h declares) and its dependencies (nothing of the
# compiler), and every program of examples/ built against the installed
# tree only, four ways (pkg-config shared and --static, find_package with
# freetoken::freetoken and freetoken::freetoken_static), each run on a tiny
# bundle compiled by the installed ftc: generate and chat print what
# `ft run` prints for the same prompt, replan moves the VRAM budget.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
ftgen=$build/tests/ftgen
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
examples=(generate chat replan batch)
cc=${CC:-cc}

prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" || fail "cmake --install: $(cat "$tmp/install.log")"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
pkg-config --exists freetoken || fail "no freetoken.pc under $prefix/lib/pkgconfig"
libdir=$(pkg-config --variable=libdir freetoken)
[ "$(cd "$libdir" && pwd)" = "$(cd "$prefix/lib" && pwd)" ] || fail "freetoken.pc's libdir is $libdir"
[ "$(pkg-config --modversion freetoken)" = "$(sed -n 's/^project(freetoken VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")" ] ||
  fail "freetoken.pc has version $(pkg-config --modversion freetoken)"
for f in bin/ft bin/ftc lib/libfreetoken.a include/freetoken.h include/ft_kernel_abi.h include/ft_cuda_kernels.h \
         lib/cmake/freetoken/freetokenConfig.cmake lib/cmake/freetoken/freetokenConfigVersion.cmake; do
  [ -f "$prefix/$f" ] || fail "not installed: $f"
done
for p in "$src"/hwprofiles/presets/*.textproto; do
  cmp -s "$p" "$prefix/share/freetoken/presets/$(basename "$p")" || fail "preset $(basename "$p") not installed"
done
for p in freetoken.service freetoken.env.example README.md; do
  cmp -s "$src/packaging/$p" "$prefix/share/doc/freetoken/packaging/$p" || fail "packaging/$p not installed"
done

# The man pages, generated from the programs' help at build time: they
# render without a groff warning and have a section for every command the
# installed program's help lists, and every option its commands list.
for name in ft ftc; do
  page=$prefix/share/man/man1/$name.1
  [ -f "$page" ] || fail "not installed: share/man/man1/$name.1"
  groff -man -Tutf8 -ww -z "$page" 2> "$tmp/$name.man.err" || fail "groff $name.1: $(cat "$tmp/$name.man.err")"
  [ ! -s "$tmp/$name.man.err" ] || fail "$name.1 renders with warnings: $(cat "$tmp/$name.man.err")"
  groff -man -Tascii -P-bou "$page" > "$tmp/$name.man.txt" 2> /dev/null
  cmds=$("$prefix/bin/$name" help | sed -n '/^commands:$/,/^$/s/^  \([a-z]*\) .*/\1/p')
  [ -n "$cmds" ] || fail "$name help lists no commands"
  for cmd in $cmds; do
    grep -qx "   $name $cmd" "$tmp/$name.man.txt" || fail "$name.1 has no section for $name $cmd"
    for opt in $("$prefix/bin/$name" help "$cmd" | grep -E '^  -' | grep -oE -- '--[a-z0-9][a-z0-9-]*' | sort -u); do
      grep -q -- "$opt\b" "$tmp/$name.man.txt" || fail "$name.1 does not mention $name $cmd $opt"
    done
  done
done

# The SONAME follows the one ABI version (runtime/CMakeLists.txt).
abi=$(sed -n 's/^set(FT_ABI_VERSION \([0-9]*\))$/\1/p' "$src/runtime/CMakeLists.txt")
[ -n "$abi" ] || fail "no FT_ABI_VERSION in runtime/CMakeLists.txt"
so=$prefix/lib/libfreetoken.so
readelf -d "$so" > "$tmp/dynamic.txt"
grep -q "(SONAME).*\[libfreetoken.so.$abi\]" "$tmp/dynamic.txt" || fail "SONAME is not libfreetoken.so.$abi: $(grep SONAME "$tmp/dynamic.txt")"
[ -e "$prefix/lib/libfreetoken.so.$abi" ] || fail "no libfreetoken.so.$abi link"
if grep -iE '\(NEEDED\).*(clang|llvm|nvrtc|cuda|jansson|microhttpd|cmocka)' "$tmp/dynamic.txt"; then
  fail "libfreetoken.so links a library of the compiler, of ft serve or of the tests"
fi
# Exports: exactly the functions freetoken.h declares, all ft_*.
nm -D --defined-only "$so" | awk '{print $NF}' | sort > "$tmp/exports.txt"
grep -oE '\bft_[a-z0-9_]+\(' "$src/runtime/include/freetoken.h" | tr -d '(' | sort -u > "$tmp/declared.txt"
[ -s "$tmp/exports.txt" ] || fail "libfreetoken.so exports nothing"
if grep -v '^ft_' "$tmp/exports.txt"; then fail "libfreetoken.so exports symbols outside ft_"; fi
diff "$tmp/declared.txt" "$tmp/exports.txt" > "$tmp/exports.diff" ||
  fail "exports differ from freetoken.h's functions (< declared only, > exported only): $(cat "$tmp/exports.diff")"

# The sanitizer build's libraries need their runtime in every program.
cflags=(-std=c11 -Wall -Wextra -Werror -pedantic)
if grep -q '^FT_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
  cflags+=(-fsanitize=address,undefined)
fi

# pkg-config: shared, and static (the archive by name; the rest as --static says).
mkdir -p "$tmp/pc"
static_libs=$(pkg-config --static --libs freetoken)
static_libs=${static_libs/-lfreetoken/-Wl,-Bstatic -lfreetoken -Wl,-Bdynamic}
for ex in "${examples[@]}"; do
  # shellcheck disable=SC2046
  "$cc" "${cflags[@]}" -o "$tmp/pc/$ex" "$src/examples/$ex.c" $(pkg-config --cflags --libs freetoken) ||
    fail "$ex: pkg-config build"
  readelf -d "$tmp/pc/$ex" | grep -q "(NEEDED).*\[libfreetoken.so.$abi\]" || fail "$ex does not need libfreetoken.so.$abi"
  # shellcheck disable=SC2046,SC2086
  "$cc" "${cflags[@]}" -o "$tmp/pc/${ex}_static" "$src/examples/$ex.c" $(pkg-config --cflags freetoken) $static_libs ||
    fail "$ex: pkg-config --static build"
  if readelf -d "$tmp/pc/${ex}_static" | grep -q "(NEEDED).*libfreetoken"; then fail "${ex}_static needs libfreetoken.so"; fi
done

# find_package(freetoken CONFIG) in a project of its own.
mkdir -p "$tmp/cm"
cat > "$tmp/cm/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.20)
project(ft_embed C)
set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_C_EXTENSIONS OFF)
find_package(freetoken 0.1 CONFIG REQUIRED COMPONENTS static)
message(STATUS "freetoken_DIR: \${freetoken_DIR}")
add_compile_options(${cflags[*]})
add_link_options(${cflags[*]})
foreach(ex ${examples[*]})
  add_executable(\${ex} $src/examples/\${ex}.c)
  target_link_libraries(\${ex} PRIVATE freetoken::freetoken)
  add_executable(\${ex}_static $src/examples/\${ex}.c)
  target_link_libraries(\${ex}_static PRIVATE freetoken::freetoken_static)
endforeach()
EOF
cmake -S "$tmp/cm" -B "$tmp/cm/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/cm.log" 2>&1 ||
  fail "find_package project: $(cat "$tmp/cm.log")"
grep -q "freetoken_DIR: $prefix/lib/cmake/freetoken" "$tmp/cm.log" || fail "find_package found another freetoken: $(grep freetoken_DIR "$tmp/cm.log")"
cmake --build "$tmp/cm/build" > "$tmp/cm_build.log" 2>&1 || fail "find_package build: $(cat "$tmp/cm_build.log")"
for ex in "${examples[@]}"; do
  if readelf -d "$tmp/cm/build/${ex}_static" | grep -q "(NEEDED).*libfreetoken"; then fail "cmake ${ex}_static needs libfreetoken.so"; fi
  readelf -d "$tmp/cm/build/$ex" | grep -q "(NEEDED).*\[libfreetoken.so.$abi\]" || fail "cmake $ex does not need libfreetoken.so.$abi"
done

# A tiny bundle, compiled by the installed ftc; the installed ft's output is
# the reference.
"$ftgen" --quiet --seed 5 --size tiny --format q8_0 --gguf "$tmp/m.gguf"
"$prefix/bin/ftc" compile --cuda-arch none "$tmp/m.gguf" -o "$tmp/b" --quiet
ft=$prefix/bin/ft
prompt="In the beginning"
"$ft" run "$tmp/b" -p "$prompt" -n 20 --temp 0 > "$tmp/ref_generate.txt" 2> /dev/null
"$ft" run "$tmp/b" -p "$prompt" -n 24 --temp 0 > "$tmp/ref_replan.txt" 2> /dev/null
echo >> "$tmp/ref_replan.txt"
"$ft" run "$tmp/b" -p "Hello" --chat -n 12 --temp 0 > "$tmp/ref_chat.txt" 2> /dev/null
echo >> "$tmp/ref_chat.txt"
# batch: three prompts at once through the scheduler, each line what ft
# run prints for that prompt alone.
batch_prompts=("$prompt" "Hello" "Once upon a time there was")
: > "$tmp/ref_batch.txt"
for i in 0 1 2; do
  { printf '[%d] ' "$i"; "$ft" run "$tmp/b" -p "${batch_prompts[$i]}" -n 16 --temp 0 2> /dev/null; echo; } >> "$tmp/ref_batch.txt"
done
[ -s "$tmp/ref_generate.txt" ] || fail "ft run generated nothing"
preset=$prefix/share/freetoken/presets/rtx4060_laptop.textproto

# A number from replan's statistics: field LINE NAME.
field() { sed -n "s/^$1: .*\b$2=\([0-9]*\).*/\1/p" "$out.err"; }
export LD_LIBRARY_PATH=$prefix/lib # for the pkg-config builds (no run path)
for bin in "$tmp"/pc/{generate,chat,replan,batch}{,_static} "$tmp"/cm/build/{generate,chat,replan,batch}{,_static}; do
  out=$tmp/out_$(basename "$(dirname "$bin")")_$(basename "$bin")
  case $(basename "$bin") in
  generate*)
    "$bin" "$tmp/b" "$prompt" 20 0 > "$out.txt" 2> "$out.err" || fail "$bin: $(cat "$out.err")"
    cmp -s "$out.txt" "$tmp/ref_generate.txt" || fail "$bin printed '$(cat "$out.txt")', ft run '$(cat "$tmp/ref_generate.txt")'"
    grep -q "^\[[0-9]* prompt tokens at [0-9.]* tok/s, 20 generated at [0-9.]* tok/s\]$" "$out.err" ||
      fail "$bin: no speed line: $(cat "$out.err")"
    ;;
  chat*)
    printf 'Hello\nTell me more\n' | "$bin" "$tmp/b" 12 0 > "$out.txt" 2> "$out.err" || fail "$bin: $(cat "$out.err")"
    head -n 1 "$out.txt" | cmp -s - "$tmp/ref_chat.txt" || fail "$bin's first reply '$(head -n 1 "$out.txt")' is not ft run --chat's"
    [ "$(wc -l < "$out.txt")" = 2 ] || fail "$bin: not two replies: $(cat "$out.txt")"
    # Both turns generated; the second went on from the first's context.
    c1=$(sed -n 's/^\[turn 1: 12 tokens, \([0-9]*\) of [0-9]* context\]$/\1/p' "$out.err")
    c2=$(sed -n 's/^\[turn 2: 12 tokens, \([0-9]*\) of [0-9]* context\]$/\1/p' "$out.err")
    [ -n "$c1" ] && [ -n "$c2" ] && [ "$c2" -gt $((c1 + 12)) ] || fail "$bin: turns: $(cat "$out.err")"
    ;;
  replan*)
    "$bin" "$tmp/b" "$preset" 2250K 64M "$prompt" 24 > "$out.txt" 2> "$out.err" || fail "$bin: $(cat "$out.err")"
    cmp -s "$out.txt" "$tmp/ref_replan.txt" || fail "$bin's sim tokens differ from ft run on the cpu"
    [ "$(field "before replan" vram_bytes)" = $((2250 * 1024)) ] || fail "$bin: budget before: $(cat "$out.err")"
    [ "$(field "after replan" vram_bytes)" = $((64 * 1024 * 1024)) ] || fail "$bin: budget after: $(cat "$out.err")"
    [ "$(field "after replan" n_slots)" -gt "$(field "before replan" n_slots)" ] || fail "$bin: no more slots: $(cat "$out.err")"
    [ "$(field end n_tokens)" -gt "$(field "before replan" n_tokens)" ] || fail "$bin: nothing ran after the re-plan"
    grep -q "(modelled)" "$out.err" || fail "$bin: sim statistics not labelled modelled"
    ;;
  batch*)
    "$bin" "$tmp/b" 16 "${batch_prompts[@]}" > "$out.txt" 2> "$out.err" || fail "$bin: $(cat "$out.err")"
    cmp -s "$out.txt" "$tmp/ref_batch.txt" || fail "$bin printed '$(cat "$out.txt")', ft run '$(cat "$tmp/ref_batch.txt")'"
    grep -q "^\[3 sessions: [0-9]* tokens evaluated or generated in [0-9.]* s, [0-9.]* tok/s\]$" "$out.err" ||
      fail "$bin: no speed line: $(cat "$out.err")"
    ;;
  esac
done
# A bad bundle is refused with the library's message, not a crash.
if "$tmp/pc/generate" "$tmp/nonexistent" "$prompt" > /dev/null 2> "$tmp/bad.err"; then fail "generate opened a missing bundle"; fi
grep -q "^generate: .*$tmp/nonexistent" "$tmp/bad.err" || fail "generate's error: $(cat "$tmp/bad.err")"
echo "ok: installed tree, exports, and ${#examples[@]} examples built 4 ways and run"
