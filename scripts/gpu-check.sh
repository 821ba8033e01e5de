#!/usr/bin/env bash
# GPU checks, for a machine with a GPU and the CUDA torch wheel (torch 2.11,
# no network needed): builds the runtime against the installed torch, then
# runs the contrastive two-view step on CUDA tensors under torchrun:
#   - NCCL, world size 1 (one rank per GPU);
#   - Gloo over CUDA tensors, world size 2 on one GPU;
# each with the buggy pattern (autograd's in-place error on CUDA tensors, the
# detector names the buffers) and the three fixes (train; parameters equal
# across ranks after every step). Then the verification mode: its CUDA hash
# kernel against the CPU path, and every ddpguard-verify scenario
# (contrastive, gan, custom-buffer, gradient-penalty, recurrent; original and
# three fixes, verified at every step) on CUDA tensors with NCCL (world 1) and
# with Gloo (world 2). Prints a table last; exit 0 when every verdict is as
# expected. Well under 8 minutes on one H200.
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
cmake --build "$build" --target ddpguard_gpu_check ddpguard-verify-scenarios -j "$(nproc)" >"$build.build.log" 2>&1 ||
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

# The verification mode: the hash kernel, then every scenario with all its
# variants in one launch per scenario (--in-process), 3 steps each.
t0=$SECONDS
log=$build/gpu-hash.log
"$check" hash >"$log" 2>&1
if grep -q '^RESULT .* PASS' "$log"; then verdict=PASS; else verdict=FAIL; status=1; fi
detail=$(grep -m1 '^RESULT' "$log" | cut -d' ' -f7- | cut -c1-110)
[[ -n $detail ]] || detail=$(tail -n 3 "$log" | tr '\n' ' ' | cut -c1-110)
rows+=("$(printf '| %-17s | %-4s | %d | %-13s | %3d s | %s |' verify-hash cuda 1 "$verdict" $((SECONDS - t0)) "$detail")")
summarize_verify() { # verdicts JSON -> one "scenario<TAB>verdict<TAB>detail" line per scenario
  "$python" - "$1" <<'EOF'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print(f"all\tFAIL\tno verdicts: {e}")
    sys.exit()
by = {}
for r in j["results"]:
    by.setdefault(r["scenario"], []).append(r)
for scenario, rs in by.items():
    ok = all(r["verdict"] != "FAIL" for r in rs)
    print(f"{scenario}\t{'PASS' if ok else 'FAIL'}\t" +
          ", ".join(f"{r['variant']} {r['verdict']}" for r in rs))
EOF
}
for config in "nccl 1" "gloo 2"; do
  read -r backend world <<<"$config"
  t0=$SECONDS
  out=$build/verify-$backend-w$world
  timeout 300 "$python" "$build/bin/ddpguard-verify" --scenario all --in-process --steps 3 \
    --backend "$backend" --nproc "$world" --device cuda --torchrun "$torchrun" --timeout 120 \
    --work "$out" --json "$out.json" >"$out.log" 2>&1 || status=1
  cat "$out.log"
  while IFS=$'\t' read -r scenario verdict detail; do
    [[ $verdict == PASS ]] || status=1
    rows+=("$(printf '| %-17s | %-4s | %d | %-13s | %3d s | %s |' "verify:$scenario" "$backend" "$world" "$verdict" $((SECONDS - t0)) "$detail")")
  done < <(summarize_verify "$out.json")
done

echo
echo "| scenario          | backend | world | verdict | time | detail |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo "total $((SECONDS - start)) s; logs in $build/gpu-*.log"
exit $status
