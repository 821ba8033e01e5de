"""The ground-truth table of docs/ground-truth.md, measured with PyTorch's OWN
torch.nn.parallel.DistributedDataParallel (backend gloo, CPU).

    torchrun --standalone --nproc-per-node N \\
        test/runtime/torch_ground_truth.py OUT_DIR [--check] [--record]
                                           [--clone-at-pack]

The first 13 rows mirror test/runtime/ground_truth_tests.cpp exactly: same row
names and bodies, same model (TestSupport.h's NetImpl: fc1 = Linear(4, 8),
fc2 = Linear(8, 3), bn1 = BatchNorm1d(8), registered in that order; forward
fc2(relu(bn1(fc1(x))))), same weights (init_weights, offset 0.01 * rank), same
data (manual_seed(100 + rank) after DDP is built, then a = randn(6, 4),
b = randn(6, 4)), same loss (t.pow(2).mean()). Every row gets a fresh model and
a fresh DDP with default options (broadcast_buffers=True), except
broadcast_buffers_off below.

The extra rows come after them. broadcast_buffers_off is the first row with
DDP(broadcast_buffers=False) (the second row of docs/ground-truth.md; the C++
test covers it as a whole configuration). The others ask which kinds of buffer
are saved for backward. Each runs two forwards, then one backward of both outputs
((loss(o1) + loss(o2)).backward()), on fc2(X(fc1(x))) -- no relu -- where X is
registered as `norm` (registration order fc1, norm, fc2), in train mode unless
the name ends in _eval. InstanceNorm1d wants (N, C, L): fc1(x) is [6, 8], so
the rows apply it to fc1(x).t().unsqueeze(0), shape [1, 8, 6] (one instance, 8
channels, length 6), and turn the result back into [6, 8] with
.squeeze(0).t(). The custom_buffer rows have no norm: a registered buffer
`scale` ([8], 1.5) multiplies or is added to fc1(x), or a buffer `scale4`
([4], 1.5) multiplies the input (which does not require grad).

Then the paths PyTorch 2.12.1's version-counter preservation (which wraps
DDP's per-forward _sync_buffers) does or does not cover, each two forwards and
one backward unless said: forward_sync_buffers_off (DDP(forward_sync_buffers=
False), "n/a" before 2.13, which lacks the option); buffer_hook_pre_forward and
buffer_hook_post_forward (a buffer communication hook,
_register_buffer_comm_hook, that averages the buffers in place with
all_reduce and div_, before or after the forward); forward_writes_saved_buffer
(a module whose forward saves its buffer `scale` in `fc1(x) * scale` and then
writes it in place, `scale.mul_(1.0)` under no_grad: autograd rejects that
without DDP too); join_two_forwards_even and join_one_forward_uneven (the
steps under `with ddp.join():`, two per rank, or 2 + rank steps of one forward
and one backward each, whose joined rank's shadow pass syncs buffers outside
the preservation). The uneven join with two forwards per step is not a row: on
2.15 its collectives do not match the shadow pass's and gloo aborts the
process (scripts/torch-versions.sh measures it in a run of its own).

Output, per rank, OUT_DIR/rank<R>.txt, one block per row in table order:

    row <name> ok
    grad <param name> v1 v2 ...     every parameter of the inner module
                                    (named_parameters order), p.grad flattened,
                                    or the single word "none" if p.grad is None
    buffer <buffer name> v1 v2 ...  every buffer (named_buffers order), as floats
                                    (num_batches_tracked reads e.g. 2.0)
    row <name> error <first line of the exception message>

(an error row has no grad/buffer lines). Floats are written with repr(float).
For autograd_grad_of_first the grads come from p.grad, as for every row:
torch.autograd.grad does not accumulate into .grad, so they read "none".

--check: every rank compares its outcomes with the measured outcomes of its
torch version and world size in ground_truth_expected.json (next to this
script) and exits 1 on a mismatch, naming each mismatching row on stderr; rank
0 also reads the other ranks' files (OUT_DIR is shared under --standalone),
names their mismatches too, exits 1 if there are any, and prints a markdown
table of the outcomes per rank and the error messages seen. A version or world
size the file has not measured is an error, not a pass.

--clone-at-pack: every row runs under saved-tensor hooks that clone each
saved tensor at pack time, so its backward computes from the values the
forward saw (the reference of test/runtime/silent_rows.py, issue 30).

--record: rank 0 writes this run's outcomes into ground_truth_expected.json
under its torch version and world size (every rank must agree on every row;
the file's other entries are kept). scripts/torch-versions.sh records each
supported version this way, so every expectation comes from a run of that
version's own DDP, never from a hand-written label.
"""
import gc
import inspect
import json
import os
import sys
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    """TestSupport.h's NetImpl: registration order fc1, fc2, then bn1."""

    def __init__(self, with_bn=True):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)
        if with_bn:
            self.bn1 = nn.BatchNorm1d(8)
        else:
            self.bn1 = None

    def forward(self, x):
        x = self.fc1(x)
        if self.bn1 is not None:
            x = self.bn1(x)
        return self.fc2(torch.relu(x))


