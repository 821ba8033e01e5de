"""The package builds as a wheel and, installed into a fresh virtual
environment, explains a failing program (docs/explain.md#installing).

The wheel is built offline from a copy of the files the package needs (the
setuptools of the interpreter under test, no build isolation, so it needs
setuptools 70.1 or later, which builds wheels without the `wheel` package:
torch 2.15 requires 77+), so the test never writes into the source tree. The fresh venv sees this interpreter's
torch through a .pth file, so torch is not downloaded again; the package
itself comes only from the wheel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PROGRAM = HERE / "programs" / "inplace_sigmoid_mul.py"


def call(*command: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_INDEX_URL")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.setdefault("OMP_NUM_THREADS", "1")
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def test_wheel_in_fresh_venv(tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(ROOT / "python", source / "python",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(ROOT / "pyproject.toml", source)
    (source / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "explain.md", source / "docs")
    built = call(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                 "--no-index", "-w", str(tmp_path / "dist"), str(source))
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (tmp_path / "dist").glob("ddpguard-*.whl")

    venv = tmp_path / "venv"
    made = call(sys.executable, "-m", "venv", str(venv))
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    site = call(str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    (Path(site.stdout.strip()) / "torch-under-test.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n")
    # --no-deps: torch (the dependency) is the interpreter's, seen through the
    # .pth file; resolving torch's own dependencies would look for them in
    # the new venv first, and offline.
    installed = call(str(python), "-m", "pip", "install", "--no-index", "--no-deps",
                     str(wheel))
    assert installed.returncode == 0, installed.stdout + installed.stderr

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
