"""Runs every program of programs/ with and without ``python -m ddpguard.explain``.

The run without the explainer is the oracle: a program fails when it exits
non-zero with autograd's version-counter error, and trains when it exits 0.
With the explainer, exit status and standard output must be the same; a
failing program must be explained (on every rank) with the tensors, the
saving line and the writing lines marked in the program:

    # explain: ranks 2           run on 2 Gloo ranks under torchrun
    # explain: spawns 2          starts 2 ranks itself (torch.multiprocessing.spawn)
    # explain: tensor NAME       a parameter or buffer the report must name
    ...  # explain: saved        the line whose forward or op saved it
    ...  # explain: written      a line that wrote it (each one is required)
    ...  # explain: backward     the backward's line (where a program marks it)

A program that trains must print nothing of the explainer. The torch under
test is the interpreter's own (CTest runs this file once per torch venv).

The DDP programs delete their model and collect it before
destroy_process_group: torch 2.15's backward stashes a Python object in the
thread-local state that Gloo's work objects capture, and a Gloo worker that
releases one while the interpreter finalizes aborts the process ("terminate
called without an active exception"; 5 of 20 runs of
ddp_no_grad_second_forward.py, 8 of 16 of ddp_one_forward.py, 0 of 16 with the
model collected). Collected, the group's last reference goes in
destroy_process_group, whose destructor joins Gloo's workers while Python runs.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
PACKAGE_ROOT = HERE.parent.parent / "python"
VERSION_ERROR = "modified by an inplace operation"
TIMEOUT = 300


@dataclass
class Program:
    path: Path
    ranks: int
    spawns: int
    tensors: list[str]
    saved: list[int]
    written: list[int]
    backward: list[int]


def parse(path: Path) -> Program:
    ranks, spawns, tensors, saved, written, backward = 1, 0, [], [], [], []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        marker = re.search(r"# explain: (.*)$", line)
        if not marker:
            continue
        words = marker.group(1).split()
        if words[0] == "ranks":
            ranks = int(words[1])
        elif words[0] == "spawns":
            spawns = int(words[1])
        elif words[0] == "tensor":
            tensors.append(words[1])
        elif words[0] == "saved":
            saved.append(number)
        elif words[0] == "written":
            written.append(number)
        elif words[0] == "backward":
            backward.append(number)
        else:
            raise ValueError(f"{path.name}:{number}: unknown marker {marker.group(0)!r}")
    return Program(path, ranks, spawns, tensors, saved, written, backward)


ALL = sorted(PROGRAMS.glob("*.py"))


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def environment() -> dict[str, str]:
    env = dict(os.environ)
    if not env.get("DDPGUARD_EXPLAIN_INSTALLED"):
        env["PYTHONPATH"] = os.pathsep.join(
            [str(PACKAGE_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    env.pop("DDPGUARD_EXPLAIN_MODE", None)
    return env


def run(program: Program, explain: list[str] | None) -> Result:
    python = [sys.executable]
    if program.ranks > 1:
        launcher = python + ["-m", "torch.distributed.run", "--standalone",
                             "--nproc-per-node", str(program.ranks)]
    else:
        launcher = python
    command = launcher + (["-m", "ddpguard.explain"] + explain if explain is not None else [])
    command.append(program.path.name)
    done = subprocess.run(command, cwd=PROGRAMS, env=environment(), capture_output=True,
                          text=True, timeout=TIMEOUT)
    return Result(done.returncode, done.stdout, done.stderr)


@functools.lru_cache(maxsize=None)
def oracle(name: str) -> Result:
    return run(parse(PROGRAMS / name), None)


def reports(stderr: str) -> list[str]:
    """Each rank's explanation: from its first line to its Fixes list's end."""
    blocks = re.findall(r"^(?:\[[^\]]*\]:)?ddpguard explain.*?(?=^\S|\Z)", stderr,
                        re.M | re.S)
    return [b for b in blocks if b.startswith("ddpguard explain")]


def fails(result: Result) -> bool:
    if result.returncode == 0:
        return False
    assert VERSION_ERROR in result.stderr, (
        "the program fails, but not with autograd's in-place error:\n" + result.stderr)
    return True


def same_output(a: str, b: str) -> bool:
    # Ranks print concurrently, and their writes can interleave mid-line: the
    # values each rank printed, not their order, must agree.
    def values(text: str) -> list[str]:
        return sorted(re.findall(r"(?:rank \d+ )?\w+ -?[\d.]+(?: \w+ -?[\d.]+)*", text))
    return values(a) == values(b)


def check_report(program: Program, report: str, mode: str) -> None:
    name = program.path.name
    for tensor in program.tensors:
        assert re.search(rf"^  tensor: (parameter|buffer) {re.escape(tensor)}\b", report,
                         re.M), f"{tensor} not named:\n{report}"
    saved_lines = [l for l in report.splitlines() if l.lstrip().startswith("saved at version")]
    for line in program.saved:
        if mode == "after-failure" and not program.tensors:
            continue  # ops outside modules are not recorded in that mode
        assert any(f"{name}:{line} " in l for l in saved_lines), (
            f"saving line {line} not given:\n{report}")
    if mode == "armed" or "then written:" in report:
        written = report.split("then written:", 1)[-1]
        for line in program.written:
            assert f"{name}:{line} " in written, f"writing line {line} not given:\n{report}"
    for line in program.backward:
        assert re.search(rf"^  the \S+ at {re.escape(name)}:{line} ", report, re.M), (
            f"backward line {line} not given:\n{report}")
    assert "  Fixes:\n" in report, report


@pytest.mark.parametrize("mode", ["armed", "after-failure"])
@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_program(path: Path, mode: str) -> None:
    program = parse(path)
    if (mode == "after-failure" and max(program.ranks, program.spawns) > 1
            and not fails(oracle(path.name))):
        pytest.skip("a training DDP program is run in the armed mode only (cost)")
    without = oracle(path.name)
    args = ["--after-failure", "--"] if mode == "after-failure" else ["--"]
    with_ = run(program, args)
    assert with_.returncode == without.returncode, with_.stderr
    assert same_output(with_.stdout, without.stdout)
    found = reports(with_.stderr)
    if not fails(without):
        assert "ddpguard explain" not in with_.stderr, with_.stderr
        return
    assert VERSION_ERROR in with_.stderr  # the original error still propagates
    assert len(found) == (program.spawns or program.ranks), with_.stderr
    for report in found:
        check_report(program, report, mode)
    if program.ranks > 1:
        # torchrun's failure summary carries the explanation (the error file).
        assert re.search(r"traceback : ddpguard explain \(rank \d\)", with_.stderr), with_.stderr


def test_corpus_has_both_outcomes() -> None:
    """Each torch version must see failing and training programs: a corpus
    that only trains (or only fails) here tests half of the explainer."""
    outcomes = {fails(oracle(p.name)) for p in ALL
                if parse(p).ranks == 1 and not parse(p).spawns}
    assert outcomes == {True, False}


def test_library_switch() -> None:
    """``import ddpguard; ddpguard.explain.enable()`` inside the program."""
    program = parse(PROGRAMS / "inplace_sigmoid_mul.py")
    code = ("import runpy, sys, ddpguard; ddpguard.explain.enable(); "
            f"sys.argv = [{program.path.name!r}]; "
            f"runpy.run_path({program.path.name!r}, run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code], cwd=PROGRAMS, env=environment(),
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == oracle(program.path.name).returncode
    (report,) = reports(done.stderr)
    check_report(program, report, "armed")


def test_usage_errors() -> None:
    env = environment()
    for args, message in ((["--bogus", "x.py"], "unknown option --bogus"),
                          (["missing.py"], "no such script: missing.py"),
                          ([], "usage:")):
        done = subprocess.run([sys.executable, "-m", "ddpguard.explain"] + args,
                              cwd=PROGRAMS, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
        assert done.returncode == 2 and message in done.stderr, done.stderr
