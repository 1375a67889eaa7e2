#!/usr/bin/env bash
# Installs the coding agents of tests/agents/package.json (Claude Code,
# Codex, OpenCode; pinned by package-lock.json) with npm into
# BUILD/tests/agents-npm, again only when the lock file changes: ctest
# agents_npm, the fixture the agent tests need. Skips (77) without node/npm.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
src=$(cd "$(dirname "$0")" && pwd)
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  echo "SKIP: node and npm are needed for the agent tests (scripts/install-deps.sh installs them)"
  exit 77
fi
npmdir=$build/tests/agents-npm
if cmp -s "$src/package-lock.json" "$npmdir/package-lock.json" && [ -d "$npmdir/node_modules" ]; then
  echo "agents already installed in $npmdir"
  exit 0
fi
rm -rf "$npmdir"; mkdir -p "$npmdir"
cp "$src/package.json" "$src/package-lock.json" "$npmdir/"
# npm install with the lock file, not npm ci: npm leaves OpenCode's
# platform packages for other systems (opencode-darwin-arm64, ...; optional
# dependencies pinned to opencode-ai's exact version) out of the lock file
# it writes, and npm ci then refuses it as out of sync ("Missing:
# opencode-darwin-arm64@ from lock file"). Every version is still exact.
# The agents' own install scripts are not run (npm 11 asks before running
# them): each package's launcher finds its platform binary, an optional
# dependency, without them.
(cd "$npmdir" && npm install --no-save --no-audit --no-fund --loglevel=error) ||
  { echo "FAIL: npm install in $npmdir" >&2; exit 1; }
for a in claude codex opencode; do
  "$npmdir/node_modules/.bin/$a" --version < /dev/null || { echo "FAIL: $a --version" >&2; exit 1; }
done
