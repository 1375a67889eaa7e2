#!/usr/bin/env bash
# The GPU check, in one script, for a machine with an NVIDIA GPU (sized for
# under 5 minutes on one H200). Two ways to get the binaries:
#   prepared: build-gpu/carry/ from scripts/gpu-prepare.sh (run elsewhere;
#             for a GPU machine without network, compilers or CUDA toolkit):
#             nothing is built here;
#   built:    without a carry, scripts/gpu-prepare.sh --local builds it here
#             (cmake, ninja, NVRTC needed), then the CUDA unit tests run.
# Then every CUDA kernel against the CPU reference kernels (gpu_kernels),
# the GEMV bandwidth benchmark, and ft on the prepared tiny bundle.
# Results go to $OUT (default ./gpu-out): gpu.txt, *.log, gpu_kernels.txt,
# bench.txt, summary.txt. Exits non-zero on any failure.
# Env: FT_GPU_BUILD (default build-gpu), FT_GPU_JOBS (default nproc),
# FT_GPU_BENCH=0 skips the benchmark (a dry run on the fake driver:
# FT_CUDA_LIB=build-gpu/tests/cuda_fake/libftcudafake.so).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$PWD/gpu-out}
BUILD=${FT_GPU_BUILD:-$ROOT/build-gpu}
CARRY=$BUILD/carry
JOBS=${FT_GPU_JOBS:-$(nproc)}
mkdir -p "$OUT"
summary="$OUT/summary.txt"
: > "$summary"
status=0
step() { # name, log, command...: runs it with a time limit, logs, records pass/fail
    local name=$1 log=$2
    shift 2
    local t0=$SECONDS
    if timeout 240 "$@" > "$log" 2>&1; then
        echo "pass $name ($((SECONDS - t0)) s)" | tee -a "$summary"
    else
        echo "FAIL $name ($((SECONDS - t0)) s, see $(basename "$log"))" | tee -a "$summary"
        tail -40 "$log"
        status=1
    fi
}

# ft BUNDLE OUTDIR: tokens of the cuda backend against the cpu backend's,
# and the benchmark fully resident and at a quarter of the experts.
cuda_e2e() {
    local ft=$1 b=$2 dir=$3 slow=$ROOT/tests/data/slow_cpu_fast_pcie.textproto
    local run=(--prompt-tokens 1,2,3,4,5,6,7,8 -n 32 --json --ctx 64) all n v quarter=""
    mkdir -p "$dir"
    "$ft" run "$b" "${run[@]}" --kernels reference > "$dir/cpu.json" || return 1
    tok() { grep -o '"tokens": \[[^]]*\]' "$1"; }
    slots() { grep -o '"n_slots": [0-9]*' "$1" | grep -o '[0-9]*$'; }
    "$ft" bench "$b" --backend cuda --vram 64M --prompt 64 --gen 64 --reps 3 --json > "$dir/bench_resident.json" || return 1
    all=$(slots "$dir/bench_resident.json")
    echo "bench resident: $(cat "$dir/bench_resident.json")"
    # The largest budget that keeps every layer on the GPU with at most a
    # quarter of the experts in slots (the planner's partition decides).
    for v in $(seq 1024 16 8192); do
        "$ft" bench "$b" --backend cuda --hw "$slow" --vram ${v}K --prompt 64 --gen 64 --reps 3 --json \
            > "$dir/bench_try.json" 2>/dev/null || continue
        n=$(slots "$dir/bench_try.json")
        [ $((4 * n)) -gt "$all" ] && break
        [ "$n" -gt 0 ] && quarter=${v}K && cp "$dir/bench_try.json" "$dir/bench_quarter.json"
    done
    [ -n "$quarter" ] || { echo "quarter: no budget holds a quarter of the $all experts"; return 1; }
    echo "quarter budget $quarter: $(cat "$dir/bench_quarter.json")"
    for args in "--vram 64M" "--vram $quarter --hw $slow"; do
        # shellcheck disable=SC2086
        "$ft" run "$b" "${run[@]}" --backend cuda $args > "$dir/cuda.json" 2> "$dir/cuda.err" || return 1
        [ -s "$dir/cuda.err" ] && { cat "$dir/cuda.err"; return 1; } # fell back to the CPU
        if [ "$(tok "$dir/cpu.json")" != "$(tok "$dir/cuda.json")" ]; then
            echo "tokens differ with $args: cpu $(tok "$dir/cpu.json") cuda $(tok "$dir/cuda.json")"
            return 1
        fi
        echo "tokens equal the cpu backend's with $args"
    done
}

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true; } > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
if [ -x "$CARRY/bin/ft" ]; then
    echo "binaries: prepared ($CARRY)" | tee -a "$summary"
