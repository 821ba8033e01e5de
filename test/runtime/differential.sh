#!/usr/bin/env bash
# Runs one differential scenario: PyTorch's own DDP (torch_reference.py) and
# then ours, each on N ranks under torchrun; the C++ ranks compare their
# state with PyTorch's.
#   differential.sh <torchrun> <python> <test binary> <scenario> <N> <work dir>
set -euo pipefail
torchrun=$1 python=$2 tests=$3 scenario=$4 nproc=$5 work=$6
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
"$torchrun" --standalone --nproc-per-node "$nproc" \
  "$here/torch_reference.py" "$scenario" "$work"
echo "PyTorch reference (rank 0): $(cut -c1-160 "$work/rank0.txt" | head -2)"
DDPGUARD_SCENARIO=$scenario DDPGUARD_REFERENCE_DIR=$work \
  exec "$torchrun" --standalone --nproc-per-node "$nproc" --no-python \
  "$tests" --gtest_filter=Differential.*
