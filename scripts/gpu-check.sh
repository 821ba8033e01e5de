#!/usr/bin/env bash
# GPU checks, for a machine with a GPU and the CUDA torch wheel (torch 2.11,
# no network needed): builds the runtime against the installed torch, then
# runs the contrastive two-view step on CUDA tensors under torchrun:
#   - NCCL, world size 1 (one rank per GPU);
#   - Gloo over CUDA tensors, world size 2 on one GPU;
# each with the buggy pattern (autograd's in-place error on CUDA tensors, the
# detector names the buffers) and the three fixes (train; parameters equal
# across ranks after every step). Prints a table last; exit 0 when every
# verdict is as expected. Well under 8 minutes on one H200.
#   scripts/gpu-check.sh [build dir (default build-gpu)]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
python=${DDPGUARD_PYTHON:-}
if [[ -z $python ]]; then
  for candidate in .venv/bin/python python3 python; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import torch' 2>/dev/null; then
      python=$(command -v "$candidate"); break
    fi
  done
fi
[[ -n $python ]] || { echo "gpu-check: no Python with torch found" >&2; exit 2; }
torchrun=$(dirname "$python")/torchrun
[[ -x $torchrun ]] || torchrun=$(command -v torchrun)
start=$SECONDS
"$python" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda,
  "devices", torch.cuda.device_count(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")'

generator=(-G Ninja); command -v ninja >/dev/null || generator=()
cmake -S . -B "$build" "${generator[@]}" -DDDPGUARD_BUILD_CHECKER=OFF -DDDPGUARD_BUILD_TESTS=OFF \
  -DDDPGUARD_BUILD_BENCHMARKS=OFF -DDDPGUARD_PYTHON="$python" -DDDPGUARD_WITH_NCCL=ON >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
cmake --build "$build" --target ddpguard_gpu_check -j "$(nproc)" >"$build.build.log" 2>&1 ||
  { tail -50 "$build.build.log"; exit 1; }
check=$build/test/gpu/ddpguard_gpu_check
"$check" --probe || { echo "gpu-check: no usable CUDA device" >&2; exit 1; }
echo "built in $((SECONDS - start)) s"

rows=()
status=0
for config in "nccl 1" "gloo 2"; do
  read -r backend world <<<"$config"
  for scenario in buggy broadcast_off forward_group once_per_backward; do
    log=$build/gpu-$scenario-$backend-w$world.log
    t0=$SECONDS
    timeout 180 "$torchrun" --standalone --nproc-per-node "$world" --no-python \
      "$check" "$scenario" "$backend" 5 >"$log" 2>&1
    results=$(grep -c '^RESULT .* PASS' "$log")
    if [[ $results -eq $world ]]; then verdict=PASS; else verdict=FAIL; status=1; fi
    [[ $scenario == buggy && $verdict == PASS ]] && verdict=EXPECTED-FAIL
    detail=$(grep -m1 '^RESULT' "$log" | cut -d' ' -f7- | cut -c1-110)
    [[ -n $detail ]] || detail=$(tail -n 3 "$log" | tr '\n' ' ' | cut -c1-110)
    rows+=("$(printf '| %-17s | %-4s | %d | %-13s | %3d s | %s |' "$scenario" "$backend" "$world" "$verdict" $((SECONDS - t0)) "$detail")")
  done
done

echo
echo "| scenario          | backend | world | verdict | time | detail |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo "total $((SECONDS - start)) s; logs in $build/gpu-*.log"
exit $status
