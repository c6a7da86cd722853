# KernelBench-format problem (test fixture): GPU-sized shapes (two 16384 x 16384 float32
# matrices, 1 GiB each, and a 4 GiB result) and `A.T`; the importer must trace without
# allocating them and record the real shapes.
import torch
import torch.nn as nn

M = 16384
K = 16384
N = 16384


class Model(nn.Module):
    def forward(self, A, B):
        return torch.relu(A.T @ B)


def get_inputs():
    return [torch.rand(K, M), torch.randn(K, N)]


def get_init_inputs():
    return []
