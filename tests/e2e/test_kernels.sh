#!/usr/bin/env bash
# Kernel modules end to end: ftc compile stores a CPU module for this
# machine's ISA (and CUDA cubins + PTX where NVRTC is built in), ftc inspect
# lists them, ft runs the generated kernels by default and the reference
# ones on request or when the bundle has none, and says which ran. This is
# the one e2e test that compiles CUDA images (the others pass --cuda-arch
# none: NVRTC for six targets takes about 2 s per bundle).
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
ftc=$build/compiler/ftc
ftgen=$build/tests/ftgen
ft=$build/runtime/ft
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$ftgen" --quiet --seed 5 --size tiny --format q8_0 --gguf "$tmp/m.gguf"

# Defaults: this machine's ISA, CUDA when this ftc has NVRTC.
"$ftc" compile "$tmp/m.gguf" -o "$tmp/b" --quiet
"$ftc" compile "$tmp/m.gguf" -o "$tmp/b.again" --quiet
cmp -s "$tmp/b/plan.ftp" "$tmp/b.again/plan.ftp" || fail "two compiles with kernels differ"
"$ftc" inspect "$tmp/b" --json > "$tmp/b.json"
isa=$(jq -r .cpu_isa "$tmp/b.json")
case "$isa" in avx512|avx2|portable) ;; *) fail "cpu_isa is '$isa'" ;; esac
[ "$(jq .cpu_kernels "$tmp/b.json")" -ge 1 ] || fail "the CPU module has no kernels"
"$ftc" inspect "$tmp/b" | grep -q "^cpu  *$isa, " || fail "human inspect lacks the cpu line"
"$ftc" inspect "$tmp/b" | grep -q "^cuda " || fail "human inspect lacks the cuda line"
if [ "$(jq '.cuda_archs | length' "$tmp/b.json")" -gt 0 ]; then
  [ "$(jq -c .cuda_archs "$tmp/b.json")" = '["sm_80","sm_86","sm_89","sm_90","sm_100","sm_120"]' ] ||
    fail "default cuda_archs: $(jq -c .cuda_archs "$tmp/b.json")"
  [ "$(jq -c .cuda_ptx "$tmp/b.json")" = '["compute_80"]' ] || fail "cuda_ptx: $(jq -c .cuda_ptx "$tmp/b.json")"
  "$ftc" compile "$tmp/m.gguf" -o "$tmp/b90" --quiet --cpu-isa none --cuda-arch sm_90,sm_86
  [ "$(jq -c .cuda_archs <("$ftc" inspect "$tmp/b90" --json))" = '["sm_86","sm_90"]' ] || fail "--cuda-arch list"
  [ "$(jq -c .cuda_ptx <("$ftc" inspect "$tmp/b90" --json))" = '["compute_86"]' ] || fail "--cuda-arch ptx"
else
  rc=0; "$ftc" compile "$tmp/m.gguf" -o "$tmp/x" --cuda-arch sm_90 2> "$tmp/x.err" || rc=$?
  [ $rc = 2 ] && grep -q NVRTC "$tmp/x.err" || fail "--cuda-arch without NVRTC: rc $rc"
fi

# --cpu-isa none: no module, the reference kernels run.
"$ftc" compile "$tmp/m.gguf" -o "$tmp/none" --quiet --cpu-isa none --cuda-arch none
"$ftc" inspect "$tmp/none" --json > "$tmp/none.json"
[ "$(jq .cpu_isa "$tmp/none.json")" = null ] || fail "--cpu-isa none stored a module"
[ "$(jq -c .cuda_archs "$tmp/none.json")" = '[]' ] || fail "--cuda-arch none stored images"
"$ftc" inspect "$tmp/none" | grep -q "^cpu  *none" || fail "human inspect: no module"
"$ft" bench "$tmp/none" --prompt 8 --gen 4 --reps 1 --json > "$tmp/none_bench.json"
[ "$(jq -r .kernels "$tmp/none_bench.json")" = reference ] || fail "a bundle without a module ran $(jq -r .kernels "$tmp/none_bench.json")"

# ft bench says which kernels ran; by default (auto) the generated ones
# run every batch with an avx512 module, else prefill batches only (the
# reference ones run single decode tokens).
for k in reference generated default; do
  opt=(); [ $k = default ] || opt=(--kernels $k)
  "$ft" bench "$tmp/b" --prompt 8 --gen 4 --reps 1 --json "${opt[@]}" > "$tmp/bench_$k.json"
  for f in decode_tok_s prefill_tok_s weight_bytes_per_token; do
    [ "$(jq "has(\"$f\")" "$tmp/bench_$k.json")" = true ] || fail "bench --json lacks $f"
  done
done
[ "$(jq -r .kernels "$tmp/bench_reference.json")" = reference ] || fail "--kernels reference"
[ "$(jq -r .kernels "$tmp/bench_generated.json")" = "generated $isa" ] || fail "--kernels generated: $(jq -r .kernels "$tmp/bench_generated.json")"
auto_desc="generated (prefill) $isa"; [ "$isa" = avx512 ] && auto_desc="generated $isa"
[ "$(jq -r .kernels "$tmp/bench_default.json")" = "$auto_desc" ] || fail "auto is not the default: $(jq -r .kernels "$tmp/bench_default.json")"
"$ft" bench "$tmp/b" --prompt 8 --gen 4 --reps 1 --kernels generated | grep -q "^kernels *generated $isa" || fail "human bench lacks the kernels line"

# Every portable ISA this CPU runs gives a module it loads; the other
# engine commands take --kernels too.
"$ftc" compile "$tmp/m.gguf" -o "$tmp/port" --quiet --cpu-isa portable --cuda-arch none
[ "$(jq -r .kernels <("$ft" bench "$tmp/port" --prompt 8 --gen 4 --reps 1 --json --kernels generated))" = "generated portable" ] ||
  fail "portable module"
"$ft" run "$tmp/b" -p "hello" -n 4 --kernels reference --json > "$tmp/run_ref.json"
"$ft" run "$tmp/b" -p "hello" -n 4 --json > "$tmp/run_gen.json"
[ "$(jq '.tokens | length' "$tmp/run_gen.json")" -ge 1 ] || fail "run with generated kernels"
rc=0; "$ft" run "$tmp/b" -p "hello" -n 4 --kernels fast 2> "$tmp/bad.err" || rc=$?
[ $rc != 0 ] && grep -q "expected auto, generated or reference" "$tmp/bad.err" || fail "--kernels fast accepted"
rc=0; "$ftc" compile "$tmp/m.gguf" -o "$tmp/x" --cpu-isa sse9 2> /dev/null || rc=$?
[ $rc = 2 ] || fail "--cpu-isa sse9: rc $rc"
echo ok
