# KernelBench-format problem (test fixture): embedding lookup of integer indices, then
# a sum over the sequence dimension.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)

    def forward(self, idx):
        return self.emb(idx).sum(dim=1)


def get_inputs():
    return [torch.randint(0, 1000, (8, 16))]


def get_init_inputs():
    return [1000, 64]
