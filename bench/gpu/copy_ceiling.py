#!/usr/bin/env python3
"""The GPU's device-to-device copy ceiling (bytes read + written per second), the denominator
of gpu.json's teacher.memory_bound_copy_fraction_median: a 1 GiB copy timed with
triton.testing.do_bench (copy_gbps, which bench/gpu/timing_vs_do_bench.py also calls), and a 32 MiB one (the suite's
level-2 tensors are 4096 x 2048 fp32, 32 MiB each), so the L2's share at the ops' own sizes
shows beside it.
Usage (on a GPU host): python3 bench/gpu/copy_ceiling.py --out copy_ceiling.json"""
import argparse
import json

import torch
import triton
from triton.testing import do_bench


def copy_gbps(numel):
    """A device-to-device copy of `numel` fp32 values, bytes read + written per second, and its ms."""
    src = torch.empty(numel, dtype=torch.float32, device="cuda").normal_()
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src), return_mode="median")
    return 2 * numel * 4 / (ms * 1e-3) / 1e9, ms


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__}
    for label, numel in (("copy_ceiling_gbps", 1 << 28), ("copy_32mib_gbps", 1 << 23)):
        result[label], result[label.replace("gbps", "ms")] = copy_gbps(numel)
    json.dump(result, open(args.out, "w"), indent=1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