else
    echo "binaries: building in $BUILD" | tee -a "$summary"
    step prepare "$OUT/build.log" "$ROOT/scripts/gpu-prepare.sh" --local
    [ $status -eq 0 ] && step build-tests "$OUT/build-tests.log" ninja -C "$BUILD" -j"$JOBS"
    [ $status -eq 0 ] && step cuda-unit-tests "$OUT/ctest.log" ctest --test-dir "$BUILD" --output-on-failure -R 'cuda' -L unit
fi
GK=("$CARRY/bin/gpu_kernels_prebuilt" --images "$CARRY/images")
BUNDLES=$CARRY/bundles
if [ $status -eq 0 ]; then
    step gpu-kernels "$OUT/gpu_kernels.txt" "${GK[@]}" --no-bench
    grep -E '^(device|module|FAIL|[0-9]+ checks)' "$OUT/gpu_kernels.txt" | tee -a "$summary"
    if grep -q '^skipped' "$OUT/gpu_kernels.txt"; then
        echo "FAIL gpu-kernels skipped: no usable CUDA driver on this machine" | tee -a "$summary"
        status=1
    fi
    [ "${FT_GPU_BENCH:-1}" = 0 ] || step gpu-bench "$OUT/bench.txt" "${GK[@]}" --bench-only
    grep -s '^bench' "$OUT/bench.txt" | tee -a "$summary"
    step ft-tiny "$OUT/ft_tiny.txt" "$CARRY/bin/ft" run "$BUNDLES/tiny-q8_0" --prompt-tokens 1,2,3 -n 8 --json
    # The cuda backend end to end (the executor on runtime/exec/dev_*.c): ft's
    # greedy tokens on the f32 tiny bundle equal the cpu backend's, fully
    # resident and with a quarter of the experts in slots (misses copied,
    # on the slow-CPU profile), and ft bench --backend cuda --json for both;
    # results under $OUT/cuda_e2e/.
    export -f cuda_e2e
    export ROOT
    step cuda-e2e "$OUT/cuda_e2e.txt" bash -c 'cuda_e2e "$@"' cuda_e2e "$CARRY/bin/ft" "$BUNDLES/tiny" "$OUT/cuda_e2e"
    grep -E '^(tokens|bench|quarter)' "$OUT/cuda_e2e.txt" | tee -a "$summary"
    # The same with the f16 KV cache (ftc's default): the kernels
    # ft_kv_append_f16 and ft_attn_decode[_pos]_f16 in the decode graph.
    step cuda-e2e-kvf16 "$OUT/cuda_e2e_kvf16.txt" bash -c 'cuda_e2e "$@"' cuda_e2e "$CARRY/bin/ft" \
        "$BUNDLES/tiny-kvf16" "$OUT/cuda_e2e_kvf16"
    grep -E '^(tokens|bench|quarter)' "$OUT/cuda_e2e_kvf16.txt" | sed 's/^/kvf16 /' | tee -a "$summary"
    # The same for Mixtral (no q/k norm, RoPE over adjacent pairs): the one
    # executor, no Mixtral code in the runtime.
    step cuda-mixtral "$OUT/cuda_mixtral.txt" bash -c 'cuda_e2e "$@"' cuda_e2e "$CARRY/bin/ft" "$BUNDLES/mixtral" \
        "$OUT/cuda_mixtral"
    grep -E '^(tokens|bench|quarter)' "$OUT/cuda_mixtral.txt" | sed 's/^/mixtral /' | tee -a "$summary"
fi
echo "exit $status" >> "$summary"
exit $status
