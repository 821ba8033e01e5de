#!/usr/bin/env python3
"""Recreates the real clean corpus from pinned wheels (docs/real-corpus.md).

    materialize.py OUT [--requirements FILE] [--wheelhouse DIR] [--python PY]

For each pin of requirements.txt (`name==version --hash=sha256:...`): the
wheel is taken from the wheelhouse (DDPGUARD_WHEELHOUSE, default
~/.cache/ddpguard/wheels) when a file there has the pinned hash, else
downloaded into it by `pip download --no-deps --only-binary :all:
--require-hashes` (no network is used when the wheelhouse has it). Its
package folders, whole, are unpacked into OUT/<name>/, which stands for the
repository root: `OUT/timm/timm/...`. A top-level `tests` or `test` package
that a wheel ships beside its own is left out: it is the project's test
suite installed by mistake, not the package.

One line per pin: `<name>: materialized (<N> .py files)`, `<name>: skipped:
<reason>` (the index could not be reached) or `<name>: error: <reason>`. The
index serving a wheel with another hash, or a wheel whose members would
land outside OUT/<name>, is an error. Unpacking is
atomic and idempotent: a folder whose stamp names the pinned hash is kept.
Exit status: 0 when every pin was materialized or skipped, 2 on an error.
"""
import argparse
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
STAMP = ".ddpguard-materialized"
LEFT_OUT = {"tests", "test"}
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)\s+--hash=sha256:([0-9a-f]{64})\s*$")


def default_wheelhouse():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("DDPGUARD_WHEELHOUSE") or os.path.join(cache, "ddpguard", "wheels")


def read_pins(path):
    """[(name, version, sha256, line)] of a --require-hashes requirements file."""
    pins = []
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            m = PIN.match(line)
            if not m:
                raise SystemExit("%s:%d: want 'name==version --hash=sha256:HEX', got %r"
                                 % (path, number, line))
            pins.append((m.group(1), m.group(2), m.group(3), line))
    return pins


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def wheel_in(wheelhouse, name, version, want):
    """The wheelhouse's wheel of name==version with hash want, or None."""
    stem = re.sub(r"[-_.]+", "_", name).lower()
    for path in sorted(glob.glob(os.path.join(glob.escape(wheelhouse), "*.whl"))):
        base = os.path.basename(path)
        parts = base.split("-")
        if len(parts) >= 3 and parts[0].lower() == stem and parts[1] == version \
                and sha256(path) == want:
            return path
    return None


def pip_download(python, dest, requirement, hashes):
    """Runs pip download for one requirement; returns (exit status, output)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
        req.write(requirement + "\n")
    command = [python, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
               "-d", dest, "-r", req.name]
    if hashes:
        command.insert(-2, "--require-hashes")
    try:
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=900)
        return proc.returncode, proc.stdout.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "pip download did not run: %s" % e
    finally:
        os.unlink(req.name)


def download(python, wheelhouse, name, version, line):
    """pip downloads one pinned wheel into the wheelhouse. Returns None, or
    ("skipped", why) when the index cannot be had, or ("error", why) when it
    serves a wheel whose hash is not the pinned one."""
    os.makedirs(wheelhouse, exist_ok=True)
    status, output = pip_download(python, wheelhouse, line, hashes=True)
    if status == 0:
        return None
    # pip says both "no index" and "wrong hash" with exit status 1: the same
    # wheel fetched without the hash check tells them apart.
    with tempfile.TemporaryDirectory() as probe:
        unchecked, _ = pip_download(python, probe, "%s==%s" % (name, version), hashes=False)
        if unchecked == 0:
            got = [sha256(path) for path in glob.glob(os.path.join(probe, "*.whl"))]
            return "error", "the index serves %s==%s with sha256 %s, not the pinned one" % (
                name, version, ", ".join(got) or "(no wheel)")
    errors = [l.strip() for l in output.splitlines() if l.startswith("ERROR")]
    lines = errors or output.strip().splitlines()
    return "skipped", "not in the wheelhouse and pip download failed (exit %s): %s" % (
        status, lines[-1] if lines else "no output")


def package_members(archive):
    """The members of the wheel's top-level package folders."""
    members = []
    for info in archive.infolist():
        parts = info.filename.split("/")
        top = parts[0]
        if len(parts) < 2 or top.endswith((".dist-info", ".data")) or top in LEFT_OUT:
            continue
        if info.filename.startswith("/") or ".." in parts or "\\" in info.filename:
            raise ValueError("member %r would land outside the folder" % info.filename)
        members.append(info)
    return members


def unpack(wheel, dest, want):
    """Unpacks wheel's packages into dest atomically; returns the .py count."""
    stamp = os.path.join(dest, STAMP)
    if os.path.isfile(stamp):
        with open(stamp, encoding="utf-8") as f:
            if f.read().strip() == want:
                return count_py(dest)
    parent = os.path.dirname(dest)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="." + os.path.basename(dest) + ".", dir=parent)
    try:
        with zipfile.ZipFile(wheel) as archive:
            for info in package_members(archive):
                if info.is_dir():
                    continue
                target = os.path.join(tmp, *info.filename.split("/"))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with archive.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
        with open(os.path.join(tmp, STAMP), "w", encoding="utf-8") as f:
            f.write(want + "\n")
        if os.path.lexists(dest):
            shutil.rmtree(dest)
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return count_py(dest)


def count_py(folder):
    """The .py files ddpguard checks: hidden folders and __pycache__ skipped."""
    count = 0
    for _, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        count += sum(f.endswith(".py") for f in files)
    return count


def materialize_pin(pin, out, wheelhouse, python):
    """One pin into out/<name>: ("materialized", "<N> .py files"),
    ("skipped", why) or ("error", why)."""
    name, version, want, line = pin
    wheel = wheel_in(wheelhouse, name, version, want)
    if wheel is None:
        failed = download(python, wheelhouse, name, version, line)
        if failed:
            return failed
        wheel = wheel_in(wheelhouse, name, version, want)
        if wheel is None:
            return "error", "pip downloaded no wheel of %s==%s with the pinned hash" % (
                name, version)
    try:
        files = unpack(wheel, os.path.join(out, name), want)
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        return "error", "%s: %s" % (os.path.basename(wheel), e)
    return "materialized", "%d .py files" % files


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", help="folder that receives one folder per package")
    p.add_argument("--requirements", default=os.path.join(HERE, "requirements.txt"))
    p.add_argument("--wheelhouse", default=default_wheelhouse())
    p.add_argument("--python", default=sys.executable, help="the interpreter whose pip downloads")
    args = p.parse_args()
    status = 0
    for pin in read_pins(args.requirements):
        state, detail = materialize_pin(pin, args.out, args.wheelhouse, args.python)
        if state == "materialized":
            print("%s: materialized (%s)" % (pin[0], detail), flush=True)
        else:
            print("%s: %s: %s" % (pin[0], state, detail), flush=True)
            status = 2 if state == "error" else status
    return status


if __name__ == "__main__":
    sys.exit(main())
