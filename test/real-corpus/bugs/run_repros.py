#!/usr/bin/env python3
"""Runs every entry's minimal CPU repro on each torch and compares the
outcome with the manifest's repro_outcome.

Each repro runs its step twice per torch, in one process
(repros/repro_support.py):
  --watch  decides the outcome: "saved-tensor-modified" when a tensor autograd
           saved changed version before the backward read it, else "trains";
  --plain  without hooks, so autograd's own check runs: it must raise where
           the watch found a modified saved tensor, and train where it did not.

    run_repros.py                       # all entries, 2.11.0 and 2.15.0
    run_repros.py --versions 2.11.0 ID  # some entries, one torch
    run_repros.py --write               # record the outcomes in the manifest

Exit status: 0 when every outcome matches the manifest and the two modes
agree, 1 otherwise, 2 when an interpreter is missing.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.json"
REPO_ROOT = HERE.parents[2]
INTERPRETERS = {
    "2.11.0": REPO_ROOT / ".venv" / "bin" / "python",
    "2.15.0": REPO_ROOT / ".venvs" / "torch-2.15.0" / "bin" / "python",
}
TIMEOUT_S = 300


def run_one(python, script):
    """The repro's watch and plain results (its last JSON line), or outcomes
    that say why there are none."""
    try:
        done = subprocess.run([str(python), str(script)], cwd=script.parent,
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"outcome": "timeout"}, {"outcome": "timeout"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            report = json.loads(line)
            return report["watch"], report["plain"]
    failed = {"outcome": "no-result", "returncode": done.returncode,
              "stderr_tail": done.stderr[-400:]}
    return failed, failed


def modes_agree(watched, plain):
    if watched["outcome"] == "saved-tensor-modified":
        return plain["outcome"] == "raised"
    return plain["outcome"] == watched["outcome"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", nargs="+", default=list(INTERPRETERS), choices=list(INTERPRETERS))
    parser.add_argument("--write", action="store_true",
                        help="write the observed outcomes into the manifest's repro_outcome")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("ids", nargs="*")
    args = parser.parse_args()

    missing = [version for version in args.versions if not INTERPRETERS[version].exists()]
    if missing:
        print(f"no interpreter for torch {', '.join(missing)} "
              f"({', '.join(str(INTERPRETERS[v]) for v in missing)})", file=sys.stderr)
        return 2
    entries = json.loads(MANIFEST.read_text())
    chosen = [entry for entry in entries if not args.ids or entry["id"] in args.ids]
    results, failures = [], 0
    for entry in chosen:
        script = HERE / entry["repro"]
        for version in args.versions:
            started = time.monotonic()
            watched, plain = run_one(INTERPRETERS[version], script)
            expected = entry["repro_outcome"].get(version)
            ok = watched["outcome"] == expected and modes_agree(watched, plain)
            failures += not ok
            results.append({"id": entry["id"], "torch": version, "expected": expected,
                            "watch": watched, "plain": plain, "ok": ok,
                            "seconds": round(time.monotonic() - started, 1)})
            print(f"{'ok  ' if ok else 'FAIL'} {version} {entry['id']}: {watched['outcome']}"
                  f" (expected {expected}; plain run: {plain['outcome']})", flush=True)
            if args.write:
                entry["repro_outcome"][version] = watched["outcome"]
    if args.write:
        MANIFEST.write_text(json.dumps(entries, indent=2) + "\n")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(f"{len(results) - failures}/{len(results)} runs as recorded")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
