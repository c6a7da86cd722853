# KernelBench-format problem (test fixture): nn.Linear followed by ReLU.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


batch_size = 64
in_features = 128
out_features = 96


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
