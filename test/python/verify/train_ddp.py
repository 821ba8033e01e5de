"""A small DDP training loop for the verifier's tests (test_verify.py).

    train_ddp.py [--steps N] [--plant-param R:S] [--broadcast-off] [--accumulate K]
                 [--bad-hook R:S]

--plant-param R:S: rank R perturbs a parameter after optimizer step S.
--accumulate K: K micro-batches a step, all but the last inside no_sync().
--bad-hook R:S: a comm hook that, on rank R in step S, scales the averaged
  gradients (a buggy hook: DDP itself has no way to notice).
"""

import argparse
import gc

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--plant-param", default="")
    p.add_argument("--broadcast-off", action="store_true")
    p.add_argument("--accumulate", type=int, default=1)
    p.add_argument("--bad-hook", default="")
    args = p.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16),
                                torch.nn.ReLU(), torch.nn.Linear(16, 2))
    ddp = DDP(model, broadcast_buffers=not args.broadcast_off)
    step = 0
    if args.bad_hook:
        bad = tuple(int(x) for x in args.bad_hook.split(":"))

        def hook(state: object, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
            grads = bucket.buffer().div_(dist.get_world_size())
            fut = dist.all_reduce(grads, async_op=True).get_future()
            scale = 1.001 if bad == (rank, step) else 1.0
            return fut.then(lambda f: f.value()[0].mul_(scale))

        ddp.register_comm_hook(None, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    plant = tuple(int(x) for x in args.plant_param.split(":")) if args.plant_param else None
    data = torch.Generator().manual_seed(1 + rank)  # each rank its own batches
    for step in range(args.steps):
        opt.zero_grad()
        for micro in range(args.accumulate):
            x = torch.randn(16, 8, generator=data)
            y = torch.randint(0, 2, (16,), generator=data)
            if micro == args.accumulate - 1:
                torch.nn.functional.cross_entropy(ddp(x), y).backward()
            else:
                with ddp.no_sync():
                    torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
        if plant == (rank, step):
            with torch.no_grad():
                model[3].weight[0, 0] += 1e-3
    del ddp, opt  # collected, so that the group dies with destroy_process_group
    gc.collect()  # (torch 2.15 can abort at exit otherwise: test_explain.py)
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print("trained", args.steps, "steps")


if __name__ == "__main__":
    main()
