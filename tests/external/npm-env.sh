# Sourced by the scripts here: ft_npm_dir BUILD_DIR installs the packages of
# package-lock.json with `npm ci` into BUILD_DIR/tests/external-npm (beside
# copies of this folder's *.mjs, which import them), once per lock file,
# and prints that folder. Nothing is installed in the source tree.
ft_npm_dir() {
  local here dir
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  dir=$1/tests/external-npm
  mkdir -p "$dir"
  cp "$here"/*.mjs "$dir/"
  if ! cmp -s "$here/package-lock.json" "$dir/installed.lock"; then
    cp "$here/package.json" "$here/package-lock.json" "$dir/"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error > npm-ci.log 2>&1) ||
      { echo "npm ci failed in $dir: $(tail -n 5 "$dir/npm-ci.log")" >&2; return 1; }
    cp "$here/package-lock.json" "$dir/installed.lock"
  fi
  echo "$dir"
}
