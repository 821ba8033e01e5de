#!/usr/bin/env python3
"""Editor latency of the check in ddpguard-clangd, on the bundled example
(examples/contrastive/train.cpp, which includes <torch/torch.h>).

1. clangd's own measure (what its FastCheckFilter table is made from):
   `ddpguard-clangd --check=FILE --check-tidy-time`, the check's share of an
   AST build.
2. Edit to diagnostic: an LSP session opens the file (the preamble is built
   once), then sends edits below the training loop; each edit's time until
   clangd publishes diagnostics for that version, with the check enabled
   in .clangd, against the same session with no clang-tidy check (baseline),
   interleaved. Prints the median times and their ratio.

  python3 bench/clangd/run.py --build build [--edits N]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from torch_flags import torch_flags  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = "ddp-multiple-forward-before-backward"


def workspace(root, name, flags, with_check):
    directory = os.path.join(root, name)
    os.makedirs(directory)
    shutil.copy(os.path.join(REPO, "examples", "contrastive", "train.cpp"), directory)
    tidy = ("Diagnostics:\n  ClangTidy:\n    Add: [%s]\n" % CHECK if with_check
            else "Diagnostics:\n  ClangTidy:\n    Remove: ['*']\n")
    with open(os.path.join(directory, ".clangd"), "w") as f:
        f.write("CompileFlags:\n  Add: [%s]\n%s" % (", ".join(flags), tidy))
    return os.path.join(directory, "train.cpp")


class Session:
    def __init__(self, clangd, path):
        self.uri = "file://" + path
        self.text = open(path).read()
        self.version = 1
        self.proc = subprocess.Popen([clangd, "--log=error"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.send({"id": 1, "method": "initialize",
                   "params": {"processId": os.getpid(),
                              "rootUri": "file://" + os.path.dirname(path),
                              "capabilities": {"textDocument": {"publishDiagnostics": {
                                  "versionSupport": True}}}}})
        self.send({"method": "initialized", "params": {}})
        self.send({"method": "textDocument/didOpen",
                   "params": {"textDocument": {"uri": self.uri, "languageId": "cpp",
                                               "version": 1, "text": self.text}}})
        self.wait_for(1)

    def send(self, message):
        body = json.dumps(dict(jsonrpc="2.0", **message)).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def receive(self):
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                sys.exit("clangd exited")
            line = line.strip()
            if not line:
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.proc.stdout.read(length))

    def wait_for(self, version):
        while True:
            m = self.receive()
            if (m.get("method") == "textDocument/publishDiagnostics"
                    and m["params"]["uri"] == self.uri
                    and m["params"].get("version") == version):
                return m["params"]["diagnostics"]

    def edit(self):
        """Appends a line and times it until the diagnostics for it arrive."""
        self.version += 1
        self.text += "// edit %d\n" % self.version
        start = time.perf_counter()
        self.send({"method": "textDocument/didChange",
                   "params": {"textDocument": {"uri": self.uri, "version": self.version},
                              "contentChanges": [{"text": self.text}]}})
        diagnostics = self.wait_for(self.version)
        return time.perf_counter() - start, diagnostics

    def close(self):
        self.send({"id": 2, "method": "shutdown"})
        self.send({"method": "exit"})
        self.proc.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    parser.add_argument("--edits", type=int, default=10)
    args = parser.parse_args()
    clangd = os.path.abspath(os.path.join(args.build, "bin", "ddpguard-clangd"))
    flags = torch_flags(os.path.abspath(args.build))

    with tempfile.TemporaryDirectory(prefix="ddpguard-bench-clangd-") as root:
        checked = workspace(root, "check", flags, True)
        baseline = workspace(root, "baseline", flags, False)

        # clangd discards a measurement when its timings are unstable.
        for _ in range(3):
            out = subprocess.run([clangd, "--check=" + checked, "--check-tidy-time",
                                  "--clang-tidy-checks=-*," + CHECK,
                                  "--check-locations=false", "--log=info"],
                                 capture_output=True, text=True, cwd=os.path.dirname(checked))
            share = re.search(re.escape(CHECK) + r" = (-?[0-9.]+)%", out.stderr)
            base = re.search(r"Baseline = ([0-9]+) ns", out.stderr)
            if share and base:
                break
        if share and base:
            print("clangd --check-tidy-time: AST build %.0f ms, %s %+.0f%% (ratio %.3f)"
                  % (int(base.group(1)) / 1e6, CHECK, float(share.group(1)),
                     1 + float(share.group(1)) / 100))
        else:
            print("clangd --check-tidy-time: no stable measurement:\n" + out.stderr[-2000:])

        sessions = {"check": Session(clangd, checked), "baseline": Session(clangd, baseline)}
        times = {name: [] for name in sessions}
        for _ in range(args.edits):
            for name, session in sessions.items():
                elapsed, diagnostics = session.edit()
                if name == "check" and not any(d.get("code") == CHECK for d in diagnostics):
                    sys.exit("the check's diagnostic is missing after an edit")
                times[name].append(elapsed)
        for session in sessions.values():
            session.close()

    check, base = statistics.median(times["check"]), statistics.median(times["baseline"])
    print("edit to diagnostic, median of %d edits: with the check %.0f ms, without "
          "clang-tidy %.0f ms; ratio %.3f" % (args.edits, check * 1e3, base * 1e3, check / base))


if __name__ == "__main__":
    main()
