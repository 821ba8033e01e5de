#!/usr/bin/env bash
# The ground truth of docs/ground-truth.md for every supported torch version:
# installs each one (scripts/setup.sh --torch X into .venvs/torch-X; 2.11.0 is
# .venv), runs test/runtime/torch_ground_truth.py with that version's own DDP
# (Gloo, CPU) at world sizes 1 and 2, records the outcomes in
# test/runtime/ground_truth_expected.json (--record: what --check compares
# with), runs the uneven join that can abort the process in runs of its own,
# and prints one markdown table, a column per version and world size.
#   scripts/torch-versions.sh [--build] [VERSION...]
# Default versions: 2.11.0 2.12.1 2.13.0 2.14.1 2.15.0. --build also builds
# ddpguard's runtime against each one (build-torch-X/, runtime only) and runs
# runtime.ground_truth_vs_pytorch there: the runtime's rows against that
# version's DDP. Wheels come from the shared wheelhouse (setup.sh).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
build=0
if [[ ${1:-} == --build ]]; then
  build=1
  shift
fi
versions=("$@")
((${#versions[@]})) || versions=(2.11.0 2.12.1 2.13.0 2.14.1 2.15.0)
default=$(sed -n 's/^torch==//p' scripts/requirements.txt)
export GLOO_SOCKET_IFNAME=${GLOO_SOCKET_IFNAME:-lo} OMP_NUM_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python_of() {
  if [[ $1 == "$default" ]]; then echo "$repo/.venv/bin/python"; else echo "$repo/.venvs/torch-$1/bin/python"; fi
}

columns=()
for v in "${versions[@]}"; do
  if [[ $v == "$default" ]]; then scripts/setup.sh >&2; else scripts/setup.sh --torch "$v" >&2; fi
  py=$(python_of "$v")
  torchrun=$(dirname "$py")/torchrun
  for w in 1 2; do
    out=$work/$v-w$w
    echo "torch-versions: torch $v, gloo, world size $w" >&2
    "$torchrun" --standalone --nproc-per-node "$w" test/runtime/torch_ground_truth.py \
      "$out" --record >&2
    for row in join_two_forwards_uneven; do
      iso=$work/$v-w$w-$row
      if timeout 300 "$torchrun" --standalone --nproc-per-node "$w" \
        test/runtime/torch_ground_truth.py "$iso" --only "$row" >"$iso.log" 2>&1; then
        cat "$iso"/rank*.txt | grep "^row " >>"$out/rank0.txt.isolated"
      elif grep -q 'collective mismatch\|Received data size' "$iso.log"; then
        echo "row $row abort gloo: collective mismatch (the shadow pass's collectives differ)" >>"$out/rank0.txt.isolated"
      else
        echo "row $row abort exit status of torchrun, see a rerun" >>"$out/rank0.txt.isolated"
      fi
    done
    columns+=("$v-w$w")
  done
  if ((build)); then
    dir=build-torch-$v
    CCACHE_BASEDIR=/work cmake -S . -B "$dir" -G Ninja -DDDPGUARD_BUILD_CHECKER=OFF \
      -DDDPGUARD_BUILD_BENCHMARKS=OFF -DDDPGUARD_PYTHON="$py" >/dev/null
    CCACHE_BASEDIR=/work cmake --build "$dir" --target ddpguard_runtime_tests >&2
    ctest --test-dir "$dir" -R 'runtime\.ground_truth_vs_pytorch' --output-on-failure >&2
  fi
done

# The table: a row per ground-truth row, a column per version and world size
# (rank 0's outcome; --record has checked that all ranks agree).
python3 - "$work" "${columns[@]}" <<'PY'
import os, sys
work, columns = sys.argv[1], sys.argv[2:]
table, order = {}, []
for c in columns:
    for name in ("rank0.txt", "rank0.txt.isolated"):
        path = os.path.join(work, c, name)
        if not os.path.exists(path):
            continue
        for line in open(path):
            parts = line.split(" ", 3)
            if parts[0] != "row":
                continue
            if parts[1] not in table:
                order.append(parts[1])
            cell = parts[2].strip()
            table.setdefault(parts[1], {})[c] = "**error**" if cell == "error" else (
                "**abort**" if cell == "abort" else cell)
print("| row | " + " | ".join(c.replace("-w", " Gloo w") for c in columns) + " |")
print("|---|" + "---|" * len(columns))
for r in order:
    print(f"| `{r}` | " + " | ".join(table[r].get(c, "") for c in columns) + " |")
PY
