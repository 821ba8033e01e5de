#!/usr/bin/env python3
"""Recreates the real-bug corpus's files, byte for byte, outside git.

Each entry of manifest.json names a public repository, a commit and the
files of its project folder with their sha256. This script writes them to
<cache>/<id>/<path in the repository> from a local snapshot of the repository
(a bare git directory, <mirrors>/<owner>+<name>/repo) or, with --fetch-raw,
from raw.githubusercontent.com at that commit. Every file is checked against
its sha256. An entry whose files cannot all be had is reported as skipped
with the reason; none is left out silently.

    materialize.py                      # every entry, into the default cache
    materialize.py --json ID ...        # some entries, a JSON report on stdout
    materialize.py describe OWNER/NAME COMMIT ROOT
                                        # the "files" table for a new entry
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.json"
DEFAULT_CACHE = Path(os.environ.get(
    "DDPGUARD_REAL_CORPUS_CACHE",
    Path.home() / ".cache" / "ddpguard" / "real-corpus" / "bugs"))
DEFAULT_MIRRORS = Path(os.environ.get("DDPGUARD_MIRRORS", "/work/.mirror"))

# What a project folder contributes to a check: its Python sources and the
# files the checker reads for roots and torch pins.
PROJECT_FILE_NAMES = ("pyproject.toml", "setup.cfg")


def is_project_file(path):
    name = path.rsplit("/", 1)[-1]
    return (name.endswith(".py") or name in PROJECT_FILE_NAMES
            or (name.startswith("requirements") and name.endswith(".txt")))


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def mirror_dir(mirrors, repo):
    """The snapshot's git directory: <owner>+<name>/repo, bare or with a .git."""
    checkout = mirrors / repo.replace("/", "+") / "repo"
    return checkout / ".git" if (checkout / ".git").is_dir() else checkout


def git(git_dir, *args):
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True,
                          capture_output=True).stdout


class Source:
    """Where one entry's files come from: a snapshot, else raw files."""

    def __init__(self, entry, mirrors, fetch_raw):
        self.repo = entry["repo"]
        self.commit = entry["commit"]
        self.git_dir = mirror_dir(mirrors, self.repo)
        self.fetch_raw = fetch_raw
        self.has_commit = False
        if self.git_dir.is_dir():
            probe = subprocess.run(
                ["git", f"--git-dir={self.git_dir}", "cat-file", "-e", f"{self.commit}^{{commit}}"],
                capture_output=True)
            self.has_commit = probe.returncode == 0

    def why_unavailable(self):
        if self.has_commit or self.fetch_raw:
            return None
        if not self.git_dir.is_dir():
            return f"no snapshot of {self.repo} at {self.git_dir} (and --fetch-raw not given)"
        return f"the snapshot at {self.git_dir} lacks commit {self.commit}"

    def read(self, path):
        if self.has_commit:
            return git(self.git_dir, "cat-file", "blob", f"{self.commit}:{path}")
        url = f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{path}"
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.read()


def materialize(entry, cache, mirrors, fetch_raw):
    """Writes one entry's files; returns its status as a dict."""
    dest = cache / entry["id"]
    status = {"id": entry["id"], "path": str(dest), "root": str(dest / entry["root"])}
    missing = {path: digest for path, digest in entry["files"].items()
               if not (dest / path).is_file()
               or sha256((dest / path).read_bytes()) != digest}
    if not missing:
        return {**status, "status": "ready"}
    source = Source(entry, mirrors, fetch_raw)
    reason = source.why_unavailable()
    if reason:
        return {**status, "status": "skipped", "reason": reason}
    for path, digest in missing.items():
        try:
            data = source.read(path)
        except (subprocess.CalledProcessError, urllib.error.URLError, OSError) as error:
            return {**status, "status": "skipped",
                    "reason": f"{path}: could not be read ({type(error).__name__})"}
        if sha256(data) != digest:
            return {**status, "status": "skipped",
                    "reason": f"{path}: sha256 {sha256(data)} is not the manifest's {digest}"}
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return {**status, "status": "ready"}


def describe(repo, commit, root, mirrors):
    """The files table of a new entry: every project file under root."""
    git_dir = mirror_dir(mirrors, repo)
    listing = git(git_dir, "ls-tree", "-r", "--name-only", commit,
                  *([root] if root else [])).decode().splitlines()
    return {path: sha256(git(git_dir, "cat-file", "blob", f"{commit}:{path}"))
            for path in sorted(listing) if is_project_file(path)}


def load_manifest():
    return json.loads(MANIFEST.read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--mirrors", type=Path, default=DEFAULT_MIRRORS)
    parser.add_argument("--fetch-raw", action="store_true",
                        help="read files missing from the snapshots from raw.githubusercontent.com")
    parser.add_argument("--json", action="store_true", help="one JSON report on stdout")
    parser.add_argument("ids", nargs="*", help="entries to materialize (default: all)")
    if sys.argv[1:2] == ["describe"]:
        repo, commit, root = (sys.argv[2:5] + [""])[:3]
        print(json.dumps(describe(repo, commit, root, DEFAULT_MIRRORS), indent=2))
        return 0
    args = parser.parse_args()
    entries = load_manifest()
    known = {entry["id"] for entry in entries}
    unknown = [entry_id for entry_id in args.ids if entry_id not in known]
    if unknown:
        parser.error(f"no such entries: {', '.join(unknown)}")
    chosen = [entry for entry in entries if not args.ids or entry["id"] in args.ids]
    report = [materialize(entry, args.cache, args.mirrors, args.fetch_raw) for entry in chosen]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for status in report:
            line = f"{status['status']:8} {status['id']}"
            print(line + (f": {status['reason']}" if "reason" in status else ""))
        ready = sum(status["status"] == "ready" for status in report)
        print(f"{ready} ready, {len(report) - ready} skipped, of {len(report)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
