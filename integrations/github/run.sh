#!/usr/bin/env bash
# The GitHub action's step (action.yml): ddpguard --diff-base on the changed C++
# sources and Python files of a pull request or push (Python files need no
# build directory; their [tool.ddpguard] exclude holds, --force-exclude). Reads the inputs from DDPGUARD_*
# variables and GitHub's GITHUB_WORKSPACE, GITHUB_BASE_REF, GITHUB_OUTPUT and
# GITHUB_STEP_SUMMARY; writes the SARIF log and the rdjsonl file, annotates
# the findings in the log (::warning) and sets the outputs sarif-file,
# rdjsonl-file, findings and base. Exit status: 0, 1 when a finding is
# reported and DDPGUARD_FAIL_ON_FINDINGS is true, 2 on an error (a broken
# database, a file that does not parse, no base).
set -euo pipefail

workspace=${GITHUB_WORKSPACE:-$PWD}
cd "$workspace"
ddpguard=${DDPGUARD_EXECUTABLE:-ddpguard}

fail() {
  echo "::error title=ddpguard::$*"
  exit 2
}
absolute() {
  case $1 in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s\n' "$workspace/$1" ;;
  esac
}

# Without a build directory only Python files are checked.
build=
[[ -z ${DDPGUARD_BUILD_DIR:-} ]] || build=$(absolute "$DDPGUARD_BUILD_DIR")
sarif=$(absolute "${DDPGUARD_SARIF_FILE:-ddpguard.sarif}")
rdjsonl=$(absolute "${DDPGUARD_RDJSONL_FILE:-ddpguard.rdjsonl}")
sources=${DDPGUARD_SOURCES:-changed}
[[ $sources == changed || $sources == all ]] ||
  fail "the input sources is 'changed' or 'all', not '$sources'"
[[ -z $build || -f $build/compile_commands.json ]] ||
  fail "$build/compile_commands.json does not exist (configure with CMAKE_EXPORT_COMPILE_COMMANDS=ON first)"
command -v "$ddpguard" >/dev/null 2>&1 ||
  fail "'$ddpguard' not found: put ddpguard on PATH or give the input ddpguard"
command -v python3 >/dev/null 2>&1 || fail "python3 not found"

# The base: the input, the pull request's base branch, or the push's
# previous commit; the changed lines are those since its merge base with HEAD.
ref=${DDPGUARD_BASE_REF:-}
if [[ -z $ref && -n ${GITHUB_BASE_REF:-} ]]; then
  ref=origin/$GITHUB_BASE_REF
  if ! git rev-parse -q --verify "refs/remotes/$ref^{commit}" >/dev/null; then
    git fetch -q --no-tags origin \
      "+refs/heads/$GITHUB_BASE_REF:refs/remotes/origin/$GITHUB_BASE_REF" ||
      fail "cannot fetch the base branch $GITHUB_BASE_REF"
  fi
fi
if [[ -z $ref && -n ${DDPGUARD_PUSH_BEFORE:-} && ! $DDPGUARD_PUSH_BEFORE =~ ^0+$ ]]; then
  ref=$DDPGUARD_PUSH_BEFORE
fi
[[ -n $ref ]] || fail "no base to compare with: give the input base-ref"
commit=$(git rev-parse -q --verify "$ref^{commit}") ||
  fail "the base '$ref' is not a commit of this checkout (check out with fetch-depth: 0)"
base=$(git merge-base "$commit" HEAD) ||
  fail "'$ref' and HEAD have no merge base (check out with fetch-depth: 0)"

# The sources to check: those the compilation database holds, changed since
# the base (sources=changed) or all of them; and the changed Python files (a
# Python finding lies in the file that changed). C++ sources changed without
# a build directory are named, unchecked.
files=()
cxx_files=0
unchecked=0
while IFS= read -r -d '' file; do
  case $file in
    C:*) files+=("${file#C:}") && ((++cxx_files)) ;;
    P:*) files+=("${file#P:}") ;;
    U:*) ((++unchecked)) ;;
  esac
