#!/usr/bin/env bash
# The main job on the built-in default model: install what is missing,
# build, generate the synthetic Qwen3-MoE fixture (seeded, nothing is
# downloaded), compile it into a bundle, and show what was built.
# Usage: scripts/demo.sh [--size tiny|bench] [--format f32|f16|bf16|q8_0]
set -euo pipefail
cd "$(dirname "$0")/.."
size=tiny; format=q8_0
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
echo "== generating the default model ($size, $format) as GGUF and as an HF directory"
build/tests/ftgen --seed 1 --size "$size" --format "$format" --gguf "$out/model.gguf" --hf "$out/model-hf"
echo "== ftc inspect $out/model.gguf"
build/compiler/ftc inspect "$out/model.gguf"
echo "== ftc compile $out/model.gguf -o $out/bundle"
build/compiler/ftc compile "$out/model.gguf" -o "$out/bundle"
echo "== ftc inspect $out/bundle"
build/compiler/ftc inspect "$out/bundle"
build/compiler/ftc verify "$out/bundle"
