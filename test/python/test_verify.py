"""ddpguard-verify on Python programs (docs/verifier.md, "Python programs").

Every verdict comes from running verify/train_ddp.py on two Gloo ranks under
the real launcher (tools/ddpguard-verify/ddpguard-verify.py.in, configured
here as CMake would) with PyTorch's own DDP; the hash is checked against a
scalar transcription of runtime/src/HashCore.h.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "python"))

from ddpguard.verify._hash import (  # noqa: E402
    GOLDEN, LENGTH_SALT, MASK64, SECRETS, fmix64, hash_tensors, tensor_seed)

PROGRAM = HERE / "verify" / "train_ddp.py"


def reference_hash(data: bytes, seed: int) -> int:
    """HashCore.h word by word, as test/verify/hash_tests.cpp's reference."""
    padded = data + bytes(-len(data) % 64)
    lanes = [0] * 16
    for s in range(len(padded) // 64):
        m = (s * GOLDEN) & MASK64
        key = m ^ (m >> 29)
        for lane in range(8):
            (word,) = struct.unpack_from("<Q", padded, 64 * s + 8 * lane)
            v = word ^ SECRETS[lane] ^ key
            lanes[lane] = (lanes[lane] + (v & 0xFFFFFFFF) * (v >> 32)) & MASK64
            lanes[8 + lane] = (lanes[8 + lane] + word) & MASK64
    h = fmix64(seed ^ fmix64((len(data) + LENGTH_SALT) & MASK64))
    for lane in lanes:
        h = (fmix64(h ^ lane) + GOLDEN) & MASK64
    return fmix64(h) or 1


def test_hash_matches_the_runtime_arithmetic() -> None:
    g = torch.Generator().manual_seed(0)
    # 300001 floats: over 1 MiB, hashed on its own rather than in the shared pass.
    tensors = [torch.randn(n, generator=g) for n in (0, 1, 15, 16, 17, 250, 300001)]
    tensors += [torch.randint(-5, 5, (3, 7), generator=g), torch.tensor(True),
                torch.randn(4, 5, generator=g, dtype=torch.float64).t(),
                torch.randn(9, generator=g).to(torch.bfloat16), None]
    hashes = hash_tensors(tensors)
    for t, h in zip(tensors, hashes):
        if t is None:
            assert h == 0
            continue
        flat = t.contiguous().reshape(-1)
        data = bytes(flat.view(torch.uint8).tolist() if t.dtype != torch.bool
                     else flat.to(torch.uint8).tolist())
        assert h == reference_hash(data, tensor_seed(t)), (t.dtype, t.shape)
    for k in (5, 6):
        flipped = tensors[k].clone()
        flipped.view(torch.int32)[100] ^= 1
        assert hash_tensors([flipped])[0] != hashes[k]
    assert hash_tensors([tensors[5].reshape(10, 25)])[0] != hashes[5]  # shape is hashed


@pytest.fixture(scope="module")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ddpguard-verify configured as tools/ddpguard-verify/CMakeLists.txt does."""
    out = tmp_path_factory.mktemp("launcher")
    text = (ROOT / "tools" / "ddpguard-verify" / "ddpguard-verify.py.in").read_text()
    torchrun = Path(sys.executable).with_name("torchrun")
    for key, value in {"DDPGUARD_VERIFY_SOURCE_DIR": ROOT, "DDPGUARD_VERIFY_BINARY_DIR": out,
                       "DDPGUARD_VERIFY_TORCHRUN": torchrun, "CMAKE_COMMAND": "cmake"}.items():
        text = text.replace(f"@{key}@", str(value))
    path = out / "ddpguard-verify"
    path.write_text(text)
    return path


def verify(launcher: Path, tmp_path: Path, *args: str) -> tuple[int, str, dict]:
    report = tmp_path / "verdict.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDPGUARD_")}
    r = subprocess.run([sys.executable, str(launcher), "--work", str(tmp_path / "work"),
                        "--json", str(report), "--steps-progress", "--timeout", "300", "--",
                        sys.executable, str(PROGRAM), *args],
                       capture_output=True, text=True, env=env, timeout=400)
    return r.returncode, r.stdout + r.stderr, json.loads(report.read_text())


def test_training_agrees(launcher: Path, tmp_path: Path) -> None:
    code, out, doc = verify(launcher, tmp_path, "--steps", "4")
    assert code == 0, out
    assert ("ddpguard-verify: PASS: 2 rank(s) (gloo), 4 step(s), 9 checks: gradients and "
            "parameters bit-identical on every rank at every step; buffers identical after "
            "every broadcast") in out
    result = doc["result"]
    assert result["outcome"] == "ok" and result["max_gradient_divergence"] == 0
    assert "ddpguard-verify: rank 1 ddp#0 step 3 ok: gradients 6 identical, parameters 6 " \
           "identical" in out
    for s in result["summaries"]:
        assert s["status"] == "ok" and s["ddp"][0]["finished"]


def test_no_sync_backwards_are_not_steps(launcher: Path, tmp_path: Path) -> None:
    code, out, doc = verify(launcher, tmp_path, "--steps", "3", "--accumulate", "3")
    assert code == 0, out
    assert doc["result"]["steps"] == 3  # 9 backwards, 3 synchronised


def test_rank_local_buffers_are_measured(launcher: Path, tmp_path: Path) -> None:
    code, out, doc = verify(launcher, tmp_path, "--steps", "3", "--broadcast-off")
    assert code == 0, out
    buffer = doc["result"]["buffer_divergence"]
    assert buffer["mode"] == "measured" and buffer["abs"] > 0 and buffer["rank"] == 1
    assert "; buffers not synchronised: max divergence from rank 0 abs" in out


def test_parameter_divergence_is_caught_at_its_step(launcher: Path, tmp_path: Path) -> None:
    code, out, doc = verify(launcher, tmp_path, "--steps", "4", "--plant-param", "1:1")
    assert code == 1, out
    assert ("ddpguard-verify: FAIL: the ranks diverged at step 1: parameter '3.weight' on "
            "rank 1 differs from rank 0 after the optimizer step (max abs difference 0.001") in out
    d = doc["result"]["divergence"]
    assert (d["kind"], d["step"], d["rank"], d["tensor"]) == ("parameters", 1, 1, "3.weight")
    assert abs(d["max_abs"] - 1e-3) < 1e-4
    assert "ddp#0 step 0 ok" in out and "step 1 ok" not in out


def test_gradient_divergence_is_caught_at_its_step(launcher: Path, tmp_path: Path) -> None:
    code, out, doc = verify(launcher, tmp_path, "--steps", "4", "--bad-hook", "1:2")
    assert code == 1, out
    assert ("ddpguard-verify: FAIL: the ranks diverged at step 2: the gradient of parameter "
            "'") in out and "after the synchronised backward (max abs difference" in out
    d = doc["result"]["divergence"]
    assert (d["kind"], d["step"], d["rank"]) == ("gradients", 2, 1)
    assert d["max_abs"] > 0


def test_torchrun_switch_without_launcher(tmp_path: Path) -> None:
    """`torchrun -m ddpguard.verify script.py`: the summaries the launcher reads."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDPGUARD_")}
    env.update(PYTHONPATH=str(ROOT / "python"), OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo",
               DDPGUARD_VERIFY_JSON=str(tmp_path / "out.json"), DDPGUARD_VERIFY_PROGRESS="1")
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc-per-node", "2", "-m", "ddpguard.verify", str(PROGRAM),
                        "--steps", "2", "--accumulate", "2"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "trained 2 steps" in r.stdout
    for rank in (0, 1):
        s = json.loads((tmp_path / f"out.rank{rank}.json").read_text())
        assert (s["format"], s["rank"], s["world_size"], s["status"]) == \
            ("ddpguard-verify/1", rank, 2, "ok")
        (entry,) = s["ddp"]
        assert entry["steps_completed"] == 2 and entry["finished"]
        assert [c["kind"] for c in entry["steps"][1]["checks"]] == ["gradients", "parameters",
                                                                      "buffers"]
        assert f"ddpguard-verify: rank {rank} ddp#0 step 1 ok" in r.stderr
