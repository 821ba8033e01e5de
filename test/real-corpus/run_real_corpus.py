#!/usr/bin/env python3
"""The real-corpus oracle (docs/real-corpus.md): ddpguard on public code.

    run_real_corpus.py [--part clean|bugs|all] [--full] [--ddpguard BIN]
                       [--torch-version X.Y.Z] [--cache DIR] [--work DIR]
                       [--jobs N] [--no-materialize]

Clean part: the package folders of clean/requirements.txt (well-known
training and model code, pinned wheels), materialized by clean/materialize.py
into CACHE/clean/<name>/ (downloaded once into the wheelhouse). Each folder
is checked in one run, `ddpguard --torch-version X.Y.Z --format=json
FOLDER`; with --full each of its files is also checked alone, as the
editor, pre-commit and the action check a changed file. Code that trains in
the wild has little to report, so every finding must be judged, by reading
the code, in clean/known_false.txt or, where a run confirmed it,
clean/known_true.txt, one a line:

    <name>/<path>:<line>:<check>[ alone|folder]  # why

(`alone` or `folder`: reported only that way; neither: both). known_false.txt
is the honest record of the checker's false findings; the goal is none. The
run fails on a finding not listed, on a listed one no longer reported
(stale: remove it), on a crash (a signal, a timeout, no report, or an exit
status other than 0 (clean), 1 (findings) or 2 with the files it could not
check listed), and on a file it could not check that Python's own parser
reads; a crashing folder is then checked file by file to name the files. Every package is checked by folder; the files of those of
clean/quick.txt (all with --full) also alone. False findings per 1,000 files
count the findings not known true; "alone and folder differ" counts the
findings of the files checked both ways that only one way reports.

Bugs part: the entries of bugs/manifest.json (bugs/README.md: public code
whose users reported the in-place error, at the reported commit), each
{id, repo, commit, root, files: {path: sha256}, verdicts: [{file, line,
check, why, call_sites?}]}, recreated by bugs/materialize.py into
CACHE/bugs/<id>/ from repository snapshots or raw.githubusercontent.com,
every file checked against its sha256. Each verdict is looked for at its
file, line and check twice: with its file checked alone (as the editor,
pre-commit and the action check a changed file) and with the entry's root
folder checked. Outcomes: found, call site (at a call named by the verdict
that runs its line), elsewhere (its check, another line of its file),
missed. Anything but found fails the run unless bugs-known-misses.txt lists
it (`<id> <file>:<line>:<check> alone|folder  # why`); a listed one that is
found is stale and fails too.

Sources not present (no network for the wheels, no snapshot, no manifest)
are skipped with the reason printed; when nothing could be run the exit
status is 77 (CTest's SKIP_RETURN_CODE). Logs (each run's JSON) and the
summary go to --work. The last line gives the counts and ok or FAILED.
Exit status: 0 ok, 1 failed, 77 nothing to run.
"""
import argparse
import ast
import concurrent.futures
import hashlib
import importlib.util
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SKIP = 77
# <package>/<path>:<line>:<check>, and where it is reported when not in both.
CLEAN_KEY = re.compile(r"^(\S+):(\d+):(\S+)(?:\s+(alone|folder))?$")
MODES = ("alone", "folder")
OUTCOMES = ("found", "call site", "elsewhere", "missed")