class NormNet(nn.Module):
    """fc2(norm(fc1(x))) for the buffer-kind rows."""

    def __init__(self, norm, instance=False):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.norm = norm
        self.fc2 = nn.Linear(8, 3)
        self.instance = instance

    def forward(self, x):
        h = self.fc1(x)
        if self.instance:
            h = self.norm(h.t().unsqueeze(0)).squeeze(0).t()
        else:
            h = self.norm(h)
        return self.fc2(h)


class ScaleNet(nn.Module):
    """A custom registered buffer used in the forward."""

    def __init__(self, mode):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)
        self.mode = mode
        if mode == "mul_input":
            self.register_buffer("scale4", torch.full((4,), 1.5))
        else:
            self.register_buffer("scale", torch.full((8,), 1.5))

    def forward(self, x):
        if self.mode == "mul_then_write":
            y = self.fc2(self.fc1(x) * self.scale)
            with torch.no_grad():
                self.scale.mul_(1.0)
            return y
        if self.mode == "mul":
            return self.fc2(self.fc1(x) * self.scale)
        if self.mode == "add":
            return self.fc2(self.fc1(x) + self.scale)
        return self.fc2(self.fc1(x * self.scale4))


def init_weights(module, offset):
    """TestSupport.h's init_weights: parameter k (registration order), element
    j = 0.5 * sin(0.7 j + 1.3 k + 0.1) + offset."""
    with torch.no_grad():
        for k, p in enumerate(module.parameters()):
            flat = torch.arange(p.numel(), dtype=torch.double)
            p.copy_((0.5 * torch.sin(0.7 * flat + 1.3 * k + 0.1) + offset)
                    .to(p.dtype).view(p.shape))


def loss_of(t):
    return t.pow(2).mean()


# --- row bodies: (ddp, a, b) -------------------------------------------------

def both_backward(d, a, b):
    o1 = d(a)
    o2 = d(b)
    (loss_of(o1) + loss_of(o2)).backward()


def second_forward_no_grad(d, a, b):
    o1 = d(a)
    with torch.no_grad():
        d(b)
    loss_of(o1).backward()


def first_forward_no_grad(d, a, b):
    with torch.no_grad():
        d(a)
    o2 = d(b)
    loss_of(o2).backward()


def first_output_unused(d, a, b):
    d(a)
    o2 = d(b)
    loss_of(o2).backward()


def loop_forward_backward(d, a, b):
    for i in range(3):
        loss_of(d(a if i % 2 else b)).backward()


def loop_accumulated_loss(d, a, b):
    loss = torch.zeros(())
    for i in range(3):
        loss = loss + loss_of(d(a if i % 2 else b))
    loss.backward()


def forward_backward_twice(d, a, b):
    o1 = d(a)
    loss_of(o1).backward()
    o2 = d(b)
    loss_of(o2).backward()


def autograd_grad_of_first(d, a, b):
    o1 = d(a)
    d(b)
    torch.autograd.grad([loss_of(o1)], list(d.module.parameters()),
                        allow_unused=True)


def retain_graph_of_second(d, a, b):
    o1 = d(a)  # kept alive, never differentiated
    o2 = d(b)
    loss_of(o2).backward(retain_graph=True)
    del o1


def first_output_detached(d, a, b):
    o1 = d(a).detach()
    o2 = d(b)
    (loss_of(o1) + loss_of(o2)).backward()


def inner_module_direct(d, a, b):
    o1 = d(a)
    d.module(b)
    loss_of(o1).backward()


