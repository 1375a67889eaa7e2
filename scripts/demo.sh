#!/usr/bin/env bash
# The main job on the built-in default model: install what is missing,
# build, generate the synthetic Qwen3-MoE fixture (seeded, nothing is
# downloaded; the "bench" size is about 0.9 GB in Q8_0), compile it for this
# machine, run a prompt, and measure prefill and decode speed.
# Usage: scripts/demo.sh [--size tiny|bench] [--format f32|f16|bf16|q8_0]
set -euo pipefail
cd "$(dirname "$0")/.."
size=bench; format=q8_0
while [ $# -gt 0 ]; do
  case "$1" in
    --size) size=$2; shift 2 ;;
    --format) format=$2; shift 2 ;;
    *) echo "usage: $0 [--size tiny|bench] [--format f32|f16|bf16|q8_0]" >&2; exit 2 ;;
  esac
done
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
out=out/demo-$size-$format
mkdir -p "$out"
echo "== generating the default model ($size, $format) as GGUF"
build/tests/ftgen --seed 1 --size "$size" --format "$format" --gguf "$out/model.gguf"
echo "== ftc inspect $out/model.gguf"
build/compiler/ftc inspect "$out/model.gguf"
echo "== ftc compile $out/model.gguf -o $out/bundle"
build/compiler/ftc compile "$out/model.gguf" -o "$out/bundle"
echo "== ftc inspect $out/bundle"
build/compiler/ftc inspect "$out/bundle"
echo "== ft run $out/bundle -p ... (the weights are random: expect fluent nonsense)"
build/runtime/ft run "$out/bundle" -p "The history of the steam engine" -n 48 --chat
echo "== ft bench $out/bundle"
build/runtime/ft bench "$out/bundle" --prompt 128 --gen 32 --reps 3
