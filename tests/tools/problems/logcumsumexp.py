# KernelBench-format problem (test fixture): a running log-sum-exp, which the teacher does
# not lower (aten::logcumsumexp): bench/kernelbench/run.py tallies it as a lowering failure.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.logcumsumexp(x, dim=1)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
