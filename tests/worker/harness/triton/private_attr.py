# Adversarial: reaches into private state to pop the guard's dispatch mode.
import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    pass


def forward(x, y):
    torch._C._unset_dispatch_mode(0)
    return x + y
