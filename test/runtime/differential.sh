#!/usr/bin/env bash
# Runs one differential scenario: PyTorch's DDP (torch_reference.py under
# /usr/bin/python3, Debian's python3-torch) and then ours, each on N ranks;
# the C++ ranks compare their state with PyTorch's.
#   differential.sh <ddpguard-launch> <test binary> <scenario> <N> <work dir>
set -euo pipefail
launch=$1 tests=$2 scenario=$3 nproc=$4 work=$5
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
export GLOO_SOCKET_IFNAME=lo
"$launch" --nproc "$nproc" --timeout 120 -- \
  /usr/bin/python3 "$here/torch_reference.py" "$scenario" "$work"
echo "PyTorch reference (rank 0): $(cut -c1-160 "$work/rank0.txt" | head -2)"
DDPGUARD_SCENARIO=$scenario DDPGUARD_REFERENCE_DIR=$work \
  exec "$launch" --nproc "$nproc" --timeout 120 -- "$tests" --gtest_filter=Differential.*
