"""The explainer's silent-writes mode (docs/explain.md#silent-writes) on the
programs of silent/, labelled by running them on the torch under test.

Each program is run in this process three ways: as it is; under the
clone-at-pack reference (saved-tensor hooks that clone every saved tensor,
so the backward sees what the forward saved, and activation checkpointing
as a plain call); and with the mode on, with each fingerprint. Its label comes from the first two runs: "raises" when it
raises autograd's in-place error, else "silent" when its gradients (the
list it leaves in ``grads``) differ from the reference's, else "trains".
Markers in the program:

    # silent: expect LABEL       the label it must get
    # silent: tensor NAME        a parameter or buffer the report must name
    # silent: activation OP      a saved output the report must name ("the output of OP")
    ...  # silent: saved         the line whose forward saved it
    ...  # silent: written       a line that wrote it (each one is required)
    ...  # silent: backward      the backward's line

With the mode on: a program that raises raises the same error; one that
trains trains to the same gradients; a silent one is reported with its
tensors and lines, and nothing is reported for the others. The programs
of programs/ that run in one process keep their outcome under the mode
too. All in one process per torch, so that the suite takes seconds.
"""

from __future__ import annotations

import contextlib
import re
import runpy
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest
import torch

HERE = Path(__file__).resolve().parent
SILENT = HERE / "silent"
PROGRAMS = HERE / "programs"
sys.path.insert(0, str(HERE.parent.parent / "python"))

from ddpguard import explain  # noqa: E402
from ddpguard.explain.__main__ import main as explain_main  # noqa: E402
from ddpguard.explain._analysis import is_version_error  # noqa: E402
from test_explain import environment, parse  # noqa: E402


@dataclass
class Program:
    path: Path
    expect: str = ""
    tensors: list[str] = field(default_factory=list)
    activations: list[str] = field(default_factory=list)
    saved: list[int] = field(default_factory=list)
    written: list[int] = field(default_factory=list)
    backward: list[int] = field(default_factory=list)


def parse_silent(path: Path) -> Program:
    program = Program(path)
    for number, line in enumerate(path.read_text().splitlines(), 1):
        marker = re.search(r"# silent: (.*)$", line)
        if not marker:
            continue
        words = marker.group(1).split()
        if words[0] == "expect":
            program.expect = words[1]
        elif words[0] == "tensor":
            program.tensors.append(words[1])
        elif words[0] == "activation":
            program.activations.append(words[1])
        elif words[0] in ("saved", "written", "backward"):
            getattr(program, words[0]).append(number)
        else:
            raise ValueError(f"{path.name}:{number}: unknown marker {marker.group(0)!r}")
    assert program.expect in ("raises", "silent", "trains"), path.name
    return program


@dataclass
class Outcome:
    error: Optional[str]           # autograd's in-place error, if it raised
    grads: list                    # what the program left in `grads`


def run(path: Path) -> Outcome:
    argv = sys.argv
    sys.argv = [path.name]
    try:
        result = runpy.run_path(str(path), run_name="__main__")
    except RuntimeError as e:
        if not is_version_error(e):
            raise
        return Outcome(str(e), [])
    finally:
        sys.argv = argv
    return Outcome(None, [g.clone() for g in result.get("grads", [])])


@contextlib.contextmanager
def clone_at_pack():
    """The reference: every saved tensor cloned when saved, and
    torch.utils.checkpoint.checkpoint a plain call (its own hooks would
    replace these, and it recomputes in the backward): the gradients of the
    values the forward saw."""
    import torch.utils.checkpoint as checkpointing
    original = checkpointing.checkpoint
    checkpointing.checkpoint = lambda function, *args, **kwargs: function(*args)
    try:
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            yield
    finally:
        checkpointing.checkpoint = original


@contextlib.contextmanager
def silent_mode(fingerprint: str):
    explain.enable("silent-writes", fingerprint)
    try:
        yield
    finally:
        explain.disable()


def label(plain: Outcome, reference: Outcome) -> str:
    if plain.error is not None:
        return "raises"
    assert len(plain.grads) == len(reference.grads) > 0
    if all(torch.equal(a, b) for a, b in zip(plain.grads, reference.grads)):
        return "trains"
    return "silent"


def same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


