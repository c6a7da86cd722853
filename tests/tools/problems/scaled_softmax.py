# KernelBench-format problem (test fixture): softmax of a scaled product; the scale
# comes from get_init_inputs and becomes a constant.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, q, k):
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        return torch.softmax(scores, dim=-1)


def get_inputs():
    return [torch.randn(4, 64, 32), torch.randn(4, 48, 32)]


def get_init_inputs():
    return [0.125]
