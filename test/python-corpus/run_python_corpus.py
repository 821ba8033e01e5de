#!/usr/bin/env python3
"""The Python corpus oracle: every training script is its own ground truth.

    run_python_corpus.py --scripts DIR --expectations FILE --ddpguard BIN
                         --torch [VERSION=]PYTHON [--torch [VERSION=]PYTHON ...]
                         --work DIR [--subset FILE] [--jobs N] [--timeout S]

For each script of DIR (or of --subset) and each torch given:

1. Truth: the script runs on 2 Gloo ranks on CPU under that interpreter's
   torchrun (`PYTHON -m torch.distributed.run --standalone --nproc-per-node
   2`, which picks a free port), with PyTorch's own
   DistributedDataParallel. It trains (exit 0) or fails; a failure must be
   autograd's in-place error ("... modified by an inplace operation"),
   anything else (or a timeout) is a broken corpus script and fails the
   test. The interpreter must have the torch it is named for.
2. Check: `ddpguard --torch-version VERSION --format=json` checks the
   scripts (all in one run per torch). The checker must flag exactly the
   failing scripts, each finding on a line marked `# corpus: expect here`
   (the forward that broadcasts over the buffers an earlier forward saved,
   or the call of the helper, lambda or partial that holds it), and be
   silent on the training ones.
3. The marks say where a script fails while DDP's buffer broadcast bumps
   version counters (torch up to 2.12.0). There a failing script without a
   mark, or a training script with one, is a broken corpus script. From
   2.12.1 (the broadcast preserves version counters) a marked script may
   train, and then the checker must be silent on it.
4. Fixes: each failing script the checker flags is copied and fixed with
   `ddpguard --fix --fix-mode=MODE --torch-version VERSION`, once per mode
   (broadcast: the broadcast keyword set to False at the construction;
   once-per-backward: the first forward run inside `model.no_sync()`), and
   run again on 2 ranks: each fixed copy must re-check clean (--fix exits 0)
   and train. A fix the checker withholds (the file unchanged, with its
   "cannot ..." note) is listed with the reason.
5. Disagreements (false-positive, false-negative, wrong-line, fix-not-clean,
   fix-fails) are compared
   with the expectations file, which lists the known gaps of the checker as
   measured, one per line: `script kind torch-version  # what the frontend
   does not understand`. The test fails on a disagreement that is not
   listed, on a listed one that is no longer measured (stale: remove it),
   on a broken script, and when it ran no script. The last line gives, per
   torch, the scripts, how many fail and train, precision and recall (over
   all scripts, known gaps included), the number of known gaps measured and
   ok or FAILED.

Logs go to --work: one per run (`<torch>/runs/<script>.log`), the checker's
JSON (`<torch>/check.log`) and this summary (`summary.txt`).
"""
import argparse
import concurrent.futures
import filecmp
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

MARK = "# corpus: expect here"
INPLACE_ERROR = "modified by an inplace operation"
# Each flagged failing script is fixed once per mode; every fix the checker
# offers must re-check clean and train (docs/python-checker.md, "Fixes").
FIX_MODES = ("broadcast", "once-per-backward")
KINDS = ("false-positive", "false-negative", "wrong-line", "fix-not-clean", "fix-fails")
# From this torch on, DDP's buffer sync preserves version counters
# (docs/ground-truth.md), so a marked script may train.
PRESERVES_VERSIONS = (2, 12, 1)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scripts", required=True, help="folder of the corpus scripts (*.py)")
    p.add_argument("--expectations", required=True, help="known gaps: script kind torch-version")
    p.add_argument("--ddpguard", required=True, help="the ddpguard CLI")
    p.add_argument("--torch", action="append", required=True, metavar="[VERSION=]PYTHON",
                   help="a torch version and the interpreter that has it (repeatable); "
                   "without VERSION, the torch that PYTHON imports")
    p.add_argument("--work", required=True, help="folder for logs (emptied first)")
    p.add_argument("--subset", help="file naming the scripts to run, one a line (default: all)")
    p.add_argument("--jobs", type=int, default=2, help="2-rank runs in parallel")
    p.add_argument("--timeout", type=float, default=240, help="seconds per 2-rank run")
    args = p.parse_args()
    args.torches = []
    for spec in args.torch:
        version, sep, python = spec.partition("=")
        if not sep:
            version, python = None, spec
        elif not parse_version(version) or not python:
            p.error("--torch %r: want VERSION=PYTHON, e.g. 2.11.0=.venv/bin/python" % spec)
        args.torches.append((version, absolute(python)))
    args.ddpguard = absolute(args.ddpguard)
    return args


