#!/usr/bin/env bash
# Runs both runtime benchmarks on 2 Gloo ranks and prints their ratios; both
# sides are measured in this run, on this machine.
#   bench/runtime/run_benchmarks.sh [build dir (default: build)] [steps]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
steps=${2:-100}
launch=$build/runtime/ddpguard-launch
export GLOO_SOCKET_IFNAME=lo
# Alternate the two sides and keep the best of three, to damp noise from
# other load on the machine.
cpp_runs=() py_runs=() on_runs=() off_runs=()
for round in 1 2 3; do
  out=$("$launch" --nproc 2 --timeout 600 -- "$build/bench/runtime/ddpguard_step_bench" "$steps")
  cpp_runs+=("$(sed -n 's/^cpp_step_ms=//p' <<<"$out")")
  on_runs+=("$(sed -n 's/^detector_on_ms=\([0-9.]*\).*/\1/p' <<<"$out")")
  off_runs+=("$(sed -n 's/.*detector_off_ms=//p' <<<"$out")")
  out=$("$launch" --nproc 2 --timeout 600 -- /usr/bin/python3 "$here/torch_step_bench.py" "$steps")
  py_runs+=("$(sed -n 's/^py_step_ms=//p' <<<"$out")")
done
min() { printf '%s\n' "$@" | sort -g | head -1; }
cpp=$(min "${cpp_runs[@]}") py=$(min "${py_runs[@]}")
on=$(min "${on_runs[@]}") off=$(min "${off_runs[@]}")
awk -v c="$cpp" -v p="$py" -v on="$on" -v off="$off" 'BEGIN {
  printf "step time, 2 ranks Gloo, MLP 256-1024-1024-256 + BatchNorm, batch 64:\n"
  printf "  ddpguard C++ DDP %.3f ms, PyTorch Python DDP %.3f ms, ratio C++/Python %.3f (goal <= 1.0)\n", c, p, c / p
  printf "detector on %.3f ms, off %.3f ms, ratio on/off %.3f (goal <= 1.01)\n", on, off, on / off
}'
