# KernelBench-format problem (test fixture): an exclusive cumsum written with a size used as
# data (x.size(1) - 1), which the teacher does not lower: bench/kernelbench/run.py tallies it
# as a lowering failure.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumsum(x.narrow(1, 0, x.size(1) - 1), dim=1)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
