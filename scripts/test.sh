#!/usr/bin/env bash
# The README's test command: installs what is missing (scripts/setup.sh),
# builds everything with Ninja against LibTorch 2.11 from .venv, runs the
# GoogleTest/runtime tests (CTest, ranks under torchrun) and the lit tests;
# then builds the runtime and its tests a second time against the newest
# supported LibTorch (2.15.0 from .venvs/torch-2.15.0, in build-torch-2.15.0/,
# the checker reused from the main build for the corpus oracle) and runs that
# CTest too. It ends with one line of counts for all of them together (GPU
# tests are built and reported as skipped where no GPU is).
# DDPGUARD_SKIP_NEWEST_TORCH=1 leaves the second configuration out.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit 1

build=${DDPGUARD_BUILD_DIR:-build}
# ccache keys on paths relative to the clone, so a fresh clone (CI's) reuses
# the objects of an earlier one on the same machine.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
cmake -S . -B "$build" -G Ninja ${DDPGUARD_CMAKE_ARGS:-} >/dev/null || exit 1
cmake --build "$build" || exit 1

newest=2.15.0
second=
if [[ ${DDPGUARD_SKIP_NEWEST_TORCH:-0} != 1 ]]; then
  second=${DDPGUARD_NEWEST_BUILD_DIR:-build-torch-$newest}
  cmake -S . -B "$second" -G Ninja -DDDPGUARD_BUILD_CHECKER=OFF -DDDPGUARD_RUNTIME_TESTS_ONLY=ON \
    -DDDPGUARD_BUILD_BENCHMARKS=OFF -DDDPGUARD_PYTHON="$PWD/.venvs/torch-$newest/bin/python" \
    -DDDPGUARD_CHECKER_BINARY="$(cd "$build" && pwd)/bin/ddpguard" \
    -DDDPGUARD_CORPUS_SECOND_TORCH="${DDPGUARD_CORPUS_SECOND_TORCH:-ON}" ${DDPGUARD_CMAKE_ARGS:-} \
    >/dev/null || exit 1
  cmake --build "$second" || exit 1
fi

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

ctest --test-dir "$build" --output-on-failure -j "$(nproc)" 2>&1 | tee "$logs/ctest"
ctest_rc=${PIPESTATUS[0]}
if [[ -n $second ]]; then
  echo "--- the runtime against LibTorch $newest ($second)"
  ctest --test-dir "$second" --output-on-failure -j "$(nproc)" 2>&1 | tee "$logs/ctest-$newest"
  ((PIPESTATUS[0] == 0)) || ctest_rc=1
fi

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

ctest_total=0 ctest_failed=0 ctest_skipped=0
for log in "$logs"/ctest*; do
  total=$(grep -Eo 'tests failed out of [0-9]+' "$log" | grep -Eo '[0-9]+$' || echo 0)
  failed=$(grep -Eo '[0-9]+ tests failed out of' "$log" | grep -Eo '^[0-9]+' || echo 0)
  skipped=$(grep -c '(Skipped)$' "$log" || true)
  ctest_total=$((ctest_total + total)) ctest_failed=$((ctest_failed + failed))
  ctest_skipped=$((ctest_skipped + skipped))
done
ctest_passed=$((ctest_total - ctest_failed - ctest_skipped))

passed=$((ctest_passed + lit_passed))
failed=$((ctest_failed + ${lit_failed:-0}))
status=0
if ((ctest_rc != 0 || lit_rc != 0 || failed != 0)); then status=1; fi
if ((passed == 0)); then
  echo "no test ran" >&2
  status=1
fi
# Each skipped test with its reason: the last line of its output, from
# CTest's log (the GPU checks name the missing GPU, the real corpus the
# missing sources).
skip_reasons() {  # build dir, its ctest output
  awk '/^[0-9]+\/[0-9]+ Test: / { name = $3 }
       /^Output:$/ { getline; inside = 1; last = ""; next }
       /^<end of output>$/ { inside = 0; reason[name] = last; next }
       inside && NF { last = $0 }
       / \(Skipped\)$/ { skipped[$3] = 1 }
       END { for (n in skipped) print "skipped: " n ": " reason[n] }' \
    "$1/Testing/Temporary/LastTest.log" "$2" 2>/dev/null | sort || true
}
skip_reasons "$build" "$logs/ctest"
[[ -z $second ]] || skip_reasons "$second" "$logs/ctest-$newest"
echo "ddpguard: ${passed} passed, ${failed} failed, ${ctest_skipped} skipped"
exit $status
