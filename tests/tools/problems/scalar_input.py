# KernelBench-format problem (test fixture): get_inputs returns a Python int and a float
# beside the tensor; the importer bakes them into the source as constants.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, n, scale):
        return x * n + scale


def get_inputs():
    return [torch.randn(4, 4), 3, 0.5]


def get_init_inputs():
    return []
