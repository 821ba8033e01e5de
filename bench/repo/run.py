#!/usr/bin/env python3
"""Whole-repository benchmark: `ddpguard -p` against run-clang-tidy.

Generates a repository of --tus translation units that each include
<torch/torch.h> (LibTorch from the project's .venv, with the flags lit's
%torch_flags uses), every tenth of them using ddpguard's
DistributedDataParallel (half of those with a finding: two forwards before a
backward; half fixed with broadcast_buffers(false)), and its
compile_commands.json. Then runs, once each, on the same database:

  ddpguard -j<jobs> -p <repo>/build --format=json
  run-clang-tidy-19 -j<jobs> -p <repo>/build -load <build>/lib/ddpguard-tidy.so
      -checks=-*,ddp-multiple-forward-before-backward

and prints both wall and CPU times, their ratios (goal <= 0.15) and whether both
found the same findings (the same set of file:line). Exits non-zero when
the findings differ or either tool fails.

  run.py --build <build dir> [--tus 200] [--jobs 2] [--dir <repo dir>]
"""
import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = "ddp-multiple-forward-before-backward"

COMMON_H = """// Shared by every unit: a module the units build on.
#pragma once
#include <torch/torch.h>

struct BlockImpl : torch::nn::Module {
  BlockImpl()
      : fc(register_module("fc", torch::nn::Linear(16, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))) {}
  torch::Tensor forward(torch::Tensor x) { return bn(fc(x)); }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
};
TORCH_MODULE(Block);
"""

PLAIN = """#include "common.h"

// Unit {i}: no DDP.
torch::Tensor step{i}(Block block, torch::Tensor x, torch::Tensor y) {{
  auto out = block->forward(x * {i});
  auto loss = torch::mse_loss(out, y);
  loss.backward();
  return loss.detach();
}}
"""

DDP_BUGGY = """#include "common.h"
#include <ddpguard/runtime/DistributedDataParallel.h>

// Unit {i}: two forwards before one backward.
void step{i}(Block block, c10::intrusive_ptr<c10d::ProcessGroup> pg,
             torch::Tensor a, torch::Tensor b) {{
  ddpguard::DistributedDataParallel<Block> model(block, pg);
  auto za = model(a);
  auto zb = model(b);
  (za * zb).sum().backward();
}}
"""

DDP_FIXED = """#include "common.h"
#include <ddpguard/runtime/DistributedDataParallel.h>

// Unit {i}: two forwards before one backward, buffers not broadcast.
void step{i}(Block block, c10::intrusive_ptr<c10d::ProcessGroup> pg,
             torch::Tensor a, torch::Tensor b) {{
  ddpguard::DistributedDataParallel<Block> model(
      block, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto za = model(a);
  auto zb = model(b);
  (za * zb).sum().backward();
}}
"""


def lit_config(build):
    """torch include dirs and the runtime include dir as lit.site.cfg.py has
    them (test/lit/lit.cfg.py builds %torch_flags from these)."""
    site = os.path.join(build, "test", "lit", "lit.site.cfg.py")
    text = open(site).read()

    def value(name):
        m = re.search(r'^config\.%s = "(.*)"$' % name, text, re.M)
        if not m:
            sys.exit(f"{site}: no config.{name}")
        return m.group(1)

    torch = [d for d in value("torch_include_dirs").split(";")
             if d and os.path.normpath(d) != "/usr/include"]
    if not torch:
        sys.exit("no LibTorch include directories (scripts/setup.sh installs LibTorch in .venv)")
    return torch, value("runtime_include_dir")


