#!/usr/bin/env bash
# Runs the runtime benchmarks on 2 Gloo ranks and prints their ratios; both
# sides of each ratio are measured in this run, on this machine.
#   bench/runtime/run_benchmarks.sh [build dir (default: build)] [rounds (default 3)]
# Two models: a small MLP (hidden 256, batch 32), where DDP's own overhead is
# visible, and a large one (hidden 1024, batch 64), where compute dominates.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
rounds=${2:-3}
repo=$(cd "$here/../.." && pwd)
torchrun=${DDPGUARD_TORCHRUN:-$repo/.venv/bin/torchrun}
run2() { timeout 600 "$torchrun" --standalone --nproc-per-node 2 "$@"; }
export GLOO_SOCKET_IFNAME=lo OMP_NUM_THREADS=1
min() { printf '%s\n' "$@" | sort -g | head -1; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# Alternates the C++ and Python runs and keeps the best of each, to damp
# noise from other load on the machine.
compare() { # steps hidden batch detector
  local cpp_runs=() py_runs=() on_runs=() off_runs=() ratio_runs=() cpu_ratio_runs=() us_runs=() explainer_runs=() out
  for ((round = 0; round < rounds; ++round)); do
    out=$(run2 --no-python "$build/bench/runtime/ddpguard_step_bench" "$@" 2>/dev/null)
    cpp_runs+=("$(sed -n 's/^cpp_step_ms=//p' <<<"$out")")
    if [[ $4 == 1 ]]; then
      on_runs+=("$(sed -n 's/^detector_on_ms=\([0-9.]*\).*/\1/p' <<<"$out")")
      off_runs+=("$(sed -n 's/.*detector_off_ms=\([0-9.]*\).*/\1/p' <<<"$out")")
      ratio_runs+=("$(sed -n 's/.*detector_ratio=\([0-9.]*\).*/\1/p' <<<"$out")")
      cpu_ratio_runs+=("$(sed -n 's/.*detector_cpu_ratio=\([0-9.]*\).*/\1/p' <<<"$out")")
      us_runs+=("$(sed -n 's/.*detector_us=\([-0-9.]*\).*/\1/p' <<<"$out")")
      explainer_runs+=("$(sed -n 's/.*explainer_cpu_ratio=\([0-9.]*\).*/\1/p' <<<"$out")")
    fi
    out=$(run2 "$here/torch_step_bench.py" "$1" "$2" "$3" 2>/dev/null)
    py_runs+=("$(sed -n 's/^py_step_ms=//p' <<<"$out")")
  done
  awk -v c="$(min "${cpp_runs[@]}")" -v p="$(min "${py_runs[@]}")" -v h="$2" -v b="$3" 'BEGIN {
    printf "step time, MLP hidden %d, batch %d: ddpguard C++ DDP %.3f ms, PyTorch Python DDP %.3f ms, ratio C++/Python %.3f (goal <= 0.9)\n", h, b, c, p, c / p }'
  if [[ $4 == 1 ]]; then
    awk -v on="$(min "${on_runs[@]}")" -v off="$(min "${off_runs[@]}")" \
        -v ratio="$(median "${ratio_runs[@]}")" -v cpu="$(median "${cpu_ratio_runs[@]}")" \
        -v h="$2" 'BEGIN {
      printf "detector, MLP hidden %d, Adam: on %.3f ms, off %.3f ms, ratio on/off %.3f wall, %.3f main-thread CPU (medians of paired blocks, then of rounds; goal <= 1.01)\n", h, on, off, ratio, cpu }'
    awk -v us="$(median "${us_runs[@]}")" -v off="$(min "${off_runs[@]}")" 'BEGIN {
      printf "detector cost per step (same module tree, tiny tensors, main-thread CPU on - off): %.2f us = ratio %.4f of the step above (goal <= 1.01)\n", us, 1 + us / (off * 1000) }'
    awk -v r="$(median "${explainer_runs[@]}")" -v h="$2" 'BEGIN {
      printf "in-place error explainer, MLP hidden %d, Adam, clean steps: explaining engine / autograd base engine %.4f main-thread CPU (medians of paired blocks, then of rounds; goal <= 1.01)\n", h, r }'
  fi
}

# The detector's silent_writes mode against the detector alone, both models.
silent() { # steps hidden batch
  local ratio_runs=() cpu_runs=() on_runs=() out
  for ((round = 0; round < rounds; ++round)); do
    out=$(run2 --no-python "$build/bench/runtime/ddpguard_step_bench" "$@" 2 2>/dev/null)
    on_runs+=("$(sed -n 's/^silent_on_ms=\([0-9.]*\).*/\1/p' <<<"$out")")
    ratio_runs+=("$(sed -n 's/.*silent_ratio=\([0-9.]*\).*/\1/p' <<<"$out")")
    cpu_runs+=("$(sed -n 's/.*silent_cpu_ratio=\([0-9.]*\).*/\1/p' <<<"$out")")
  done
  awk -v on="$(min "${on_runs[@]}")" -v ratio="$(median "${ratio_runs[@]}")" \
      -v cpu="$(median "${cpu_runs[@]}")" -v h="$2" -v b="$3" 'BEGIN {
    printf "silent_writes mode, MLP hidden %d, batch %d, Adam: on %.3f ms, ratio to the detector alone %.3f wall, %.3f main-thread CPU (medians of paired blocks, then of rounds; goal <= 1.02 sampled)\n", h, b, on, ratio, cpu }'
}

compare 200 256 32 1
compare 20 1024 64 0
silent 200 256 32
silent 20 1024 64
