# Adversarial: launches a kernel that writes nothing; the output is whatever the allocation held.
import torch
import triton
import triton.language as tl


@triton.jit
def nothing(out_ptr, n, BLOCK: tl.constexpr):
    pass


def forward(x, y):
    out = torch.empty_like(x)
    nothing[(1,)](out, 1, BLOCK=16)
    return out
