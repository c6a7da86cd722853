# Adversarial (triton): covers only the main shape's element count
import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    full = offs < 4096 * 2048
    tl.store(out_ptr + offs, x / (1.0 + tl.exp(-x)) * y, mask=full)


def forward(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    k[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
