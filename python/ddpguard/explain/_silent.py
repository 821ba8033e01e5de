"""The silent-writes mode: in-place writes that autograd's version counter
does not see (a fused optimizer step, a write through ``.data``, anything
under ``torch.autograd._unsafe_preserve_version_counter``) to a tensor a
forward saved, before the backward that reads it.

Saved-tensor hooks (``torch.autograd.graph.saved_tensors_hooks``) remember
each saved tensor, its version and a fingerprint of its contents. At unpack
the version is checked first, raising autograd's own error when it moved
(hooks switch autograd's check off, so without this a program that failed
would train); otherwise a changed fingerprint is a silent write, reported
after the backward returns. The unpack hook hands back the tensor it was
given, so a program computes what it computes without the mode.

Activation checkpointing (``torch.utils.checkpoint.checkpoint``, reentrant
or not) saves under hooks of its own, which autograd's version check and
this mode's hooks do not reach, and recomputes the forward in the backward
from the tensors as they are then. The mode wraps ``checkpoint``: the
checkpointed module's parameters and buffers and the tensor arguments are
remembered at the call, and compared when the backward recomputes; any
change there, version moved or not, is a silent write.

A fingerprint is taken when the op that saved the tensor has finished (at
the next op's save, the next op called from Python, the end of the
outermost module call, an optimizer step or a backward): BatchNorm updates
its running statistics after saving them, within the same op.
"""

from __future__ import annotations

import ctypes
import functools
import re
import warnings
from typing import Any, Callable, Optional

import torch

_INT_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
SAMPLES = 16
FINGERPRINTS = ("sampled", "full")


def _bits(t: torch.Tensor) -> torch.Tensor:
    """t's elements as integers of the same size (NaNs compare by their bits)."""
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.view(_INT_OF_SIZE[t.element_size()])


def _full(t: torch.Tensor) -> Any:
    """The sum of all elements' bits, wrapping at their own width: one
    vectorised pass (measured 12 to 120 GB/s on one core, against 1 to 5 for
    torch.hash_tensor and 0.5 to 3 for a sum widened to 64 bits)."""
    bits = _bits(t)
    total = bits.sum(dtype=bits.dtype)
    return total.item() if total.is_cpu else total


def _dense_span(t: torch.Tensor) -> int:
    """How many elements t's storage span holds from its first element; equal
    to numel when t is dense (contiguous, or a permutation of it like w.t())."""
    span = 1
    for size, stride in zip(t.shape, t.stride()):
        span += (size - 1) * stride
    return span


_arrays: dict[tuple[int, int], type] = {}  # ctypes array types: making one costs more than reading
_CTYPE_OF_SIZE = {1: ctypes.c_uint8, 2: ctypes.c_uint16, 4: ctypes.c_uint32,
                  8: ctypes.c_uint64}


