#!/usr/bin/env bash
# Installs the Debian 12 packages ddpguard needs (DESIGN.md §4). Idempotent:
# when every package is present it only checks and returns.
set -euo pipefail

packages=(
  cmake ninja-build ccache g++ python3 git
  llvm-19-dev libclang-19-dev clang-19 clang-tidy-19 clangd-19 llvm-19-tools
  clang-tools-19 libgrpc++-dev libprotobuf-dev
  libgtest-dev libgmock-dev
  libtorch-dev libgloo-dev python3-torch
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
