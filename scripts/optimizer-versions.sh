#!/usr/bin/env bash
# Which optimizer steps bump the version counters of the parameters they
# update (issue 18; docs/ground-truth.md, "Optimizer steps and version
# counters"), in Python and in LibTorch, for each torch version given:
# builds test/optimizer-versions/optimizer_versions.cpp with g++ against that
# version's wheel (its LibTorch: headers, libraries; C++17 before 2.14, C++20
# from 2.14, the wheel's CXX11 ABI) into build-optimizer-versions/X/, runs it
# and optimizer_versions.py with that version's python, and prints one
# markdown table, a row per case, a column per language, version and variant.
#   scripts/optimizer-versions.sh [VERSION...]
# Default versions: 2.11.0 (.venv) and 2.15.0 (.venvs/torch-2.15.0). It
# installs nothing: run scripts/setup.sh [--torch X] first. About 30 s per
# version to compile on two cores, a few seconds to run; CPU only.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
versions=("$@")
((${#versions[@]})) || versions=(2.11.0 2.15.0)
default=$(sed -n 's/^torch==//p' scripts/requirements.txt)
export OMP_NUM_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=test/optimizer-versions

python_of() {
  if [[ $1 == "$default" ]]; then echo "$repo/.venv/bin/python"; else echo "$repo/.venvs/torch-$1/bin/python"; fi
}

columns=()
for v in "${versions[@]}"; do
  py=$(python_of "$v")
  if ! "$py" -c 'import torch' 2>/dev/null; then
    echo "optimizer-versions: no torch $v at $py; run scripts/setup.sh${v:+ --torch $v}" >&2
    exit 2
  fi
  read -r torch_dir abi minor < <("$py" -c '
import os, torch
print(os.path.dirname(torch.__file__), int(torch.compiled_with_cxx11_abi()),
      torch.__version__.split(".")[1])' 2>/dev/null)
  std=c++17
  ((minor >= 14)) && std=c++20
  out=build-optimizer-versions/$v
  mkdir -p "$out"
  if [[ ! $out/optimizer_versions -nt $src/optimizer_versions.cpp ]]; then
    echo "optimizer-versions: building against torch $v ($std, _GLIBCXX_USE_CXX11_ABI=$abi)" >&2
    g++ -std=$std -O1 -D_GLIBCXX_USE_CXX11_ABI="$abi" -w \
      -isystem "$torch_dir/include" -isystem "$torch_dir/include/torch/csrc/api/include" \
      $src/optimizer_versions.cpp -o "$out/optimizer_versions" \
      -L"$torch_dir/lib" -Wl,-rpath,"$torch_dir/lib" \
      -Wl,--no-as-needed -ltorch -ltorch_cpu -lc10 -Wl,--as-needed
  fi
  echo "optimizer-versions: running torch $v" >&2
  "$py" $src/optimizer_versions.py >"$work/py-$v" 2>/dev/null
  "$out/optimizer_versions" >"$work/cpp-$v"
  columns+=("py-$v-loop" "py-$v-foreach" "py-$v-fused")
done
for v in "${versions[@]}"; do columns+=("cpp-$v"); done

python3 - "$work" "${columns[@]}" <<'PY'
import os, sys
work, columns = sys.argv[1], sys.argv[2:]
table, order = {}, []
for name in sorted(os.listdir(work)):
    lang, version = name.split("-", 1)
    for line in open(os.path.join(work, name)):
        parts = line.rstrip("\n").split("\t")
        if parts[0] != "case":
            continue
        case, variant, cell = parts[1:4]
        if case not in table:
            table[case] = {}
            if lang == "py":
                order.append(case)
        column = f"{lang}-{version}" if lang == "cpp" else f"{lang}-{version}-{variant}"
        table[case][column] = cell.replace(" error", " **error**")
order += [c for c in table if c not in order]
def title(c):
    parts = c.split("-")
    if parts[0] == "cpp":
        return f"C++ {parts[1]}"
    return f"Python {parts[1]} {'for-loop' if parts[2] == 'loop' else parts[2]}"
print("| case | " + " | ".join(title(c) for c in columns) + " |")
print("|---|" + "---|" * len(columns))
for case in order:
    print(f"| {case} | " + " | ".join(table[case].get(c, "—") for c in columns) + " |")
PY
