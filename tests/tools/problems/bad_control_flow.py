# KernelBench-format problem (test fixture) the importer must refuse: forward branches
# on tensor data, which a static op cannot express.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x.sum() > 0:
            return x * 2.0
        return x


def get_inputs():
    return [torch.randn(16, 16)]


def get_init_inputs():
    return []
