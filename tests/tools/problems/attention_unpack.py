# KernelBench-format problem (test fixture): scaled_dot_product_attention (absent from
# torch 1.13, decomposed on every torch), `b, h, s, d = x.shape` unpacking, and a constant
# made with torch.tensor(..., device=x.device) bounding the result through torch.min.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        out = F.scaled_dot_product_attention(q, k, v)
        b, h, s, d = out.shape
        out = out.transpose(1, 2).reshape(b, s, h * d)
        return torch.min(out, torch.tensor(0.25, device=out.device))


def get_inputs():
    return [torch.randn(2, 4, 16, 8), torch.randn(2, 4, 16, 8), torch.randn(2, 4, 16, 8)]


def get_init_inputs():
    return []
