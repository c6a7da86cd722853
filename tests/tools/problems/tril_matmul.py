# KernelBench-format problem (test fixture): the lower triangle of a matrix product; the
# teacher runs the matmul alone and masks its result in a pointwise stage (aten::tril).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.tril(torch.matmul(a, b))


n = 64


def get_inputs():
    return [torch.randn(n, n), torch.randn(n, n)]


def get_init_inputs():
    return []
