#!/usr/bin/env bash
# The ground-truth table on N ranks: PyTorch's own DDP (torch_ground_truth.py,
# which also checks its outcomes against the table for its version), then
# ddpguard's DDP on the same rows, compared row by row with PyTorch's.
#   ground_truth.sh <torchrun> <test binary> <N> <work dir>
set -euo pipefail
torchrun=$1 tests=$2 nproc=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
"$torchrun" --standalone --nproc-per-node "$nproc" \
  "$here/torch_ground_truth.py" "$work" --check
DDPGUARD_REFERENCE_DIR=$work exec "$torchrun" --standalone --nproc-per-node "$nproc" \
  --no-python "$tests" --gtest_filter=GroundTruth.MatchesPyTorch
