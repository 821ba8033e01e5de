from torch.nn.parallel import DistributedDataParallel as DDP

from gan.nets.models import Normed, Plain
from .steps import two_views

normed = DDP(Normed())
plain = DDP(Plain())
for a, b in loader:
    two_views(normed, a, b)
    x = plain(a)
    y = plain(b)
    (x + y).sum().backward()
