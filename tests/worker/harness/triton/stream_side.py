# Adversarial: launches on a side stream so the timed region misses the work.
import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    pass


def forward(x, y):
    with torch.cuda.stream(torch.cuda.Stream()):
        k[(1,)](x, 1, BLOCK=16)
    return x