def join_two_forwards_even(d, a, b):
    with d.join():
        for _ in range(2):
            both_backward(d, a, b)


def join_two_forwards_uneven(d, a, b):
    with d.join():
        for _ in range(2 + dist.get_rank()):
            both_backward(d, a, b)


def join_one_forward_uneven(d, a, b):
    with d.join():
        for i in range(2 + dist.get_rank()):
            loss_of(d(a if i % 2 else b)).backward()


def average_buffers(state, buffers):
    """A buffer communication hook: every floating buffer becomes the mean over
    the ranks, in place (all_reduce, then div_)."""
    for t in buffers.values():
        if t.is_floating_point():
            dist.all_reduce(t)
            t.div_(dist.get_world_size())


def net(with_bn=True, eval_mode=False):
    def make():
        m = Net(with_bn)
        return m.eval() if eval_mode else m
    return make


def norm_net(make_norm, instance=False, eval_mode=False):
    def make():
        m = NormNet(make_norm(), instance)
        return m.eval() if eval_mode else m
    return make


# (name, model factory, body). The first 13 are ground_truth_tests.cpp's rows
# (and docs/ground-truth.md's), in its order.
ROWS = [
    ("two_forwards_one_backward", net(), both_backward),
    ("module_without_buffers", net(with_bn=False), both_backward),
    ("eval_mode", net(eval_mode=True), both_backward),
    ("second_forward_no_grad", net(), second_forward_no_grad),
    ("first_forward_no_grad", net(), first_forward_no_grad),
    ("first_output_unused", net(), first_output_unused),
    ("loop_forward_backward", net(), loop_forward_backward),
    ("loop_accumulated_loss", net(), loop_accumulated_loss),
    ("forward_backward_twice", net(), forward_backward_twice),
    ("autograd_grad_of_first", net(), autograd_grad_of_first),
    ("retain_graph_of_second", net(), retain_graph_of_second),
    ("first_output_detached", net(), first_output_detached),
    ("inner_module_direct", net(), inner_module_direct),
    # Extra rows. First the one row of docs/ground-truth.md that
    # ground_truth_tests.cpp covers with a whole configuration rather than a
    # row: the first row with DDP(broadcast_buffers=False).
    ("broadcast_buffers_off", net(), both_backward),
    # Which buffers are saved for backward.
    ("bn_no_running_stats",
     norm_net(lambda: nn.BatchNorm1d(8, track_running_stats=False)), both_backward),
    ("layernorm", norm_net(lambda: nn.LayerNorm(8)), both_backward),
    ("groupnorm", norm_net(lambda: nn.GroupNorm(2, 8)), both_backward),
    ("instancenorm_tracked",
     norm_net(lambda: nn.InstanceNorm1d(8, track_running_stats=True), instance=True),
     both_backward),
    ("instancenorm_tracked_eval",
     norm_net(lambda: nn.InstanceNorm1d(8, track_running_stats=True), instance=True,
              eval_mode=True),
     both_backward),
    ("custom_buffer_mul", lambda: ScaleNet("mul"), both_backward),
    ("custom_buffer_add", lambda: ScaleNet("add"), both_backward),
    ("custom_buffer_mul_input", lambda: ScaleNet("mul_input"), both_backward),
    # What the preservation of 2.12.1 covers, and what not.
    ("forward_sync_buffers_off", net(), both_backward),
    ("buffer_hook_pre_forward", net(), both_backward),
    ("buffer_hook_post_forward", net(), both_backward),
    ("forward_writes_saved_buffer", lambda: ScaleNet("mul_then_write"), both_backward),
    ("join_two_forwards_even", net(), join_two_forwards_even),
    ("join_one_forward_uneven", net(), join_one_forward_uneven),
]

# Rows that can abort the process (gloo's "collective mismatch"), run only one
# at a time with --only NAME.
ISOLATED_ROWS = [
    ("join_two_forwards_uneven", net(), join_two_forwards_uneven),
]

# The measured outcomes per torch version and world size (--check, --record).
EXPECTED_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "ground_truth_expected.json")


def torch_release():
    """2.15.0 for 2.15.0+cu132."""
    return torch.__version__.split("+")[0]


