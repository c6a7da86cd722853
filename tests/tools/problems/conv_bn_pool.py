# KernelBench-format problem (test fixture): the level-2 pattern conv -> batch norm ->
# activation -> dropout -> max pool -> adaptive average pool, with the sizes as module knobs.
import torch
import torch.nn as nn

batch_size = 128
in_channels = 3
out_channels = 16
height = width = 64
kernel_size = 3


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.bn = nn.BatchNorm2d(out_channels)
        self.act = nn.Hardswish()
        self.drop = nn.Dropout(0.2)
        self.pool = nn.MaxPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        x = self.drop(self.act(self.bn(self.conv(x))))
        return torch.flatten(self.gap(self.pool(x)), 1)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
