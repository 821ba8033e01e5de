"""Explains autograd's "modified by an inplace operation" error.

    python -m ddpguard.explain [--after-failure] [--] script.py args...
    torchrun --nproc-per-node 2 -m ddpguard.explain script.py args...

or, in the program, ``import ddpguard; ddpguard.explain.enable()``.

When ``torch.autograd.backward`` (so ``Tensor.backward``) or
``torch.autograd.grad`` fails with autograd's version-counter error, the
explainer prints which tensors are stale (parameter or buffer name, shape,
dtype, device), the forward or op that saved each, every write since (an
in-place op, an optimizer step, DistributedDataParallel's buffer broadcast)
with the user's source lines, the backward, and the fixes; then the original
exception propagates unchanged. See docs/explain.md.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import traceback
from typing import Any, Optional

from ddpguard import _require_torch

_require_torch("ddpguard.explain", "explain")

import torch

from . import _analysis, _errorfile, _spawn
from ._record import Recorder, user_site

__all__ = ["enable", "disable", "enabled", "last_report"]

_recorder: Optional[Recorder] = None
_originals: dict[str, Any] = {}
_last_report: Optional[str] = None


def enabled() -> bool:
    return _recorder is not None


def last_report() -> Optional[str]:
    """The last explanation printed in this process, or None."""
    return _last_report


def _on_failure(exc: BaseException, roots: Any, api: str) -> None:
    global _last_report
    if getattr(exc, "_ddpguard_explained", False) or _recorder is None:
        return
    try:
        exc._ddpguard_explained = True  # type: ignore[attr-defined]
    except AttributeError:
        pass
    if isinstance(roots, torch.Tensor):
        roots = (roots,)
    try:
        report = _analysis.explain(exc, list(roots or ()), user_site(3),
                                   _recorder.state, api)
    except Exception as e:  # noqa: BLE001 - the user's error matters more than ours
        report = could_not_explain(e)
    _last_report = report
    # One write, so the ranks sharing torchrun's stderr do not interleave lines.
    sys.stderr.flush()
    try:
        os.write(sys.stderr.fileno(), report.encode())
    except (OSError, ValueError, AttributeError):  # stderr replaced or closed
        sys.stderr.write(report)
        sys.stderr.flush()
    _errorfile.write(report, exc)


def could_not_explain(e: BaseException) -> str:
    """One line: the explainer's own error and where, instead of a report."""
    frames = traceback.extract_tb(e.__traceback__)
    at = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    return (f"ddpguard explain: could not explain this error (ddpguard's own "
            f"{type(e).__name__}{at}: {str(e).splitlines()[0] if str(e) else ''})\n")


def _wrap(original, what: str):
    """torch.autograd.backward or grad, explaining a version-counter failure.

    Takes every spelling the original takes (positional, keyword, defaults)
    and passes it on untouched; the tensors the backward starts from are
    found by binding the call to the original's own signature."""
    signature = inspect.signature(original)
    roots_name = next(iter(signature.parameters))  # "tensors" or "outputs"

    @functools.wraps(original)
    def call(*args, **kwargs):
        if _recorder is not None and what == "backward":
            _recorder.reset()  # a step that raised left its entry
        try:
            return original(*args, **kwargs)
        except RuntimeError as e:
            if _analysis.is_version_error(e):
                try:
                    roots = signature.bind(*args, **kwargs).arguments.get(roots_name)
                except TypeError:  # the original accepted what its signature does not say
                    roots = None
                _on_failure(e, roots, what)
            raise
    return call


def enable(mode: Optional[str] = None) -> None:
    """Arms the explainer for this process (idempotent).

    mode "armed" (default) also watches every in-place op called from
    Python; "after-failure" records only module forwards, optimizer steps and
    DDP's buffer broadcasts, and is cheaper. DDPGUARD_EXPLAIN_MODE sets the
    default."""
    global _recorder
    if _recorder is not None:
        return
    mode = mode or os.environ.get("DDPGUARD_EXPLAIN_MODE") or "armed"
    if mode not in ("armed", "after-failure"):
        raise ValueError(f"ddpguard.explain: unknown mode {mode!r} "
                         "(expected 'armed' or 'after-failure')")
    recorder = Recorder(armed=mode == "armed")
    recorder.install()
    _recorder = recorder
    _originals["backward"] = torch.autograd.backward
    _originals["grad"] = torch.autograd.grad
    torch.autograd.backward = _wrap(torch.autograd.backward, "backward")
    torch.autograd.grad = _wrap(torch.autograd.grad, "torch.autograd.grad")
    _originals["spawn"] = _spawn.install(mode)  # ranks of torch.multiprocessing.spawn


def disable() -> None:
    global _recorder
    if _recorder is None:
        return
    torch.autograd.backward = _originals.pop("backward")
    torch.autograd.grad = _originals.pop("grad")
    undo_spawn = _originals.pop("spawn")
    if undo_spawn is not None:
        undo_spawn()
    _recorder.uninstall()
    _recorder = None
