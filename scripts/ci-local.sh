#!/usr/bin/env bash
# Runs .ci/run the way CI does: in a fresh clone of the committed HEAD,
# with CI=true and no standard input. Usage: scripts/ci-local.sh [DIR]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$(mktemp -d /tmp/freetoken-ci.XXXXXX)}
rm -rf "$dir"
git clone -q "$src" "$dir"
cd "$dir"
time CI=true bash .ci/run < /dev/null
