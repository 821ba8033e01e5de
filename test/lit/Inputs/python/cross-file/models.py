from torch.nn.parallel import DistributedDataParallel as DDP
from torchvision.models import resnet50


def build_model():
    return DDP(resnet50())
