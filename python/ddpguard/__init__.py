"""ddpguard for Python programs.

``ddpguard.explain`` explains autograd's "modified by an inplace operation"
error: which tensor, which forward saved it, which writes changed it, and the
fixes (docs/explain.md). ``ddpguard.verify`` checks that the ranks of a
PyTorch DDP program agree bit for bit at every step (docs/verifier.md). Both
are imported on first use, so ``import ddpguard`` does not import torch; they
need it (``pip install 'ddpguard[explain]'`` or ``'ddpguard[verify]'``), and
say so when it is missing.
"""

import importlib
from typing import Any

__all__ = ["explain", "verify"]


def _require_torch(feature: str, extra: str) -> None:
    """Imports torch for ``feature``, or raises ModuleNotFoundError naming the
    extra that installs it (torch's own import errors pass unchanged)."""
    try:
        importlib.import_module("torch")
    except ModuleNotFoundError as missing:
        if missing.name != "torch":
            raise
        raise ModuleNotFoundError(
            f"{feature} needs PyTorch, which is not installed: "
            f"pip install 'ddpguard[{extra}]' (or any torch >= 2.1)", name="torch") from missing


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
