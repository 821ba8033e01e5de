"""Helpers for whole-repo.test.

tty <cwd> <command...>: runs the command in <cwd> with standard error on a
  pseudo-terminal and standard output on a pipe; prints what reached the
  terminal, then the command's standard output.
locations <format> <file> <file:line>...: the findings of a JSON, SARIF or
  rdjsonl report are exactly the given file:line pairs (file names relative
  to the repository root)."""
import json
import os
import pty
import subprocess
import sys


def tty(cwd, command):
    master, slave = pty.openpty()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE,
                               stderr=slave)
    os.close(slave)
    terminal = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the other side is closed
            break
        if not chunk:
            break
        terminal += chunk
    out = process.stdout.read()
    process.wait()
    sys.stdout.write(terminal.decode().replace("\r\n", "\n"))
    sys.stdout.write("--- stdout ---\n")
    sys.stdout.write(out.decode())
    print("exit", process.returncode)


def tail(path):
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:])


def locations(fmt, path, expected):
    found = set()
    text = open(path).read()
    if fmt == "json":
        for finding in json.loads(text)["findings"]:
            found.add(f"{tail(finding['file'])}:{finding['line']}")
    elif fmt == "sarif":
        for result in json.loads(text)["runs"][0]["results"]:
            location = result["locations"][0]["physicalLocation"]
            found.add(f"{tail(location['artifactLocation']['uri'])}:"
                      f"{location['region']['startLine']}")
    elif fmt == "rdjsonl":
        for line in text.splitlines():
            diagnostic = json.loads(line)
            location = diagnostic["location"]
            found.add(f"{tail(location['path'])}:"
                      f"{location['range']['start']['line']}")
    if found != set(expected):
        sys.exit(f"{fmt}: findings at {sorted(found)}, expected {sorted(expected)}")


if __name__ == "__main__":
    if sys.argv[1] == "tty":
        tty(sys.argv[2], sys.argv[3:])
    else:
        locations(sys.argv[2], sys.argv[3], sys.argv[4:])
