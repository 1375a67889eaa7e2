#!/usr/bin/env bash
# ctest serve_family_goldens_regen: renders the model families' templates
# again with Python Jinja2 (make_family_goldens.py) and compares with the
# committed goldens that test_serve_family_template checks the C
# renderers against. Skips (77) where python3 or python3-jinja2 is absent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if ! python3 -c 'import jinja2' 2> /dev/null; then
  echo "SKIP: python3 with jinja2 (Debian python3-jinja2) not found"
  exit 77
fi
out="${FT_TEST_TMP:-$(mktemp -d)}"
rm -rf "$out" && mkdir -p "$out"
python3 "$here/make_family_goldens.py" --out "$out"
status=0
for f in qwen3_5 qwen3_coder gpt_oss deepseek_v3_1 glm4_6; do
  # the banner names the Jinja2 version; the cases must be the same
  if ! cmp -s <(jq -S .cases "$here/${f}_render.json") <(jq -S .cases "$out/${f}_render.json"); then
    echo "FAIL: tests/data/serve/${f}_render.json differs from what Jinja2 renders now" \
      "(run tests/data/serve/make_family_goldens.py and review the diff)"
    diff <(jq -S .cases "$here/${f}_render.json") <(jq -S .cases "$out/${f}_render.json") | head -20 || true
    status=1
  else
    echo "ok: ${f}_render.json"
  fi
done
exit $status
