import torch


class FactorLoss:
    def __init__(self):
        self.discriminator = torch.nn.Linear(2, 2)
        self.optimizer_d = torch.optim.Adam(self.discriminator.parameters())

    def call_optimize(self, data, model, optimizer):
        z = model(data)
        d_z = self.discriminator(z)
        vae_loss = z.pow(2).mean() + d_z.mean()
        optimizer.zero_grad()
        vae_loss.backward(retain_graph=True)
        optimizer.step()
        d_loss = d_z.pow(2).mean()
        self.optimizer_d.zero_grad()
        d_loss.backward()
        self.optimizer_d.step()


def get_loss_f():
    return FactorLoss()
