# Adversarial (triton): never returns
import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # A volatile load each iteration: the compiler cannot prove the loop ends or drop it
    # (a loop on a constant, as in `while i < 1: i = i * 1`, is folded away).
    v = tl.load(x_ptr, volatile=True)
    while v < 1e30:
        v = tl.load(x_ptr, volatile=True)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, v, mask=mask)


def forward(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    k[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
