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
#
# CI runs the quick subsets. --full adds every corpus program and fix
# (corpus.oracle.full, python.corpus.oracle.full), every real clean file
# checked alone (realcorpus.clean.full) and the lit tests marked
# `REQUIRES: full` (each parses LibTorch's headers several times): about
# two hours on 2 cores.
set -uo pipefail
cd "$(dirname "$0")/.."
full=OFF
for arg in "$@"; do
  case $arg in
    --full) full=ON ;;
    *) echo "usage: scripts/test.sh [--full]" >&2; exit 2 ;;
  esac
done
# Set both ways: the build directories keep CMake's cache between runs.
full_args="-DDDPGUARD_CORPUS_FULL=$full -DDDPGUARD_PYTHON_CORPUS_FULL=$full -DDDPGUARD_REAL_CORPUS_FULL=$full"
if [[ $full == ON ]]; then export DDPGUARD_LIT_FULL=1; else unset DDPGUARD_LIT_FULL; fi
scripts/setup.sh || exit 1

build=${DDPGUARD_BUILD_DIR:-build}
# ccache keys on paths relative to the clone, so a fresh clone (CI's) reuses
# the objects of an earlier one on the same machine.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
cmake -S . -B "$build" -G Ninja $full_args ${DDPGUARD_CMAKE_ARGS:-} >/dev/null || exit 1
cmake --build "$build" || exit 1

newest=2.15.0
second=
if [[ ${DDPGUARD_SKIP_NEWEST_TORCH:-0} != 1 ]]; then
  second=${DDPGUARD_NEWEST_BUILD_DIR:-build-torch-$newest}
  cmake -S . -B "$second" -G Ninja -DDDPGUARD_BUILD_CHECKER=OFF -DDDPGUARD_RUNTIME_TESTS_ONLY=ON \
    -DDDPGUARD_BUILD_BENCHMARKS=OFF -DDDPGUARD_PYTHON="$PWD/.venvs/torch-$newest/bin/python" \
    -DDDPGUARD_CHECKER_BINARY="$(cd "$build" && pwd)/bin/ddpguard" \
    -DDDPGUARD_CORPUS_SECOND_TORCH="${DDPGUARD_CORPUS_SECOND_TORCH:-ON}" -DDDPGUARD_CORPUS_FULL=$full \
    ${DDPGUARD_CMAKE_ARGS:-} \
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
lit_passed=0 lit_failed=0 lit_skipped=0
if [[ -f "$build/test/lit/lit.site.cfg.py" ]]; then
  python3 "$(grep -m1 '^lit_py' "$build/test/lit/lit.site.cfg.py" | cut -d'"' -f2)" \
    -sv --show-unsupported "$build/test/lit" 2>&1 | tee "$logs/lit"
  lit_rc=${PIPESTATUS[0]}
  lit_passed=$(grep -Eo '^ *Passed *: *[0-9]+' "$logs/lit" | grep -Eo '[0-9]+$' || echo 0)
  lit_failed=$(grep -Eo '^ *(Failed|Unresolved|Timed Out) *: *[0-9]+' "$logs/lit" |
    grep -Eo '[0-9]+$' | awk '{s+=$1} END {print s+0}')
  lit_skipped=$(grep -Eo '^ *Unsupported *: *[0-9]+' "$logs/lit" | grep -Eo '[0-9]+$' || echo 0)
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
# lit's unsupported tests: those that need --full (REQUIRES: full) or a
# tool this machine lacks (lit -sv names them above).
awk '/^Unsupported Tests/ { inside = 1; next } inside && /^  / { sub(/^  /, "");
       print "skipped: " $0 ": a lit feature this run lacks (full: scripts/test.sh --full)"; next }
     { inside = 0 }' "$logs/lit" 2>/dev/null || true
echo "ddpguard: ${passed} passed, ${failed} failed, $((ctest_skipped + lit_skipped)) skipped"
exit $status
