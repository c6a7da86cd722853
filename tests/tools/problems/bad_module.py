# KernelBench-format problem (test fixture) the importer must refuse: an LSTM has no
# single TorchScript builtin the importer maps.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 8)

    def forward(self, x):
        return self.rnn(x)[0]


def get_inputs():
    return [torch.randn(4, 2, 8)]


def get_init_inputs():
    return []
