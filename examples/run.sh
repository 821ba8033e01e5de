#!/usr/bin/env bash
# Builds one training source against the ddpguard runtime and runs it on N
# local ranks under torchrun (`torchrun --standalone --nproc-per-node N
# --no-python ./train`). Exits with torchrun's status: 0 when every rank
# succeeded; past TIMEOUT_S every rank is stopped and it exits 124.
#
#   examples/run.sh [-n N] [-t TIMEOUT_S] SOURCE.cpp [-- PROGRAM ARGS...]
#
# The runtime comes from DDPGUARD_PREFIX (an installed tree) if set; otherwise
# it is built (runtime only) and installed under examples/build/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")

nproc=2
timeout=300
while getopts "n:t:" opt; do
  case $opt in
    n) nproc=$OPTARG ;;
    t) timeout=$OPTARG ;;
    *) echo "usage: $0 [-n N] [-t TIMEOUT_S] SOURCE.cpp [-- ARGS...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [[ $# -lt 1 ]]; then
  echo "usage: $0 [-n N] [-t TIMEOUT_S] SOURCE.cpp [-- ARGS...]" >&2
  exit 2
fi
source=$(realpath "$1")
shift
[[ ${1:-} == -- ]] && shift
[[ -f $source ]] || { echo "run.sh: no such file: $source" >&2; exit 2; }

build_root=$here/build
if [[ -n ${DDPGUARD_PREFIX:-} ]]; then
  prefix=$DDPGUARD_PREFIX
else
  prefix=$build_root/install
  cmake -S "$repo" -B "$build_root/runtime" -G Ninja -DDDPGUARD_BUILD_CHECKER=OFF \
    -DDDPGUARD_BUILD_TESTS=OFF -DDDPGUARD_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build "$build_root/runtime" >/dev/null
  cmake --install "$build_root/runtime" --prefix "$prefix" --component runtime >/dev/null
fi

# One build directory per source path, so fixed and original do not collide.
key=$(printf '%s' "$source" | sha1sum | cut -c1-10)
build=$build_root/run-$(basename "$source" .cpp)-$key
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DDDPGUARD_EXAMPLE_SOURCE="$source" >/dev/null
cmake --build "$build" >/dev/null

torchrun=${DDPGUARD_TORCHRUN:-$repo/.venv/bin/torchrun}
[[ -x $torchrun ]] || torchrun=$(command -v torchrun) ||
  { echo "run.sh: torchrun not found (run scripts/setup.sh)" >&2; exit 2; }
export GLOO_SOCKET_IFNAME=${GLOO_SOCKET_IFNAME:-lo}
exec timeout "$timeout" "$torchrun" --standalone --nproc-per-node "$nproc" --no-python \
  "$build/train" "$@"
