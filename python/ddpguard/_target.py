"""Runs a script or module as ``python script.py`` or ``python -m module`` would."""

from __future__ import annotations

import os
import runpy
import sys
from typing import Optional


def run(module: Optional[str], argv: list[str]) -> None:
    """Runs ``module`` with ``argv`` as its arguments, else the script ``argv[0]``."""
    if module is not None:
        sys.argv = [module] + argv
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        runpy.run_path(argv[0], run_name="__main__")
