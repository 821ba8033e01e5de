# The HF Trainer's compute_loss shape: outputs = model(**inputs) once per
# step, loss = outputs["loss"], one backward (huggingface/transformers
# Trainer.compute_loss).
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class TinyClassifier(nn.Module):
    def __init__(self, vocab=20, dim=8, labels=3):
        super().__init__()
        self.word = nn.Embedding(vocab, dim)
        self.register_buffer("position_ids", torch.arange(16).unsqueeze(0), persistent=False)
        self.pos = nn.Embedding(16, dim)
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.BatchNorm1d(dim), nn.Tanh(), nn.Linear(dim, labels))

    def forward(self, input_ids, labels=None):
        h = self.word(input_ids) + self.pos(self.position_ids[:, : input_ids.shape[1]])
        logits = self.head(h.mean(1))
        return {"loss": F.cross_entropy(logits, labels), "logits": logits}


def compute_loss(model, inputs):
    outputs = model(**inputs)
    return outputs["loss"]


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(TinyClassifier())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        inputs = {"input_ids": torch.randint(0, 20, (4, 6)), "labels": torch.randint(0, 3, (4,))}
        loss = compute_loss(model, inputs)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
