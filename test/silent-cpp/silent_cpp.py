"""silent_writes.cpp's shapes against their labels (`silent-cpp: shape NAME
expect LABEL`, `silent-cpp: written`), by running and by the checker.

  silent_cpp.py label --python PY [--build DIR]
      builds silent_writes.cpp with g++ against the LibTorch of PY's torch
      wheel (as scripts/optimizer-versions.sh: C++17 before 2.14, C++20
      from, the wheel's CXX11 ABI; 20 s of CPU), runs it and
      requires every shape's label. Prints the torch version and the labels.
  silent_cpp.py check --python PY --ddpguard BIN
      runs the checker over the same file with that wheel's headers: a
      silent shape must get silent-write-before-backward at each written
      line and no other finding of the write checks; a shape that raises
      one of the other write checks there and no silent finding; a shape
      that trains no finding. One checker run: about 20 s, most of it
      parsing <torch/torch.h>.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "silent_writes.cpp"
SILENT = "silent-write-before-backward"
# The checks that report a write a backward then fails on.
LOUD = {"optimizer-step-before-backward", "parameter-write-before-backward",
        "inplace-write-before-backward"}


def shapes() -> tuple[dict[str, str], dict[int, str], dict[str, set[int]]]:
    """Expected label by shape, shape by line, written lines by shape."""
    expected: dict[str, str] = {}
    shape_of: dict[int, str] = {}
    written: dict[str, set[int]] = {}
    current = None
    for number, line in enumerate(SOURCE.read_text().splitlines(), 1):
        if m := re.fullmatch(r"// silent-cpp: shape (\S+) expect (\w+)", line):
            current = m.group(1)
            expected[current] = m.group(2)
            written[current] = set()
        elif re.search(r"// silent-cpp: written$", line) and current:
            written[current].add(number)
        if current:
            shape_of[number] = current
    if not expected or any(not lines for lines in written.values()):
        sys.exit(f"{SOURCE.name}: a shape without a written line")
    return expected, shape_of, written


def torch_of(python: str) -> tuple[str, Path, int, str]:
    out = subprocess.run(
        [python, "-c", "import os, torch; print(torch.__version__, "
         "os.path.dirname(torch.__file__), int(torch.compiled_with_cxx11_abi()))"],
        capture_output=True, text=True, check=True).stdout.split()
    version, torch_dir, abi = out[0], Path(out[1]), out[2]
    minor = int(version.split(".")[1])
    return version, torch_dir, int(abi), "c++20" if minor >= 14 else "c++17"


def includes(torch_dir: Path) -> list[str]:
    include = torch_dir / "include"
    return ["-isystem", str(include),
            "-isystem", str(include / "torch" / "csrc" / "api" / "include")]


def label(args) -> int:
    version, torch_dir, abi, std = torch_of(args.python)
    build = Path(args.build) / version
    build.mkdir(parents=True, exist_ok=True)
    binary = build / "silent_writes"
    if not binary.exists() or binary.stat().st_mtime < SOURCE.stat().st_mtime:
        subprocess.run(
            ["g++", f"-std={std}", "-O1", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
             "-w", *includes(torch_dir), str(SOURCE), "-o", str(binary),
             f"-L{torch_dir / 'lib'}", f"-Wl,-rpath,{torch_dir / 'lib'}",
             "-Wl,--no-as-needed", "-ltorch", "-ltorch_cpu", "-lc10",
             "-Wl,--as-needed"], check=True)
    run = subprocess.run([str(binary)], capture_output=True, text=True,
                         check=True,
                         env=dict(os.environ, OMP_NUM_THREADS="1"))
    got = {parts[1]: parts[2] for line in run.stdout.splitlines()
           if (parts := line.split("\t"))[0] == "shape"}
    expected, _, _ = shapes()
    print(f"torch {version}")
    failed = 0
    for name, want in expected.items():
        mark = "" if got.get(name) == want else f"  (expected {want})"
        failed += bool(mark)
        print(f"  {name}: {got.get(name)}{mark}")
    return 1 if failed or set(got) != set(expected) else 0


def check(args) -> int:
    version, torch_dir, _, std = torch_of(args.python)
    run = subprocess.run(
        [args.ddpguard, "--output-format=json", str(SOURCE), "--",
         f"-std={std}", *includes(torch_dir)],
        capture_output=True, text=True, check=False)
    if run.returncode not in (0, 1):
        sys.exit(f"ddpguard exited {run.returncode}:\n{run.stderr}")
    report = json.loads(run.stdout)
    if report["errors"]:
        sys.exit(f"ddpguard errors: {report['errors']}")
    expected, shape_of, written = shapes()
    found: dict[str, list[tuple[str, int]]] = {name: [] for name in expected}
    for f in report["findings"]:
        if f["check"] == SILENT or f["check"] in LOUD:
            found[shape_of.get(f["line"], "outside any shape")].append(
                (f["check"], f["line"]))
    failed = 0
    for name, want in expected.items():
        got = found.get(name, [])
        silent = {line for kind, line in got if kind == SILENT}
        loud = {line for kind, line in got if kind in LOUD}
        ok = {"silent": silent == written[name] and not loud,
              "raises": loud == written[name] and not silent,
              "trains": not got}[want]
        failed += not ok
        print(f"  {name} ({want}): {sorted(got)}{'' if ok else '  WRONG'}")
    stray = found.get("outside any shape", [])
    for finding in stray:
        print(f"  finding outside any shape: {finding}")
    print(f"checked with torch {version}'s headers: "
          f"{len(expected) - failed}/{len(expected)} shapes as labelled")
    return 1 if failed or stray else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    run = sub.add_parser("label")
    run.add_argument("--python", required=True)
    run.add_argument("--build", default="build-silent-cpp")
    checker = sub.add_parser("check")
    checker.add_argument("--python", required=True)
    checker.add_argument("--ddpguard", required=True)
    args = parser.parse_args()
    return label(args) if args.mode == "label" else check(args)


if __name__ == "__main__":
    sys.exit(main())
