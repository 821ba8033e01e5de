#!/usr/bin/env bash
# Installs what ddpguard needs, idempotently (quick when all is there):
#  - Debian 12 packages: LLVM/Clang 19 with clang-tidy, clangd and libFuzzer, CMake,
#    Ninja, ccache, GoogleTest, Python's venv, and Gloo's headers (torch's
#    wheel ships c10d's ProcessGroupGloo.hpp but not the gloo/ it includes);
#  - a project-local virtual environment .venv with the pinned packages of
#    scripts/requirements.txt (torch==2.11.0: LibTorch 2.x, torchrun and
#    PyTorch's DDP). pip's cache makes a re-install cheap.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

packages=(
  cmake ninja-build ccache g++ python3 python3-venv git
  llvm-19-dev libclang-19-dev clang-19 clang-tidy-19 clangd-19 llvm-19-tools
  clang-tools-19 libclang-rt-19-dev libgrpc++-dev libprotobuf-dev neovim
  libgtest-dev libgmock-dev libgloo-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

venv=$repo/.venv
requirements=$repo/scripts/requirements.txt
stamp=$venv/.ddpguard-requirements
wanted=$(sha256sum "$requirements" | cut -d' ' -f1)
if [[ -x $venv/bin/python && -f $stamp && $(cat "$stamp") == "$wanted" ]]; then
  exit 0
fi
echo "setup: installing scripts/requirements.txt into .venv (torch is large: minutes the first time)" >&2
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -r "$requirements"
echo "$wanted" >"$stamp"
