# KernelBench-format problem (test fixture) the importer must refuse: get_inputs
# returns a Python int, and kforge ops take tensors only.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, n):
        return x * n


def get_inputs():
    return [torch.randn(4, 4), 3]


def get_init_inputs():
    return []
