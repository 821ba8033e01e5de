"""`pip install` of the repository gives a working `ddpguard` and
`ddpguard-explain` (docs/python-checker.md#installing, docs/explain.md#installing).

The wheel is built once per run, offline: scikit-build-core and what it
requires come from the wheelhouse (scripts/requirements-wheel-build.txt,
downloaded by scripts/setup.sh), the tree-sitter sources too. It is a real
`pip wheel` of the repository; to keep it quick in CI it builds in
build-wheel/ beside the main build/, at the same depth and with the same
compilers (CC and CXX, which CTest sets to the build's), so that ccache,
keyed on paths relative to the clone by CCACHE_BASEDIR, gives back the
objects build/ compiled (24 of 25). Measured on 2 shared cores: the whole
test 21 s so, 211 s with nothing cached; a second run reuses build-wheel/
itself (16 s).

Each fresh venv sees this interpreter's torch through a .pth file, so torch
is not downloaded again; ddpguard itself comes only from the wheel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PROGRAM = HERE / "programs" / "inplace_sigmoid_mul.py"
TWO_VIEWS = ROOT / "test" / "lit" / "Inputs" / "python" / "two_view.py"
# sh -c script: $0 an empty folder, then the command to run without LLVM.
HIDE_LLVM = """
mount --bind "$0" /usr/lib/llvm-19 || exit 125
for lib in /usr/lib/*/libLLVM* /usr/lib/*/libclang*; do
  [ -e "$lib" ] && { mount --bind /dev/null "$lib" || exit 125; }
done
exec "$@"
"""


def wheelhouse() -> Path:
    if "DDPGUARD_WHEELHOUSE" in os.environ:
        return Path(os.environ["DDPGUARD_WHEELHOUSE"])
    cache = os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache"))
    return Path(cache) / "ddpguard" / "wheels"


def call(*command: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_INDEX_URL")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["CCACHE_BASEDIR"] = str(ROOT)
    env.setdefault("OMP_NUM_THREADS", "1")
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=1200)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not list(wheelhouse().glob("scikit_build_core-*.whl")):
        pytest.fail(f"scikit-build-core is not in {wheelhouse()}: run scripts/setup.sh")
    dist = tmp_path_factory.mktemp("dist")
    built = call(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-index",
                 "--find-links", str(wheelhouse()), "-w", str(dist),
                 "--config-settings=build-dir=build-wheel", str(ROOT))
    assert built.returncode == 0, built.stdout + built.stderr
    (found,) = dist.glob("ddpguard-*.whl")
    return found


@pytest.fixture
def venv(tmp_path: Path, wheel: Path) -> Path:
    venv = tmp_path / "venv"
    made = call(sys.executable, "-m", "venv", str(venv))
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    site = call(str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    (Path(site.stdout.strip()) / "torch-under-test.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n")
    # Without the extra: torch (ddpguard[explain]) is the interpreter's, seen
    # through the .pth file.
    installed = call(str(python), "-m", "pip", "install", "--no-index", str(wheel))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return venv


def test_explainer_from_the_wheel(venv: Path) -> None:
    python = venv / "bin" / "python"
    where = call(str(python), "-c", "import ddpguard.explain, sys; print(ddpguard.__file__)")
    assert where.returncode == 0 and where.stdout.startswith(str(venv)), where
    oracle = call(sys.executable, PROGRAM.name, cwd=PROGRAM.parent)
    assert oracle.returncode != 0
    for command in ([str(python), "-m", "ddpguard.explain", PROGRAM.name],
                    [str(venv / "bin" / "ddpguard-explain"), PROGRAM.name]):
        run = call(*command, cwd=PROGRAM.parent)
        assert run.returncode == oracle.returncode, run.stderr
        assert "ddpguard explain: this backward fails" in run.stderr, run.stderr
        assert f"{PROGRAM.name}:9 " in run.stderr  # the mul_ that wrote the saved output


def test_checker_from_the_wheel(venv: Path, tmp_path: Path) -> None:
    ddpguard = venv / "bin" / "ddpguard"
    # Linked statically: no LLVM or Clang shared library, declared or resolved.
    dynamic = call("readelf", "--dynamic", str(ddpguard))
    assert dynamic.returncode == 0, dynamic.stderr
    needed = [line.split("[")[1].rstrip("]") for line in dynamic.stdout.splitlines()
              if "(NEEDED)" in line]
    assert needed and not [n for n in needed if "LLVM" in n or "clang" in n], needed
    resolved = call("ldd", str(ddpguard))
    assert resolved.returncode == 0 and "not found" not in resolved.stdout, resolved.stdout
    assert "llvm" not in resolved.stdout.lower() and "clang" not in resolved.stdout, \
        resolved.stdout

    # The two-view script (no torch pin above it: judged by torch 2.11.0).
    # Where root may (CI), it runs with LLVM and Clang hidden: LLVM 19's
    # folder behind an empty one, every libLLVM*/libclang* behind /dev/null
    # (the CMake build's dynamic CLI fails so: "file too short").
    script = tmp_path / "project" / "train.py"
    script.parent.mkdir()
    shutil.copy(TWO_VIEWS, script)
    check = [str(ddpguard), "--output-format=full", str(script)]
    if Path("/usr/lib/llvm-19").is_dir() and call("unshare", "--mount", "true").returncode == 0:
        (tmp_path / "empty").mkdir()
        check = ["unshare", "--mount", "sh", "-c", HIDE_LLVM, str(tmp_path / "empty"), *check]
    found = call(*check)
    assert found.returncode == 1, found.stdout + found.stderr
    # Paths are printed as ruff prints them: relative to the current folder
    # where the file is under it.
    second_forward = "train.py:8:12: warning: forward call on DDP-wrapped 'model'"
    assert second_forward in found.stdout, found.stdout
    assert "judged by torch 2.11.0" in found.stdout, found.stdout

    fixed = call(str(ddpguard), "--fix", str(script))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "model = DDP(resnet50(), broadcast_buffers=False)\n" in script.read_text()
    clean = call(str(ddpguard), str(script))
    assert clean.returncode == 0 and "All checks passed!" in clean.stdout, \
        clean.stdout + clean.stderr
