"""The console scripts ddpguard-explain and ddpguard-verify: ``python -m
ddpguard.explain`` and ``python -m ddpguard.verify`` under their own names.
Both tools need torch, which the package does not require (it is the extra
of their name); without it they exit with status 2 and say how to install it,
rather than with a traceback."""

from __future__ import annotations

import importlib
import sys


def _run(tool: str) -> int:
    try:
        main = importlib.import_module(f"ddpguard.{tool}.__main__").main
    except ModuleNotFoundError as missing:
        if missing.name != "torch":
            raise
        sys.stderr.write(f"ddpguard-{tool}: {missing}\n")
        return 2
    return main(sys.argv[1:])


def explain() -> None:
    sys.exit(_run("explain"))


def verify() -> None:
    sys.exit(_run("verify"))
