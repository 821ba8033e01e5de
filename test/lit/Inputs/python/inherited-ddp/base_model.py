from torch.nn.parallel import DistributedDataParallel


class BaseModel:
    def __init__(self, opt):
        self.opt = opt
        self.init_training_settings()

    def model_to_device(self, net):
        if self.opt["dist"]:
            net = DistributedDataParallel(net)
        return net
