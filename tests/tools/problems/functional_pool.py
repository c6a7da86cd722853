# KernelBench-format problem (test fixture): a global average pool written as
# F.adaptive_avg_pool2d(x, 1) (KernelBench level 2, 67), whose aten builtin takes [1, 1].
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.adaptive_avg_pool2d(torch.relu(x), 1).squeeze(-1).squeeze(-1)


def get_inputs():
    return [torch.randn(4, 8, 6, 6)]


def get_init_inputs():
    return []
