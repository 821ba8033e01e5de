"""Two views through one DDP encoder with BatchNorm, written three ways:
MODE=as-written, no-sync (the first forward inside model.no_sync(), the
--fix-mode=once-per-backward fix) or broadcast-off (broadcast_buffers=False,
the broadcast fix): whether it trained, the rank's largest buffer
difference from rank 0's at each forward (as the module
sees them, after DDP's broadcast), the parameters' spread and a hash of
its final state; each rank writes them as JSON to $RESULTS/rank<N>.json (the
ranks' standard outputs interleave under torchrun)."""
import gc
import hashlib
import json
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

MODE = os.environ["MODE"]
INPLACE_ERROR = "modified by an inplace operation"


def spread(flat):
    """The largest difference of this rank's tensor from rank 0's."""
    zero = flat.clone()
    dist.broadcast(zero, 0)
    return (flat - zero).abs().max().item()


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))
    buffer_spreads = []
    encoder.register_forward_pre_hook(lambda module, args: buffer_spreads.append(
        spread(torch.cat([b.detach().flatten().float() for b in module.buffers()]))))
    model = DDP(encoder, broadcast_buffers=MODE != "broadcast-off")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + rank)
    result = {"mode": MODE, "torch": torch.__version__, "trains": True}
    try:
        for _ in range(4):
            x = torch.randn(6, 8)
            if MODE == "no-sync":
                with model.no_sync():
                    z1 = model(x + 0.1 * torch.randn_like(x))
            else:
                z1 = model(x + 0.1 * torch.randn_like(x))
            z2 = model(x + 0.1 * torch.randn_like(x))
            loss = (z1 - z2).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    except RuntimeError as error:
        if INPLACE_ERROR not in str(error):
            raise
        result["trains"] = False
    if result["trains"]:
        state = hashlib.sha256()
        for _, tensor in sorted(encoder.state_dict().items()):
            state.update(repr(tensor.double().flatten().tolist()).encode())
        result["state"] = state.hexdigest()
        result["parameter_spread"] = spread(
            torch.cat([p.detach().flatten() for p in encoder.parameters()]))
    result["buffer_spreads"] = buffer_spreads
    with open(os.path.join(os.environ["RESULTS"], f"rank{rank}.json"), "w",
              encoding="utf-8") as out:
        json.dump(result, out)
    # As the corpus scripts do: on torch 2.15 a Gloo worker may otherwise
    # abort the process at interpreter exit.
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
