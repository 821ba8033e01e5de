#!/usr/bin/env bash
# Installs the runtime component of a build tree, builds examples/ against it
# as a downstream project (find_package(ddpguard) -> ddpguard::runtime), then
# runs the examples on 2 ranks under torchrun: the buggy one must print the
# detector's report and autograd's in-place error and fail (where the
# broadcast fails a backward, LibTorch up to 2.12.0; from 2.12.1 it trains, as
# with PyTorch's DDP, and reports nothing); each fixed one must train.
#   package_test.sh <build dir> <source dir> <work dir> <torchrun> <ON|OFF: the broadcast fails>
set -euo pipefail
build=$1 src=$2 work=$3 torchrun=$4 broadcast_fails=$5
prefix=$work/install
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" --component runtime >/dev/null
cmake -S "$src/examples" -B "$work/examples" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/examples"
test -s "$work/examples/compile_commands.json"
grep -q '"file": ".*contrastive/train.cpp"' "$work/examples/compile_commands.json"

run2() { timeout 240 "$torchrun" --standalone --nproc-per-node 2 --no-python "$@"; }
log=$work/log
if [[ $broadcast_fails != ON ]]; then
  run2 "$work/examples/contrastive_train" >"$log" 2>&1 ||
    { cat "$log"; echo "FAIL: the example did not train"; exit 1; }
  if grep -q "hazard" "$log"; then cat "$log"; echo "FAIL: a hazard reported"; exit 1; fi
  echo "buggy example: trains, as with PyTorch's DDP of this version"
else
  if run2 "$work/examples/contrastive_train" >"$log" 2>&1; then
    cat "$log"; echo "FAIL: the buggy example succeeded"; exit 1
  fi
  for needle in "DistributedDataParallel hazard on rank 0" "DistributedDataParallel hazard on rank 1" \
      "contrastive/train.cpp:53" "contrastive/train.cpp:54" "bn1.running_mean" \
      "modified by an inplace operation"; do
    grep -qF "$needle" "$log" || { cat "$log"; echo "FAIL: missing '$needle'"; exit 1; }
  done
  echo "buggy example: detector report and autograd error, as expected"
fi

for fixed in train_broadcast_off train_forward_group train_once_per_backward; do
  if ! run2 "$work/examples/contrastive_$fixed" >"$log" 2>&1; then
    cat "$log"; echo "FAIL: $fixed did not train"; exit 1
  fi
  grep -q "rank 1 step 4 loss" "$log" || { cat "$log"; echo "FAIL: $fixed incomplete"; exit 1; }
  if grep -q "hazard" "$log"; then cat "$log"; echo "FAIL: $fixed reported a hazard"; exit 1; fi
  echo "$fixed: trained 5 steps on 2 ranks"
done