def load_expected(world):
    """{row: outcome} measured with this torch version at this world size."""
    measured = {}
    if os.path.exists(EXPECTED_FILE):
        with open(EXPECTED_FILE) as f:
            measured = json.load(f)
    per_world = measured.get(torch_release(), {})
    if str(world) not in per_world:
        raise SystemExit(
            f"torch_ground_truth.py: {EXPECTED_FILE} has no measured outcomes for "
            f"torch {torch_release()} at world size {world} (measured: "
            f"{', '.join(f'{v} w{w}' for v in measured for w in measured[v]) or 'none'}); "
            "measure them with scripts/torch-versions.sh")
    return per_world[str(world)]


def record_expected(world, outcomes):
    """Stores this run's outcomes under this version and world size, keeping
    the rest of the file; written to a temporary file and renamed."""
    measured = {}
    if os.path.exists(EXPECTED_FILE):
        with open(EXPECTED_FILE) as f:
            measured = json.load(f)
    measured.setdefault(torch_release(), {})[str(world)] = {
        n: outcomes[n] for n, _, _ in ROWS}
    ordered = {v: dict(sorted(measured[v].items(), key=lambda kv: int(kv[0])))
               for v in sorted(measured, key=lambda v: tuple(map(int, v.split("."))))}
    tmp = EXPECTED_FILE + ".tmp"
    with open(tmp, "w") as f:
        json.dump(ordered, f, indent=1)
        f.write("\n")
    os.replace(tmp, EXPECTED_FILE)


# DDP keyword arguments per row; every other row uses DDP's defaults.
DDP_OPTIONS = {
    "broadcast_buffers_off": {"broadcast_buffers": False},
    "forward_sync_buffers_off": {"forward_sync_buffers": False},
}
# Buffer communication hooks per row: (hook, where it runs).
BUFFER_HOOKS = {
    "buffer_hook_pre_forward": (average_buffers, "PRE_FORWARD"),
    "buffer_hook_post_forward": (average_buffers, "POST_FORWARD"),
}


def values(t):
    return " ".join(repr(float(v)) for v in t.detach().reshape(-1).tolist())


def clone_at_pack():
    """Saved-tensor hooks that keep a copy of each saved tensor as it was at
    pack time: the backward then computes from the values the forward saw,
    whatever wrote the tensor since (issue 30's reference)."""
    return torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t)


def run_row(rank, name, make, body, reference=False):
    """Returns (outcome, message, lines); with reference, the row runs
    under clone_at_pack()."""
    model = make()
    init_weights(model, 0.01 * rank)
    # Default options unless DDP_OPTIONS says; "n/a" where this version's DDP
    # lacks an option.
    options = DDP_OPTIONS.get(name, {})
    if any(k not in inspect.signature(DDP.__init__).parameters for k in options):
        return "n/a", "", []
    with warnings.catch_warnings():
        # 2.13+ warns that broadcast_buffers is deprecated (FutureWarning).
        warnings.simplefilter("ignore", FutureWarning)
        ddp = DDP(model, **options)
    if name in BUFFER_HOOKS:
        from torch.nn.parallel.distributed import _BufferCommHookLocation
        hook, where = BUFFER_HOOKS[name]
        ddp._register_buffer_comm_hook(None, hook, getattr(_BufferCommHookLocation, where))
    torch.manual_seed(100 + rank)
    a = torch.randn(6, 4)
    b = torch.randn(6, 4)
    try:
        if reference:
            with clone_at_pack():
                body(ddp, a, b)
        else:
            body(ddp, a, b)
    except RuntimeError as e:
        lines = str(e).splitlines()
        return "error", (lines[0] if lines else type(e).__name__), []
    lines = []
    for name, p in model.named_parameters():
        lines.append(f"grad {name} " + ("none" if p.grad is None else values(p.grad)))
    for name, buf in model.named_buffers():
        lines.append(f"buffer {name} {values(buf)}")
    return "ok", "", lines


def read_outcomes(path):
    """{row name: "ok" | "error"} from a rank<R>.txt."""
    result = {}
    with open(path) as f:
        for line in f:
            parts = line.split(" ", 3)
            if parts[0] == "row" and len(parts) >= 3:
                result[parts[1]] = parts[2].strip()
    return result


