"""Which ground-truth rows are silent: they train, but with gradients other
than those the forward's saved values give (issue 30, deliverable 3).

    python test/runtime/silent_rows.py [--world N] PYTHON...

For each PYTHON (a venv's interpreter with torch), torch_ground_truth.py runs
twice on N Gloo ranks (default 2): as written, and under --clone-at-pack,
where each saved tensor is cloned at pack time. A row that trains in both is
silent on a rank when that rank's gradients differ (max absolute difference
over every parameter above 1e-6); a row that fails as written is loud. The
table has one column per torch: the outcome and, where the row trains, each
rank's largest difference.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "torch_ground_truth.py")
TOLERANCE = 1e-6


def read_rows(path):
    """{row: (outcome, {param: [floats]})} from one rank<R>.txt."""
    rows, current = {}, None
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split(" ")
            if parts[0] == "row":
                current = parts[1]
                rows[current] = (parts[2], {})
            elif parts[0] == "grad" and current is not None:
                values = [] if parts[2:] == ["none"] else [float(v) for v in parts[2:]]
                rows[current][1][parts[1]] = values
    return rows


def run(python, world, out, reference):
    torchrun = os.path.join(os.path.dirname(python), "torchrun")
    cmd = [torchrun, "--standalone", f"--nproc-per-node={world}", SCRIPT, out]
    if reference:
        cmd.append("--clone-at-pack")
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout.decode()[-3000:]}")
    version = subprocess.run([python, "-c", "import torch; print(torch.__version__.split('+')[0])"],
                             stdout=subprocess.PIPE, check=True).stdout.decode().strip()
    return version, [read_rows(os.path.join(out, f"rank{r}.txt")) for r in range(world)]


def difference(a, b):
    worst = 0.0
    for name, values in a.items():
        other = b.get(name, [])
        if len(values) != len(other):
            return float("inf")
        worst = max([worst] + [abs(x - y) for x, y in zip(values, other)])
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("pythons", nargs="+")
    args = parser.parse_args()
    columns, names = [], []
    with tempfile.TemporaryDirectory() as work:
        for i, python in enumerate(args.pythons):
            version, plain = run(python, args.world, os.path.join(work, f"{i}-plain"), False)
            _, reference = run(python, args.world, os.path.join(work, f"{i}-reference"), True)
            cells = {}
            for row in plain[0]:
                if row not in names:
                    names.append(row)
                outcomes = {plain[r][row][0] for r in range(args.world)}
                if outcomes != {"ok"}:
                    cells[row] = "/".join(sorted(outcomes))
                    continue
                diffs = [difference(plain[r][row][1], reference[r][row][1])
                         for r in range(args.world)]
                silent = any(d > TOLERANCE for d in diffs)
                cells[row] = ("**silent** " if silent else "ok ") + ", ".join(
                    f"r{r} {d:.2g}" for r, d in enumerate(diffs))
            columns.append((version, cells))
    print("| row | " + " | ".join(f"torch {v}" for v, _ in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for row in names:
        print(f"| {row} | " + " | ".join(c.get(row, "—") for _, c in columns) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
