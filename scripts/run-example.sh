#!/usr/bin/env bash
# The README's main job: check, fix and verify the bundled example project.
#
#  1. build ddpguard (checker + runtime) and install the runtime;
#  2. configure examples/ against it, which writes compile_commands.json;
#  3. check examples/contrastive/train.cpp and show the finding;
#  4. run the original on 2 Gloo ranks: the detector reports and autograd fails;
#  5. ddpguard-verify --fix-check: fix copies of it with every fix mode of the
#     CLI (broadcast, fuse, once-per-backward), show the diffs, build
#     each copy (with its own compile database, so the CLI re-checks it), and
#     run the original and each fix on 2 ranks with the runtime's verification
#     mode on (gradients and parameters compared bit for bit across ranks at
#     every step, buffer divergence measured); ends with its verdict table.
#
# Exits 0 when the checker's prediction and both fixes are confirmed.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
scripts/setup.sh || exit 1

build=${DDPGUARD_BUILD_DIR:-build}
work=examples/build/main-job
step() { printf '\n==> %s\n' "$*"; }

step "Building ddpguard (checker and runtime)"
cmake -S . -B "$build" -G Ninja >/dev/null || exit 1
cmake --build "$build" || exit 1
cmake --install "$build" --prefix "$build/install" --component runtime >/dev/null || exit 1
export DDPGUARD_PREFIX=$repo/$build/install

step "Configuring examples/ (compile_commands.json)"
cmake -S examples -B "$work/project" -G Ninja -DCMAKE_PREFIX_PATH="$DDPGUARD_PREFIX" >/dev/null || exit 1

step "Checking examples/contrastive/train.cpp"
"$build/bin/ddpguard" -p "$work/project" examples/contrastive/train.cpp
[[ $? -eq 1 ]] || { echo "expected a finding in the example" >&2; exit 1; }

step "Running the original on 2 ranks (expected to fail as the checker predicts)"
if examples/run.sh -n 2 -t 300 examples/contrastive/train.cpp >"$work/original.log" 2>&1; then
  cat "$work/original.log"
  echo "the original trained: the checker's finding was not confirmed" >&2
  exit 1
fi
grep -E "ddpguard|modified by an inplace operation" "$work/original.log" | awk '!seen[$0]++' | head -20

step "Fixing copies with --fix-mode=broadcast, fuse and once-per-backward, then running the original and each fix on 2 ranks with verification on (ddpguard-verify --fix-check)"
exec "$build/bin/ddpguard-verify" --fix-check examples/contrastive/train.cpp -p "$work/project" \
  --prefix "$DDPGUARD_PREFIX" --nproc 2 --diff --work "$work/verify" --json "$work/verify.json"
