#!/usr/bin/env python3
"""Checker benchmarks. Prints ratios against baselines measured in the same
run (absolute times on shared machines mean little):

  1. a translation unit that includes <torch/torch.h> (the bundled example):
     clang-tidy with ddpguard's checks (ddp-multiple-forward-before-backward,
     optimizer-step-before-backward, parameter-write-before-backward and
     inplace-write-before-backward, as the CLI runs them) over the parse alone.
     clang-tidy with no checks does not parse at all, so "parse alone" is
     measured two ways: clang-tidy running a trivial check
     (readability-delete-null-pointer: the parse plus clang-tidy's AST
     traversal) and clang++ -fsyntax-only with the same flags;
     bugprone-use-after-move for scale;
  2. a generated 5,000-line training file: the same ratio;
  3. scaling: the check's own work on a generated function 10x larger over
     1x, in instructions (valgrind's callgrind: repeatable, unlike seconds on
     a shared machine); its own work is the run minus the same clang-tidy run
     with the trivial check, which pays clang-tidy's fixed costs and the AST
     traversal but no analysis;
  4. big functions: one function of N if/else statements (each branch a DDP
     forward or a tensor op) and one of N nested loops (each level a
     forward), at N and 2N: wall time and peak memory (the child's maximum
     resident set) of the check, the same for the trivial check, and the
     check's 2N/N ratios (goal <= 2.5; nested loops stop at 200, below
     clang's default bracket depth of 256).

Wall times are the best of --runs interleaved runs: noise on a shared machine
only ever adds time.

  run.py --build <build dir> [--runs N] [--parts torch,training,function,shapes]
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from torch_flags import torch_flags  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = ("ddp-multiple-forward-before-backward,optimizer-step-before-backward,"
         "parameter-write-before-backward,inplace-write-before-backward")
TRIVIAL = "readability-delete-null-pointer"


def timed(cmd):
    """Wall time and CPU time (user + system) of the command: on a loaded
    machine the wall time grows with the load, the CPU time much less."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # A file that does not compile parses in no time: never time that.
    if result.returncode not in (0, 1) or re.search(r": (fatal )?error: ", result.stdout):
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stdout[-4000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def best(commands, runs, cpu=None):
    """Runs the commands interleaved, runs times each; returns their minimum
    wall times, and fills cpu (if given) with their minimum CPU times."""
    samples = [[] for _ in commands]
    for _ in range(runs):
        for i, cmd in enumerate(commands):
            samples[i].append(timed(cmd))
    if cpu is not None:
        cpu[:] = [min(c for _, c in s) for s in samples]
    return [min(w for w, _ in s) for s in samples]


def time_and_memory(cmd):
    """Wall time (s) and peak resident set (KiB) of one run; the peak is the
    child's own (wait4), not the maximum over all children."""
    start = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"failed ({code}): {' '.join(cmd)}")
    return elapsed, usage.ru_maxrss


