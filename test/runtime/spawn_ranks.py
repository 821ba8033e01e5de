"""Starts N local ranks of a program with torchrun's variables and an agent
store, like torchrun, but lets the survivors of a rank that dies finish and
report (torchrun stops them at once, which is right for training and wrong
for a test of what the survivors see).

    spawn_ranks.py --nproc N [--allow-killed RANK] [--timeout S] -- PROGRAM ARGS...

Exit status: 0 when every rank exited 0 (the allowed rank may die by a
signal instead), 1 otherwise, 124 on timeout (every rank is killed).
"""
import argparse
import os
import signal
import subprocess
import sys
import time

from torch.distributed import TCPStore


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nproc", type=int, required=True)
    parser.add_argument("--allow-killed", type=int, default=-1)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if args.nproc < 1 or not program:
        parser.error("needs --nproc >= 1 and a program")

    store = TCPStore("127.0.0.1", 0, args.nproc, is_master=True,
                     wait_for_workers=False)
    ranks = []
    for rank in range(args.nproc):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank),
                   WORLD_SIZE=str(args.nproc), LOCAL_WORLD_SIZE=str(args.nproc),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(store.port),
                   TORCHELASTIC_USE_AGENT_STORE="True",
                   TORCHELASTIC_RESTART_COUNT="0")
        ranks.append(subprocess.Popen(program, env=env))

    deadline = time.monotonic() + args.timeout
    while any(p.poll() is None for p in ranks):
        if time.monotonic() > deadline:
            print(f"spawn_ranks: timed out after {args.timeout:.0f} s", file=sys.stderr)
            for p in ranks:
                if p.poll() is None:
                    p.send_signal(signal.SIGKILL)
            return 124
        time.sleep(0.05)

    status = 0
    for rank, p in enumerate(ranks):
        if p.returncode == 0:
            continue
        if rank == args.allow_killed and p.returncode < 0:
            print(f"spawn_ranks: rank {rank} was killed by signal "
                  f"{-p.returncode}, as allowed", file=sys.stderr)
            continue
        print(f"spawn_ranks: rank {rank} exited with status {p.returncode}",
              file=sys.stderr)
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
