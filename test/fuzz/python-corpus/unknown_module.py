from torch.nn.parallel import DistributedDataParallel as DDP
from mypackage.models import build_model

model = DDP(build_model())
for input0, input1 in loader:
    out1 = model(input0)
    out2 = model(input1)
    criterion(out1, out2).backward()
