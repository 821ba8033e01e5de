#!/usr/bin/env bash
# Tests a wheel of scripts/build-wheel.sh as a Python user meets it: installed
# offline (--no-index, nothing but the wheel) into a fresh venv with no torch,
#  - `ddpguard --version` runs; `ddpguard` finds the two-view script's
#    finding (exit 1), `--fix` fixes it and a second run finds nothing (exit 0);
#  - ddpguard-explain and ddpguard-verify, with torch missing, fail with
#    exit 2 naming the extra that installs it;
#  - with TORCH_PYTHON's torch made visible (a .pth file), `import ddpguard`
#    still does not import torch.
#
#   scripts/test-wheel.sh WHEEL [TORCH_PYTHON]
#
# TORCH_PYTHON defaults to .venv/bin/python; its pip installs into the venv
# (pip --python), which saves the 4 s of putting pip into the venv itself.
# Prints the install's seconds.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
wheel=$(realpath "$1")
torch_python=${2:-$repo/.venv/bin/python}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1
unset PYTHONPATH

fail() { echo "test-wheel: $*" >&2; exit 1; }
# expect STATUS COMMAND...: runs COMMAND (output in $work/out), fails unless it exits STATUS.
expect() {
  local want=$1 status=0
  shift
  "$@" >"$work/out" 2>&1 || status=$?
  ((status == want)) || { cat "$work/out" >&2; fail "exit $status, not $want: $*"; }
}

venv=$work/venv
python3 -m venv --without-pip "$venv"
TIMEFORMAT='test-wheel: installed in %R s'
time "$torch_python" -m pip --python "$venv/bin/python" install -q --no-index "$wheel"
bin=$venv/bin

expect 0 "$bin/ddpguard" --version
mkdir "$work/project"
cp "$repo/test/lit/Inputs/python/two_view.py" "$work/project/train.py"
expect 1 "$bin/ddpguard" "$work/project/train.py"
expect 0 "$bin/ddpguard" --fix "$work/project/train.py"
expect 0 "$bin/ddpguard" "$work/project/train.py"

for tool in explain verify; do
  expect 2 "$bin/ddpguard-$tool" "$work/project/train.py"
  grep -qF "ddpguard[$tool]" "$work/out" || { cat "$work/out" >&2; fail "ddpguard-$tool does not name ddpguard[$tool]"; }
done

site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$torch_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' >"$site/torch-under-test.pth"
expect 0 "$venv/bin/python" -c '
import importlib.util, sys
import ddpguard
assert importlib.util.find_spec("torch"), "torch is not visible"
assert "torch" not in sys.modules, "import ddpguard imported torch"'
echo "test-wheel: $(basename "$wheel") passed"
