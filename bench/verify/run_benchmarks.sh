#!/usr/bin/env bash
# The verification mode's costs, both sides of each ratio measured in this run:
#   1. hash throughput over memcpy of the same bytes (one thread; 256 KiB,
#      4 MiB, 64 MiB); goal: hash/memcpy >= 0.5 at every size;
#   2. per-step cost of verification over the training step itself on a small
#      model (MLP with BatchNorm, hidden 256, batch 32; 2 Gloo ranks under
#      torchrun, one intra-op thread each); goal: <= 5%.
#   bench/verify/run_benchmarks.sh [build dir (default build)] [rounds (default 3)]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${1:-$repo/build}
rounds=${2:-3}
torchrun=${DDPGUARD_TORCHRUN:-$repo/.venv/bin/torchrun}
export GLOO_SOCKET_IFNAME=lo OMP_NUM_THREADS=1
min() { printf '%s\n' "$@" | sort -g | head -1; }

echo "== hash throughput / memcpy throughput (one thread)"
"$build/bench/verify/ddpguard_hash_bench" 7 | tee /tmp/ddpguard-hash-bench.$$
ratio=$(sed -n 's/^min_ratio=//p' /tmp/ddpguard-hash-bench.$$)
rm -f /tmp/ddpguard-hash-bench.$$
awk -v r="$ratio" 'BEGIN { printf "hash/memcpy throughput, worst size: %.3f (goal >= 0.5)\n", r }'

echo "== verification cost per step (2 ranks, MLP hidden 256, batch 32)"
costs=() ons=() offs=() directs=()
for ((round = 0; round < rounds; ++round)); do
  out=$(timeout 600 "$torchrun" --standalone --nproc-per-node 2 --no-python \
    "$build/bench/verify/ddpguard_verify_step_bench" 800 256 32 2>/dev/null)
  echo "$out" | head -2
  costs+=("$(sed -n 's/.* cost=//p' <<<"$out")")
  directs+=("$(sed -n 's/.* direct_cost=\([0-9.]*\).*/\1/p' <<<"$out")")
  ons+=("$(sed -n 's/^verify_on_ms=\([0-9.]*\).*/\1/p' <<<"$out")")
  offs+=("$(sed -n 's/.*verify_off_ms=\([0-9.]*\).*/\1/p' <<<"$out")")
done
# The median round (each round's cost is itself a median over 40 block pairs).
mid=$(printf '%s\n' "${costs[@]}" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
awk -v c="$mid" -v on="$(min "${ons[@]}")" -v off="$(min "${offs[@]}")" 'BEGIN {
  printf "verification cost / step, median of rounds: %.2f%% (goal <= 5%%); step %.3f ms verified, %.3f ms not (best rounds)\n", 100 * c, on, off }'
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
awk -v c="$(median "${directs[@]}")" 'BEGIN {
  printf "verifier time / step (its own clock over the unverified step), median of rounds: %.2f%%\n", 100 * c }'
echo "== noise floor: the same comparison with verification off on both sides"
out=$(timeout 600 "$torchrun" --standalone --nproc-per-node 2 --no-python \
  "$build/bench/verify/ddpguard_verify_step_bench" 800 256 32 aa 2>/dev/null)
echo "$out" | head -1