def instructions(cmd):
    """Instructions the command executes, counted by callgrind."""
    result = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + cmd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    match = re.search(r"Collected : (\d+)", result.stderr)
    if not match:
        sys.exit(f"callgrind failed: {' '.join(cmd)}\n{result.stderr[-2000:]}")
    return int(match.group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--clang-tidy", default="clang-tidy-19")
    parser.add_argument("--clangxx", default="clang++-19")
    parser.add_argument("--parts", default="torch,training,function,shapes",
                        help="comma-separated subset of torch,training,function,shapes")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    plugin = os.path.join(args.build, "lib", "ddpguard-tidy.so")
    tu_flags = torch_flags(os.path.abspath(args.build))
    mock_flags = ["-std=c++17", "-isystem", os.path.join(ROOT, "test", "lit", "Inputs", "mock")]

    def check(path, flags, checks=CHECK):
        return [args.clang_tidy, "--load=" + plugin, f"-checks=-*,{checks}", path, "--"] + flags

    def parse(path, flags):
        return [args.clangxx, "-fsyntax-only", path] + flags

    work = tempfile.mkdtemp(prefix="ddpguard-bench-")
    generate = os.path.join(os.path.dirname(os.path.abspath(__file__)), "generate.py")

    def parse_ratios(label, path):
        cpu = []
        check_t, trivial_t, parse_t, uam_t = best(
            [check(path, tu_flags), check(path, tu_flags, TRIVIAL),
             parse(path, tu_flags), check(path, tu_flags, "bugprone-use-after-move")],
            args.runs, cpu)
        print(f"{label}: check {check_t:.2f} s, trivial check {trivial_t:.2f} s, "
              f"clang++ -fsyntax-only {parse_t:.2f} s, use-after-move {uam_t:.2f} s")
        print(f"  ratio check/trivial-check = {check_t / trivial_t:.3f} wall, "
              f"{cpu[0] / cpu[1]:.3f} CPU  (goal <= 1.05)")
        print(f"  ratio check/clang++ parse  = {check_t / parse_t:.3f}  "
              f"(use-after-move/clang++ parse = {uam_t / parse_t:.3f})")

    def generated(kind, size, name):
        path = os.path.join(work, f"{name}.cpp")
        subprocess.run([sys.executable, generate, kind, str(size), path], check=True)
        # Mock headers keep parsing small, so the analysis itself shows.
        with open(path) as f:
            text = f.read().replace("#include <torch/torch.h>\n", "")
        with open(path, "w") as f:
            f.write(text)
        return path

    if "torch" in parts:
        example = os.path.join(ROOT, "examples", "contrastive", "train.cpp")
        parse_ratios(f"torch TU ({os.path.relpath(example, ROOT)})", example)
    if "training" in parts:
        training = os.path.join(work, "training.cpp")
        subprocess.run([sys.executable, generate, "training", "5000", training], check=True)
        parse_ratios("generated 5,000-line training file", training)
    if "function" in parts:
        function_scaling(generated, check, mock_flags)
    if "shapes" in parts:
        shapes_scaling(generated, check, mock_flags, args.runs)


def function_scaling(generated, check, mock_flags):
    sizes = {}
    for name, units in (("1x", 500), ("10x", 5000)):
        path = generated("function", units, f"function-{name}")
        check_i = instructions(check(path, mock_flags))
        trivial_i = instructions(check(path, mock_flags, TRIVIAL))
        sizes[name] = check_i - trivial_i
        print(f"function {name} ({units} blocks): trivial check {trivial_i / 1e9:.3f} G instructions, "
              f"check {check_i / 1e9:.3f} G, analysis {sizes[name] / 1e9:.3f} G")
    print(f"  scaling ratio 10x/1x = {sizes['10x'] / sizes['1x']:.2f}  (goal <= 12, linear = 10)")


def shapes_scaling(generated, check, mock_flags, runs):
    for kind, label, n in (("branches", "if/else statements", 1000),
                           ("loops", "nested loops", 100)):
        figures = {}
        for size in (n, 2 * n):
            path = generated(kind, size, f"{kind}-{size}")
            # Interleaved like best(); the smallest time and peak of each.
            samples = [[time_and_memory(check(path, mock_flags)),
                        time_and_memory(check(path, mock_flags, TRIVIAL))]
                       for _ in range(runs)]
            check_t, check_m = (min(s[0][i] for s in samples) for i in (0, 1))
            trivial_t, trivial_m = (min(s[1][i] for s in samples) for i in (0, 1))
            figures[size] = (check_t, check_m)
            print(f"{kind} {size} ({label}): check {check_t:.2f} s, {check_m / 1024:.0f} MiB; "
                  f"trivial check {trivial_t:.2f} s, {trivial_m / 1024:.0f} MiB")
        (t1, m1), (t2, m2) = figures[n], figures[2 * n]
        print(f"  {kind} {2 * n}/{n}: time {t2 / t1:.2f}, memory {m2 / m1:.2f}  (goal <= 2.5 each)")


if __name__ == "__main__":
    main()
