# Adversarial: a @triton.jit kernel is defined but forward never launches it.
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass


def forward(x, y):
    return torch.empty_like(x)
