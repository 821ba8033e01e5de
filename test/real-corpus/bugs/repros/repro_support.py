"""Runs one repro's training step and says, as data, what happened.

A repro defines `step()` (one process) or `step(rank)` (DDP, two Gloo ranks
on the CPU) and calls `main(step)` or `main_ddp(step)`. Two modes:

--watch  every tensor autograd saves is recorded with its version (a
         saved_tensors_hooks pack hook); when the backward unpacks one whose
         version moved, SavedTensorModified is raised with the tensor's shape
         and both versions. This is the condition behind autograd's "modified
         by an inplace operation" error, decided here without reading the
         error's text.
--plain  no hooks: autograd's own check runs; the type of the exception the
         step raised, if any, is reported.

With neither flag both run, one after the other, each on freshly built
models. The last line of stdout is one JSON object: {"torch": ..., "watch":
{"outcome": "saved-tensor-modified" | "trains" | "raised", ...}, "plain":
{...}} (only the mode asked for when a flag is given).
"""

import datetime
import json
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


class SavedTensorModified(Exception):
    def __init__(self, shape, saved_version, current_version):
        super().__init__(f"saved tensor of shape {shape} is at version "
                         f"{current_version}, saved at version {saved_version}")
        self.detail = {"shape": shape, "saved_version": saved_version,
                       "current_version": current_version}


def _pack(tensor):
    return tensor, tensor._version


def _unpack(packed):
    tensor, version = packed
    if tensor._version != version:
        raise SavedTensorModified(list(tensor.shape), version, tensor._version)
    return tensor


def _run(step, args, watch):
    """Runs step(*args); returns this process's outcome as a dict."""
    try:
        if watch:
            with torch.autograd.graph.saved_tensors_hooks(_pack, _unpack):
                step(*args)
        else:
            step(*args)
    except SavedTensorModified as modified:
        return {"outcome": "saved-tensor-modified", **modified.detail}
    except Exception as error:  # the type is the fact reported, not the text
        return {"outcome": "raised", "type": type(error).__name__}
    return {"outcome": "trains"}


def _modes():
    """The modes asked for on the command line, as (name, watch) pairs."""
    asked = [flag[2:] for flag in sys.argv[1:] if flag in ("--watch", "--plain")]
    return [(mode, mode == "watch") for mode in (asked or ["watch", "plain"])]


def main(step):
    report = {"torch": torch.__version__}
    for mode, watch in _modes():
        torch.manual_seed(0)
        report[mode] = _run(step, (), watch)
    print(json.dumps(report))


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rank_main(rank, world_size, port, step, watch, results):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=60))
    torch.manual_seed(rank)
    results[rank] = _run(step, (rank,), watch)
    dist.destroy_process_group()


def main_ddp(step, world_size=2):
    """Runs step(rank) on world_size Gloo ranks, a fresh process group per
    mode; a mode's outcome is rank 0's (every rank's is under "ranks")."""
    report = {"torch": torch.__version__}
    for mode, watch in _modes():
        with mp.Manager() as manager:
            results = manager.dict()
            mp.spawn(_rank_main, args=(world_size, _free_port(), step, watch, results),
                     nprocs=world_size, join=True)
            ranks = [results.get(rank, {"outcome": "no-result"}) for rank in range(world_size)]
        report[mode] = {**ranks[0], "ranks": ranks}
    print(json.dumps(report))
