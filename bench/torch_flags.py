"""Compile flags for a translation unit that includes <torch/torch.h> and the
runtime: the LibTorch include directories and the runtime's, as the build
configured them for lit (test/lit/lit.cfg.py builds %torch_flags from them)."""
import os
import re


def torch_flags(build):
    site = open(os.path.join(build, "test", "lit", "lit.site.cfg.py")).read()
    dirs = re.search(r'torch_include_dirs = "([^"]*)"', site).group(1).split(";")
    runtime = re.search(r'runtime_include_dir = "([^"]*)"', site).group(1)
    flags = ["-std=c++17", "-DUSE_C10D_GLOO", "-DUSE_DISTRIBUTED"]
    for d in dirs:
        if d and os.path.normpath(d) != "/usr/include":
            flags += ["-isystem", d]
    return flags + ["-I" + runtime]
