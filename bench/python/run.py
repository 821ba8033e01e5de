#!/usr/bin/env python3
"""The Python check's cost over a parse alone, and the CLI against `import torch`.

    python3 bench/python/run.py --build build [--runs N] [--python PY] [--real-corpus DIR]

1. ddpguard-python-bench parses each set with tree-sitter alone (the
   baseline) and checks it (parse, lowering to event graphs, analysis),
   interleaved, best of N: on a large real script (torch's
   nn/parallel/distributed.py), on a generated 5,000-line training script
   (many functions with DDP forwards, branches, loops and backwards), and on
   200 of torch's own files; and on the real clean corpus
   (docs/real-corpus.md), each file alone and each package as one run with
   its imports followed (as the CLI checks a folder). Goal: check / parse
   <= 2.
2. The CLI on the 200 files and on the real clean corpus (`ddpguard
   --torch-version 2.11.0`, one process, wall time) against `python -c
   "import torch"` (wall time), best of N. Goal: under the time of one import.
PY (default: the project's .venv) provides torch's sources and the import.
DIR (default: the cache test/real-corpus/clean/materialize.py fills) holds
the real clean corpus, one folder per package; where it is not materialized
its lines say so and the rest runs.
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


def default_real_corpus():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "ddpguard", "real-corpus", "clean")


def real_corpus_packages(folder):
    """{package folder: its .py files}, sorted, of the materialized corpus."""
    packages = {}
    if os.path.isdir(folder):
        for name in sorted(os.listdir(folder)):
            package = os.path.join(folder, name)
            if name.startswith(".") or not os.path.isdir(package):
                continue
            files = sorted(glob.glob(os.path.join(glob.escape(package), "**", "*.py"),
                                     recursive=True))
            if files:
                packages[package] = files
    return packages


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
    p.add_argument("--real-corpus", default=default_real_corpus(),
                   help="the materialized real clean corpus, one folder per package")
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
        packages = real_corpus_packages(args.real_corpus)
        corpus = [path for paths in packages.values() for path in paths]
        if corpus:
            sets.append((f"real clean corpus, {len(packages)} packages, each file alone", corpus))
            # One run per package, its imports followed between its files.
            grouped = ["--together"]
            for paths in packages.values():
                grouped += paths + ["::"]
            sets.append((f"real clean corpus, each package one run", grouped[:-1]))
        else:
            print(f"real clean corpus: not materialized in {args.real_corpus} "
                  "(test/real-corpus/clean/materialize.py DIR makes it): not measured")
        for label, paths in sets:
            lines = sum(open(path, "rb").read().count(b"\n") for path in paths
                        if path not in ("::", "--together"))
            result = subprocess.run([bench, "--runs", str(args.runs)] + paths,
                                    capture_output=True, text=True, check=True)
            print(f"{label}, {lines} lines: {result.stdout.strip()}")
    # The CLI and the import, interleaved run by run.
    clis = [("200 of torch's files", [ddpguard, "--torch-version", "2.11.0"] + files)]
    if corpus:
        clis.append((f"the real clean corpus ({len(corpus)} files)",
                     [ddpguard, "--torch-version", "2.11.0"] + list(packages)))
    imported = best([args.python, "-c", "import torch"], args.runs)
    for label, command in clis:
        cli = best(command, args.runs)
        imported = min(imported, best([args.python, "-c", "import torch"], 1))
        print(f"ddpguard on {label} {cli:.2f} s, import torch {imported:.2f} s: "
              f"ratio {cli / imported:.2f}")
    if corpus:
        # The goal is stated for 700 files of real training code.
        print(f"ddpguard per 700 files of the real clean corpus "
              f"{cli * 700 / len(corpus):.2f} s: ratio {cli * 700 / len(corpus) / imported:.2f} "
              f"of import torch")


if __name__ == "__main__":
    sys.exit(main())
