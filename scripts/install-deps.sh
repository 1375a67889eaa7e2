#!/usr/bin/env bash
# Installs the Debian packages freetoken builds and tests with, if missing.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config clang jq
      libprotobuf-c-dev protobuf-c-compiler libzstd-dev libcmocka-dev
      libclang-14-dev libclang-rt-14-dev libpcre2-dev libjansson-dev libmicrohttpd-dev libxxhash-dev
      libxml2-utils groff-base)
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
