#!/usr/bin/env bash
# The README's test command: installs what is missing (scripts/setup.sh),
# builds everything with Ninja against LibTorch 2.11 from .venv, runs the
# GoogleTest/runtime tests (CTest, ranks under torchrun) and the lit tests,
# and ends with one line of counts for both together (GPU tests are built and
# reported as skipped where no GPU is).
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit 1

build=${DDPGUARD_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja ${DDPGUARD_CMAKE_ARGS:-} >/dev/null || exit 1
cmake --build "$build" || exit 1

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

ctest --test-dir "$build" --output-on-failure -j "$(nproc)" 2>&1 | tee "$logs/ctest"
ctest_rc=${PIPESTATUS[0]}

lit_rc=0
lit_passed=0 lit_failed=0
if [[ -f "$build/test/lit/lit.site.cfg.py" ]]; then
  python3 "$(grep -m1 '^lit_py' "$build/test/lit/lit.site.cfg.py" | cut -d'"' -f2)" \
    -sv "$build/test/lit" 2>&1 | tee "$logs/lit"
  lit_rc=${PIPESTATUS[0]}
  lit_passed=$(grep -Eo '^ *Passed *: *[0-9]+' "$logs/lit" | grep -Eo '[0-9]+$' || echo 0)
  lit_failed=$(grep -Eo '^ *(Failed|Unresolved|Timed Out) *: *[0-9]+' "$logs/lit" |
    grep -Eo '[0-9]+$' | awk '{s+=$1} END {print s+0}')
fi

ctest_total=$(grep -Eo 'tests failed out of [0-9]+' "$logs/ctest" | grep -Eo '[0-9]+$' || echo 0)
ctest_failed=$(grep -Eo '[0-9]+ tests failed out of' "$logs/ctest" | grep -Eo '^[0-9]+' || echo 0)
ctest_skipped=$(grep -c '(Skipped)$' "$logs/ctest" || true)
ctest_passed=$((ctest_total - ctest_failed - ctest_skipped))

passed=$((ctest_passed + lit_passed))
failed=$((ctest_failed + ${lit_failed:-0}))
status=0
if ((ctest_rc != 0 || lit_rc != 0 || failed != 0)); then status=1; fi
if ((passed == 0)); then
  echo "no test ran" >&2
  status=1
fi
grep '(Skipped)$' "$logs/ctest" | sed 's/^/skipped (no GPU here; scripts\/gpu-check.sh runs it on a GPU machine):/' || true
echo "ddpguard: ${passed} passed, ${failed} failed, ${ctest_skipped} skipped"
exit $status
