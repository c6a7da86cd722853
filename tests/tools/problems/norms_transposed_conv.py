# KernelBench-format problem (test fixture): ConvTranspose3d, InstanceNorm3d, GroupNorm
# and AvgPool3d, each converted to its aten builtin.
import torch
import torch.nn as nn

batch_size = 4
channels = 8
depth, height, width = 6, 10, 10


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.up = nn.ConvTranspose3d(channels, 2 * channels, 3, stride=2, padding=1, output_padding=1)
        self.inorm = nn.InstanceNorm3d(2 * channels, affine=True)
        self.gnorm = nn.GroupNorm(4, 2 * channels)
        self.pool = nn.AvgPool3d(2)

    def forward(self, x):
        return self.pool(self.gnorm(self.inorm(self.up(x))))


def get_inputs():
    return [torch.randn(batch_size, channels, depth, height, width)]


def get_init_inputs():
    return [channels]
