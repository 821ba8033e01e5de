#!/usr/bin/env python3
"""The Python check's cost over a parse alone, and 200 files against `import torch`.

    python3 bench/python/run.py --build build [--runs N] [--python PY]

1. ddpguard-python-bench parses each set with tree-sitter alone (the
   baseline) and checks it (parse, lowering to event graphs, analysis),
   interleaved, best of N: on a large real script (torch's
   nn/parallel/distributed.py), on a generated 5,000-line training script
   (many functions with DDP forwards, branches, loops and backwards), and on
   200 of torch's own files. Goal: check / parse <= 2.
2. The CLI on the 200 files (`ddpguard --torch-version 2.11.0`, one process,
   wall time) against `python -c "import torch"` (wall time), best of N.
   Goal: under the time of one import.
PY (default: the project's .venv) provides torch's sources and the import.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def training_script(functions):
    """A long training file: each function two DDP forwards in a branch, a
    loop of one forward per backward, and a retained graph."""
    out = ["import torch",
           "from torch.nn.parallel import DistributedDataParallel as DDP",
           "model = DDP(net)", ""]
    for i in range(functions):
        out += [f"def step_{i}(loader, optimizer, a, b):",
                "    out1 = model(a)",
                "    if a.sum() > 0:",
                "        out2 = model(b)",
                "    else:",
                "        out2 = model.module(b)",
                "    loss = criterion(out1, out2)",
                "    loss.backward(retain_graph=True)",
                "    for x, y in loader:",
                "        with torch.no_grad():",
                "            target = model(y)",
                "        optimizer.zero_grad()",
                "        criterion(model(x), target).backward()",
                "        optimizer.step()",
                "    return loss.item()",
                ""]
    return "\n".join(out)


def best(command, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    args = p.parse_args()
    bench = os.path.join(args.build, "bin", "ddpguard-python-bench")
    ddpguard = os.path.join(args.build, "bin", "ddpguard")
    torch_dir = subprocess.run(
        [args.python, "-c", "import os, torch; print(os.path.dirname(torch.__file__))"],
        capture_output=True, text=True, check=True).stdout.strip()
    files = sorted(glob.glob(os.path.join(torch_dir, "**", "*.py"), recursive=True))[:200]
    with tempfile.TemporaryDirectory() as tmp:
        generated = os.path.join(tmp, "train.py")
        with open(generated, "w") as f:
            f.write(training_script(333))
        sets = [("large real script (distributed.py)",
                 [os.path.join(torch_dir, "nn", "parallel", "distributed.py")]),
                ("generated training script", [generated]),
                ("200 of torch's files", files)]
        for label, paths in sets:
            lines = sum(open(path, "rb").read().count(b"\n") for path in paths)
            result = subprocess.run([bench, "--runs", str(args.runs)] + paths,
                                    capture_output=True, text=True, check=True)
            print(f"{label}, {lines} lines: {result.stdout.strip()}")
    cli = best([ddpguard, "--torch-version", "2.11.0"] + files, args.runs)
    imported = best([args.python, "-c", "import torch"], args.runs)
    print(f"ddpguard on 200 files {cli:.2f} s, import torch {imported:.2f} s: "
          f"ratio {cli / imported:.2f}")


if __name__ == "__main__":
    sys.exit(main())
