"""The explainer in ranks started by torch.multiprocessing.spawn.

``spawn`` and ``start_processes`` (so torch.distributed.elastic's function
launcher too) start each rank as a fresh interpreter running
``torch.multiprocessing.spawn._wrap(fn, i, args, error_file)``, the
``Process`` target they pickle by reference. While the explainer is on,
that target is ``functools.partial(rank_entry, (mode, fingerprint))``: it
pickles as a reference to this module, so each rank imports ddpguard,
enables the explainer in the parent's mode and calls torch's own ``_wrap`` unchanged. The
rank's traceback, which ``_wrap`` formats from its own frame down, and its
exit status stay torch's.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import Callable, Optional

_MODULE = "torch.multiprocessing.spawn"
_ENTRY_PARAMETERS = ["fn", "i", "args", "error_file"]

# torch's own entry, where this process replaced it (a forked rank inherits it).
_original: Optional[Callable] = None


def install(mode: str, fingerprint: Optional[str] = None) -> Optional[Callable[[], None]]:
    """Replaces the ranks' entry; returns what undoes it, or None where this
    torch's entry is not the one this module knows (ranks then run without
    the explainer, as before)."""
    global _original
    try:
        module = importlib.import_module(_MODULE)
    except ImportError:
        return None
    entry = getattr(module, "_wrap", None)
    try:
        known = list(inspect.signature(entry).parameters) == _ENTRY_PARAMETERS
    except (TypeError, ValueError):
        known = False
    if not known:
        return None
    _original = entry
    module._wrap = functools.partial(rank_entry, (mode, fingerprint))

    def undo() -> None:
        global _original
        module._wrap = entry
        _original = None
    return undo


def rank_entry(how, fn, i, args, error_file):
    """A spawned rank's first call: the explainer on, then torch's entry.

    Unannotated, so that the partial's signature is torch's ``_wrap``'s."""
    entry = _original or getattr(importlib.import_module(_MODULE), "_wrap")
    from ddpguard import explain
    explain.enable(*how)  # the parent's (mode, fingerprint)
    entry(fn, i, args, error_file)
