"""The Python verifier's hash (python/ddpguard/verify/_hash.py) against a copy
of the same bytes (torch.clone, one thread), best of 7 passes each, measured
in the same run; and one check of the verifier's test model (6 parameters).

    python bench/verify/python_hash_bench.py

Prints throughputs and the ratio hash / clone (docs/verifier.md, "Python
programs", records the figures and why the hash is in torch ops).
"""

import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from ddpguard.verify._hash import hash_tensors  # noqa: E402


def best(fn, passes=7):
    times = []
    for _ in range(passes):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    torch.set_num_threads(1)
    for label, numel in (("256 KiB", 1 << 16), ("4 MiB", 1 << 20), ("64 MiB", 1 << 24)):
        t = torch.randn(numel)
        nbytes = t.numel() * t.element_size()
        h = best(lambda: hash_tensors([t]))
        c = best(lambda: t.clone())
        print(f"{label}: hash {nbytes / h / 1e9:.2f} GB/s, clone {nbytes / c / 1e9:.2f} GB/s, "
              f"hash / clone {c / h:.3f}")
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16),
                                torch.nn.ReLU(), torch.nn.Linear(16, 2))
    params = list(model.parameters())
    h = best(lambda: hash_tensors(params), 50)
    x = torch.randn(16, 8)
    step = best(lambda: model(x).sum().backward(), 50)
    print(f"test model (6 tensors): one check {h * 1e3:.3f} ms, forward+backward "
          f"{step * 1e3:.3f} ms, ratio {h / step:.2f}")


if __name__ == "__main__":
    main()
