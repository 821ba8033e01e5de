#!/usr/bin/env python3
"""Runs the ddpguard CLI on hostile inputs (issue 31, deliverable 6).

    run_hostile.py --ddpguard build/bin/ddpguard [--module cases_cli] [-k text]

Each case (hostile_case.Case) is laid out in a fresh temporary folder and the
CLI runs there with a time limit. A case fails when the CLI is killed by a
signal or prints LLVM's crash banner, runs past the limit, exits with another
status, prints what it must not or misses what it must, reports other
findings, or changes a file it was not meant to. The modules are the files
cases_*.py beside this one (each holds a list CASES): a new class of inputs is
a new module, found without naming it anywhere (test/hostile/CMakeLists.txt
registers one CTest per module). The last line is the counts; the exit status
is 1 when a case failed or none ran.
"""
import argparse
import importlib
import os
import pathlib
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import hostile_case  # noqa: E402

DEFAULT_TIMEOUT = 30.0
# What LLVM's signal handlers print when the process crashes; the process may
# still exit with a status (InitLLVM turns some crashes into exit codes).
CRASH_BANNERS = ("PLEASE submit a bug report", "Stack dump:")
WARNING = re.compile(
    r"^(?P<path>.+?):(?P<line>\d+):(?P<column>\d+): warning: .*\[(?P<check>[A-Za-z0-9_.-]+)\]$",
    re.MULTILINE)


def case_modules(names):
    if not names:
        names = sorted(p.stem for p in HERE.glob("cases_*.py"))
    return [importlib.import_module(name) for name in names]


def snapshot(root: pathlib.Path):
    """Every regular file's mode and bytes (None when it cannot be read)."""
    state = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in files + dirs:
            path = pathlib.Path(folder) / name
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode):
                continue
            try:
                content = path.read_bytes()
            except OSError:
                content = None
            state[str(path.relative_to(root))] = (stat.S_IMODE(info.st_mode), content)
    return state


def make_removable(root: pathlib.Path):
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in dirs:
            path = pathlib.Path(folder) / name
            if not os.path.islink(path):
                os.chmod(path, 0o755)
    os.chmod(root, 0o755)


def substitute(text: str, root: pathlib.Path) -> str:
    return text.replace("{dir}", str(root))


def unprivileged_prefix():
    """Root reads every file whatever its mode: drop the capabilities that let
    it, so that mode 0o000 is unreadable as for a user. None: cannot."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if not setpriv:
        return None
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}"]


def run_case(case, ddpguard, default_timeout, keep):
    """Returns (status, details): status is 'passed', 'failed' or 'skipped'."""
    prefix = []
    if case.unprivileged:
        prefix = unprivileged_prefix()
        if prefix is None:
            return "skipped", "runs as root and setpriv is missing"
    root = pathlib.Path(tempfile.mkdtemp(prefix="ddpguard-hostile-"))
    problems = []
    try:
        hostile_case.lay_out(root, case.files)
        if case.setup:
            case.setup(root)
        before = snapshot(root)
        # The full format: findings in clang's "file:line:col: warning:" form,
        # which WARNING reads; a case that names a format keeps its own.
        args = [substitute(a, root) for a in case.args]
        if not any("format" in a for a in args):
            args = ["--output-format=full"] + args
        command = prefix + [ddpguard] + args
        timeout = case.timeout or default_timeout
        start = time.monotonic()
        process = subprocess.Popen(
            command, cwd=root, start_new_session=True,
            stdin=subprocess.PIPE if case.stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = process.communicate(case.stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            problems.append(f"hung: still running after {timeout:.0f} s (killed)")
        seconds = time.monotonic() - start
        out = out.decode(errors="replace")
        err = err.decode(errors="replace")
        code = process.returncode
        if code is not None and code < 0 and not problems:
            problems.append(f"killed by {signal.Signals(-code).name}")
        for banner in CRASH_BANNERS:
            if banner in err:
                problems.append(f"crashed: standard error holds {banner!r}")
        wanted = case.exit if isinstance(case.exit, tuple) else (case.exit,)
        if code not in wanted and not problems:
            problems.append(f"exit status {code}, wanted {' or '.join(map(str, wanted))}")
        for stream, text, must, must_not in (("stdout", out, case.stdout, case.not_stdout),
                                             ("stderr", err, case.stderr, case.not_stderr)):
            for pattern in must:
                if not re.search(substitute(pattern, root), text, re.MULTILINE):
                    problems.append(f"{stream} lacks /{pattern}/")
            for pattern in must_not:
                found = re.search(substitute(pattern, root), text, re.MULTILINE)
                if found:
                    problems.append(f"{stream} holds /{pattern}/: {found.group(0)!r}")
        if case.findings is not None:
            got = sorted(finding_key(m, root) for m in WARNING.finditer(out))
            if got != sorted(case.findings):
                problems.append(f"findings {got}, wanted {sorted(case.findings)}")
        after = snapshot(root)
        for path in sorted(set(before) | set(after)):
            if path in case.changed:
                mode_content = after.get(path)
                if mode_content is None or mode_content[1] != case.changed[path]:
                    problems.append(f"{path} does not hold what the fix should write")
            elif before.get(path) != after.get(path):
                problems.append(f"{path} changed")
        details = f"{seconds:.2f} s"
        if problems:
            details = "; ".join(problems) + f"\n  command: {' '.join(command)}" + \
                tail("stdout", out) + tail("stderr", err)
            if keep:
                details += f"\n  kept: {root}"
        return ("failed" if problems else "passed"), details
    finally:
        if not (problems and keep):
            make_removable(root)
            shutil.rmtree(root, ignore_errors=True)


def finding_key(match, root: pathlib.Path) -> str:
    path = match.group("path")
    prefix = str(root) + os.sep
    if path.startswith(prefix):
        path = path[len(prefix):]
    return f"{path}:{match.group('line')}"


def tail(name, text, limit=2000):
    if not text:
        return ""
    text = text if len(text) <= limit else "..." + text[-limit:]
    return f"\n  {name}:\n    " + text.rstrip().replace("\n", "\n    ")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ddpguard", required=True, help="the CLI to run")
    parser.add_argument("--module", action="append", default=[],
                        help="a case module (default: every cases_*.py here)")
    parser.add_argument("-k", dest="select", default="",
                        help="run only the cases whose name holds this text")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds each input may take (a case may set its own)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the folders of failed cases")
    options = parser.parse_args()
    ddpguard = os.path.abspath(options.ddpguard)
    if not os.access(ddpguard, os.X_OK):
        sys.exit(f"run_hostile: {ddpguard} is not an executable")
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    names = set()
    for module in case_modules(options.module):
        for case in module.CASES:
            name = f"{module.__name__}.{case.name}"
            if name in names:
                sys.exit(f"run_hostile: two cases are named {name}")
            names.add(name)
            if options.select not in name:
                continue
            status, details = run_case(case, ddpguard, options.timeout, options.keep)
            counts[status] += 1
            item = f" [{case.item}]" if case.item else ""
            print(f"{status.upper()}: {name}{item} ({details})", flush=True)
    print(f"hostile: {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped")
    sys.exit(1 if counts["failed"] or not counts["passed"] else 0)


if __name__ == "__main__":
    main()
