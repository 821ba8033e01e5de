import torch
from losses import get_loss_f


class Trainer:
    def __init__(self, model, optimizer, loss_f):
        self.model = model.to("cpu")
        self.optimizer = optimizer
        self.loss_f = loss_f

    def train(self, data):
        return self.loss_f.call_optimize(data, self.model, self.optimizer)


model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
optimizer = torch.optim.Adam(model.parameters())
trainer = Trainer(model, optimizer, loss_f=get_loss_f())
trainer.train(torch.randn(3, 4))
