# KernelBench-format problem (test fixture): einsums that are one matmul each (the second
# operand transposed in the first), which the importer writes as torch.matmul.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return torch.einsum("bij,bkj->bik", a, b) + torch.einsum("bik,kj->bij", a, c)


def get_inputs():
    return [torch.randn(2, 8, 16), torch.randn(2, 12, 16), torch.randn(16, 12)]


def get_init_inputs():
    return []
