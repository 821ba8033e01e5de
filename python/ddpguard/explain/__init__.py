"""Explains autograd's "modified by an inplace operation" error.

    python -m ddpguard.explain [--after-failure | --silent-writes] [--] script.py args...
    torchrun --nproc-per-node 2 -m ddpguard.explain script.py args...

or, in the program, ``import ddpguard; ddpguard.explain.enable()``.

When ``torch.autograd.backward`` (so ``Tensor.backward``) or
``torch.autograd.grad`` fails with autograd's version-counter error, the
explainer prints which tensors are stale (parameter or buffer name, shape,
dtype, device), the forward or op that saved each, every write since (an
in-place op, an optimizer step, DistributedDataParallel's buffer broadcast)
with the user's source lines, the backward, and the fixes; then the original
exception propagates unchanged. The silent-writes mode also reports the
writes autograd cannot see (a fused optimizer step, ``.data``) to tensors a
backward then read. See docs/explain.md.
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


def _emit(report: str) -> None:
    # One write, so the ranks sharing torchrun's stderr do not interleave lines.
    sys.stderr.flush()
    try:
        os.write(sys.stderr.fileno(), report.encode())
    except (OSError, ValueError, AttributeError):  # stderr replaced or closed
        sys.stderr.write(report)
        sys.stderr.flush()


def _on_silent_writes(roots: Any, site: Any, api: str) -> None:
    """The silent-writes mode, after a backward that returned: the saved
    tensors it read whose contents changed since they were saved."""
    global _last_report
    silent = _recorder.silent if _recorder is not None else None
    changed = silent.take_changed() if silent is not None else []
    if not changed:
        return
    if isinstance(roots, torch.Tensor):
        roots = (roots,)
    try:
        report = _analysis.explain_silent(changed, list(roots or ()), site,
                                          _recorder.state, api)  # type: ignore[union-attr]
    except Exception as e:  # noqa: BLE001 - the program goes on; say why there is no report
        report = could_not_explain(e)
    _last_report = report
    _emit(report)


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
    _emit(report)
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

    def roots_of(args, kwargs):
        try:
            return signature.bind(*args, **kwargs).arguments.get(roots_name)
        except TypeError:  # the original accepted what its signature does not say
            return None

    @functools.wraps(original)
    def call(*args, **kwargs):
        silent = _recorder.silent if _recorder is not None else None
        if _recorder is not None and what == "backward":
            _recorder.reset()  # a step that raised left its entry
        if silent is not None and silent.unfingerprinted:
            silent.flush()
        try:
            result = original(*args, **kwargs)
        except RuntimeError as e:
            if silent is not None:
                silent.take_changed()  # autograd's own error is the report
            if _analysis.is_version_error(e):
                _on_failure(e, roots_of(args, kwargs), what)
            raise
        if silent is not None and silent.changed:
            _on_silent_writes(roots_of(args, kwargs), user_site(2), what)
        return result
    return call


MODES = ("armed", "after-failure", "silent-writes")


def enable(mode: Optional[str] = None, fingerprint: Optional[str] = None) -> None:
    """Arms the explainer for this process (idempotent).

    mode "armed" (default) also watches every in-place op called from
    Python; "after-failure" records only module forwards, optimizer steps and
    DDP's buffer broadcasts, and is cheaper; "silent-writes" is armed and
    also reports writes that autograd's version counter does not see (a
    fused optimizer step, ``.data``) to a tensor a backward then reads, by
    a fingerprint of each saved tensor ("sampled", the default, or "full").
    DDPGUARD_EXPLAIN_MODE and DDPGUARD_EXPLAIN_FINGERPRINT set the defaults."""
    global _recorder
    if _recorder is not None:
        return
    mode = mode or os.environ.get("DDPGUARD_EXPLAIN_MODE") or "armed"
    if mode not in MODES:
        raise ValueError(f"ddpguard.explain: unknown mode {mode!r} "
                         f"(expected one of {', '.join(MODES)})")
    if mode == "silent-writes":
        fingerprint = (fingerprint or os.environ.get("DDPGUARD_EXPLAIN_FINGERPRINT")
                       or "sampled")
    elif fingerprint is not None:
        raise ValueError("ddpguard.explain: fingerprint= is for the silent-writes mode")
    recorder = Recorder(armed=mode != "after-failure",
                        silent_fingerprint=fingerprint if mode == "silent-writes" else None)
    recorder.install()
    _recorder = recorder
    _originals["backward"] = torch.autograd.backward
    _originals["grad"] = torch.autograd.grad
    torch.autograd.backward = _wrap(torch.autograd.backward, "backward")
    torch.autograd.grad = _wrap(torch.autograd.grad, "torch.autograd.grad")
    _originals["spawn"] = _spawn.install(mode, fingerprint)  # ranks of torch.multiprocessing.spawn


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
