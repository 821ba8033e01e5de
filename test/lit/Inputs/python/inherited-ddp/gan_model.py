import torch

import networks
from base_model import BaseModel


class GANModel(BaseModel):
    def init_training_settings(self):
        self.net_d = networks.define_net_d()
        self.net_d = self.model_to_device(self.net_d)
        self.optimizer_d = torch.optim.SGD(self.net_d.parameters(), lr=0.1)
