#!/usr/bin/env bash
# Regenerates tests/external/golden/: the tiny fixture's tokenizer.json and
# tokenizer_config.json (as ftgen --size tiny --hf writes them; every size
# preset shares that vocabulary) and tokenizer-ids.json, the ids
# @huggingface/tokenizers gives for each text of tokenizer-corpus.json.
# Run it after changing the corpus or the fixture's tokenizer, and commit
# what it writes; tests/unit/test_tokenizer_external.c checks freetoken's
# tokenizer against those ids, and check-npm.sh that they are still what
# the npm package gives.
#
#   tests/external/gen-tokenizer-golden.sh [BUILD_DIR]   (default: build)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
# shellcheck source=npm-env.sh
. "$here/npm-env.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/tests/ftgen" --quiet --size tiny --hf "$tmp/hf"
cp "$tmp/hf/tokenizer.json" "$tmp/hf/tokenizer_config.json" "$here/golden/"
npm_dir=$(ft_npm_dir "$build")
node "$npm_dir/encode-corpus.mjs" "$here/golden/tokenizer.json" "$here/golden/tokenizer_config.json" \
  "$here/tokenizer-corpus.json" > "$here/golden/tokenizer-ids.json"
echo "wrote $here/golden/tokenizer-ids.json ($(grep -c '"ids"' "$here/golden/tokenizer-ids.json") texts)"
