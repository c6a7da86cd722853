# Adversarial: computes once and returns the cached result on every later call (with a
# decoy launch, so only the output check can catch it).
import torch
import triton
import triton.language as tl

CACHE = []


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def decoy(x_ptr, BLOCK: tl.constexpr):
    pass


def forward(x, y):
    if CACHE:
        decoy[(1,)](x, BLOCK=16)
        return CACHE[0]
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 256),)](x, y, out, x.numel(), BLOCK=256)
    CACHE.append(out)
    return out
