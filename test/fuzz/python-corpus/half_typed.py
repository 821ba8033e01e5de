from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(net)

def unfinished(x):
    y = x.
    if y

def step(a, b):
    out1 = model(a)
    out2 = model(b)
    (out1 + out2).sum().backward()
