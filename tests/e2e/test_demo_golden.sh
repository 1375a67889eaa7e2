#!/usr/bin/env bash
# The trained demo model (demo/model) against its PyTorch golden
# (demo/golden, written by demo/golden.py from the training script's model,
# not by our code): compiled in f32 with an f32 KV cache, `ft logits` on the
# golden prompt agrees with PyTorch's float32 logits at the kept positions
# within a normalized error of 1e-4 (max |ours - torch| / max |torch| over
# the vocabulary, as test_forward_f32), the argmax agrees at every prompt
# position, and `ft run` (prefill, then one token per step) gives the same
# greedy tokens. A demo/model without weights (a checkout without the
# trained files) is a failure, not a skip: the files are committed.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
ftc=$build/compiler/ftc
ft=$build/runtime/ft
model=$root/demo/model
golden=$root/demo/golden
tmp=${FT_TEST_TMP:-$(mktemp -d)}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

[ -f "$model/model.safetensors" ] || fail "no $model/model.safetensors"
[ -f "$golden/golden.json" ] && [ -f "$golden/logits.f32" ] || fail "no golden in $golden"
"$ftc" compile --cuda-arch none "$model" --format f32 --kv f32 -o "$tmp/f32" --quiet

g=$golden/golden.json
vocab=$(jq .vocab_size "$g")
[ "$("$ftc" inspect "$tmp/f32" --json | jq .vocab_size)" = "$vocab" ] || fail "vocabulary is not $vocab"
tokens=$(jq -r '.tokens | map(tostring) | join(",")' "$g")
n=$(jq '.tokens | length' "$g")
"$ft" logits "$tmp/f32" --tokens "$tokens" -o "$tmp/ours.f32" 2> /dev/null
[ "$(stat -c %s "$tmp/ours.f32")" = $((n * vocab * 4)) ] || fail "ft logits wrote $(stat -c %s "$tmp/ours.f32") bytes"

# One float a line (od prints 9 significant digits: exact enough for 1e-4).
floats() { od -An -v -w4 -tf4 "$@" | tr -d ' '; }
floats "$tmp/ours.f32" > "$tmp/ours.txt"
floats "$golden/logits.f32" > "$tmp/golden.txt"
jq -r '.positions[]' "$g" > "$tmp/positions.txt"
jq -r '.argmax[]' "$g" > "$tmp/argmax.txt"
awk -v V="$vocab" -v n="$n" '
  FILENAME == ARGV[1] { pos[np++] = $1; next }
  FILENAME == ARGV[2] { am[na++] = $1; next }
  FILENAME == ARGV[3] { gold[ng++] = $1 + 0; next }
  { ours[no++] = $1 + 0 }
  END {
    if (no != n * V) { print "ours: " no " values, expected " n * V; exit 1 }
    if (ng != np * V) { print "golden: " ng " values, expected " np * V; exit 1 }
    for (p = 0; p < n; p++) {          # argmax (lowest id on ties) at every position
      best = 0
      for (i = 1; i < V; i++) if (ours[p * V + i] > ours[p * V + best]) best = i
      if (best != am[p]) { printf "position %d: argmax %d, PyTorch %d\n", p, best, am[p]; bad = 1 }
    }
    worst = 0
    for (k = 0; k < np; k++) {
      p = pos[k]; d = 0; m = 0
      for (i = 0; i < V; i++) {
        a = ours[p * V + i]; r = gold[k * V + i]
        e = a > r ? a - r : r - a; if (e > d) d = e
        r = r < 0 ? -r : r; if (r > m) m = r
      }
      err = d / m
      printf "position %d: max |ours - torch| %.3g, largest |logit| %.3g, normalized %.3g\n", p, d, m, err
      if (err > worst) worst = err
    }
    if (worst > 1e-4) { print "normalized error " worst " > 1e-4"; bad = 1 }
    exit bad
  }' "$tmp/positions.txt" "$tmp/argmax.txt" "$tmp/golden.txt" "$tmp/ours.txt" || fail "logits differ from PyTorch's"

# Greedy decoding, one token per step after the prompt.
ng=$(jq '.n_predict' "$g")
"$ft" run "$tmp/f32" --prompt-tokens "$tokens" -n "$ng" --json --ctx 64 2> /dev/null > "$tmp/run.json"
ours_greedy=$(jq -c '.tokens' "$tmp/run.json")
want=$(jq -c '.greedy' "$g")
[ "$ours_greedy" = "$want" ] || fail "greedy tokens $ours_greedy, PyTorch's $want"
echo "ok: $n prompt tokens, greedy $ours_greedy as PyTorch's"
