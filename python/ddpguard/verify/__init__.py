"""Verification for Python programs on PyTorch's own DDP (docs/verifier.md).

``python -m ddpguard.verify script.py`` (what ``ddpguard-verify -- python
script.py`` runs on every rank) or ``ddpguard.verify.enable()`` checks, for
every ``torch.nn.parallel.DistributedDataParallel``, that the gradients after
every synchronised backward and the parameters after every optimizer step are
identical bit for bit on all ranks, and that buffers are identical after each
broadcast (their divergence from rank 0 is measured where they are not
broadcast). The checks, their timing, the messages and the per-rank JSON
summary are those of the C++ runtime's verification mode, so the launcher's
verdicts work unchanged. Each check is exchanged at once (one allgather of an
int64 row of hashes), as the runtime does with DDPGUARD_VERIFY_SYNC=1.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import sys
import time
from typing import Any, Optional

from ddpguard import _require_torch

_require_torch("ddpguard.verify", "verify")

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from ddpguard.verify._hash import _signed, hash_tensors

__all__ = ["enable", "enabled", "set_label", "VerificationError"]

_MAGIC = 0x64647067  # "ddpg"
_INITIAL, _GRADIENTS, _PARAMETERS = 0, 1, 2
_KIND = {_INITIAL: "initial", _GRADIENTS: "gradients", _PARAMETERS: "parameters"}
_MAX_STEP_RECORDS = 10000


class VerificationError(RuntimeError):
    """The ranks diverged (or are out of step); the same on every rank."""

    def __init__(self, message: str, rank: int, step: int, tensor: str) -> None:
        super().__init__(message)
        self.rank, self.step, self.tensor = rank, step, tensor


def _switch_on(value: Optional[str]) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "off", "no")


def _step_text(step: int) -> str:
    return "before the first step" if step < 0 else f"at step {step}"


def _hex(h: int) -> str:
    return f"0x{h & ((1 << 64) - 1):016x}"


def _check(kind: str, tensors: int, mode: str = "") -> dict[str, Any]:
    c: dict[str, Any] = {"kind": kind}
    if mode:
        c["mode"] = mode
    c.update(tensors=tensors, identical=True, max_abs=0.0)
    if kind == "buffers":
        c["max_rel"] = 0.0
    return c


def _number(v: float) -> Optional[float]:
    return v if math.isfinite(v) else None


class _State:
    def __init__(self) -> None:
        self.entries: list[_Entry] = []
        self.next_label: Optional[str] = None
        self.progress = _switch_on(os.environ.get("DDPGUARD_VERIFY_PROGRESS"))
        self.json_path = os.environ.get("DDPGUARD_VERIFY_JSON", "")
        self.failure_status = ""
        self.failure_message = ""
        self.exiting = False
        self.last_write = 0.0

    def status(self) -> str:
        if self.failure_status:
            return self.failure_status
        if self.exiting or all(e.finished for e in self.entries):
            return "ok"
        return "running"

    def path(self) -> str:
        rank = str(dist.get_rank()) if dist.is_initialized() else os.environ.get("RANK", "0")
        p = self.json_path
        if "%r" in p:
            return p.replace("%r", rank)
        root, ext = os.path.splitext(p)
        return f"{root}.rank{rank}{ext or '.json'}"

    def write(self, force: bool = True) -> None:
        if not self.json_path or (not force and time.monotonic() - self.last_write < 1.0):
            return
        self.last_write = time.monotonic()
        doc: dict[str, Any] = {
            "format": "ddpguard-verify/1",
            "rank": int(os.environ.get("RANK", "0")),
            "world_size": int(os.environ.get("WORLD_SIZE", "1")),
            "backend": self.backend(), "status": self.status()}
        if self.failure_message:
            doc["error"] = self.failure_message
        doc["ddp"] = [e.as_json() for e in self.entries]
        path = self.path()
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)  # a reader never sees half a summary

    def backend(self) -> str:
        for e in self.entries:
            if e.backend:
                return e.backend
        try:
            return str(dist.get_backend()) if dist.is_initialized() else ""
        except RuntimeError:
            return ""

    def finish_all(self) -> None:
        for e in self.entries:
            e.finish()
        self.write()


_state: Optional[_State] = None


class _Entry:
    """What one DDP checked: the counterpart of the runtime's Entry."""

    def __init__(self, ddp: DistributedDataParallel, index: int, label: str) -> None:
        self.ddp: Optional[DistributedDataParallel] = ddp
        self.broadcast_buffers = bool(ddp.broadcast_buffers)  # a construction option
        self.index = index
        self.label = label
        self.group = getattr(ddp, "process_group", None)
        self.rank = dist.get_rank(self.group)
        self.world = dist.get_world_size(self.group)
        self.backend = str(dist.get_backend(self.group))
        named = list(ddp.module.named_parameters())
        self.param_names = [n for n, _ in named]
        self.params = [p for _, p in named]
        named_buffers = list(ddp.module.named_buffers())
        self.buffer_names = [n for n, _ in named_buffers]
        self.buffers = [b for _, b in named_buffers]
        self.device = str(self.params[0].device) if self.params else "cpu"
        self.steps_completed = 0
        self.checks = 0
        self.max_grad = 0.0
        self.max_param = 0.0
        self.max_buffer = _check("buffers", 0, "measured")
        self.verify_seconds = 0.0
        self.hashed_bytes = 0
        self.exchanges = 0
        self.steps: list[dict[str, Any]] = []
        self.steps_truncated = False
        self.finished = False
        self.divergence: Optional[dict[str, Any]] = None
        self.initial_done = False
        self.armed = False
        self.pending_params = False  # step steps_completed-1 awaits its parameter check
        self.pending_record: Optional[dict[str, Any]] = None
        self.step_hash_seconds = 0.0
        ddp.module.register_forward_pre_hook(self._inner_forward)
        for p in self.params:
            if p.requires_grad:
                p.register_post_accumulate_grad_hook(self._accumulated)

    # -- hooks -------------------------------------------------------------

    def _inner_forward(self, module: Any, args: Any) -> None:
        # Runs after DDP's _pre_forward (its buffer broadcast), before the module.
        if self.finished:
            return
        broadcast = self._broadcast_this_forward()
        if not self.initial_done:
            self.initial_done = True
            self._check_values(_INITIAL, -1, broadcast, None)
        elif self.pending_params:
            self.pending_params = False
            self._check_values(_PARAMETERS, self.steps_completed - 1, broadcast,
                               self.pending_record)
        self.armed = torch.is_grad_enabled() and bool(self.ddp.require_backward_grad_sync)

    def _broadcast_this_forward(self) -> bool:
        rule = getattr(self.ddp, "_check_sync_bufs_pre_fwd", None)
        if rule is not None:
            return bool(rule())
        return bool(self.ddp.will_sync_module_buffers())

    def _accumulated(self, param: torch.Tensor) -> None:
        if not self.armed:
            return
        self.armed = False
        engine = torch.autograd.Variable._execution_engine
        # DDP's reducer queues its finalisation (which writes the averaged
        # gradients) during the backward; a callback queued from a callback
        # runs after every callback queued before it.
        engine.queue_callback(lambda: engine.queue_callback(self._check_gradients))

    # -- checks ------------------------------------------------------------

    def _record(self, step: int) -> Optional[dict[str, Any]]:
        if len(self.steps) >= _MAX_STEP_RECORDS:
            self.steps_truncated = True
            return None
        record = {"step": step, "checks": []}
        self.steps.append(record)
        return record

    def _check_gradients(self) -> None:
        step = self.steps_completed
        grads = [p.grad for p in self.params]
        start = time.perf_counter()
        hashes = hash_tensors(grads)
        hashing = time.perf_counter() - start
        self.hashed_bytes += sum(g.numel() * g.element_size() for g in grads if g is not None)
        rows = self._exchange([_GRADIENTS, step] + hashes, 0)
        record = self._record(step)
        check = _check("gradients", len(grads))
        self._compare(rows, _GRADIENTS, step, 0, self.param_names, grads, "parameter", check)
        if record is not None:
            record["checks"].append(check)
        self.steps_completed += 1
        self.pending_params = True
        self.pending_record = record
        self.step_hash_seconds = hashing
        self.verify_seconds += time.perf_counter() - start
        _state.write(force=False)

    def _check_values(self, kind: int, step: int, broadcast: bool,
                      record: Optional[dict[str, Any]], with_buffers: bool = True) -> None:
        start = time.perf_counter()
        buffers = self.buffers if with_buffers else []
        tensors = self.params + buffers
        hashes = hash_tensors(tensors)
        hashing = time.perf_counter() - start
        self.hashed_bytes += sum(t.numel() * t.element_size() for t in tensors)
        n = len(self.params)
        rows = self._exchange([kind, step] + hashes, len(buffers))
        if record is None:
            record = self._record(step) if kind == _INITIAL else None
        pcheck = _check("parameters", n)
        self._compare(rows, kind, step, 0, self.param_names, self.params, "parameter", pcheck)
        bcheck = None
        if buffers:
            bcheck = _check("buffers", len(buffers),
                            "synchronised" if broadcast else "measured")
            if broadcast:
                self._compare(rows, kind, step, n, self.buffer_names, self.buffers, "buffer",
                              bcheck)
            else:
                self._measure_buffers(bcheck)
        if record is not None:
            record["checks"].append(pcheck)
            if bcheck is not None:
                record["checks"].append(bcheck)
        self.verify_seconds += time.perf_counter() - start
        if kind == _PARAMETERS and _state.progress:
            self._progress(step, record, self.step_hash_seconds + hashing)
        _state.write(force=self.checks <= 2)

    def _exchange(self, body: list[int], buffers: int) -> list[list[int]]:
        row = [_MAGIC, self.index, len(self.params), buffers] + [_signed(v) for v in body]
        mine = torch.tensor(row, dtype=torch.int64)
        if self.backend == "nccl":
            mine = mine.cuda()
        rows = [torch.empty_like(mine) for _ in range(self.world)]
        dist.all_gather(rows, mine, group=self.group)
        self.exchanges += 1
        self.checks += 1
        gathered = [r.tolist() for r in rows]
        for r, other in enumerate(gathered):
            if other[:6] != gathered[0][:6]:
                self._out_of_step(gathered, r, body[1])
        return [g[6:] for g in gathered]

    def _out_of_step(self, rows: list[list[int]], r: int, step: int) -> None:
        def describe(row: list[int]) -> str:
            if row[0] != _MAGIC:
                return "not verifying"
            return (f"at the {_KIND.get(row[4], '?')} check {_step_text(row[5])} with "
                    f"{row[2]} parameters and {row[3]} buffers")
        self._fail(f"ddpguard-verify: the ranks are out of step {_step_text(step)}: rank {r} "
                   f"is {describe(rows[r])}, rank 0 is {describe(rows[0])} (they ran different "
                   f"numbers of forwards or backwards, or different models) [{self.label}]",
                   "out of step", step, r, "", math.nan, math.nan)

    def _measure(self, t: Optional[torch.Tensor], rank: int) -> tuple[float, float]:
        """max |t - rank 0's t| on `rank`, and that relative to rank 0's largest magnitude."""
        if t is None:
            return math.nan, math.nan
        mine = t.detach().to(torch.float64).contiguous()
        ref = mine.clone()
        dist.broadcast(ref, dist.get_global_rank(self.group, 0) if self.group else 0,
                       group=self.group)
        abs_ = float((mine - ref).abs().max()) if mine.numel() else 0.0
        scale = float(ref.abs().max()) if ref.numel() else 0.0
        rel = abs_ / scale if scale else (0.0 if abs_ == 0 else math.inf)
        both = torch.tensor([abs_, rel], dtype=torch.float64)
        gathered = [torch.empty_like(both) for _ in range(self.world)]
        dist.all_gather(gathered, both, group=self.group)
        return float(gathered[rank][0]), float(gathered[rank][1])

    def _compare(self, rows: list[list[int]], kind: int, step: int, offset: int,
                 names: list[str], tensors: list[Optional[torch.Tensor]], what: str,
                 record: dict[str, Any]) -> None:
        mismatches = []
        for i in range(len(names)):
            for r in range(1, self.world):
                if rows[r][offset + i] != rows[0][offset + i]:
                    mismatches.append((i, r))
                    break
        if not mismatches:
            return
        index, rank = mismatches[0]
        gradient = record["kind"] == "gradients"
        h0, hr = rows[0][offset + index], rows[rank][offset + index]
        defined = all(row[offset + index] != 0 for row in rows)
        abs_, rel = (self._measure(tensors[index], rank) if defined else (math.nan, math.nan))
        magnitude = (f"max abs difference {abs_:g}, relative {rel:g}; " if defined
                     else f"undefined on rank {0 if h0 == 0 else rank}; ")
        text = (f"ddpguard-verify: the ranks diverged {_step_text(step)}: "
                f"{'the gradient of ' if gradient else ''}{what} '{names[index]}' on rank "
                f"{rank} differs from rank 0")
        if gradient:
            text += " after the synchronised backward"
        elif kind != _INITIAL and record["kind"] == "parameters":
            text += " after the optimizer step"
        elif record["kind"] == "buffers":
            text += " after the broadcast"
        text += f" ({magnitude}hash {_hex(hr)} on rank {rank}, {_hex(h0)} on rank 0)"
        if len(mismatches) > 1:
            listed = ", ".join(f"{names[i]} (rank {r})" for i, r in mismatches[:8])
            text += (f"; {len(mismatches)} of {len(names)} {'gradient' if gradient else what}s "
                     f"differ: {listed}{', ...' if len(mismatches) > 8 else ''}")
        text += f" [{self.label}, checked on rank {self.rank}]"
        record.update(identical=False, max_abs=_number(abs_), tensor=names[index], rank=rank)
        self._fail(text, record["kind"], step, rank, names[index], abs_, rel)

    def _measure_buffers(self, check: dict[str, Any]) -> None:
        best_abs, best_rel, where = 0.0, 0.0, ""
        for name, b in zip(self.buffer_names, self.buffers):
            mine = b.detach().to(torch.float64).reshape(-1)
            ref = mine.clone()
            dist.broadcast(ref, dist.get_global_rank(self.group, 0) if self.group else 0,
                           group=self.group)
            abs_ = float((mine - ref).abs().max()) if mine.numel() else 0.0
            scale = float(ref.abs().max()) if ref.numel() else 0.0
            rel = abs_ / scale if scale else 0.0
            if abs_ > best_abs:
                best_abs, where = abs_, name
            best_rel = max(best_rel, rel)
        check.update(identical=best_abs == 0, max_abs=best_abs, max_rel=best_rel)
        if where:
            check.update(tensor=where, rank=self.rank)
        if best_abs >= self.max_buffer["max_abs"] and best_abs > 0:
            self.max_buffer.update(max_abs=best_abs, tensor=where, rank=self.rank)
        self.max_buffer["max_rel"] = max(self.max_buffer["max_rel"], best_rel)
        self.max_buffer["tensors"] = len(self.buffers)
        self.max_buffer["identical"] = self.max_buffer["max_abs"] == 0

    def _fail(self, message: str, kind: str, step: int, rank: int, tensor: str,
              abs_: float, rel: float) -> None:
        self.divergence = {"kind": kind, "step": step, "rank": rank, "tensor": tensor,
                           "max_abs": _number(abs_), "max_rel": _number(rel),
                           "message": message}
        if kind == "gradients":
            self.max_grad = abs_ if math.isfinite(abs_) else self.max_grad
        elif kind == "parameters":
            self.max_param = abs_ if math.isfinite(abs_) else self.max_param
        _state.failure_status = "diverged"
        _state.failure_message = message
        self.finished = True
        _state.write()
        raise VerificationError(message, rank, step, tensor)

    def _progress(self, step: int, record: Optional[dict[str, Any]], hashing: float) -> None:
        parts = []
        for c in (record or {}).get("checks", []):
            if c["kind"] != "buffers":
                parts.append(f"{c['kind']} {c['tensors']} identical")
            elif c.get("mode") == "synchronised":
                parts.append(f"buffers {c['tensors']} identical (broadcast from rank 0)")
            else:
                parts.append(f"buffers {c['tensors']} not synchronised: max divergence from "
                             f"rank 0 abs {c['max_abs']:g} rel {c['max_rel']:g}"
                             + (f" ({c['tensor']})" if c.get("tensor") else ""))
        sys.stderr.write(f"ddpguard-verify: rank {self.rank} {self.label} step {step} ok: "
                         f"{', '.join(parts)} [hashing {hashing * 1e3:.2f} ms]\n")
        sys.stderr.flush()

    def finish(self) -> None:
        """The last step's parameters (the runtime checks them when the DDP dies)."""
        if self.finished:
            return
        self.finished = True
        if self.pending_params and dist.is_initialized():
            self.pending_params = False
            # Broadcast buffers hold each rank's own updates since the last
            # forward (the next one would broadcast), so only rank-local ones
            # are measured, as the runtime's destructor does.
            self._check_values(_PARAMETERS, self.steps_completed - 1, False,
                               self.pending_record,
                               with_buffers=not self.broadcast_buffers)

    def release(self) -> None:
        """Ends the checks and drops the DDP, its group and tensors: while the
        program destroys its group, its last reference must not be ours."""
        self.finished = True
        self.ddp = self.group = None
        self.params, self.buffers = [], []

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "label": self.label, "device": self.device,
            "broadcast_buffers": self.broadcast_buffers,
            "buffer_broadcast": "every_forward" if self.broadcast_buffers else "off",
            "immediate": True, "parameters": len(self.param_names),
            "buffers": len(self.buffer_names),
            "steps_completed": self.steps_completed, "checks": self.checks,
            "max_gradient_divergence": _number(self.max_grad),
            "max_parameter_divergence": _number(self.max_param),
            "max_buffer_divergence": self.max_buffer,
            "exchanges": self.exchanges, "batch_size": 1,
            "verify_seconds": self.verify_seconds, "hashed_bytes": self.hashed_bytes,
            "finished": self.finished}
        if self.divergence:
            out["divergence"] = self.divergence
        out["steps_truncated"] = self.steps_truncated
        out["steps"] = [_with_max(s) for s in self.steps]
        return out


