#!/usr/bin/env python3
"""Why the teacher's Triton reductions trail torch.compile (issue #16: suite level-2 last-dim
reductions at 0.87-0.91x compile on the H200, 2026-11-29). Two parts, on a GPU host:
 1. For each named suite op: eager and torch.compile (default mode, as the harness's
    baseline) timed with triton.testing.do_bench (L2 flushed), and the Triton kernels Inductor
    generated with the config its autotuner kept (launcher config, warps, stages) and source.
 2. A grid of row-reduction kernels for sum(x * y, -1) and amax(abs(x), -1) over 4096 x 2048
    fp32: looped (Inductor's shape: [XBLOCK, RBLOCK] accumulator, one reduce after the loop)
    vs whole rows, rows per program, warps, eviction policy, masked or not, timed the same way.
Usage: python3 bench/gpu/reduction_ab.py --out reduction_ab.json [--ops dot_rows,max_abs,...]"""
import argparse
import gc
import json
import math

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--ops", default="dot_rows,max_abs,l1_distance,mean_relu,sum_exp_dim0,mse_loss,cosine_similarity")
args = parser.parse_args()


def bench(fn, rep=100):
    return do_bench(fn, warmup=min(25, rep // 4), rep=rep, return_mode="median")


def autotuners():
    """Inductor's CachingAutotuner objects alive now (gc lists weak proxies whose referent may be gone)."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    found = []
    for o in gc.get_objects():
        try:
            if isinstance(o, CachingAutotuner):
                found.append(o)
        except ReferenceError:
            continue
    return found


def inductor_part(name):
    spec = json.load(open(f"suite/level2/{name}.json"))
    scope = {"torch": torch, "Tensor": torch.Tensor}
    exec(spec["source"], scope)
    forward = scope["forward"]
    gen = torch.Generator(device="cuda").manual_seed(0)
    inputs = [torch.randn(i["shape"], device="cuda", generator=gen) for i in spec["inputs"]]
    before = {id(o) for o in autotuners()}
    torch._dynamo.reset()
    compiled = torch.compile(forward)
    compiled(*inputs)
    torch.cuda.synchronize()
    row = {"op": name, "shapes": [list(t.shape) for t in inputs],
           "eager_ms": bench(lambda: forward(*inputs)), "compile_ms": bench(lambda: compiled(*inputs)),
           "kernels": []}
    for o in autotuners():
        if id(o) not in before:
            launchers = getattr(o, "launchers", []) or []
            cfg = launchers[0].config if launchers else None
            row["kernels"].append({
                "name": o.fn.__name__,
                "config": None if cfg is None else {"kwargs": dict(cfg.kwargs), "num_warps": cfg.num_warps,
                                                     "num_stages": cfg.num_stages},
                "configs_tried": len(getattr(o, "configs", []) or []),
                "source": getattr(o.fn, "src", None)})
    return row


@triton.jit
def rows_loop(x, y, out, M, N, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr, EVICT: tl.constexpr,
              MASKED: tl.constexpr, OP: tl.constexpr):
    rows = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    rmask = rows < M
    if OP == "sum_mul":
        acc = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    else:
        acc = tl.full([XBLOCK, RBLOCK], float("-inf"), tl.float32)
    for r0 in range(0, N, RBLOCK):
        cols = r0 + tl.arange(0, RBLOCK)[None, :]
        if MASKED:
            m = rmask & (cols < N)
            a = tl.load(x + rows * N + cols, mask=m, other=0.0, eviction_policy=EVICT)
        else:
            a = tl.load(x + rows * N + cols, eviction_policy=EVICT)
        if OP == "sum_mul":
            if MASKED:
                b = tl.load(y + rows * N + cols, mask=m, other=0.0, eviction_policy=EVICT)
            else:
                b = tl.load(y + rows * N + cols, eviction_policy=EVICT)
            acc = acc + a * b
        else:
            v = tl.abs(a)
            if MASKED:
                v = tl.where(m, v, float("-inf"))
            acc = tl.maximum(acc, v)
    if OP == "sum_mul":
        red = tl.sum(acc, 1)[:, None]
    else:
        red = tl.max(acc, 1)[:, None]
    tl.store(out + rows, red, mask=rmask)


def grid_part():
    M, N = 4096, 2048
    x = torch.randn(M, N, device="cuda")
    y = torch.randn(M, N, device="cuda")
    out = torch.empty(M, device="cuda")
    rows = []
    for op, ref, nbytes in (("sum_mul", lambda: (x * y).sum(-1), 2 * M * N * 4),
                            ("amax_abs", lambda: x.abs().amax(-1), M * N * 4)):
        want = ref()
        for xblock in (1, 2, 4):
            for rblock in (512, 1024, 2048):
                if xblock * rblock > 8192:
                    continue
                for warps in (4, 8, 16):
                    if xblock * rblock < warps * 32 * 4:
                        continue
                    for evict in ("", "evict_first"):
                        for masked in (True, False):
                            def run():
                                rows_loop[(triton.cdiv(M, xblock),)](x, y, out, M, N, XBLOCK=xblock, RBLOCK=rblock,
                                                                     EVICT=evict, MASKED=masked, OP=op, num_warps=warps)
                            run()
                            ok = bool(torch.allclose(out, want, atol=1e-3, rtol=1e-4))
                            ms = bench(run, rep=40)
                            rows.append({"op": op, "xblock": xblock, "rblock": rblock, "warps": warps, "evict": evict,
                                         "masked": masked, "ok": ok, "ms": ms, "gbps": nbytes / (ms * 1e-3) / 1e9})
        best = min((r for r in rows if r["op"] == op and r["ok"]), key=lambda r: r["ms"])
        print(op, "best", json.dumps(best), "compile-style baseline", bench(torch.compile(ref)), flush=True)
    return rows


result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
          "inductor": [], "grid": []}
for name in args.ops.split(","):
    try:
        row = inductor_part(name)
    except Exception as e:  # one op's failure is reported, the rest still measured
        row = {"op": name, "error": repr(e)[:400]}
    result["inductor"].append(row)
    print(name, {k: v for k, v in row.items() if k != "kernels"},
          [(k["name"], k["config"]) for k in row.get("kernels", [])], flush=True)
json.dump(result, open(args.out, "w"), indent=1)  # part 1 kept if part 2 is cut off
result["grid"] = grid_part()
json.dump(result, open(args.out, "w"), indent=1)
