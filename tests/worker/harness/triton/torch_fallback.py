# Adversarial: forward computes with torch and launches a kernel only as a decoy.
import torch
import triton
import triton.language as tl


@triton.jit
def noop(x_ptr, n, BLOCK: tl.constexpr):
    pass


def forward(x, y):
    noop[(1,)](x, 1, BLOCK=16)
    return x + y
