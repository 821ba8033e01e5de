#!/usr/bin/env python3
"""Drives a ddpguard-lsp over stdio as an editor does and prints what it
publishes, one line a thing, for FileCheck:

  lsp_session.py FILE -- SERVER-COMMAND...

Opens FILE (its text, under its own path), then: asks for code actions on
the first diagnostic and applies the first one; sends the edited text; sends
FILE's text again in five quick edits (debounced: one check, of the last);
saves it (checked again); closes it. Prints every diagnostics notification (DIAGNOSTICS vVERSION, then
one DIAGNOSTIC and one RELATED line each), code action (ACTION, EDIT) and
window message (MESSAGE), positions 1-based LINE:COLUMN.
"""
import json
import os
import subprocess
import sys
import time

separator = sys.argv.index("--")
path = os.path.abspath(sys.argv[1])
server = sys.argv[separator + 1:]
uri = "file://" + path
text = open(path).read()
proc = subprocess.Popen(server, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
next_id = 0


def send(message):
    body = json.dumps(dict(jsonrpc="2.0", **message)).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def request(method, params):
    global next_id
    next_id += 1
    send({"id": next_id, "method": method, "params": params})
    return next_id


def receive():
    length = None
    while True:
        line = proc.stdout.readline()
        if not line:
            sys.exit("the server exited")
        line = line.strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(proc.stdout.read(length))


def where(r):
    return (f'{r["start"]["line"] + 1}:{r["start"]["character"] + 1}-'
            f'{r["end"]["line"] + 1}:{r["end"]["character"] + 1}')


def wait_for(wanted, timeout=60):
    """Messages until wanted(message) holds; prints what it meets."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        message = receive()
        method = message.get("method")
        if method in ("window/showMessage", "window/logMessage"):
            kind = {1: "error", 2: "warning", 3: "info", 4: "log"}[message["params"]["type"]]
            print(f'MESSAGE {method.split("/")[1]} {kind}: {message["params"]["message"]}')
        elif method == "textDocument/publishDiagnostics":
            params = message["params"]
            print(f'DIAGNOSTICS v{params.get("version")} {len(params["diagnostics"])}')
            for d in params["diagnostics"]:
                severity = {1: "error", 2: "warning", 3: "information", 4: "hint"}[d["severity"]]
                print(f'DIAGNOSTIC {where(d["range"])} {severity} {d.get("code", "-")} '
                      f'{d.get("source")}: {d["message"]}')
                for r in d.get("relatedInformation") or []:
                    print(f'RELATED {where(r["location"]["range"])} {r["message"]}')
        if wanted(message):
            return message
    sys.exit("nothing wanted arrived within the deadline")


def diagnostics(version):
    return wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                    and m["params"].get("version") == version)["params"]["diagnostics"]


def change(version, new_text):
    send({"method": "textDocument/didChange",
          "params": {"textDocument": {"uri": uri, "version": version},
                     "contentChanges": [{"text": new_text}]}})


def apply(edits, source):
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    for e in sorted(edits, key=lambda e: (e["range"]["start"]["line"],
                                          e["range"]["start"]["character"]), reverse=True):
        s, t = e["range"]["start"], e["range"]["end"]
        a, b = starts[s["line"]] + s["character"], starts[t["line"]] + t["character"]
        source = source[:a] + e["newText"] + source[b:]
    return source


initialize = request("initialize", {
    "processId": os.getpid(), "rootUri": "file://" + os.path.dirname(path),
    "capabilities": {"textDocument": {"publishDiagnostics": {"relatedInformation": True}}}})
wait_for(lambda m: m.get("id") == initialize)
send({"method": "initialized", "params": {}})
send({"method": "textDocument/didOpen",
      "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                  "text": text}}})
found = diagnostics(1)
if found:
    asked = request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": found[0]["range"],
        "context": {"diagnostics": [found[0]]}})
    actions = wait_for(lambda m: m.get("id") == asked)["result"]
    for action in actions:
        print(f'ACTION {action["kind"]} {action["title"]}')
        for edit in action["edit"]["changes"][uri]:
            print(f'EDIT {where(edit["range"])} {edit["newText"]!r}')
    if actions:
        change(2, apply(actions[0]["edit"]["changes"][uri], text))
        diagnostics(2)
for version in range(3, 8):
    change(version, text)
diagnostics(7)
send({"method": "textDocument/didSave", "params": {"textDocument": {"uri": uri}}})
diagnostics(7)
send({"method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}})
diagnostics(None)
shutdown = request("shutdown", None)
wait_for(lambda m: m.get("id") == shutdown)
send({"method": "exit"})
sys.exit(proc.wait(timeout=30))