def main():
    flags = {"--check", "--record", "--clone-at-pack"}
    argv = sys.argv[1:]
    only = None
    if "--only" in argv and argv.index("--only") + 1 < len(argv):
        at = argv.index("--only")
        only = argv[at + 1]
        argv = argv[:at] + argv[at + 2:]
    args = [a for a in argv if a not in flags]
    check = "--check" in argv
    record = "--record" in argv
    reference = "--clone-at-pack" in argv
    if reference and (check or record):
        raise SystemExit("--clone-at-pack measures a reference: no --check or --record")
    rows = ROWS
    if only is not None:
        rows = [r for r in ROWS + ISOLATED_ROWS if r[0] == only]
    if len(args) != 1 or (only is not None and (not rows or check or record)):
        raise SystemExit(
            "usage: torchrun ... torch_ground_truth.py OUT_DIR [--check] [--record]"
            " | OUT_DIR --only ROW")
    out_dir = args[0]
    os.makedirs(out_dir, exist_ok=True)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    expected = load_expected(world) if check else {}

    out, outcomes, messages = [], {}, {}
    for name, make, body in rows:
        outcome, message, lines = run_row(rank, name, make, body, reference)
        outcomes[name], messages[name] = outcome, message
        out.append(f"row {name} error {message}" if outcome == "error"
                   else f"row {name} {outcome}")
        out.extend(lines)
        # A failed row's DDP may sit in a reference cycle through the
        # traceback; free it before the next row, and keep rows in lockstep.
        gc.collect()
        dist.barrier()
    with open(os.path.join(out_dir, f"rank{rank}.txt"), "w") as f:
        f.write("\n".join(out) + "\n")

    # Every rank has written its file before anyone reads them.
    dist.barrier()
    status = 0
    if check:
        # Each rank compares its own outcomes (a mismatch anywhere fails the
        # torchrun); rank 0 also reads the other ranks' files, when OUT_DIR is
        # shared, to name their mismatches and print the table. No collective on
        # Python-owned tensors here: gloo's worker thread may drop its last
        # reference to such a tensor after the main thread has started to
        # finalise the interpreter, and then the process aborts with
        # "terminate called without an active exception".
        mine = [n for n, _, _ in ROWS if outcomes[n] != expected.get(n)]
        for n in mine:
            print(f"MISMATCH rank {rank} {n}: expected {expected.get(n)}, "
                  f"measured {outcomes[n]}"
                  f"{': ' + messages[n] if messages[n] else ''}", file=sys.stderr)
        status = 1 if mine else 0
        if rank == 0:
            per_rank = {0: outcomes}
            for r in range(1, world):
                path = os.path.join(out_dir, f"rank{r}.txt")
                if os.path.exists(path):
                    per_rank[r] = read_outcomes(path)
            others = [(r, n) for r in sorted(per_rank) if r
                      for n, _, _ in ROWS
                      if per_rank[r].get(n) != expected.get(n)]
            for r, n in others:
                print(f"MISMATCH rank {r} {n}: expected {expected.get(n)}, "
                      f"measured {per_rank[r].get(n)}", file=sys.stderr)
            print(f"torch {torch.__version__}, gloo, world size {world}"
                  f" (ranks read: {len(per_rank)})\n")
            print("| row | expected | " +
                  " | ".join(f"rank {r}" for r in sorted(per_rank)) + " |")
            print("|---|---|" + "---|" * len(per_rank))
            for n, _, _ in ROWS:
                print(f"| {n} | {expected.get(n)} | " +
                      " | ".join(str(per_rank[r].get(n)) for r in sorted(per_rank)) + " |")
            for m in sorted({messages[n] for n in outcomes if outcomes[n] == "error"}):
                print(f"\nerror: {m}")
            if others:
                status = 1
    if record and rank == 0:
        per_rank = [read_outcomes(os.path.join(out_dir, f"rank{r}.txt"))
                    for r in range(world)]
        differ = [n for n, _, _ in ROWS if len({o.get(n) for o in per_rank}) != 1]
        if differ:
            print(f"not recorded: the ranks disagree on {', '.join(differ)}",
                  file=sys.stderr)
            status = 1
        else:
            record_expected(world, outcomes)
            print(f"recorded torch {torch_release()} world size {world} in {EXPECTED_FILE}")
    gc.collect()  # the rows' DDPs, so that the group dies here (torch_reference.py)
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
