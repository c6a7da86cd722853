# Adversarial (triton): correct output, plus 64 elements stored past the end of out.
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
    tail = tl.arange(0, BLOCK)
    tl.store(out_ptr + n + tail, tl.zeros([BLOCK], dtype=tl.float32), mask=(tail < 64) & (tl.program_id(0) == 0))


def forward(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    return out