def _with_max(step: dict[str, Any]) -> dict[str, Any]:
    m = {"gradients": 0.0, "parameters": 0.0, "buffers_abs": 0.0, "buffers_rel": 0.0}
    for c in step["checks"]:
        a = c.get("max_abs") or 0.0
        if c["kind"] in ("gradients", "parameters"):
            m[c["kind"]] = max(m[c["kind"]], a)
        else:
            m["buffers_abs"] = max(m["buffers_abs"], a)
            m["buffers_rel"] = max(m["buffers_rel"], c.get("max_rel") or 0.0)
    return {"step": step["step"], "max_divergence": m, "checks": step["checks"]}


def enabled() -> bool:
    return _state is not None


def set_label(name: str) -> None:
    """Names the next DDP in progress lines and summaries (default ddp#0, ddp#1, ...)."""
    if _state is not None:
        _state.next_label = name


def enable() -> None:
    """Verifies every DistributedDataParallel constructed from now on (idempotent)."""
    global _state
    if _state is not None:
        return
    _state = _State()
    state = _state
    init = DistributedDataParallel.__init__

    def __init__(self: DistributedDataParallel, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        label = state.next_label or f"ddp#{len(state.entries)}"
        state.next_label = None
        state.entries.append(_Entry(self, len(state.entries), label))

    DistributedDataParallel.__init__ = __init__  # type: ignore[method-assign]
    destroy = dist.destroy_process_group

    def destroy_process_group(*args: Any, **kwargs: Any) -> None:
        if state.failure_status == "":
            state.finish_all()  # the last step's parameters, while the group lives
        # On torch 2.15 a Gloo group still alive when the interpreter finalizes
        # can abort the process (test/python/test_explain.py says why): ours
        # must not be the reference that keeps it.
        for e in state.entries:
            e.release()
        destroy(*args, **kwargs)

    dist.destroy_process_group = destroy_process_group
    atexit.register(_at_exit)


def finish(error: Optional[BaseException] = None) -> None:
    """The end of the program: the last checks, then the final summary."""
    if _state is None:
        return
    if error is not None and not isinstance(error, VerificationError):
        if not _state.failure_status:
            _state.failure_status = "error"
            _state.failure_message = f"{type(error).__name__}: {error}"
        _state.write()
        return
    if not _state.failure_status:
        _state.finish_all()
    _state.exiting = True
    _state.write()


def _at_exit() -> None:
    if _state is not None and not _state.exiting:
        try:
            finish()
        except VerificationError as e:
            sys.stderr.write(f"{e}\n")
            os._exit(1)
