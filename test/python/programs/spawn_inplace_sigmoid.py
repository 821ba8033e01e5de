# Ranks started by torch.multiprocessing.spawn (2 Gloo ranks), as many DDP
# scripts start: sigmoid saves its output, mul_ then overwrites it, in each
# rank (the explainer must run in the spawned ranks, not only in the parent).
# explain: spawns 2
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn


def run(rank, world_size, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world_size)
    try:
        torch.manual_seed(0)
        model = nn.Linear(4, 4)
        gate = torch.sigmoid(model(torch.randn(3, 4)))  # explain: saved
        gate.mul_(2.0)  # explain: written
        loss = gate.sum()
        # Both ranks fail together: spawn ends the others when one rank exits.
        dist.barrier()
        loss.backward()
        print(f"rank {rank} loss {loss.item():.6f}")
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(run, args=(2, port), nprocs=2)
