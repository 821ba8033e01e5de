"""The Python checker's two fixes, run (docs/python-checker.md, "Fixes"):
on 2 Gloo ranks with PyTorch's DDP, torch 2.11.0 ($DDPGUARD_PYTHON) and
2.15.0 ($DDPGUARD_PYTHON_TORCH215). The no_sync() fix trains and starts every
step from rank 0's buffers, and leaves rank 0's final state what the
program as written computes where it trains (2.15.0); the broadcast fix
trains but lets the ranks' buffers drift."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

PROGRAM = Path(__file__).resolve().parent / "fixes" / "two_view_modes.py"
PYTHONS = {"2.11": os.environ.get("DDPGUARD_PYTHON"),
           "2.15": os.environ.get("DDPGUARD_PYTHON_TORCH215")}


@functools.lru_cache(maxsize=None)
def run(version: str, mode: str) -> dict[int, dict]:
    python = PYTHONS[version]
    if not python:
        pytest.fail(f"no interpreter for torch {version}: set DDPGUARD_PYTHON"
                    f"{'' if version == '2.11' else '_TORCH215'}")
    with tempfile.TemporaryDirectory() as results:
        env = dict(os.environ, MODE=mode, OMP_NUM_THREADS="1", RESULTS=results)
        proc = subprocess.run(
            [python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
             str(PROGRAM)], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return {rank: json.loads((Path(results) / f"rank{rank}.json").read_text())
                for rank in (0, 1)}


def first_forwards(spreads: list[float]) -> list[float]:
    """The spreads each step's first forward saw (two forwards a step)."""
    return spreads[::2]


def test_as_written_fails_on_2_11_and_trains_on_2_15() -> None:
    assert not run("2.11", "as-written")[1]["trains"]
    assert run("2.15", "as-written")[1]["trains"]


@pytest.mark.parametrize("version", ["2.11", "2.15"])
def test_no_sync_fix_trains_and_keeps_buffers_in_sync(version: str) -> None:
    ranks = run(version, "no-sync")
    assert ranks[0]["trains"] and ranks[1]["trains"]
    assert ranks[1]["parameter_spread"] == 0
    assert first_forwards(ranks[1]["buffer_spreads"]) == [0.0] * 4
    # Within a step the later forward sees the rank's own statistics.
    assert any(s > 0 for s in ranks[1]["buffer_spreads"][1::2])


def test_no_sync_fix_leaves_rank_0_what_the_program_computes() -> None:
    assert run("2.15", "no-sync")[0]["state"] == run("2.15", "as-written")[0]["state"]


def test_broadcast_fix_trains_but_buffers_drift() -> None:
    ranks = run("2.11", "broadcast-off")
    assert ranks[1]["trains"] and ranks[1]["parameter_spread"] == 0
    assert all(s > 0 for s in first_forwards(ranks[1]["buffer_spreads"])[1:])
