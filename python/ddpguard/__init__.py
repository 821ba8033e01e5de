"""ddpguard for Python programs.

``ddpguard.explain`` explains autograd's "modified by an inplace operation"
error: which tensor, which forward saved it, which writes changed it, and the
fixes (docs/explain.md). ``ddpguard.verify`` checks that the ranks of a
PyTorch DDP program agree bit for bit at every step (docs/verifier.md). Both
are imported on first use, so ``import ddpguard`` does not import torch.
"""

import importlib
from typing import Any

__all__ = ["explain", "verify"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
