#!/usr/bin/env python3
"""The corpus oracle: every corpus program is its own ground truth.

    run_corpus.py --programs DIR --expectations FILE --runner BIN
                  --ddpguard BIN --torchrun BIN --build-dir DIR
                  --fixed-target TARGET --fixed-gen DIR --fixed-runner BIN
                  --work DIR [--subset FILE] [--jobs N] [--timeout S]
                  [--marks-may-train]
                  -- <compile flags for the checker>

1. Truth: each program runs on 2 Gloo ranks under torchrun. It trains (exit
   0) or fails; a failure must be autograd's in-place error, anything else
   (or a timeout) is a broken corpus program and fails the test. The same
   run checks ddpguard's runtime (its hazard detector is on by default): a
   failing program must print the runtime's report before autograd's error
   (else "runtime-unnamed"), a training one must print none (else
   "runtime-false-report").
2. Check: the ddpguard CLI checks each program file on its own (JSON). The
   checker must flag exactly the failing programs, each finding on a line
   marked `// corpus: expect here` (the forward that broadcasts, or the
   call of the helper that holds it). The marks say where a program fails on
   LibTorch up to 2.12.0; with --marks-may-train (a LibTorch whose buffer
   broadcast preserves version counters, 2.12.1 on) a marked program may
   train, and then the checker must be silent on it.
3. Fixes: for each failing program the checker flags and each --fix-mode
   that `ddpguard --help` lists (the DDP check's modes; the other checks'
   fixes are the same in every mode, so a program only they flag is fixed,
   built and run once and counted in each; where they withhold their fix,
   the modes count as withheld and the check's note must say why), a copy
   is fixed with --fix, re-checked
   (must be clean), compiled into one unity binary, and run on 2 ranks (must
   train).
4. Disagreements are compared with the expectations file, which lists the
   known gaps of the checker as measured ("program kind [mode]"). The test
   fails on a disagreement that is not listed, on a listed one that is no
   longer measured (stale), and on a broken program. The last line gives
   precision, recall and fix success over every program, gaps included.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

MARK = "// corpus: expect here"
DDP_CHECK = "ddp-multiple-forward-before-backward"
NO_FIX = "no fix is offered: "
INPLACE_ERROR = "modified by an inplace operation"
# The runtime's hazard report (runtime/src/HazardDetector.cpp), and the end
# of autograd's own error, which only autograd prints.
RUNTIME_REPORT = re.compile(r"ddpguard: (?:DistributedDataParallel|in-place write) hazard on rank \d+")
AUTOGRAD_ERROR = re.compile(r"expected version \d+ instead")
FIX_KINDS = ("fix-not-applied", "fix-not-clean", "fix-not-built", "fix-fails")
RUNTIME_KINDS = ("runtime-unnamed", "runtime-false-report")
KINDS = ("false-positive", "false-negative", "wrong-line") + FIX_KINDS + RUNTIME_KINDS


def parse_args():
    argv = sys.argv[1:]
    flags = []
    if "--" in argv:
        i = argv.index("--")
        argv, flags = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name in ("programs", "expectations", "runner", "ddpguard", "torchrun", "build-dir",
                 "fixed-target", "fixed-gen", "fixed-runner", "work"):
        p.add_argument("--" + name, required=True)
    p.add_argument("--subset", help="file naming the programs to run (default: all)")
    p.add_argument("--shards", type=int, default=2)
    p.add_argument("--jobs", type=int, default=2, help="programs run (and files checked) in parallel")
    p.add_argument("--timeout", type=float, default=180, help="seconds per 2-rank run")
    p.add_argument("--marks-may-train", action="store_true",
                   help="a marked program may train (LibTorch 2.12.1 and later)")
    args = p.parse_args(argv)
    args.flags = flags
    return args


def read_list(path):
    names = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line)
    return names


def allowed_headers():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "prelude.h"), encoding="utf-8") as f:
        return set(re.findall(r"^#include <([^>]+)>", f.read(), re.M))


def load_programs(args, problems):
    every = sorted(f[:-4] for f in os.listdir(args.programs) if f.endswith(".cpp"))
    names = every
    if args.subset:
        names = read_list(args.subset)
        for name in names:
            if name not in every:
                problems.append("%s: named in %s but not in %s" % (name, args.subset, args.programs))
        names = [n for n in names if n in every]
    allowed = allowed_headers()
    programs = {}
    for name in names:
        path = os.path.join(args.programs, name + ".cpp")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        marks = {i + 1 for i, line in enumerate(text.splitlines()) if MARK in line}
        for header in re.findall(r"^\s*#\s*include\s*<([^>]+)>", text, re.M):
            if header not in allowed:
                problems.append("%s: includes <%s>, which test/corpus/prelude.h lacks "
                                "(the unity build needs it there)" % (name, header))
        if not re.search(r"^int main\(\)", text, re.M):
            problems.append("%s: has no `int main()`" % name)
        programs[name] = {"path": os.path.realpath(path), "text": text, "marks": marks}
    return programs


def load_expectations(path):
    expected = {}
    for line in open(path, encoding="utf-8"):
        body, _, note = line.partition("#")
        fields = body.split()
        if not fields:
            continue
        if len(fields) not in (2, 3) or fields[1] not in KINDS:
            sys.exit("%s: cannot read %r (want: program kind [mode])" % (path, line.rstrip()))
        expected[tuple(fields)] = note.strip()
    return expected


def run_ranks(torchrun, binary, key, log_path, timeout):
    """Runs `binary key` on 2 ranks; returns (outcome, seconds, output)."""
    cmd = [torchrun, "--standalone", "--nproc-per-node", "2", "--no-python", binary, key]
    start = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        rc = None
    seconds = time.time() - start
    out = out.decode("utf-8", "replace")
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "w", encoding="utf-8") as f:
        f.write("$ %s\n%s\nexit status: %s\n" % (" ".join(cmd), out, rc))
    if rc is None:
        return "timeout", seconds, out
    if rc == 0:
        return "trains", seconds, out
    return ("fails" if AUTOGRAD_ERROR.search(out) and INPLACE_ERROR in out else "broken"), seconds, out


def runtime_disagreement(outcome, out):
    """Whether the runtime's report disagrees with a program's outcome:
    (kind, what was measured) or None."""
    report = RUNTIME_REPORT.search(out)
    if outcome == "trains" and report:
        return "runtime-false-report", "trains; the runtime printed '%s'" % report.group(0)
    if outcome == "fails":
        error = AUTOGRAD_ERROR.search(out)
        if not report:
            return "runtime-unnamed", "fails; no runtime report"
        if error and error.start() < report.start():
            return "runtime-unnamed", "fails; the runtime's report came after autograd's error"
    return None


def run_all(args, binary, keys, log_dir):
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_ranks, args.torchrun, binary, key,
                               os.path.join(log_dir, key.replace("/", "__") + ".log"),
                               args.timeout): key for key in keys}
        for future in concurrent.futures.as_completed(futures):
            results[futures[future]] = future.result()
    return results


def check(args, files, log_path, extra=(), checks=None, withheld=None):
    """Runs the CLI on files; returns ({realpath: [lines]}, errors, output, exit status).
    With checks, also fills it with {realpath: {names of the checks that flag it}};
    with withheld, {realpath: [why no fix is offered, as the notes say]}."""
    cmd = [args.ddpguard, "--format=json", "-j", str(args.jobs), *extra, *files, "--", *args.flags]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    with open(log_path, "w", encoding="utf-8") as f:
        f.write("$ %s\nexit status: %d\n%s\n--- stderr\n%s" % (" ".join(cmd), proc.returncode, out, err))
    findings = {os.path.realpath(f): [] for f in files}
    errors = []
    try:
        doc = json.loads(out)
    except ValueError as e:
        return findings, ["ddpguard printed no JSON (%s), exit %d: %s" % (e, proc.returncode, err[-2000:])], out, proc.returncode
    for finding in doc.get("findings", []):
        # A silent write raises nothing: its truth is the gradient comparison
        # of test/silent-cpp (silent.cpp.checker), not a run's outcome.
        if finding.get("check") == "silent-write-before-backward":
            continue
        findings.setdefault(os.path.realpath(finding["file"]), []).append(finding["line"])
        if checks is not None:
            checks.setdefault(os.path.realpath(finding["file"]), set()).add(finding["check"])
        if withheld is not None:
            for note in finding.get("notes", []):
                if note["message"].startswith(NO_FIX):
                    withheld.setdefault(os.path.realpath(finding["file"]), []).append(
                        "%s: %s" % (finding["check"], note["message"][len(NO_FIX):]))
    for error in doc.get("errors", []):
        errors.append(json.dumps(error) if not isinstance(error, str) else error)
    if proc.returncode not in (0, 1) and not errors:
        errors.append("ddpguard exited %d: %s" % (proc.returncode, err[-2000:]))
    return findings, errors, out, proc.returncode


def fix_modes(ddpguard):
    text = subprocess.run([ddpguard, "--help"], stdout=subprocess.PIPE, check=True).stdout.decode()
    modes, inside = [], False
    for line in text.splitlines():
        if re.match(r"\s+--fix-mode\b", line):
            inside = True
            continue
        if inside:
            m = re.match(r"\s+=([\w-]+)\s", line)
            if not m:
                break
            modes.append(m.group(1))
    return modes


def build_fixed(args, entries, log_path):
    """Builds the fixed copies into the fixed runner. A copy that does not
    compile is left out and returned, so the others still run."""
    here = os.path.dirname(os.path.abspath(__file__))
    not_built = set()
    while True:
        todo = [(k, p) for k, p in entries if k not in not_built]
        subprocess.run([sys.executable, os.path.join(here, "gen_unity.py"), args.fixed_gen,
                        str(args.shards)] + ["%s=%s" % kp for kp in todo], check=True)
        proc = subprocess.run(["cmake", "--build", args.build_dir, "--target", args.fixed_target],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = proc.stdout.decode("utf-8", "replace")
        with open(log_path, "a", encoding="utf-8") as f:
            f.write(out)
        if proc.returncode == 0:
            return not_built, None
        guilty = {k for k, p in todo if p in out}
        if not guilty:
            return not_built, out[-4000:]
        not_built |= guilty


class Tee:
    def __init__(self, path):
        self.file = open(path, "w", encoding="utf-8")
        self.stdout = sys.stdout

    def write(self, text):
        self.stdout.write(text)
        self.file.write(text)

    def flush(self):
        self.stdout.flush()
        self.file.flush()


def main():
    args = parse_args()
    t0 = time.time()
    problems = []  # broken corpus or harness errors: always fail
    programs = load_programs(args, problems)
    expected = load_expectations(args.expectations)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    sys.stdout = Tee(os.path.join(args.work, "summary.txt"))
    listed = subprocess.run([args.runner, "--list"], stdout=subprocess.PIPE,
                            check=True).stdout.decode().split()
    for name in programs:
        if name not in listed:
            problems.append("%s: not in %s (reconfigure the build)" % (name, args.runner))
    names = [n for n in programs if n in listed]
    print("corpus: %d programs, %d ranks each, %d at a time" % (len(names), 2, args.jobs), flush=True)

    # 1. Truth.
    t = time.time()
    truth = run_all(args, args.runner, names, os.path.join(args.work, "runs"))
    for name in names:
        outcome, seconds, out = truth[name]
        programs[name]["truth"] = outcome
        programs[name]["runtime"] = runtime_disagreement(outcome, out)
        if outcome in ("broken", "timeout"):
            tail = "\n    ".join(out.strip().splitlines()[-8:])
            problems.append("%s: broken corpus program: %s, not autograd's in-place error:\n    %s"
                            % (name, outcome, tail))
        marks = programs[name]["marks"]
        if outcome == "trains" and marks and not args.marks_may_train:
            problems.append("%s: trains, yet marks line(s) %s with '%s'" % (name, sorted(marks), MARK))
        if outcome == "fails" and not marks:
            problems.append("%s: fails, but no line is marked '%s'" % (name, MARK))
    t_truth = time.time() - t
    print("truth: %.0f s" % t_truth, flush=True)

    # 2. Check.
    t = time.time()
    flagged_by = {}
    why_withheld = {}
    findings, errors, _, _ = check(args, [programs[n]["path"] for n in names],
                                os.path.join(args.work, "check.log"), checks=flagged_by,
                                withheld=why_withheld)
    problems += ["ddpguard: %s" % e for e in errors]
    for name in names:
        programs[name]["lines"] = sorted(findings.get(programs[name]["path"], []))
    t_check = time.time() - t
    print("check: %.0f s" % t_check, flush=True)

    # 3. Fixes of the failing programs the checker flags.
    t = time.time()
    modes = fix_modes(args.ddpguard)
    failing = [n for n in names if programs[n]["truth"] == "fails"]
    fixable = [n for n in failing if programs[n]["lines"]]
    fixes = {}  # (name, mode) -> result
    # The modes are the DDP check's: a program no DDP finding is about gets
    # the same fix in each, so it is fixed, built and run in the first alone.
    ddp_flagged = [n for n in fixable if DDP_CHECK in flagged_by.get(programs[n]["path"], ())]
    copies = {}
    recheck = []
    for mode in modes:
        mode_dir = os.path.join(args.work, "fixed", mode)
        os.makedirs(mode_dir)
        to_fix = fixable if mode == modes[0] else ddp_flagged
        for name in to_fix:
            copies[(name, mode)] = os.path.join(mode_dir, name + ".cpp")
            shutil.copyfile(programs[name]["path"], copies[(name, mode)])
        status = 0
        if to_fix:
            # --fix re-checks the files it fixed and exits 0 only when all of
            # them are clean then (tools/ddpguard/Driver.cpp); otherwise the
            # copies of this mode are re-checked one by one below.
            _, errors, _, status = check(args, [copies[(n, mode)] for n in to_fix],
                                         os.path.join(args.work, "fix-%s.log" % mode),
                                         extra=("--fix", "--fix-mode=" + mode))
        for name in to_fix:
            with open(copies[(name, mode)], encoding="utf-8") as f:
                applied = f.read() != programs[name]["text"]
            if applied:
                fixes[(name, mode)] = "applied"
            elif DDP_CHECK in flagged_by.get(programs[name]["path"], ()):
                fixes[(name, mode)] = "fix-not-applied"
            else:
                # The other checks withhold a fix with a note saying why.
                fixes[(name, mode)] = "withheld"
            if applied and status != 0:
                recheck.append((name, mode))
    applied = [k for k, v in fixes.items() if v == "applied"]
    if recheck:
        left, errors, _, _ = check(args, [copies[k] for k in recheck],
                                   os.path.join(args.work, "recheck.log"))
        for k in recheck:
            if left.get(os.path.realpath(copies[k])):
                fixes[k] = "fix-not-clean"
        # An error names its file; a fixed copy that does not parse is not clean.
        for e in errors:
            hit = [k for k in recheck if copies[k] in e]
            for k in hit:
                fixes[k] = "fix-not-clean"
            if not hit:
                problems.append("ddpguard (re-check): %s" % e)
    buildable = [k for k in applied]
    fixed_log = os.path.join(args.work, "fixed-build.log")
    not_built, build_error = build_fixed(
        args, [("%s/%s" % (m, n), copies[(n, m)]) for n, m in buildable], fixed_log)
    if build_error:
        problems.append("the fixed copies do not build (%s):\n%s" % (fixed_log, build_error))
    runnable = []
    for n, m in buildable:
        if "%s/%s" % (m, n) in not_built:
            fixes[(n, m)] = "fix-not-built"
        elif not build_error:
            runnable.append((n, m))
    t_build = time.time() - t
    fixed_runs = run_all(args, args.fixed_runner, ["%s/%s" % (m, n) for n, m in runnable],
                         os.path.join(args.work, "fixed-runs"))
    for n, m in runnable:
        outcome = fixed_runs["%s/%s" % (m, n)][0]
        if outcome != "trains":
            fixes[(n, m)] = "fix-fails"
        elif fixes[(n, m)] == "applied":
            fixes[(n, m)] = "trains"
    for name in fixable:
        if name not in ddp_flagged:
            for mode in modes[1:]:
                fixes[(name, mode)] = fixes[(name, modes[0])]
    t_fix = time.time() - t
    print("fixes (%s): %.0f s, of which fix, re-check and build %.0f s"
          % (", ".join(modes), t_fix, t_build), flush=True)

    # 4. Disagreements, known gaps, numbers.
    measured = {}
    for name in names:
        p = programs[name]
        if p["truth"] == "fails" and not p["lines"]:
            measured[(name, "false-negative")] = "fails on 2 ranks; no finding"
        elif p["truth"] == "trains" and p["lines"]:
            measured[(name, "false-positive")] = "trains on 2 ranks; finding at line %s" % p["lines"]
        elif p["truth"] == "fails":
            wrong = [l for l in p["lines"] if l not in p["marks"]]
            if wrong:
                measured[(name, "wrong-line")] = "finding at line %s, marked %s" % (
                    wrong, sorted(p["marks"]))
        if p["runtime"]:
            measured[(name, p["runtime"][0])] = p["runtime"][1]
    for (name, mode), result in fixes.items():
        if result in FIX_KINDS:
            measured[(name, result, mode)] = ""
    in_scope = {k: v for k, v in expected.items() if k[0] in programs}
    unexpected = sorted(k for k in measured if k not in in_scope)
    stale = sorted(k for k in in_scope if k not in measured)

    print()
    print("%-40s %-7s %-14s %-10s %s" % ("program", "truth", "findings", "marked", "fixes"))
    for name in names:
        p = programs[name]
        fx = " ".join("%s:%s" % (m, fixes[(name, m)]) for m in modes if (name, m) in fixes)
        print("%-40s %-7s %-14s %-10s %s" % (name, p["truth"], ",".join(map(str, p["lines"])) or "-",
                                             ",".join(map(str, sorted(p["marks"]))) or "-", fx))
    withheld_names = sorted({n for (n, _), v in fixes.items() if v == "withheld"})
    if withheld_names:
        print()
        print("withheld fixes, with the checker's reason:")
        for name in withheld_names:
            reasons = sorted(set(why_withheld.get(programs[name]["path"], [])))
            if not reasons:
                problems.append("%s: a fix is withheld, yet no note says why" % name)
            for reason in reasons:
                print("  %-40s %s" % (name, reason))
    print()
    gaps = sorted(k for k in measured if k in in_scope)
    print("known gaps (%s), measured in this run:" % os.path.basename(args.expectations)
          if gaps else "known gaps: none in this run")
    for k in gaps:
        print("  %-40s %-16s %s  %s" % (k[0], " ".join(k[1:]), measured[k], in_scope[k]))
    for k in unexpected:
        problems.append("unexpected disagreement (not in %s): %s %s"
                        % (os.path.basename(args.expectations), " ".join(k), measured[k]))
    for k in stale:
        problems.append("stale expectation, not measured any more (remove it from %s): %s"
                        % (os.path.basename(args.expectations), " ".join(k)))
    for problem in problems:
        print("FAIL: " + problem)

    fail = [n for n in names if programs[n]["truth"] == "fails"]
    train = [n for n in names if programs[n]["truth"] == "trains"]
    tp = sum(1 for n in fail if programs[n]["lines"])
    fp = sum(1 for n in train if programs[n]["lines"])
    fn = len(fail) - tp
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    trained = sum(1 for v in fixes.values() if v == "trains")
    attempts = len(fail) * len(modes)
    # A withheld fix (the checker says why in a note) is no failed fix.
    offered = sum(1 for v in fixes.values() if v not in ("fix-not-applied", "withheld"))
    gap_names = {k[0] for k in gaps if k[1] in ("false-positive", "false-negative")}
    rest = [n for n in names if n not in gap_names and programs[n]["truth"] in ("fails", "trains")]
    rtp = sum(1 for n in rest if programs[n]["truth"] == "fails" and programs[n]["lines"])
    rfp = sum(1 for n in rest if programs[n]["truth"] == "trains" and programs[n]["lines"])
    rfn = sum(1 for n in rest if programs[n]["truth"] == "fails" and not programs[n]["lines"])
    print()
    print("outside the known gaps (%d programs): precision %.2f recall %.2f" % (
        len(rest), rtp / (rtp + rfp) if rtp + rfp else 1.0, rtp / (rtp + rfn) if rtp + rfn else 1.0))
    named = sum(1 for n in fail if not programs[n]["runtime"])
    false_reports = sum(1 for n in train if programs[n]["runtime"])
    print("runtime: named the write before autograd's error in %d of %d failing programs; "
          "reported %d of %d training programs" % (named, len(fail), false_reports, len(train)))
    print("time: %.0f s (truth %.0f, check %.0f, fixes %.0f)" % (time.time() - t0, t_truth, t_check, t_fix))
    print("corpus: %d programs (%d fail, %d train); precision %.2f recall %.2f; fixes %d/%d train "
          "(%d/%d of the flagged ones; %s; %d/%d of the fixes offered, %d withheld); "
          "known gaps %d; %s" % (
              len(names), len(fail), len(train), precision, recall, trained, attempts,
              trained, len(fixes), ", ".join(modes), trained, offered, len(fixes) - offered,
              len(gaps), "FAILED" if problems else "ok"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
