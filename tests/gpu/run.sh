#!/usr/bin/env bash
# The GPU check, in one script, for a machine with an NVIDIA GPU (sized for
# under 5 minutes on one H200): configure with -DFT_CUDA=ON, build, run the
# CUDA unit tests and every CUDA kernel against the CPU reference kernels
# (gpu_kernels), then the GEMV bandwidth benchmark. Results go to $OUT
# (default ./gpu-out): build.log, ctest.log, gpu_kernels.txt, bench.txt,
# summary.txt. Exits non-zero on any failure.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$PWD/gpu-out}
BUILD=${FT_GPU_BUILD:-$ROOT/build-gpu}
JOBS=${FT_GPU_JOBS:-$(nproc)}
mkdir -p "$OUT"
summary="$OUT/summary.txt"
: > "$summary"
status=0
step() { # name, command...: runs it with a time limit, logs, records pass/fail
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

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true; } > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
step configure "$OUT/configure.log" cmake -S "$ROOT" -B "$BUILD" -G Ninja -DFT_CUDA=ON -DCMAKE_BUILD_TYPE=Release
[ $status -eq 0 ] && step build "$OUT/build.log" ninja -C "$BUILD" -j"$JOBS"
if [ $status -eq 0 ]; then
    step cuda-unit-tests "$OUT/ctest.log" ctest --test-dir "$BUILD" --output-on-failure -R 'cuda' -L unit
    step gpu-kernels "$OUT/gpu_kernels.txt" "$BUILD/tests/gpu/gpu_kernels" --no-bench
    grep -E '^(device|module|FAIL|[0-9]+ checks)' "$OUT/gpu_kernels.txt" | tee -a "$summary"
    if grep -q '^skipped' "$OUT/gpu_kernels.txt"; then
        echo "FAIL gpu-kernels skipped: no usable CUDA driver on this machine" | tee -a "$summary"
        status=1
    fi
    step gpu-bench "$OUT/bench.txt" "$BUILD/tests/gpu/gpu_kernels" --bench-only
    grep '^bench' "$OUT/bench.txt" | tee -a "$summary"
fi
echo "exit $status" >> "$summary"
exit $status
