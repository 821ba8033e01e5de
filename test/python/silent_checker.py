"""ddpguard's silent-write-before-backward on the programs of silent/,
against their labels (``# silent: expect``, ``# silent: written``), which
python.explain.silent.* checks by running each program against the
clone-at-pack reference.

A silent program must be reported at every line marked written and nowhere
else; a program that trains or raises must get no finding of the check.
Prints precision and recall over (program, line) pairs and exits 1 when
either is below 1.00. One run of the checker over the folder: about a
second.

    python silent_checker.py --ddpguard build-checker/bin/ddpguard
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

CHECK = "silent-write-before-backward"
SILENT = Path(__file__).resolve().parent / "silent"


def expected(path: Path) -> set[tuple[str, int]]:
    text = path.read_text().splitlines()
    labels = [m.group(1) for line in text
              if (m := re.match(r"# silent: expect (\w+)", line))]
    if len(labels) != 1:
        sys.exit(f"{path.name}: no single '# silent: expect' label")
    if labels[0] != "silent":
        return set()
    return {(path.name, number) for number, line in enumerate(text, 1)
            if re.search(r"#\s*silent: written\b", line)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ddpguard", required=True)
    args = parser.parse_args()
    programs = sorted(SILENT.glob("*.py"))
    if not programs:
        sys.exit(f"no program in {SILENT}")
    want = set().union(*(expected(p) for p in programs))
    run = subprocess.run(
        [args.ddpguard, "--output-format=json", f"--select={CHECK}",
         *map(str, programs)],
        capture_output=True, text=True, check=False)
    if run.returncode not in (0, 1):
        sys.exit(f"ddpguard exited {run.returncode}:\n{run.stderr}")
    report = json.loads(run.stdout)
    if report["errors"]:
        sys.exit(f"ddpguard errors: {report['errors']}")
    got = {(Path(f["file"]).name, f["line"]) for f in report["findings"]
           if f["check"] == CHECK}
    true = got & want
    precision = len(true) / len(got) if got else 1.0
    recall = len(true) / len(want) if want else 1.0
    for name, line in sorted(got - want):
        print(f"false finding: {name}:{line}")
    for name, line in sorted(want - got):
        print(f"missed: {name}:{line}")
    print(f"{len(programs)} programs, {len(want)} silent writes: "
          f"precision {precision:.2f}, recall {recall:.2f}")
    return 0 if precision == 1.0 and recall == 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
