# KernelBench-format problem (test fixture): a boolean mask input, and predictions * targets
# that broadcast only while batch_size == input_shape[0] (KernelBench's HingeLoss): scaled
# down to the op format's limit, the two sizes halve together.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets, mask):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0) * mask)


batch_size = 32768
input_shape = (32768,)


def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1,
            torch.rand(batch_size, *input_shape) > 0.5]


def get_init_inputs():
    return []
