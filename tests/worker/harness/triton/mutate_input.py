# Adversarial: writes its result into input x and returns it.
import torch
import triton
import triton.language as tl


@triton.jit
def add_inplace(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def forward(x, y):
    add_inplace[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
    return x
