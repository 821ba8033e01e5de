# An HF-style encoder with no BatchNorm at all, only the position_ids buffer
# that HF models register (BertEmbeddings), called twice as model(**batch)
# before one backward (R-Drop, SimCSE's unsupervised two-pass dropout:
# princeton-nlp/SimCSE). The embedding lookup saves the sliced buffer.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class TinyEncoder(nn.Module):
    def __init__(self, vocab=20, dim=8, max_len=16):
        super().__init__()
        self.word = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.register_buffer("position_ids", torch.arange(max_len).expand((1, -1)), persistent=False)
        self.norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(0.1)
        self.out = nn.Linear(dim, dim)

    def forward(self, input_ids, attention_mask):
        pos = self.position_ids[:, : input_ids.shape[1]]
        h = self.drop(self.norm(self.word(input_ids) + self.pos(pos)))
        return self.out((h * attention_mask.unsqueeze(-1)).mean(1))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(TinyEncoder())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        batch = {"input_ids": torch.randint(0, 20, (4, 6)), "attention_mask": torch.ones(4, 6)}
        z1 = model(**batch)
        z2 = model(**batch)  # corpus: expect here
        sim = F.cosine_similarity(z1.unsqueeze(1), z2.unsqueeze(0), dim=-1) / 0.05
        loss = F.cross_entropy(sim, torch.arange(4))
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
