"""What a hostile-input case is: the files it lays out, the command it runs,
and what must come out. Case modules (cases_*.py beside this file) build a
list CASES of Case objects; run_hostile.py runs them.

A file's content is bytes, or str (written as UTF-8, {dir} replaced), or
one of the builders below for what is not a plain file: a FIFO, a symbolic
link, a folder or file with a mode. Arguments and expected text may hold
{dir} too: the absolute path of the case's folder (the command runs there).
"""
import dataclasses
import os
import pathlib
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

HERE = pathlib.Path(__file__).resolve().parent
INPUTS = HERE.parent / "lit" / "Inputs"


def read_input(relative: str) -> bytes:
    """A file of test/lit/Inputs, so that cases share the lit tests' sources."""
    return (INPUTS / relative).read_bytes()


# The Python script every lit test of the Python checker starts from: one
# finding, at line 8 ([ddp-multiple-forward-before-backward]).
TWO_VIEW = read_input("python/two_view.py")
TWO_VIEW_FINDING_LINE = 8
CLEAN = read_input("python/one_forward.py")


@dataclasses.dataclass(frozen=True)
class Fifo:
    """A named pipe: opening it for reading blocks until a writer comes."""


@dataclasses.dataclass(frozen=True)
class Link:
    """A symbolic link to target (relative to the link's folder, or absolute)."""
    target: str


@dataclasses.dataclass(frozen=True)
class Folder:
    """A folder, with its mode set after everything under it is laid out."""
    mode: int = 0o755


@dataclasses.dataclass(frozen=True)
class WithMode:
    """A file with content and a mode (0o000: unreadable)."""
    content: Union[bytes, str]
    mode: int


Content = Union[bytes, str, Fifo, Link, Folder, WithMode]


@dataclasses.dataclass
class Case:
    """One input and what the CLI must do with it.

    exit: the exit status wanted (a tuple: any of them).
    stdout, stderr: regular expressions each of which must match somewhere
    in that stream (re.MULTILINE); not_stdout, not_stderr: must match nowhere.
    findings: the warnings wanted, as "path:line" (path relative to the
    case's folder), in any order but each as often as reported; None: not
    checked.
    changed: files the run may change, with the bytes they must then hold;
    every other regular file must keep its bytes and mode.
    unprivileged: run without root's power to read any file, so that a mode
    of 0o000 means what it means for a user.
    setup: called with the case's folder after the files are laid out.
    """
    name: str
    files: Dict[str, Content]
    args: Sequence[str]
    exit: Union[int, Tuple[int, ...]]
    stdout: Sequence[str] = ()
    stderr: Sequence[str] = ()
    not_stdout: Sequence[str] = ()
    not_stderr: Sequence[str] = ()
    findings: Optional[List[str]] = None
    changed: Dict[str, bytes] = dataclasses.field(default_factory=dict)
    stdin: Optional[bytes] = None
    timeout: Optional[float] = None
    unprivileged: bool = False
    setup: Optional[Callable[[pathlib.Path], None]] = None
    # The item of the issue the case holds to ("31.3"), for the report.
    item: str = ""


def lay_out(root: pathlib.Path, files: Dict[str, Content]) -> None:
    """Creates files under root; modes of folders are set last, deepest
    first, so that an unreadable folder can still be filled."""
    modes = []
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Fifo):
            os.mkfifo(path)
        elif isinstance(content, Link):
            os.symlink(content.target, path)
        elif isinstance(content, Folder):
            path.mkdir(exist_ok=True)
            modes.append((path, content.mode))
        elif isinstance(content, WithMode):
            write(path, content.content)
            modes.append((path, content.mode))
        elif isinstance(content, str):
            write(path, content.replace("{dir}", str(root)))
        else:
            write(path, content)
    for path, mode in sorted(modes, key=lambda item: -len(item[0].parts)):
        os.chmod(path, mode)


def write(path: pathlib.Path, content: Union[bytes, str]) -> None:
    path.write_bytes(content.encode() if isinstance(content, str) else content)
