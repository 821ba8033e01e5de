"""ddpguard's content hash (runtime/src/HashCore.h) in torch ops.

The same 64-bit value as the C++ ``ddpguard::hash_tensors`` for the same
dtype, shape and bytes: words are little-endian int64 in 64-byte stripes of
eight lanes; each lane sums its words and the 32x32-bit products of the words
mixed with a per-lane and per-stripe key; the lanes then go through
MurmurHash3's finaliser. Torch ops rather than the C++ library through ctypes
because the runtime is a static library linked against one LibTorch, while
this package runs on any torch from pip (2.11 and 2.15 in the tests) on CPU and
CUDA alike; the cost of doing it in torch ops is measured in docs/verifier.md
("Python programs"). All tensors of a check are hashed by one pass of about a
dozen ops, not a dozen per tensor.
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
SECRETS = (0xFF4B33EAAD88B559, 0x5A6F21B28130138B, 0xE16ABD93E0F44E3D, 0x6D6A592535C63A82,
           0x2F80293DDECCCF33, 0xACC66E133B046095, 0x8731F4B8CD1A5975, 0xE26AF59C66059039)
LENGTH_SALT = 0xBB057A6240F76B0F

# c10::ScalarType's numbering, which the C++ seed mixes in.
_SCALAR_TYPE = {
    torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4,
    torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.complex32: 8,
    torch.complex64: 9, torch.complex128: 10, torch.bool: 11, torch.bfloat16: 15,
}


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def fmix64(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & MASK64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & MASK64
    return k ^ (k >> 33)


def tensor_seed(t: torch.Tensor) -> int:
    if t.dtype not in _SCALAR_TYPE:
        raise TypeError(f"ddpguard.verify: cannot hash a tensor of dtype {t.dtype}")
    h = fmix64(_SCALAR_TYPE[t.dtype] + 1)
    h = fmix64(h ^ t.dim())
    for size in t.shape:
        h = (fmix64(h ^ size) + GOLDEN) & MASK64
    return h


def finish(lanes: Sequence[int], nbytes: int, seed: int) -> int:
    h = fmix64(seed ^ fmix64((nbytes + LENGTH_SALT) & MASK64))
    for lane in lanes:
        h = (fmix64(h ^ (lane & MASK64)) + GOLDEN) & MASK64
    h = fmix64(h)
    return h or 1  # 0 stands for "no tensor"


def _stripe_keys(local: torch.Tensor) -> torch.Tensor:
    m = local * _signed(GOLDEN)  # wraps mod 2^64, as uint64 does
    return m ^ ((m >> 29) & ((1 << 35) - 1))  # logical shift


def _as_bytes(t: torch.Tensor) -> torch.Tensor:
    flat = t.detach().contiguous().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.view(torch.uint8)
    return flat.view(torch.uint8)


# Tensors from this size on are hashed one by one (no concatenating copy);
# smaller ones share one pass.
_LARGE_BYTES = 1 << 20


def _secrets(device: torch.device) -> torch.Tensor:
    return torch.tensor([_signed(s) for s in SECRETS], dtype=torch.int64, device=device)


def _mixed(words: torch.Tensor, local: torch.Tensor) -> torch.Tensor:
    """low32(v) * high32(v) for v = word ^ secret[lane] ^ stripe_key, in place."""
    v = words ^ _secrets(words.device)
    v.bitwise_xor_(_stripe_keys(local).unsqueeze(1))
    high = v >> 32
    high.bitwise_and_(0xFFFFFFFF)
    v.bitwise_and_(0xFFFFFFFF)
    return v.mul_(high)


def _lane_sums(x: torch.Tensor) -> torch.Tensor:
    # Summing rows of 64 words and folding them to 8 lanes is 4x faster than
    # summing rows of 8 (the reduction vectorises); the sums are order-free.
    whole = x.shape[0] // 8 * 8
    return x[:whole].reshape(-1, 64).sum(0).view(8, 8).sum(0) + x[whole:].sum(0)


def _large_lanes(t: torch.Tensor) -> list[int]:
    b = _as_bytes(t)
    pad = -b.numel() % 64
    if pad:
        b = torch.cat([b, torch.zeros(pad, dtype=torch.uint8, device=b.device)])
    words = b.view(torch.int64).view(-1, 8)
    local = torch.arange(words.shape[0], dtype=torch.int64, device=words.device)
    return torch.cat([_lane_sums(_mixed(words, local)), _lane_sums(words)]).tolist()


def hash_tensors(tensors: Sequence[Optional[torch.Tensor]]) -> list[int]:
    """One 64-bit hash per tensor (0 for None), as ddpguard::hash_tensors."""
    out = [0] * len(tensors)
    by_device: dict[torch.device, list[int]] = {}
    for i, t in enumerate(tensors):
        if t is None:
            continue
        if t.layout != torch.strided:
            raise TypeError("ddpguard.verify: only dense (strided) tensors can be hashed")
        nbytes = t.numel() * t.element_size()
        if nbytes >= _LARGE_BYTES:
            out[i] = finish(_large_lanes(t), nbytes, tensor_seed(t))
        else:
            by_device.setdefault(t.device, []).append(i)
    for device, indices in by_device.items():
        parts, stripes, sizes = [], [], []
        for i in indices:
            b = _as_bytes(tensors[i])
            n = b.numel()
            pad = -n % 64
            parts.append(b)
            if pad:
                parts.append(torch.zeros(pad, dtype=torch.uint8, device=device))
            stripes.append((n + pad) // 64)
            sizes.append(n)
        total = sum(stripes)
        lanes_out = [[0] * 16 for _ in indices]
        if total:
            words = torch.cat(parts).view(torch.int64).view(total, 8)
            counts = torch.tensor(stripes, dtype=torch.int64, device=device)
            owner = torch.repeat_interleave(torch.arange(len(indices), device=device), counts)
            starts = torch.cumsum(counts, 0) - counts
            local = torch.arange(total, dtype=torch.int64, device=device) - starts[owner]
            lanes = torch.zeros(len(indices), 16, dtype=torch.int64, device=device)
            lanes.index_add_(0, owner, torch.cat([_mixed(words, local), words], 1))
            lanes_out = lanes.tolist()
        for k, i in enumerate(indices):
            out[i] = finish(lanes_out[k], sizes[k], tensor_seed(tensors[i]))
    return out