def absolute(program):
    """The runs start in their log folder: a relative path must not change."""
    if os.sep in program:
        return os.path.abspath(program)
    return shutil.which(program) or program


def parse_version(text):
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)", text)
    return tuple(int(g) for g in m.groups()) if m else None


def read_list(path):
    names = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line[:-3] if line.endswith(".py") else line)
    return names


def load_scripts(args, problems):
    every = sorted(f[:-3] for f in os.listdir(args.scripts) if f.endswith(".py"))
    names = every
    if args.subset:
        names = read_list(args.subset)
        for name in names:
            if name not in every:
                problems.append("%s: named in %s but not in %s" % (name, args.subset, args.scripts))
        names = [n for n in names if n in every]
    scripts = {}
    for name in names:
        path = os.path.join(args.scripts, name + ".py")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        marks = {i + 1 for i, line in enumerate(text.splitlines()) if line.rstrip().endswith(MARK)}
        if not text.startswith("#"):
            problems.append("%s: no header comment saying what real code it stands for" % name)
        # torch 2.15's Gloo can abort the process at exit unless the DDP
        # objects are gone before the process group (test/python/programs).
        if "gc.collect()" not in text or "destroy_process_group()" not in text:
            problems.append("%s: must delete its DDP objects and call gc.collect() before "
                            "dist.destroy_process_group()" % name)
        scripts[name] = {"path": os.path.realpath(path), "marks": marks}
    return names, scripts


def load_expectations(path):
    """{(script, kind, torch): note}; the note is the entry's own comment,
    else the comment block above it."""
    expected = {}
    block, after_entry = [], False
    for line in open(path, encoding="utf-8"):
        body, _, note = line.partition("#")
        fields = body.split()
        if not fields:
            if after_entry or not line.strip():
                block = []
            if note.strip():
                block.append(note.strip())
            after_entry = False
            continue
        after_entry = True
        if len(fields) != 3 or fields[1] not in KINDS or not parse_version(fields[2]):
            sys.exit("%s: cannot read %r (want: script kind torch-version)" % (path, line.rstrip()))
        note = note.strip() or " ".join(block)
        expected[tuple(fields)] = note if len(note) <= 100 else note[:97] + "..."
    return expected


def torch_of(python):
    proc = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        return None, proc.stderr.decode("utf-8", "replace")[-1000:]
    return proc.stdout.decode().strip().splitlines()[-1], None


def run_ranks(python, script, log_path, timeout):
    """Runs the script on 2 ranks; returns (outcome, seconds)."""
    cmd = [python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", script]
    env = dict(os.environ)
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    start = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, env=env, cwd=os.path.dirname(log_path))
    try:
        out, _ = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        rc = None
    seconds = time.time() - start
    out = out.decode("utf-8", "replace")
    with open(log_path, "w", encoding="utf-8") as f:
        f.write("$ %s\n%s\nexit status: %s\n" % (" ".join(cmd), out, rc))
    if rc is None:
        return "timeout", seconds
    if rc == 0:
        return "trains", seconds
    return ("fails" if INPLACE_ERROR in out else "broken"), seconds


def fix_and_run(args, version, python, script, work, mode):
    """Fixes a copy of script with --fix-mode=mode; returns 'trains',
    'not-clean', 'withheld: <the checker's reason>' or the run's outcome."""
    os.makedirs(work, exist_ok=True)
    fixed = os.path.join(work, os.path.basename(script))
    shutil.copyfile(script, fixed)
    # The full format: the notes say why a fix is withheld.
    cmd = [args.ddpguard, "--fix", "--fix-mode=" + mode, "--output-format=full",
           "--torch-version", version, fixed]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.decode("utf-8", "replace")
    log = fixed[:-3] + ".log"
    with open(log, "w", encoding="utf-8") as f:
        f.write("$ %s\nexit status: %d\n%s" % (" ".join(cmd), proc.returncode, out))
    withheld = re.search(r"note: (?:cannot [^:]*|no fix is offered): (.*)", out)
    if withheld and filecmp.cmp(script, fixed, shallow=False):
        return "withheld: " + withheld.group(1)
    if proc.returncode != 0:
        return "not-clean"
    outcome, _ = run_ranks(python, fixed, fixed[:-3] + ".run.log", args.timeout)
    return outcome


