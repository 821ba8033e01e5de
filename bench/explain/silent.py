#!/usr/bin/env python3
"""Cost of the explainer's silent-writes mode per training step, by fingerprint.

    PYTHONPATH=python .venv/bin/python bench/explain/silent.py [--rounds N] [--models small,resnet18]

Trains, on the CPU with one thread, a small MLP (hidden 256, batch 32) and a
ResNet-18 (the torchvision layout: 11.7M parameters, batch 4 of 3x64x64
images), SGD with momentum, in one process. Blocks of steps alternate
between the explainer off, armed (the recording the mode builds on), and
silent-writes with the sampled and the full fingerprint, the order rotating
each round; each mode's median block CPU time per step (process time) is
divided by "off" of the same run. Goals (docs/explain.md#silent-writes):
full <= 1.10, sampled <= 1.02.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import torch
from torch import nn

from ddpguard import explain

MODES = ("off", "armed", "silent-sampled", "silent-full")


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                   nn.BatchNorm2d(cout))
                     if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.down(x))


def resnet18(classes: int = 10) -> nn.Module:
    layers: list[nn.Module] = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                               nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


def small() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 256), nn.BatchNorm1d(256), nn.ReLU(),
                         nn.Linear(256, 256), nn.BatchNorm1d(256), nn.ReLU(),
                         nn.Linear(256, 10))


MODELS = {"small": (small, (32, 64)), "resnet18": (resnet18, (4, 3, 64, 64))}


def switch(mode: str) -> None:
    explain.disable()
    if mode == "armed":
        explain.enable("armed")
    elif mode.startswith("silent-"):
        explain.enable("silent-writes", mode.removeprefix("silent-"))


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
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {args.rounds} rounds per mode, ratios to 'off'")
    print(f"{'model':9} {'mode':15} {'step ms':>9} {'ratio':>7}")
    for name in args.models.split(","):
        make, shape = MODELS[name]
        model = make()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        data = (torch.randn(*shape), torch.randint(0, 10, (shape[0],)))
        block(model, opt, data, 2)  # warm up
        steps = max(1, int(0.1 / block(model, opt, data, 2)))
        times: dict[str, list[float]] = {m: [] for m in MODES}
        for r in range(args.rounds):
            for mode in MODES[r % len(MODES):] + MODES[: r % len(MODES)]:
                switch(mode)
                gc.collect()
                times[mode].append(block(model, opt, data, steps))
        switch("off")
        base = statistics.median(times["off"])
        for mode in MODES:
            t = statistics.median(times[mode])
            print(f"{name:9} {mode:15} {t * 1e3:9.3f} {t / base:7.3f}", flush=True)


if __name__ == "__main__":
    main()
