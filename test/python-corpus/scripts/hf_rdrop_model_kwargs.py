# R-Drop (dropreg/R-Drop, fine-tuning with HF Transformers): the batch goes
# through the model twice as model(**batch) and a symmetric KL between the
# two outputs joins the loss, one backward. The tiny BERT-like model keeps
# HF's position_ids buffer (register_buffer, sliced per call) and a
# BatchNorm'd classifier head.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class TinyBert(nn.Module):
    def __init__(self, vocab=20, dim=8, max_len=16, labels=3):
        super().__init__()
        self.word = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.register_buffer("position_ids", torch.arange(max_len).unsqueeze(0), persistent=False)
        self.norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.BatchNorm1d(dim), nn.Tanh(), nn.Linear(dim, labels))

    def forward(self, input_ids, attention_mask, labels=None):
        pos = self.position_ids[:, : input_ids.shape[1]]
        h = self.drop(self.norm(self.word(input_ids) + self.pos(pos)))
        pooled = (h * attention_mask.unsqueeze(-1)).sum(1) / attention_mask.sum(1, keepdim=True)
        logits = self.head(pooled)
        loss = F.cross_entropy(logits, labels) if labels is not None else None
        return {"loss": loss, "logits": logits}


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(TinyBert())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        batch = {"input_ids": torch.randint(0, 20, (4, 6)), "attention_mask": torch.ones(4, 6),
                 "labels": torch.randint(0, 3, (4,))}
        out1 = model(**batch)
        out2 = model(**batch)  # corpus: expect here
        p, q = F.log_softmax(out1["logits"], -1), F.log_softmax(out2["logits"], -1)
        kl = (F.kl_div(p, q, log_target=True, reduction="batchmean")
              + F.kl_div(q, p, log_target=True, reduction="batchmean")) / 2
        loss = (out1["loss"] + out2["loss"]) / 2 + kl
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
