#!/usr/bin/env bash
# Prepares, on this machine, everything tests/gpu/run.sh needs on a GPU
# machine that has a driver but no network, no compilers and perhaps no
# -dev packages or CUDA toolkit:
#   build-gpu/           Release build with -DFT_CUDA=ON (ft, ftc, ftgen, tests/gpu)
#   build-gpu/carry/bin/ ft and gpu_kernels_prebuilt, linked so that they need
#                        glibc only (zstd, protobuf-c, PCRE2 linked statically
#                        where their .a files are installed; no -march=native)
#                        and ftgen when it links the same way
#   build-gpu/carry/images/   the gpu_kernels test module: sm_80 + sm_90 cubins,
#                             compute_80 PTX (NVRTC runs here, not there)
#   build-gpu/carry/bundles/  tiny (f32, f32 KV), tiny-kvf16 (f32, f16 KV) and
#                             tiny-q8_0 (f16 KV) fixtures, and mixtral (the
#                             tiny Mixtral GGUF, f32: RoPE over adjacent pairs),
#                             compiled with cubins for sm_80 and sm_90 and
#                             portable CPU kernels
# The carry stays under 60 MiB (the device tool carries at most 64 MiB); the
# ~1 GB bench fixture does not fit and ftc (libclang, NVRTC) cannot run
# there, so the GPU run has no bench-sized bundle.
#
# Usage: scripts/gpu-prepare.sh [--local]
#   --local   for a build on the GPU machine itself (tests/gpu/run.sh without
#             a carry): skip the glibc-only check of the binaries.
# Env: FT_GPU_BUILD (default build-gpu), FT_GPU_JOBS (default nproc).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FT_GPU_BUILD:-$ROOT/build-gpu}
JOBS=${FT_GPU_JOBS:-$(nproc)}
CARRY=$BUILD/carry
LOCAL=0
[ "${1:-}" = "--local" ] && LOCAL=1
MAX_CARRY_MIB=60

# The runtime's libraries link statically where an archive is installed:
# their pkg-config lookups (cache variables pkgcfg_lib_<PREFIX>_<lib>) are
# pointed at the .a files. NVRTC and libclang (compiler side only) stay
# shared; --as-needed drops libraries a binary does not use (ftgen and
# libclang).
static_libs=()
for v in ZSTD:zstd PROTOBUF_C:protobuf-c PCRE2:pcre2-8 JANSSON:jansson; do
    a=$(gcc -print-file-name="lib${v#*:}.a")
    [ -f "$a" ] && static_libs+=("-Dpkgcfg_lib_${v%%:*}_${v#*:}=$a")
done
# FT_SERVE=OFF: ft serve's libmicrohttpd cannot be linked glibc-only (its
# archive needs GnuTLS), and the GPU run does not serve.
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DFT_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DFT_NATIVE=OFF -DFT_SERVE=OFF \
    "-DCMAKE_EXE_LINKER_FLAGS=-Wl,--as-needed" "${static_libs[@]}" >/dev/null
ninja -C "$BUILD" -j"$JOBS" ft ftc ftgen gpu_kernels gpu_kernels_prebuilt ftcudafake

rm -rf "$CARRY"
mkdir -p "$CARRY/bin" "$CARRY/images" "$CARRY/bundles" "$CARRY/tmp"
cp "$BUILD/runtime/ft" "$BUILD/tests/gpu/gpu_kernels_prebuilt" "$CARRY/bin/"

# Only glibc's libraries and the loader may remain dynamic.
glibc_only() {
    local extra
    extra=$(ldd "$1" | awk '{print $1}' |
        grep -Ev '^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|lib(c|m|pthread|dl|rt)\.so\.[0-9]+)$' ||
        true)
    [ -z "$extra" ]
}
if glibc_only "$BUILD/tests/ftgen"; then cp "$BUILD/tests/ftgen" "$CARRY/bin/"; fi
if [ $LOCAL -eq 0 ]; then
    for b in "$CARRY"/bin/*; do
        if ! glibc_only "$b"; then
            echo "gpu-prepare: $b needs more than glibc:" >&2
            ldd "$b" >&2
            exit 1
        fi
    done
fi

"$BUILD/tests/gpu/gpu_kernels" --write-images "$CARRY/images"

# Bundles: the same tiny model in f32 and Q8_0, kernels for sm_80/sm_90;
# tiny keeps an f32 KV cache (the exact token comparison of run.sh),
# tiny-kvf16 (f32 weights) and tiny-q8_0 have ftc's default f16 cache.
for name in tiny tiny-kvf16 tiny-q8_0; do
    fmt=f32 kv=f16
    [ $name = tiny-q8_0 ] && fmt=q8_0
    [ $name = tiny ] && kv=f32
    "$BUILD/tests/ftgen" --size tiny --format $fmt --gguf "$CARRY/tmp/$name.gguf" --quiet
    "$BUILD/compiler/ftc" compile "$CARRY/tmp/$name.gguf" -o "$CARRY/bundles/$name" \
        --kv $kv --cuda-arch sm_80,sm_90 --cpu-isa portable --quiet
done
# Mixtral as a llama GGUF (its RoPE over adjacent pairs: ft_rope_norm_*), for
# run.sh's cuda-mixtral step.
"$BUILD/tests/ftgen" --arch mixtral --size tiny --gguf "$CARRY/tmp/mixtral.gguf" --quiet
"$BUILD/compiler/ftc" compile "$CARRY/tmp/mixtral.gguf" -o "$CARRY/bundles/mixtral" \
    --cuda-arch sm_80,sm_90 --cpu-isa portable --quiet
rm -rf "$CARRY/tmp"

# The prepared binaries work here: the kernels against the fake driver,
# ft on the CPU.
FT_CUDA_LIB="$BUILD/tests/cuda_fake/libftcudafake.so" \
    "$CARRY/bin/gpu_kernels_prebuilt" --no-bench --images "$CARRY/images" >"$BUILD/carry-check.txt"
grep -q '^[0-9]* checks, 0 failed$' "$BUILD/carry-check.txt"
"$CARRY/bin/ft" run "$CARRY/bundles/tiny-q8_0" --prompt-tokens 1,2,3 -n 4 >/dev/null 2>&1
"$CARRY/bin/ft" run "$CARRY/bundles/mixtral" --prompt-tokens 1,2,3 -n 4 >/dev/null 2>&1

mib=$(du -sm "$CARRY" | cut -f1)
if [ "$mib" -gt $MAX_CARRY_MIB ]; then
    echo "gpu-prepare: $CARRY is $mib MiB, over $MAX_CARRY_MIB MiB" >&2
    exit 1
fi
echo "gpu-prepare: $CARRY ready ($mib MiB):"
(cd "$CARRY" && find . -type f | sort)