def check(args, version, files, log_path):
    """Runs the CLI on files; returns ({realpath: [lines]}, problems)."""
    cmd = [args.ddpguard, "--torch-version", version, "--format=json", *files]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    with open(log_path, "w", encoding="utf-8") as f:
        f.write("$ %s\nexit status: %d\n%s\n--- stderr\n%s" % (" ".join(cmd), proc.returncode, out, err))
    findings = {os.path.realpath(f): [] for f in files}
    problems = []
    try:
        doc = json.loads(out)
    except ValueError as e:
        return findings, ["ddpguard (torch %s) printed no JSON (%s), exit %d: %s"
                          % (version, e, proc.returncode, err[-2000:])]
    # Every check's findings: each cause's failing scripts are marked alike.
    for finding in doc.get("findings", []):
        # A silent write raises nothing: its truth is the gradient comparison
        # of test/python/silent (python.silent.checker), not a run's outcome.
        if finding.get("check") == "silent-write-before-backward":
            continue
        findings.setdefault(os.path.realpath(finding["file"]), []).append(finding["line"])
    for error in doc.get("errors", []):
        problems.append("ddpguard (torch %s): %s" % (
            version, json.dumps(error) if not isinstance(error, str) else error))
    if proc.returncode not in (0, 1) and not problems:
        problems.append("ddpguard (torch %s) exited %d: %s" % (version, proc.returncode, err[-2000:]))
    return findings, problems


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
    names, scripts = load_scripts(args, problems)
    expected = load_expectations(args.expectations)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    sys.stdout = Tee(os.path.join(args.work, "summary.txt"))
    if not names:
        problems.append("no script to run")

    # 1. Truth, every (script, torch) pair, --jobs at a time.
    usable = []
    for version, python in args.torches:
        found, error = torch_of(python)
        if found is None:
            problems.append("torch %s: %s does not import torch: %s" % (version or "?", python, error))
            continue
        version = version or found.split("+")[0]
        if version in dict(usable):
            problems.append("torch %s named twice" % version)
        elif found.split("+")[0] != version:
            problems.append("torch %s: %s has torch %s" % (version, python, found))
        else:
            usable.append((version, python))
            os.makedirs(os.path.join(args.work, version, "runs"))
    truth = {}
    t = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {}
        for version, python in usable:
            for name in names:
                log = os.path.join(args.work, version, "runs", name + ".log")
                futures[pool.submit(run_ranks, python, scripts[name]["path"], log,
                                    args.timeout)] = (name, version)
        for future in concurrent.futures.as_completed(futures):
            name, version = futures[future]
            outcome, seconds = future.result()
            truth[(name, version)] = outcome
            print("run   %-6s %-40s %-7s %5.1f s" % (version, name, outcome, seconds), flush=True)
    t_truth = time.time() - t

    # 2. Check, one CLI run per torch.
    t = time.time()
    lines = {}
    for version, _ in (usable if names else []):
        findings, errors = check(args, version, [scripts[n]["path"] for n in names],
                                 os.path.join(args.work, version, "check.log"))
        problems.extend(errors)
        for name in names:
            lines[(name, version)] = sorted(set(findings.get(scripts[name]["path"], [])))
    t_check = time.time() - t

    # 3. Broken scripts and disagreements.
    measured = {}
    for version, _ in usable:
        may_train = parse_version(version) >= PRESERVES_VERSIONS
        for name in names:
            outcome, found = truth[(name, version)], lines[(name, version)]
            marks = scripts[name]["marks"]
            log = os.path.join(args.work, version, "runs", name + ".log")
            if outcome in ("broken", "timeout"):
                problems.append("%s (torch %s): %s, not autograd's in-place error (see %s)"
                                % (name, version, outcome, log))
                continue
            if outcome == "fails" and not marks:
                problems.append("%s (torch %s): fails with the in-place error but has no line "
                                "marked '%s'" % (name, version, MARK))
            if outcome == "trains" and marks and not may_train:
                problems.append("%s (torch %s): trains but has a line marked '%s'"
                                % (name, version, MARK))
            if outcome == "fails" and not found:
                measured[(name, "false-negative", version)] = "fails on 2 ranks; no finding"
            elif outcome == "trains" and found:
                measured[(name, "false-positive", version)] = "trains on 2 ranks; finding at line %s" % found
            elif outcome == "fails":
                wrong = [l for l in found if l not in marks]
                if wrong:
                    measured[(name, "wrong-line", version)] = "finding at line %s, marked %s" % (
                        wrong, sorted(marks))
    # 4. Fixes of the flagged failing scripts, --jobs at a time.
    t = time.time()
    fixes = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {}
        for version, python in usable:
            for name in names:
                if truth[(name, version)] == "fails" and lines[(name, version)]:
                    for mode in FIX_MODES:
                        work = os.path.join(args.work, version, "fixed-" + mode)
                        futures[pool.submit(fix_and_run, args, version, python,
                                            scripts[name]["path"], work, mode)] = (
                                                name, version, mode)
        for future in concurrent.futures.as_completed(futures):
            name, version, mode = futures[future]
            fixes[(name, version, mode)] = outcome = future.result()
            print("fix   %-6s %-40s %-17s %s" % (version, name, mode, outcome), flush=True)
            if outcome == "not-clean":
                measured[(name, "fix-not-clean", version)] = (
                    "ddpguard --fix --fix-mode=%s left findings or errors" % mode)
            elif outcome != "trains" and not outcome.startswith("withheld"):
                measured[(name, "fix-fails", version)] = (
                    "the script fixed with --fix-mode=%s %s" % (mode, outcome))
    t_fix = time.time() - t
    in_scope = {k: v for k, v in expected.items() if k[0] in scripts and k[2] in dict(usable)}
    unexpected = sorted(k for k in measured if k not in in_scope)
    stale = sorted(k for k in in_scope if k not in measured)

    print()
    header = "%-40s %-8s" % ("script", "marked") + "".join(
        " %-8s %-12s" % (v + ":", "findings") for v, _ in usable)
    print(header)
    for name in names:
        row = "%-40s %-8s" % (name, ",".join(map(str, sorted(scripts[name]["marks"]))) or "-")
        for version, _ in usable:
            row += " %-8s %-12s" % (truth[(name, version)],
                                    ",".join(map(str, lines[(name, version)])) or "-")
        print(row)
    print()
    withheld = sorted(k for k in fixes if fixes[k].startswith("withheld"))
    if withheld:
        print("fixes withheld, with the checker's reason:")
    for k in withheld:
        print("  %-36s %-7s %-17s %s" % (k[0], k[1], k[2], fixes[k][len("withheld: "):]))
    gaps = sorted(k for k in measured if k in in_scope)
    print("known gaps (%s), measured in this run:" % os.path.basename(args.expectations)
          if gaps else "known gaps: none in this run")
    for k in gaps:
        print("  %-36s %-15s %-7s %s" % (k[0], k[1], k[2], measured[k]))
        if in_scope[k]:
            print("      (%s)" % in_scope[k])
    for k in unexpected:
        problems.append("unexpected disagreement (not in %s): %s %s %s: %s"
                        % (os.path.basename(args.expectations), k[0], k[1], k[2], measured[k]))
    for k in stale:
        problems.append("stale expectation, not measured any more (remove it from %s): %s"
                        % (os.path.basename(args.expectations), " ".join(k)))
    for problem in problems:
        print("FAIL: " + problem)

    parts = []
    for version, _ in usable:
        fail = [n for n in names if truth[(n, version)] == "fails"]
        train = [n for n in names if truth[(n, version)] == "trains"]
        tp = sum(1 for n in fail if lines[(n, version)])
        fp = sum(1 for n in train if lines[(n, version)])
        fn = len(fail) - tp
        precision = tp / (tp + fp) if tp + fp else 1.0
        recall = tp / (tp + fn) if tp + fn else 1.0
        counts = []
        for mode in FIX_MODES:
            fixed = [k for k in fixes if k[1] == version and k[2] == mode]
            withheld = [k for k in fixed if fixes[k].startswith("withheld")]
            trained = [k for k in fixed if fixes[k] == "trains"]
            counts.append("%s %d/%d" % (mode, len(trained), len(fixed) - len(withheld))
                          + (" (%d withheld)" % len(withheld) if withheld else ""))
        parts.append("torch %s: %d scripts (%d fail, %d train), precision %.2f recall %.2f, "
                     "fixes train: %s"
                     % (version, len(names), len(fail), len(train), precision, recall,
                        ", ".join(counts)))
    print()
    print("time: %.0f s (runs %.0f, check %.0f, fixes %.0f)"
          % (time.time() - t0, t_truth, t_check, t_fix))
    print("python corpus: %s; known gaps %d; %s" % (
        "; ".join(parts) or "no torch usable", len(gaps), "FAILED" if problems else "ok"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
