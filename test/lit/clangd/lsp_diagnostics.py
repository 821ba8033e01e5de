#!/usr/bin/env python3
"""Opens one file in a clangd over LSP and prints the diagnostics clangd
publishes for it, one per line: LINE:COLUMN: SEVERITY: CODE: MESSAGE (its
first line; clangd appends the related notes below it).

  lsp_diagnostics.py <clangd> <file> [clangd args...]
"""
import json
import os
import subprocess
import sys
import time

clangd, path = sys.argv[1], os.path.abspath(sys.argv[2])
uri = "file://" + path
extra = sys.argv[3:]
log = [] if any(a.startswith("--log=") for a in extra) else ["--log=error"]
proc = subprocess.Popen([clangd, *log, *extra],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def send(message):
    body = json.dumps(dict(jsonrpc="2.0", **message)).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def receive():
    length = None
    while True:
        line = proc.stdout.readline()
        if not line:
            sys.exit("clangd exited before publishing diagnostics")
        line = line.strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(proc.stdout.read(length))


send({"id": 1, "method": "initialize",
      "params": {"processId": os.getpid(),
                 "rootUri": "file://" + os.path.dirname(path),
                 "capabilities": {}}})
send({"method": "initialized", "params": {}})
send({"method": "textDocument/didOpen",
      "params": {"textDocument": {"uri": uri, "languageId": "cpp", "version": 1,
                                  "text": open(path).read()}}})

deadline = time.time() + 120
diagnostics = None
while time.time() < deadline:
    message = receive()
    if (message.get("method") == "textDocument/publishDiagnostics"
            and message["params"]["uri"] == uri):
        diagnostics = message["params"]["diagnostics"]
        break
send({"id": 2, "method": "shutdown"})
send({"method": "exit"})
proc.wait(timeout=30)
if diagnostics is None:
    sys.exit("no diagnostics published within the deadline")
severity = {1: "error", 2: "warning", 3: "information", 4: "hint"}
for d in diagnostics:
    start = d["range"]["start"]
    print(f'{start["line"] + 1}:{start["character"] + 1}: '
          f'{severity.get(d.get("severity"), "?")}: {d.get("code", "")}: '
          f'{d["message"].splitlines()[0]}')