def check_report(program: Program, report: str) -> None:
    name = program.path.name
    for tensor in program.tensors:
        assert re.search(rf"^  tensor: (parameter|buffer) {re.escape(tensor)}\b", report,
                         re.M), f"{tensor} not named:\n{report}"
    for op in program.activations:
        assert re.search(rf"^  tensor: the output of {re.escape(op)}\b", report,
                         re.M), f"the output of {op} not named:\n{report}"
    saved = [line for line in report.splitlines() if line.lstrip().startswith("saved at")]
    for number in program.saved:
        assert any(f"{name}:{number} " in line for line in saved), report
    written = report.split("then written", 1)[-1]
    for number in program.written:
        assert f"{name}:{number} " in written, f"writing line {number} not given:\n{report}"
    for number in program.backward:
        assert re.search(rf"^  the \S+ at \S*{re.escape(name)}:{number} ", report, re.M), report
    assert "invisible to autograd" in report and "  Fixes:\n" in report, report


ALL = sorted(SILENT.glob("*.py"))


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_silent_program(path: Path, capfd) -> None:
    program = parse_silent(path)
    plain = run(path)
    with clone_at_pack():
        reference = run(path)
    found = label(plain, reference)
    assert found == program.expect, (
        f"{path.name} {found} on torch {torch.__version__}, marked {program.expect}")
    capfd.readouterr()
    for fingerprint in ("sampled", "full"):
        with silent_mode(fingerprint):
            moded = run(path)
        err = capfd.readouterr().err
        assert moded.error == plain.error, (fingerprint, moded.error)
        assert same(moded.grads, plain.grads), f"{fingerprint}: the mode changed the gradients"
        if found == "silent":
            reports = re.findall(r"^ddpguard explain.*?(?=^\S|\Z)", err, re.M | re.S)
            assert len(reports) == 1, err
            check_report(program, reports[0])
        elif found == "trains":
            assert "ddpguard explain" not in err, f"{fingerprint}:\n{err}"


def test_labels_all_occur() -> None:
    """The corpus has silent programs, controls that train, and one that raises."""
    assert {parse_silent(p).expect for p in ALL} == {"raises", "silent", "trains"}


# programs/ that run in one process: torch.compile'd ones are left to
# test_explain.py (compiling takes most of a minute).
ONE_PROCESS = [p for p in sorted(PROGRAMS.glob("*.py"))
               if parse(p).ranks == 1 and not parse(p).spawns
               and not p.name.startswith("compile_")]


@pytest.mark.parametrize("path", ONE_PROCESS, ids=[p.stem for p in ONE_PROCESS])
def test_outcome_kept(path: Path, capfd) -> None:
    """A program of programs/ raises the same error, or trains and prints
    nothing of the mode: the mode's own version check stands in for
    autograd's, which saved-tensor hooks switch off."""
    plain = run(path)
    capfd.readouterr()
    with silent_mode("sampled"):
        moded = run(path)
    err = capfd.readouterr().err
    assert moded.error == plain.error
    if plain.error is None:
        assert "ddpguard explain" not in err, err
    else:
        assert "ddpguard explain: this backward fails" in err, err
        assert parse(path).tensors == [] or all(
            re.search(rf"^  tensor: (parameter|buffer) {re.escape(t)}\b", err, re.M)
            for t in parse(path).tensors), err


def test_command_line(capsys) -> None:
    """python -m ddpguard.explain --silent-writes, and its usage errors (those
    in this process: main() returns before it runs anything)."""
    program = parse_silent(SILENT / "gate_data_mul.py")
    done = subprocess.run([sys.executable, "-m", "ddpguard.explain", "--silent-writes",
                           "--fingerprint", "full", program.path.name], cwd=SILENT,
                          env=environment(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    check_report(program, done.stderr[done.stderr.index("ddpguard explain"):])
    for args in (["--fingerprint", "full", "x.py"],
                 ["--silent-writes", "--fingerprint", "some", "x.py"]):
        assert explain_main(args) == 2
        assert "usage:" in capsys.readouterr().err
        assert not explain.enabled()


def test_anomaly_detection_wording_kept() -> None:
    """Under anomaly detection autograd's error ends with another hint; the
    mode's version check words it the same."""
    path = PROGRAMS / "inplace_sigmoid_mul.py"
    with torch.autograd.set_detect_anomaly(True, check_nan=False):
        plain = run(path)
        with silent_mode("sampled"):
            moded = run(path)
    assert plain.error is not None and moded.error == plain.error
