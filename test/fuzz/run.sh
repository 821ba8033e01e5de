#!/usr/bin/env bash
# Runs a fuzz target for a bounded time from its corpus in the tree.
# New inputs go to a scratch copy (the tree's corpus changes only by hand:
# `ddpguard-fuzz -merge=1 test/fuzz/corpus NEW_DIR`); a crash or a broken
# invariant fails the test and prints the input that caused it.
# Usage: run.sh FUZZER SECONDS [DICTIONARY SEED_FOLDER...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fuzzer=$1 seconds=$2 dict=${3:-$here/ddpguard.dict}
seeds=("${@:4}")
((${#seeds[@]})) || seeds=("$here/corpus")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus" "$work/artifacts"
"$fuzzer" -max_total_time="$seconds" -seed=1 -timeout=60 -rss_limit_mb=6144 \
  -dict="$dict" -artifact_prefix="$work/artifacts/" \
  -print_final_stats=1 "$work/corpus" "${seeds[@]}" 2>"$work/log"
rc=$?
grep -E '^(#[0-9]+ +DONE|Done|stat::number_of_executed_units|stat::new_units_added)' "$work/log"
if ((rc != 0)); then
  tail -n 60 "$work/log"
  for artifact in "$work"/artifacts/*; do
    [[ -f $artifact ]] || continue
    echo "--- input that failed ($(basename "$artifact")), base64:"
    base64 "$artifact"
  done
  echo "fuzz: FAILED (exit $rc)"
  exit 1
fi
runs=$(grep -Eo '^stat::number_of_executed_units: *[0-9]+' "$work/log" | grep -Eo '[0-9]+$')
if [[ -z $runs || $runs -eq 0 ]]; then
  echo "fuzz: no input ran"
  exit 1
fi
echo "fuzz: $runs inputs in ${seconds}s, no failure"
