import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(net, loader, optimizer):
    model = DDP(net)
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(torch.cat([x, y])), labels)
        loss.backward()
        optimizer.step()