def _sampled(t: torch.Tensor) -> Any:
    """SAMPLES elements spread evenly over t, read straight from memory on
    the CPU when t is dense (measured 1 to 2 us a tensor, against 6 to 14
    for torch.take), else by torch.take."""
    n = t.numel()
    if t.is_cpu and (t.is_contiguous() or _dense_span(t) == n):
        key = (t.element_size(), n)
        array = _arrays.get(key)
        if array is None and key[0] in _CTYPE_OF_SIZE:
            if len(_arrays) > 4096:
                _arrays.clear()
            array = _arrays[key] = _CTYPE_OF_SIZE[key[0]] * n
        if array is not None:
            return array.from_address(t.data_ptr())[::max(1, n // SAMPLES)]
    index = torch.linspace(0, n - 1, min(SAMPLES, n), device=t.device).long()
    values = torch.take(_bits(t), index)
    return values.tolist() if values.is_cpu else values


class Saved:
    """What the pack hook remembers of one saved tensor."""

    __slots__ = ("tensor", "version", "fingerprint", "data_ptr", "node_nr",
                 "writes_before", "output_of", "output_nr", "is_leaf", "checkpointed", "site")

    def __init__(self, tensor, version, node_nr, writes_before, output_of, output_nr,
                 is_leaf) -> None:
        self.tensor = tensor
        self.version = version
        self.fingerprint: Any = None
        self.data_ptr = 0
        self.node_nr = node_nr                # the saving node's autograd sequence number
        self.writes_before = writes_before    # the write counter when it was saved
        self.output_of = output_of            # the saving node's name, for its own outputs
        self.output_nr = output_nr
        self.is_leaf = is_leaf
        self.checkpointed = False  # remembered at a checkpoint() call, not packed
        self.site: Any = None      # that call's line


_NO_FINGERPRINT = object()


class SilentWrites:
    """The hooks, the saved tensors not yet fingerprinted, and the ones found
    changed since the last report."""

    def __init__(self, fingerprint: str, writes: Any) -> None:
        if fingerprint not in FINGERPRINTS:
            raise ValueError(f"ddpguard.explain: unknown fingerprint {fingerprint!r} "
                             f"(expected one of {', '.join(FINGERPRINTS)})")
        self.compute: Callable[[torch.Tensor], Any] = (
            _full if fingerprint == "full" else _sampled)
        self.writes = writes                   # _record._Writes: its counter orders writes
        self.unfingerprinted: list[Saved] = []
        self.changed: list[Saved] = []
        self.rejected: Optional[torch.Tensor] = None  # the tensor the last version error was for
        self.message = _VersionMessage()
        self.next_sequence_nr = torch._C._autograd._get_sequence_nr

    # -- the hooks ---------------------------------------------------------

    def pack(self, t: torch.Tensor) -> Saved:
        node_nr = self.next_sequence_nr() - 1  # the node saving it was made last
        if self.unfingerprinted and self.unfingerprinted[-1].node_nr != node_nr:
            self.flush()
        fn = t.grad_fn
        if fn is not None and fn._sequence_nr() == node_nr:
            # The saving node's own output: keeping it would make a cycle
            # (output -> node -> saved -> output); an alias keeps its version counter.
            saved = Saved(t.detach(), t._version, node_nr, self.writes.count, fn.name(),
                          t.output_nr, False)
        else:
            saved = Saved(t, t._version, node_nr, self.writes.count, None, 0,
                          fn is None)
        self.unfingerprinted.append(saved)
        return saved

    def unpack(self, saved: Saved) -> torch.Tensor:
        t = saved.tensor
        now = t._version
        if now != saved.version:
            self.rejected = t
            raise RuntimeError(self.message.text(saved, now))
        if saved.fingerprint is None:
            self.flush()
        if self._moved(saved):
            self.changed.append(saved)
        return t

    # -- fingerprints ------------------------------------------------------

    def flush(self) -> None:
        pending, self.unfingerprinted = self.unfingerprinted, []
        for saved in pending:
            t = saved.tensor
            try:  # a sparse or meta tensor raises: its version check still holds
                # Python values on the CPU (compared without tensor ops), a
                # tensor elsewhere (saving does not wait for the device).
                saved.fingerprint = self.compute(t)
                saved.data_ptr = t.data_ptr()
            except (RuntimeError, TypeError, KeyError, NotImplementedError):
                saved.fingerprint = _NO_FINGERPRINT

    def _moved(self, saved: Saved) -> bool:
        """Whether saved's tensor holds other values than when fingerprinted."""
        t = saved.tensor
        if saved.fingerprint is _NO_FINGERPRINT:
            return False
        try:
            fingerprint = self.compute(t)
            return t.data_ptr() != saved.data_ptr or (
                not torch.equal(fingerprint, saved.fingerprint)
                if isinstance(fingerprint, torch.Tensor)
                else fingerprint != saved.fingerprint)
        except (RuntimeError, TypeError, KeyError, NotImplementedError):
            return False  # readable when saved, not now: nothing to compare

    # -- activation checkpointing -------------------------------------------

    def checkpointed(self, function: Any, args: tuple, site: Any) -> list[Saved]:
        """What a checkpointed forward will read again when recomputed: the
        parameters and buffers of the module it runs (function, or the module
        of a bound method) and the tensor arguments, fingerprinted now."""
        module = function if isinstance(function, torch.nn.Module) else getattr(
            function, "__self__", None)
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if isinstance(module, torch.nn.Module):
            tensors += list(module.parameters()) + list(module.buffers())
        node_nr = self.next_sequence_nr()
        watched = []
        for t in tensors:
            saved = Saved(t.detach(), t._version, node_nr, self.writes.count, None, 0,
                          t.grad_fn is None)
            saved.checkpointed = True
            saved.site = site
            watched.append(saved)
        self.unfingerprinted.extend(watched)
        self.flush()
        return watched

    def recomputing(self, watched: list[Saved]) -> None:
        """The backward recomputes a checkpointed forward: what changed since
        the call is read as changed, and autograd checks no version there."""
        for saved in watched:
            if saved.tensor._version != saved.version or self._moved(saved):
                self.changed.append(saved)

    def wrap_checkpoint(self, original: Callable, user_site: Callable) -> Callable:
        """original (torch.utils.checkpoint.checkpoint) with the checkpointed
        forward's tensors remembered at the call (user_site(2) names its
        line) and compared when the backward recomputes it."""
        @functools.wraps(original)
        def checkpoint(function, *args, **kwargs):
            watched = self.checkpointed(function, args, user_site(2))
            calls = 0

            def forward(*a, **k):
                nonlocal calls
                calls += 1
                if calls > 1:
                    self.recomputing(watched)
                return function(*a, **k)

            return original(forward, *args, **kwargs)

        return checkpoint

    def take_changed(self) -> list[Saved]:
        found, self.changed = self.changed, []
        return found

    def take_rejected(self) -> Optional[torch.Tensor]:
        found, self.rejected = self.rejected, None
        return found

    # -- on and off --------------------------------------------------------

    def push(self) -> None:
        torch._C._autograd._push_saved_tensors_default_hooks(self.pack, self.unpack)

    def pop(self) -> None:
        torch._C._autograd._pop_saved_tensors_default_hooks()


class _VersionMessage:
    """Autograd's version-counter error, worded by autograd: a probe graph
    made with no hooks on gives the text, for each anomaly-detection state,
    and the saved tensor's type, sizes, node and versions are put in it."""

    def __init__(self) -> None:
        self.templates: dict[bool, str] = {}
        self.probe: Optional[tuple] = None
        self.short_names = False  # "Sigmoid" for SigmoidBackward0 (torch 2.15)

    def prepare(self) -> None:
        """Called before the hooks are on: the probe must save without them."""
        leaf = torch.zeros(1, requires_grad=True)
        saved_input = leaf * 1  # non-leaf, saved by the product below
        other = torch.zeros(1, requires_grad=True)
        product = other * saved_input
        self.probe = (saved_input, other, product, saved_input._version)
        for anomaly in (False, True):
            self._template(anomaly)

    def _template(self, anomaly: bool) -> str:
        template = self.templates.get(anomaly)
        if template is not None:
            return template
        saved_input, other, product, expected = self.probe  # type: ignore[misc]
        with torch.no_grad():
            saved_input.add_(0)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with torch.autograd.set_detect_anomaly(anomaly, check_nan=False):
                    _original_grad(product, other, retain_graph=True)
            text = "{prefix}"  # autograd no longer checks: never reached on 2.x
        except RuntimeError as e:
            text = str(e)
        node = saved_input.grad_fn.name()
        described = f"[{saved_input.type()} [1]], which is output 0 of {node},"
        if described not in text:
            described = described.replace(node, _short(node))
            self.short_names = described in text
        versions = (f"is at version {saved_input._version}; "
                    f"expected version {expected} instead")
        if described in text and versions in text:
            template = (text.replace("{", "{{").replace("}", "}}")
                        .replace(described, "[{type} {sizes}]{which}")
                        .replace(versions, "is at version {now}; expected version "
                                 "{expected} instead"))
        else:
            template = ("one of the variables needed for gradient computation has been "
                        "modified by an inplace operation: [{type} {sizes}]{which} is at "
                        "version {now}; expected version {expected} instead.")
        self.templates[anomaly] = template
        return template

    def text(self, saved: Saved, now: int) -> str:
        t = saved.tensor
        name = saved.output_of
        if name is None and not saved.is_leaf and t.grad_fn is not None:
            name = t.grad_fn.name()  # autograd names the input's grad_fn as it is now
        if name and self.short_names:
            name = _short(name)
        which = f", which is output {saved.output_nr} of {name}," if name else ""
        return self._template(torch.is_anomaly_enabled()).format(
            type=t.type(), sizes=str(list(t.shape)), which=which, now=now,
            expected=saved.version)


def _short(node_name: str) -> str:
    return re.sub(r"Backward\d*$", "", node_name)


_original_grad = torch.autograd.grad  # the probe's backward, not the explainer's wrapper
