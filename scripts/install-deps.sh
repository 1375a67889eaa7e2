#!/usr/bin/env bash
# Installs the Debian packages freetoken builds and tests with, if missing.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config clang jq curl
      libprotobuf-c-dev protobuf-c-compiler libzstd-dev libcmocka-dev
      libclang-14-dev libclang-rt-14-dev libpcre2-dev libjansson-dev libmicrohttpd-dev libxxhash-dev
      libxml2-utils groff-base unicode-data bzip2 python3-jinja2
      chromium) # chromium: the chat page test (tests/e2e/test_serve_page_chromium.sh)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# node and npm, for the checks against npm packages (tests/external, ctest
# external_npm): Debian's nodejs and npm for whichever is missing (a node
# installed otherwise, with its own npm, is left alone).
node_pkgs=()
command -v node > /dev/null || node_pkgs+=(nodejs)
command -v npm > /dev/null || node_pkgs+=(npm)
if [ ${#node_pkgs[@]} -gt 0 ]; then
  echo "installing: ${node_pkgs[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${node_pkgs[@]}"
fi