def load_materializer():
    """clean/materialize.py as a module: its pin reader and wheelhouse."""
    spec = importlib.util.spec_from_file_location(
        "clean_materialize", os.path.join(HERE, "clean", "materialize.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def default_cache():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "ddpguard", "real-corpus")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--part", choices=("clean", "bugs", "all"), default="all")
    p.add_argument("--full", action="store_true",
                   help="check the files of every clean package alone too "
                   "(default: those of clean/quick.txt)")
    p.add_argument("--ddpguard", default=os.path.join(ROOT, "build", "bin", "ddpguard"))
    p.add_argument("--torch-version", default="2.11.0")
    p.add_argument("--cache", default=default_cache(),
                   help="folder of the materialized sources (clean/, bugs/)")
    p.add_argument("--work", help="folder for logs, emptied first (default: a temporary one)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=900, help="seconds for one checker run")
    p.add_argument("--no-materialize", action="store_true",
                   help="use what the cache holds; download nothing")
    p.add_argument("--manifest", default=os.path.join(HERE, "bugs", "manifest.json"))
    return p.parse_args()


def python_rejects(path):
    """Whether this interpreter's own parser rejects the file (it is no
    Python this Python reads: a syntax error, Python 2)."""
    try:
        with open(path, "rb") as f:
            ast.parse(f.read(), path)
        return False
    except (SyntaxError, ValueError, OSError):
        return True


class Run:
    """One checker run: its findings as (realpath, line, check), the files it
    reported it could not check as [(file, message)], its exit status
    (negative: the signal; None: timed out) and wall time."""

    def __init__(self, findings, errors, status, seconds, log):
        self.findings, self.errors, self.status = findings, errors, status
        self.seconds, self.log = seconds, log

    @property
    def crashed(self):
        """Timed out, killed, printed no report, or exited with a status
        that is not 0 (clean), 1 (findings) or 2 with the errors listed."""
        return self.status not in (0, 1, 2) or (self.status == 2 and not self.errors)

    def wrong_errors(self):
        """Errors on files Python itself parses: the checker's to fix."""
        return [(f, m) for f, m in self.errors if not f or not python_rejects(f)]

    def describe(self):
        if self.status is None:
            return "timed out (see %s)" % self.log
        if self.status < 0:
            return "killed by %s (see %s)" % (signal.Signals(-self.status).name, self.log)
        return "exit status %d%s (see %s)" % (
            self.status, ": " + "; ".join("%s: %s" % e for e in self.errors[:3])
            if self.errors else "", self.log)


def check(args, paths, log, cwd=None):
    """Runs ddpguard on paths (absolute) from cwd and writes its output to
    log."""
    cmd = [args.ddpguard, "--torch-version", args.torch_version, "--format=json", *paths]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=args.timeout, cwd=cwd)
        status, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        status, out, err = None, e.stdout or b"", e.stderr or b""
    seconds = time.perf_counter() - start
    out, err = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    with open(log, "w", encoding="utf-8") as f:
        f.write("$ %s\nexit status: %s\n%s\n--- stderr\n%s" % (" ".join(cmd), status, out, err))
    try:
        doc = json.loads(out)
    except ValueError:
        doc = {}
        if status in (0, 1, 2):
            status = 3  # no report: counted as a crash, its output in the log
    findings = [(os.path.realpath(f["file"]), f["line"], f["check"])
                for f in doc.get("findings", [])]
    errors = [(os.path.realpath(e["file"]) if e.get("file") else "", e.get("message", ""))
              for e in doc.get("errors", [])]
    return Run(findings, errors, status, seconds, log)


def unparsed_files(runs, problems):
    """The files the runs could not parse: one that Python parses is a
    problem (the checker's to fix); returns the count of those Python
    rejects too (Python 2, syntax errors in the repository)."""
    wrong, rejected = {}, set()
    for run in runs:
        if run.crashed:
            continue
        for path, message in run.errors:
            if path and python_rejects(path):
                rejected.add(path)
            else:
                wrong.setdefault(path, message)
    problems += ["could not check %s, which Python parses: %s" % (path or "(no file)", message)
                 for path, message in sorted(wrong.items())]
    return len(rejected)


def read_listing(path, pattern):
    """{match groups: reason} of a list file; lines without a reason are errors."""
    listed, problems = {}, []
    if not os.path.isfile(path):
        return listed, problems
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            entry, _, reason = line.partition("#")
            m = pattern.match(entry.strip())
            if not m or not reason.strip():
                problems.append("%s:%d: want '%s  # reason', got %r"
                                % (path, number, pattern.pattern, line))
                continue
            listed[m.groups()] = reason.strip()
    return listed, problems


def py_files(folder):
    """The .py files ddpguard checks in folder: hidden folders and
    __pycache__ are skipped, as the checker skips them."""
    found = []
    for parent, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        found += [os.path.join(parent, f) for f in files if f.endswith(".py")]
    return sorted(found)


def count_py(folder):
    return len(py_files(folder))


# ---------------------------------------------------------------- clean part

def clean_packages(args, materializer, problems):
    """[(name, folder)] to check and [(name, why)] skipped. Unless
    --no-materialize, each pin is materialized first (downloaded into the
    wheelhouse when it is not there); a pin the index serves with another
    hash is a problem."""
    pins = materializer.read_pins(os.path.join(HERE, "clean", "requirements.txt"))
    out = os.path.join(args.cache, "clean")
    present, skipped = [], []
    for pin in pins:
        name, folder = pin[0], os.path.join(out, pin[0])
        if args.no_materialize:
            state, detail = "skipped", "not materialized in %s" % folder
            stamp = os.path.join(folder, materializer.STAMP)
            if os.path.isfile(stamp):
                with open(stamp, encoding="utf-8") as f:
                    if f.read().strip() == pin[2]:
                        state = "materialized"
        else:
            state, detail = materializer.materialize_pin(
                pin, out, materializer.default_wheelhouse(), sys.executable)
        if state == "materialized":
            present.append((name, folder))
        elif state == "skipped":
            skipped.append((name, detail))
        else:
            problems.append("%s: %s" % (name, detail))
    return present, skipped


def name_crashing_files(args, name, folder, work):
    """Each .py of a crashing folder alone: those that crash, relative."""
    crashing = []
    for path in py_files(folder):
        rel = os.path.relpath(path, folder)
        run = check(args, [path], os.path.join(work, "crash", name, rel + ".log"))
        if run.crashed:
            crashing.append("%s/%s: %s" % (name, rel, run.describe()))
    return crashing


def read_verdicts(problems):
    """{(path, line, check): (verdict, modes, reason)} of clean/known_false.txt
    and clean/known_true.txt; modes: where it is reported (alone, folder)."""
    verdicts = {}
    for verdict in ("false", "true"):
        path = os.path.join(HERE, "clean", "known_%s.txt" % verdict)
        listed, list_problems = read_listing(path, CLEAN_KEY)
        problems += list_problems
        for (rel, line, check_name, mode), reason in listed.items():
            key = (rel, line, check_name)
            if key in verdicts:
                problems.append("%s:%s:%s is listed twice" % key)
            verdicts[key] = (verdict, {mode} if mode else set(MODES), reason)
    return verdicts


def checked_alone(args, packages, problems):
    """The packages whose files are also checked alone: all with --full,
    else those of clean/quick.txt."""
    names = [name for name, _ in packages]
    if args.full:
        return set(names)
    with open(os.path.join(HERE, "clean", "quick.txt"), encoding="utf-8") as f:
        quick = {l.split("#", 1)[0].strip() for l in f} - {""}
    pins = load_materializer().read_pins(os.path.join(HERE, "clean", "requirements.txt"))
    problems += ["clean/quick.txt: %s is no pin of requirements.txt" % name
                 for name in sorted(quick - {pin[0] for pin in pins})]
    return quick & set(names)


def check_clean(args, packages, alone, work):
    """{mode: {package: [Run]}}: each package folder in one run, and each
    file of the packages in alone by itself."""
    jobs = [("folder", name, [folder], os.path.join(work, "clean", name + ".log"))
            for name, folder in packages]
    jobs += [("alone", name, [path], os.path.join(
        work, "clean-alone", name, os.path.relpath(path, folder) + ".log"))
        for name, folder in packages if name in alone for path in py_files(folder)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        runs = list(pool.map(lambda job: check(args, job[2], job[3]), jobs))
    result = {mode: {} for mode in MODES}
    for (mode, name, _, _), run in zip(jobs, runs):
        result[mode].setdefault(name, []).append(run)
    return result


def run_clean(args, work):
    """Returns (summary text or None, failed, why it was skipped or None)."""
    print("== clean part")
    materializer = load_materializer()
    problems = []
    out = os.path.join(args.cache, "clean")
    packages, skipped = clean_packages(args, materializer, problems)
    for name, why in skipped:
        print("  skipped %s: %s" % (name, why))
    if not packages:
        why = "no clean package is present (%s); clean/materialize.py %s recreates them" % (
            skipped[0][1] if skipped else "none wanted", out)
        print("  SKIPPED: " + why)
        return None, bool(problems), why
    verdicts = read_verdicts(problems)
    alone = checked_alone(args, packages, problems)
    start = time.perf_counter()
    runs = check_clean(args, packages, alone, work)
    wall = time.perf_counter() - start
    modes = ("folder", "alone")
    files = crashes = 0
    found = {mode: set() for mode in modes}
    base = os.path.realpath(out)
    for name, folder in packages:
        n = count_py(folder)
        files += n
        line = "  %-28s %5d files" % (name, n)
        for mode in modes:
            mode_runs = runs[mode].get(name)
            if not mode_runs:
                continue
            findings = {(os.path.relpath(path, base), str(number), check_name)
                        for run in mode_runs for path, number, check_name in run.findings}
            found[mode] |= findings
            line += " %s: %3d findings %7.2f s" % (
                mode, len(findings), sum(run.seconds for run in mode_runs))
            for run in mode_runs:
                if run.crashed:
                    crashes += 1
                    problems.append("crash on %s (%s): %s" % (
                        os.path.relpath(run.log, work), mode, run.describe()))
            if mode == "folder" and mode_runs[0].crashed and name not in alone:
                problems += ["  crashes alone: " + c
                             for c in name_crashing_files(args, name, folder, work)]
        print(line)
    rejected = unparsed_files([run for mode in modes for mode_runs in runs[mode].values()
                               for run in mode_runs], problems)
    checked = {"folder": {name for name, _ in packages}, "alone": alone}
    for mode in modes:
        for key in sorted(found[mode]):
            if key not in verdicts:
                problems.append("finding (%s) in neither known_false.txt nor known_true.txt: "
                                "%s:%s:%s" % ((mode,) + key))
            elif mode not in verdicts[key][1]:
                problems.append("finding (%s) listed for %s only: %s:%s:%s"
                                % ((mode, "/".join(sorted(verdicts[key][1]))) + key))
        for key, (verdict, listed_modes, _) in sorted(verdicts.items()):
            if mode in listed_modes and key not in found[mode] \
                    and key[0].split("/", 1)[0] in checked[mode]:
                problems.append("stale in known_%s.txt (no longer reported %s): %s:%s:%s"
                                % ((verdict, mode) + key))
    every = found["folder"].union(*found.values())
    false = {key for key in every if verdicts.get(key, ("false",))[0] == "false"}
    true = every - false
    listed_false = {key for key in false if key in verdicts}
    alone_files = sum(count_py(folder) for name, folder in packages if name in alone)
    in_alone = {key for key in found["folder"] if key[0].split("/", 1)[0] in alone}
    summary = ("clean: %d files in %d packages%s (%d also alone), %d findings (%d false: "
               "%d listed, %d not; %d true), %.2f false findings per 1,000 files, "
               "alone and folder differ on %d, %d crashes, %d files Python rejects, %.1f s"
               % (files, len(packages), " (%d skipped)" % len(skipped) if skipped else "",
                  alone_files, len(every), len(false), len(listed_false),
                  len(false - listed_false), len(true), 1000.0 * len(false) / files,
                  len(found["alone"] ^ in_alone), crashes, rejected, wall))
    for problem in problems:
        print("  FAIL: " + problem)
    return summary, bool(problems), None


# ----------------------------------------------------------------- bugs part

def load_bugs_materializer(manifest):
    """bugs/materialize.py (beside the manifest) as a module."""
    spec = importlib.util.spec_from_file_location(
        "bugs_materialize", os.path.join(os.path.dirname(manifest), "materialize.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_manifest(path, problems):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    entries = doc.get("entries", []) if isinstance(doc, dict) else doc
    good = []
    for number, entry in enumerate(entries):
        missing = [k for k in ("id", "repo", "commit", "root", "files", "verdicts")
                   if k not in entry]
        bad_verdicts = [v for v in entry.get("verdicts", [])
                        if not all(k in v for k in ("file", "line", "check", "why"))]
        if missing or bad_verdicts or not entry.get("verdicts"):
            problems.append("%s: entry %d (%s): missing %s" % (
                path, number, entry.get("id", "?"),
                ", ".join(missing) or "verdicts or a verdict's file, line, check or why"))
            continue
        good.append(entry)
    return good


def score(verdict, folder, findings):
    """'found' (the verdict's check at its file and line), 'call site' (at
    one of its call_sites, a call that runs its line), 'elsewhere' (its check
    in its file, another line) or 'missed'."""
    def at(rel, line):
        return (os.path.realpath(os.path.join(folder, rel)), int(line), verdict["check"]) \
            in findings
    if at(verdict["file"], verdict["line"]):
        return "found"
    if any(at(site["file"], site["line"]) for site in verdict.get("call_sites", [])):
        return "call site"
    path = os.path.realpath(os.path.join(folder, verdict["file"]))
    if any(f[0] == path and f[2] == verdict["check"] for f in findings):
        return "elsewhere"
    return "missed"


def ready_entries(args, entries):
    """[(entry, folder)] whose files are all there with their hashes, and
    [(id, why)] skipped. bugs/materialize.py recreates them from repository
    snapshots, or from raw.githubusercontent.com at the commit, and checks
    each file's sha256; with --no-materialize only what the cache holds."""
    materializer = load_bugs_materializer(args.manifest)
    cache = pathlib.Path(args.cache) / "bugs"
    ready, skipped = [], []
    for entry in entries:
        if args.no_materialize:
            folder = cache / entry["id"]
            bad = [rel for rel, digest in entry["files"].items()
                   if not (folder / rel).is_file()
                   or materializer.sha256((folder / rel).read_bytes()) != digest]
            status = {"status": "ready", "path": str(folder)} if not bad else {
                "status": "skipped", "reason": "%s: not in %s with its sha256" % (bad[0], folder)}
        else:
            status = materializer.materialize(entry, cache, materializer.DEFAULT_MIRRORS,
                                              fetch_raw=True)
        if status["status"] == "ready":
            ready.append((entry, status["path"]))
        else:
            skipped.append((entry["id"], status.get("reason", status["status"])))
    return ready, skipped


def run_bugs(args, work):
    """Returns (summary text or None, failed, why it was skipped or None)."""
    print("== bugs part")
    if not os.path.isfile(args.manifest):
        why = "no manifest at %s" % args.manifest
        print("  SKIPPED: " + why)
        return None, False, why
    problems = []
    entries = load_manifest(args.manifest, problems)
    known, list_problems = read_listing(
        os.path.join(HERE, "bugs-known-misses.txt"),
        re.compile(r"^(\S+)\s+(\S+):(\d+):(\S+)\s+(alone|folder)$"))
    problems += list_problems
    present, skipped = ready_entries(args, entries)
    for ident, why in skipped:
        print("  skipped %s: %s" % (ident, why))
    if not present:
        why = "no entry of the %d is present (%s)" % (
            len(entries), skipped[0][1] if skipped else "empty manifest")
        print("  SKIPPED: " + why)
        return None, bool(problems), why

    # One run per verdict file alone and one per entry's root folder.
    jobs = []
    for entry, folder in present:
        for rel in sorted({v["file"] for v in entry["verdicts"]}):
            jobs.append((entry["id"], "alone", rel, [os.path.join(folder, rel)], folder))
        jobs.append((entry["id"], "folder", entry["root"] or ".",
                     [os.path.normpath(os.path.join(folder, entry["root"]))], folder))
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        # From the snapshot's folder, as its user runs ddpguard in their clone.
        runs = list(pool.map(lambda j: check(args, j[3], os.path.join(
            work, "bugs", j[0], j[1], j[2].replace(os.sep, "_") + ".log"), j[4]), jobs))
    wall = time.perf_counter() - start
    seen = {mode: {} for mode in MODES}  # id -> {(realpath, line, check)}
    crashes = 0
    for (ident, mode, rel, _, _), run in zip(jobs, runs):
        seen[mode].setdefault(ident, set()).update(run.findings)
        if run.crashed:
            crashes += 1
            problems.append("crash on %s %s (%s): %s" % (ident, rel, mode, run.describe()))
    rejected = unparsed_files(runs, problems)
    counts = {mode: {} for mode in MODES}
    verdicts = 0
    for entry, folder in present:
        for v in entry["verdicts"]:
            verdicts += 1
            for mode in MODES:
                outcome = score(v, folder, seen[mode].get(entry["id"], set()))
                counts[mode][outcome] = counts[mode].get(outcome, 0) + 1
                listing = (entry["id"], v["file"], str(v["line"]), v["check"], mode)
                if outcome != "found" and listing not in known:
                    problems.append("%s %s %s:%s:%s (%s): %s" % (
                        outcome, entry["id"], v["file"], v["line"], v["check"], mode, v["why"]))
                elif outcome == "found" and listing in known:
                    problems.append("stale in bugs-known-misses.txt (found now): %s"
                                    % " ".join(listing))
    print("  %-9s %s" % ("", " ".join("%-10s" % o for o in OUTCOMES)))
    for mode in MODES:
        print("  %-9s %s" % (mode, " ".join("%-10d" % counts[mode].get(o, 0) for o in OUTCOMES)))
    found = {mode: counts[mode].get("found", 0) for mode in MODES}
    summary = ("bugs: %d verdicts in %d entries%s, found at the line alone %d/%d (%.2f), "
               "with the folder %d/%d (%.2f), %d crashes, %d files Python rejects, %.1f s"
               % (verdicts, len(present), " (%d skipped)" % len(skipped) if skipped else "",
                  found["alone"], verdicts, found["alone"] / verdicts, found["folder"],
                  verdicts, found["folder"] / verdicts, crashes, rejected, wall))
    for problem in problems:
        print("  FAIL: " + problem)
    return summary, bool(problems), None


def main():
    args = parse_args()
    if not os.access(args.ddpguard, os.X_OK):
        print("FAILED: no ddpguard at %s" % args.ddpguard)
        return 1
    args.ddpguard = os.path.abspath(args.ddpguard)
    work = args.work or tempfile.mkdtemp(prefix="real-corpus-")
    if args.work:
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    print("logs in %s" % work)
    parts = {"clean": [run_clean], "bugs": [run_bugs], "all": [run_clean, run_bugs]}[args.part]
    summaries, skips, failed = [], [], False
    for part in parts:
        summary, part_failed, skipped = part(args, work)
        failed |= part_failed
        if summary:
            summaries.append(summary)
        if skipped:
            skips.append("%s SKIPPED: %s" % (part.__name__[len("run_"):], skipped))
    if not summaries and not failed:
        print("real corpus: " + "; ".join(skips))
        return SKIP
    summaries += skips
    print("; ".join(summaries or ["nothing run"]) + (": FAILED" if failed else ": ok"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
