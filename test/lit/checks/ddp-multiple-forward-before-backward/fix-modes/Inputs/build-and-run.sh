#!/usr/bin/env bash
# Builds a program against ddpguard's runtime as a downstream project (the
# runtime component of the build tree installed, examples/ configured with
# DDPGUARD_EXAMPLE_SOURCE, so the checker reads the real compile command),
# applies `ddpguard --fix --fix-mode=<mode>` to it, prints the fixed source,
# builds it and runs it on <nproc> ranks under torchrun.
#   build-and-run.sh <ddpguard> <source root> <venv python> <work dir> <mode> <program.cpp> <nproc>
set -euo pipefail
ddpguard=$1 src=$2 python=$3 work=$4 mode=$5 program=$6 nproc=$7
build=$(dirname "$(dirname "$ddpguard")")
torchrun=$(dirname "$python")/torchrun
rm -rf "$work" && mkdir -p "$work"
cp "$program" "$work/program.cpp"
cmake --install "$build" --prefix "$work/install" --component runtime >/dev/null
cmake -S "$src/examples" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/install" \
  -DDDPGUARD_EXAMPLE_SOURCE="$work/program.cpp" >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; exit 1; }
# The original reports (exit 1); the fixed file is clean (exit 0).
set +e
"$ddpguard" -p "$work/build" "$work/program.cpp" >"$work/check.log" 2>&1
rc=$?
set -e
[[ $rc == 1 ]] || { cat "$work/check.log"; echo "FAIL: the original should report (exit $rc)"; exit 1; }
"$ddpguard" -p "$work/build" --fix-mode="$mode" --fix "$work/program.cpp" >"$work/fix.log" 2>&1 ||
  { cat "$work/fix.log"; echo "FAIL: --fix did not leave a clean file"; exit 1; }
echo "--- fixed source ---"
cat "$work/program.cpp"
echo "--- run ---"
cmake --build "$work/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
GLOO_SOCKET_IFNAME=lo OMP_NUM_THREADS=1 timeout 240 \
  "$torchrun" --standalone --nproc-per-node "$nproc" --no-python "$work/build/train" 2>&1
