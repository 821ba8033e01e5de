"""Runs a command and checks what it did: exit status, output, a JSON file,
time. Used by test/verify/CMakeLists.txt.

    run_check.py [--exit N] [--contains TEXT]... [--absent TEXT]...
                 [--json FILE] [--expect PYTHON-EXPR]... [--max-seconds S]
                 [--env NAME=VALUE]... -- COMMAND...

--expect expressions see the loaded JSON as `j`. Prints the command's output,
then each failed expectation; exits 1 if any failed.
"""
import argparse
import json
import os
import subprocess
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--exit", type=int, default=0)
    p.add_argument("--contains", action="append", default=[])
    p.add_argument("--absent", action="append", default=[])
    p.add_argument("--json")
    p.add_argument("--expect", action="append", default=[])
    p.add_argument("--max-seconds", type=float)
    p.add_argument("--env", action="append", default=[])
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    env = dict(os.environ)
    for item in a.env:
        name, _, value = item.partition("=")
        env[name] = value
    if a.json and os.path.exists(a.json):
        os.unlink(a.json)
    start = time.monotonic()
    r = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=env, errors="replace")
    elapsed = time.monotonic() - start
    sys.stdout.write(r.stdout)
    failures = []
    if r.returncode != a.exit:
        failures.append(f"exit status {r.returncode}, expected {a.exit}")
    for text in a.contains:
        if text not in r.stdout:
            failures.append(f"output lacks {text!r}")
    for text in a.absent:
        if text in r.stdout:
            failures.append(f"output has {text!r}")
    if a.max_seconds is not None and elapsed > a.max_seconds:
        failures.append(f"took {elapsed:.1f} s, more than {a.max_seconds} s")
    if a.json:
        try:
            with open(a.json) as f:
                j = json.load(f)
        except (OSError, ValueError) as e:
            failures.append(f"cannot read {a.json}: {e}")
            j = None
        if j is not None:
            for expr in a.expect:
                try:
                    if not eval(expr, {"j": j}):
                        failures.append(f"JSON expectation failed: {expr}")
                except Exception as e:  # noqa: BLE001 - report any error
                    failures.append(f"JSON expectation {expr} raised {e!r}")
    print(f"\n[run_check] {elapsed:.1f} s, exit {r.returncode}")
    for f in failures:
        print(f"[run_check] FAIL: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
