#!/usr/bin/env python3
"""expect_exit.py CODE COMMAND...: runs COMMAND, passes its output through,
and succeeds only if it exited with CODE."""
import subprocess
import sys

code = int(sys.argv[1])
result = subprocess.run(sys.argv[2:])
if result.returncode != code:
    sys.stderr.write(f"expected exit status {code}, got {result.returncode}\n")
    sys.exit(1)
