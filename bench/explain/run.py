#!/usr/bin/env python3
"""Cost of ddpguard.explain per training step, against the same run's baseline.

    PYTHONPATH=python .venv/bin/python bench/explain/run.py [--rounds N] [--steps N]

Trains a small and a large MLP with BatchNorm (SGD with momentum, one thread)
in one process, alternating blocks of steps with the explainer off, armed
and in the after-failure mode (ABCABC..., so drift and other load hit every
mode alike), and prints each mode's median block CPU time per step (process time: on a
shared machine it is less disturbed than wall time) and its ratio to "off". Then one block per mode under tracemalloc gives the Python heap's
peak, which is where the explainer's records live (it allocates no tensors).
Goals (docs/explain.md): armed <= 1.03, after-failure <= 1.005.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc

import torch
from torch import nn

from ddpguard import explain

MODELS = {"small": (256, 32), "large": (2048, 128)}  # hidden width, batch
MODES = ("off", "armed", "after-failure")


def model_for(hidden: int) -> nn.Module:
    return nn.Sequential(nn.Linear(64, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                         nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                         nn.Linear(hidden, 10))


def switch(mode: str) -> None:
    explain.disable()
    if mode != "off":
        explain.enable(mode)


def block(model, opt, data, steps: int) -> float:
    x, y = data
    start = time.process_time()
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return (time.process_time() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--steps", type=int, default=0,
                        help="steps per block (default: about 0.1 s of steps)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {args.rounds} rounds per mode")
    print(f"{'model':6} {'mode':14} {'step ms':>9} {'ratio':>7} {'py heap peak':>13}")
    for name, (hidden, batch) in MODELS.items():
        model = model_for(hidden)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        data = (torch.randn(batch, 64), torch.randint(0, 10, (batch,)))
        block(model, opt, data, 5)  # warm up
        steps = args.steps or max(5, int(0.1 / block(model, opt, data, 5)))
        times: dict[str, list[float]] = {m: [] for m in MODES}
        for r in range(args.rounds):
            for mode in MODES[r % 3:] + MODES[: r % 3]:
                switch(mode)
                gc.collect()
                times[mode].append(block(model, opt, data, steps))
        peaks = {}
        for mode in MODES:
            switch(mode)
            gc.collect()
            tracemalloc.start()
            block(model, opt, data, steps)
            peaks[mode] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        switch("off")
        base = statistics.median(times["off"])
        for mode in MODES:
            t = statistics.median(times[mode])
            print(f"{name:6} {mode:14} {t * 1e3:9.3f} {t / base:7.3f} "
                  f"{peaks[mode] / 1024:10.1f} KiB")


if __name__ == "__main__":
    main()