def generate(repo, tus, torch_dirs, runtime_dir):
    """Writes the repository; returns the expected findings (file:line)."""
    src = os.path.join(repo, "src")
    include = os.path.join(repo, "include")
    os.makedirs(src)
    os.makedirs(include)
    with open(os.path.join(include, "common.h"), "w") as f:
        f.write(COMMON_H)
    flags = (["-std=c++17", "-DUSE_C10D_GLOO", "-DUSE_DISTRIBUTED"]
             + [a for d in torch_dirs for a in ("-isystem", d)]
             + ["-I" + runtime_dir, "-I" + include])
    expected = set()
    entries = []
    for i in range(tus):
        name = f"src/unit_{i:04d}.cpp"
        if i % 10 == 5:
            buggy = (i // 10) % 2 == 0
            text = (DDP_BUGGY if buggy else DDP_FIXED).format(i=i)
            if buggy:
                line = text.splitlines().index("  auto zb = model(b);") + 1
                expected.add(f"{os.path.join(repo, name)}:{line}")
        else:
            text = PLAIN.format(i=i)
        with open(os.path.join(repo, name), "w") as f:
            f.write(text)
        entries.append({"directory": repo, "file": name,
                        "arguments": ["clang++-19"] + flags + ["-c", name, "-o",
                                                               name + ".o"]})
    os.makedirs(os.path.join(repo, "build"))
    with open(os.path.join(repo, "build", "compile_commands.json"), "w") as f:
        json.dump(entries, f, indent=1)
    return expected


def run(cmd, cwd):
    """The result, the wall time and the CPU time (user + system) of the
    command and all its children: on a shared machine the wall ratio moves
    with the load, the CPU ratio much less."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result, elapsed, cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True, help="ddpguard's build directory")
    parser.add_argument("--tus", type=int, default=200,
                        help="translation units in the generated repository")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--dir", help="where to generate the repository "
                        "(default: a temporary directory, removed after)")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    ddpguard = os.path.join(build, "bin", "ddpguard")
    plugin = os.path.join(build, "lib", "ddpguard-tidy.so")
    for path in (ddpguard, plugin):
        if not os.path.exists(path):
            sys.exit(f"{path} is missing: build first")
    run_clang_tidy = shutil.which("run-clang-tidy-19")
    clang_tidy = shutil.which("clang-tidy-19")
    if not run_clang_tidy or not clang_tidy:
        sys.exit("run-clang-tidy-19 and clang-tidy-19 are needed (apt: clang-tidy-19)")
    torch_dirs, runtime_dir = lit_config(build)

    temporary = args.dir is None
    repo = os.path.abspath(args.dir or tempfile.mkdtemp(prefix="ddpguard-repo-"))
    if not temporary:
        shutil.rmtree(repo, ignore_errors=True)
    try:
        expected = generate(repo, args.tus, torch_dirs, runtime_dir)
        ddp_units = sum(1 for i in range(args.tus) if i % 10 == 5)
        print(f"repository: {repo}: {args.tus} translation units including "
              f"<torch/torch.h>, {ddp_units} using DDP, {len(expected)} findings expected",
              flush=True)

        g, g_time, g_cpu = run([ddpguard, f"-j{args.jobs}", "-p", "build", "--format=json"], repo)
        if g.returncode not in (0, 1):
            sys.exit(f"ddpguard failed ({g.returncode}):\n{g.stderr}")
        ours = {f"{os.path.normpath(os.path.join(repo, f['file']))}:{f['line']}"
                for f in json.loads(g.stdout)["findings"]}
        summary = [l for l in g.stderr.splitlines() if l.startswith("ddpguard: ")]
        print(f"ddpguard -j{args.jobs} -p: {g_time:.1f} s wall, {g_cpu:.1f} s CPU "
              f"({summary[-1] if summary else 'no summary'})",
              flush=True)

        t, t_time, t_cpu = run([run_clang_tidy, f"-j{args.jobs}", "-p", "build",
                         "-clang-tidy-binary", clang_tidy, "-load", plugin,
                         f"-checks=-*,{CHECK}", "-quiet"], repo)
        if t.returncode not in (0, 1):
            sys.exit(f"run-clang-tidy failed ({t.returncode}):\n{t.stderr[-4000:]}")
        theirs = set()
        for m in re.finditer(r"^([^\s:]+):(\d+):\d+: warning: .*\[%s\]$" % re.escape(CHECK),
                             t.stdout, re.M):
            theirs.add(f"{os.path.normpath(os.path.join(repo, m.group(1)))}:{m.group(2)}")
        print(f"run-clang-tidy-19 -j{args.jobs}: {t_time:.1f} s wall, {t_cpu:.1f} s CPU",
              flush=True)

        print(f"ratio ddpguard / run-clang-tidy: {g_time / t_time:.3f} wall, "
              f"{g_cpu / t_cpu:.3f} CPU (goal <= 0.15)")
        same = ours == theirs
        print(f"findings: ddpguard {len(ours)}, run-clang-tidy {len(theirs)}, "
              f"{'identical' if same else 'DIFFERENT'} (file:line)")
        if not same:
            print(f"  only ddpguard: {sorted(ours - theirs)}")
            print(f"  only run-clang-tidy: {sorted(theirs - ours)}")
            return 1
        if ours != expected:
            print(f"findings differ from the generated ones: {sorted(ours ^ expected)}")
            return 1
        return 0
    finally:
        if temporary:
            shutil.rmtree(repo, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