done < <(python3 - "$build" "$base" "$sources" <<'PY'
import json, os, subprocess, sys
build, base, which = sys.argv[1:4]
held = {}
if build:
    for entry in json.load(open(os.path.join(build, "compile_commands.json"),
                                encoding="utf-8")):
        path = os.path.join(entry.get("directory", ""), entry["file"])
        held.setdefault(os.path.realpath(path), os.path.normpath(path))
top = subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True,
                     stdout=subprocess.PIPE, text=True).stdout.strip()
names = [n for n in subprocess.run(
    ["git", "diff", "--name-only", "-z", "--no-renames", "--diff-filter=d",
     base, "--"], check=True, stdout=subprocess.PIPE, text=True,
    cwd=top).stdout.split("\0") if n]
changed = {os.path.realpath(os.path.join(top, n)): os.path.join(top, n) for n in names}
if which == "all":
    chosen = sorted(held.values())
else:
    chosen = sorted({held[path] for path in changed if path in held})
python = sorted(changed[path] for path in changed if path.endswith(".py"))
cxx = (".cpp", ".cc", ".cxx", ".c++", ".C", ".cu")
unchecked = [path for path in changed if path.endswith(cxx) and path not in held]
for prefix, paths in (("C", chosen), ("P", python), ("U", [] if build else unchecked)):
    for path in paths:
        sys.stdout.write(f"{prefix}:{path}\0")
PY
)
echo "ddpguard: ${#files[@]} source(s) to check, changes since $base"
if ((unchecked > 0)); then
  echo "::notice title=ddpguard::$unchecked changed C++ source(s) not checked: give the input build-dir (the directory of compile_commands.json) to check them"
fi

options=()
read -r -a options <<<"${DDPGUARD_ARGS:-}"
mkdir -p "$(dirname "$sarif")" "$(dirname "$rdjsonl")"
# The database only where C++ sources are checked.
database=()
((cxx_files == 0)) || database=(-p "$build")
status=0
if ((${#files[@]} > 0)); then
  "$ddpguard" --diff-base="$base" "${database[@]}" --force-exclude --format=sarif "${options[@]}" \
    "${files[@]}" >"$sarif" || status=$?
  rdjsonl_status=0
  "$ddpguard" --diff-base="$base" "${database[@]}" --force-exclude --format=rdjsonl "${options[@]}" \
    "${files[@]}" >"$rdjsonl" 2>/dev/null || rdjsonl_status=$?
  ((rdjsonl_status <= status)) || status=$rdjsonl_status
else
  # Nothing to check: an empty log (code scanning then closes what was fixed).
  empty=$(mktemp -d)
  : >"$empty/empty.cpp"
  "$ddpguard" --format=sarif "$empty/empty.cpp" -- >"$sarif"
  rm -rf "$empty"
  : >"$rdjsonl"
fi

# Annotations in the log and on the pull request's files.
findings=$(python3 - "$rdjsonl" <<'PY'
import json, sys
count = 0
for line in open(sys.argv[1], encoding="utf-8"):
    d = json.loads(line)
    start = d["location"]["range"]["start"]
    message = d["message"].replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    print(f"::warning file={d['location']['path']},line={start['line']},"
          f"col={start['column']},title={d['code']['value']}::{message}",
          file=sys.stderr)
    # Every check of ddpguard's; compiler warnings (--show-compiler-warnings)
    # are no findings.
    count += not d["code"]["value"].startswith("clang-diagnostic-")
print(count)
PY
)

echo "ddpguard: $findings finding(s) on changed lines; SARIF: $sarif; rdjsonl: $rdjsonl"
if [[ -n ${GITHUB_OUTPUT:-} ]]; then
  {
    echo "sarif-file=$sarif"
    echo "rdjsonl-file=$rdjsonl"
    echo "findings=$findings"
    echo "base=$base"
  } >>"$GITHUB_OUTPUT"
fi
if [[ -n ${GITHUB_STEP_SUMMARY:-} ]]; then
  echo "ddpguard: $findings finding(s) on lines changed since \`${base:0:12}\` in ${#files[@]} source(s)" >>"$GITHUB_STEP_SUMMARY"
fi
((status == 2)) && fail "ddpguard reported errors (see above)"
if ((findings > 0)) && [[ ${DDPGUARD_FAIL_ON_FINDINGS:-false} == true ]]; then
  exit 1
fi
exit 0
