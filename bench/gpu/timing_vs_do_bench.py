# Measures kforge's GPU timing protocol against triton.testing.do_bench on the same
# kernels, side by side in one process run: a Triton add (memory-bound) and a Triton
# softmax through the Python runner's `time` command, and PyTorch eager and
# torch.compile through the reference runner; each also timed with do_bench (median).
# A CUDA kernel through the C++ sandbox (kforge-worker check --target cuda) against
# do_bench of the same source built with torch's load_inline. Also repeats one kforge
# timing several times (spread of the medians), and times the Python runner's protocol
# synchronised per run ("dense": false) beside its default batched loop.
# Usage (GPU host): python3 bench/gpu/timing_vs_do_bench.py --runner build-gpu/bin/runner/kforge_runner.py
#                   --worker build-gpu/bin/kforge-worker --out t.json
import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys

import numpy as np
import torch
import triton
from triton.testing import do_bench

from copy_ceiling import copy_gbps  # this folder (the script's own, first on sys.path)

PAGE = os.sysconf("SC_PAGE_SIZE")

ADD = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def forward(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
'''

SOFTMAX = '''
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


def forward(x, y):
    out = torch.empty_like(x)
    rows, cols = x.shape
    softmax_kernel[(rows,)](x, out, cols, BLOCK=triton.next_power_of_2(cols))
    return out
'''


def align(value, to):
    return (value + to - 1) // to * to


class Arena:
    """Two inputs of `shape` per set, `sets` sets, then one output slot per set."""

    def __init__(self, shape, sets):
        self.shape, n = list(shape), math.prod(shape)
        self.fd = os.memfd_create("kforge-timing")
        cursor, self.ins = 0, []
        rng = np.random.default_rng(0)
        self.host = []
        for _ in range(sets):
            self.ins.append([cursor, cursor + n * 4])
            cursor += align(2 * n * 4, 64)
        self.input_region = align(cursor, PAGE)
        self.outs = [self.input_region + i * align(n * 4, 64) for i in range(sets)]
        self.total = align(self.outs[-1] + n * 4, PAGE)
        os.ftruncate(self.fd, self.total)
        for offsets in self.ins:
            x = rng.standard_normal(n).astype(np.float32)
            y = rng.standard_normal(n).astype(np.float32)
            os.pwrite(self.fd, x.tobytes(), offsets[0])
            os.pwrite(self.fd, y.tobytes(), offsets[1])
            self.host.append((torch.from_numpy(x).reshape(shape), torch.from_numpy(y).reshape(shape)))

    def sets(self):
        return [{"inputs": [{"name": nm, "offset": off, "shape": self.shape, "dtype": "float32"}
                            for nm, off in zip("xy", ins)],
                 "outputs": [{"offset": out, "shape": self.shape, "dtype": "float32"}]}
                for ins, out in zip(self.ins, self.outs)]


def runner(path, role, arena):
    proc = subprocess.Popen([sys.executable, path, "--role", role, "--device", "cuda"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, pass_fds=(3,), preexec_fn=lambda: os.dup2(arena.fd, 3))
    assert json.loads(proc.stdout.readline())["ready"]

    def send(cmd):
        proc.stdin.write(json.dumps(cmd) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())
    return proc, send


def kforge_time(send, arena, mode="eager", seconds=1.0, spin=True, dense=True):
    reply = send({"cmd": "time", "sets": arena.sets(), "mode": mode, "max_seconds": seconds, "target_iqr": 0.01,
                  "input_region": arena.input_region, "arena_bytes": arena.total, "spin": spin, "dense": dense})
    assert reply["ok"], reply
    return reply


def synced_bench(fn, runs=2000):
    """do_bench's loop (256 MB flush, events around fn), but synchronised after every call
    as kforge's protocol is: the GPU idles between runs instead of running a dense queue."""
    cache = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for _ in range(100):
        fn()
    times = []
    for _ in range(runs):
        cache.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--worker", help="kforge-worker: adds the CUDA case (C++ sandbox)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    cases = []
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.runner)))
    for name, source, shape in [("triton_add_16M", ADD, [1 << 24]), ("triton_add_1M", ADD, [1 << 20]),
                                ("triton_softmax_4096x1024", SOFTMAX, [4096, 1024])]:
        arena = Arena(shape, sets=4)
        proc, send = runner(args.runner, "candidate", arena)
        assert send({"cmd": "build", "source": source})["ok"]
        medians = [kforge_time(send, arena)["median_ms"] for _ in range(5)]
        no_spin = [kforge_time(send, arena, spin=False)["median_ms"] for _ in range(3)]
        synced = [kforge_time(send, arena, dense=False)["median_ms"] for _ in range(3)]
        proc.stdin.close()
        proc.wait()
        x, y = (t.cuda() for t in arena.host[0])
        with open(f"/tmp/kforge_timing_{name}.py", "w") as file:
            file.write(source)
        spec = importlib.util.spec_from_file_location(f"timing_{name}", f"/tmp/kforge_timing_{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        bench = do_bench(lambda: module.forward(x, y), warmup=100, rep=500, return_mode="median")
        row = case_row(name, medians, bench)
        # Where a difference comes from: kforge without its spin, do_bench synchronised per call.
        row["kforge_no_spin_ms"] = sorted(no_spin)[1]
        row["kforge_synced_ms"] = sorted(synced)[1]
        row["do_bench_synced_ms"] = synced_bench(lambda: module.forward(x, y))
        cases.append(row)
    # PyTorch eager and torch.compile through the reference runner (the baselines' path).
    arena = Arena([4096, 4096], sets=4)
    proc, send = runner(args.runner, "reference", arena)
    op = "def forward(x: Tensor, y: Tensor) -> Tensor:\n    return torch.sigmoid(x) * x * y\n"
    assert send({"cmd": "build", "source": op, "compile": True})["ok"]
    eager = [kforge_time(send, arena, "eager")["median_ms"] for _ in range(5)]
    compiled = [kforge_time(send, arena, "compile")["median_ms"] for _ in range(5)]
    proc.stdin.close()
    proc.wait()
    x, y = (t.cuda() for t in arena.host[0])
    fn = lambda a, b: torch.sigmoid(a) * a * b  # noqa: E731
    cfn = torch.compile(fn)
    cfn(x, y)
    cases.append(case_row("eager_silu_mul_4096", eager, do_bench(lambda: fn(x, y), return_mode="median")))
    cases.append(case_row("compile_silu_mul_4096", compiled, do_bench(lambda: cfn(x, y), return_mode="median")))
    cuda_error = None
    if args.worker:
        try:
            cases.append(cuda_case(args.worker))
        except Exception as error:  # noqa: BLE001 (load_inline needs nvcc and ninja; say why, keep the rest)
            cuda_error = f"{type(error).__name__}: {error}"[:2000]
            print("cuda case failed:", cuda_error)
    # The copy ceiling: a 1 GiB device-to-device copy, bytes read + written per second.
    copy_ceiling_gbps, _ = copy_gbps(1 << 28)
    result = {
        "device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
        "copy_ceiling_gbps": copy_ceiling_gbps,
        "cases": cases,
        "cuda_case_error": cuda_error,
        "timing_vs_do_bench_max_rel_diff": max(abs(c["rel_diff"]) for c in cases),
        "timing_spread_pct_max": max(c["spread_of_medians_pct"] for c in cases),
        "command": "python3 bench/gpu/timing_vs_do_bench.py --runner build-gpu/bin/runner/kforge_runner.py"
                   + (" --worker build-gpu/bin/kforge-worker" if args.worker else ""),
    }
    with open(args.out, "w") as file:
        json.dump(result, file, indent=1)
    for c in cases:
        print(f"{c['case']:28s} kforge {c['kforge_median_ms']:.4f} ms  do_bench {c['do_bench_ms']:.4f} ms  "
              f"diff {100 * c['rel_diff']:+.1f}%  spread of 5 medians {c['spread_of_medians_pct']:.2f}%"
              + (f"  (kforge no spin {c['kforge_no_spin_ms']:.4f}, kforge synced {c['kforge_synced_ms']:.4f}, "
                 f"do_bench synced {c['do_bench_synced_ms']:.4f})" if "kforge_no_spin_ms" in c else ""))
    print("max |diff|", round(result["timing_vs_do_bench_max_rel_diff"] * 100, 2), "%; copy ceiling",
          round(copy_ceiling_gbps), "GB/s")


CUDA_OP = "suite/level2/silu_mul.json"
CUDA_PROGRAM = "tests/worker/harness/adversarial_gpu/honest.cu"  # silu(x) * y, 256 threads per block


def cuda_case(worker):
    """The C++ sandbox's protocol (kforge-worker check --target cuda, 5 checks) against
    do_bench of the same kernel source, launched the same way through load_inline."""
    from torch.utils.cpp_extension import load_inline

    medians = []
    for _ in range(5):
        out = subprocess.run([worker, "check", CUDA_OP, CUDA_PROGRAM, "--target", "cuda", "--no-compile-baseline",
                              "--time-budget", "1"], capture_output=True, text=True, check=False)
        result = json.loads(out.stdout.splitlines()[0])
        assert result["outcome"] == "correct", result
        medians.append(result["kernel"]["median_ms"])
    with open(CUDA_PROGRAM) as file:
        kernel = "".join(line for line in file if not line.startswith("// kforge-launch"))
    launcher = kernel + """
torch::Tensor silu_mul(torch::Tensor x, torch::Tensor y) {
  auto out = torch::empty_like(x);
  int n = static_cast<int>(x.numel());
  k<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n);
  return out;
}
"""
    module = load_inline("kforge_timing_silu_mul", cpp_sources="torch::Tensor silu_mul(torch::Tensor x, torch::Tensor y);",
                         cuda_sources="#include <torch/extension.h>\n" + launcher, functions=["silu_mul"])
    x = torch.randn(4096, 2048, device="cuda")
    y = torch.randn(4096, 2048, device="cuda")
    torch.testing.assert_close(module.silu_mul(x, y), torch.sigmoid(x) * x * y)
    row = case_row("cuda_silu_mul_4096x2048", medians, do_bench(lambda: module.silu_mul(x, y), return_mode="median"))
    row["do_bench_synced_ms"] = synced_bench(lambda: module.silu_mul(x, y))
    return row


def case_row(name, medians, bench):
    median = sorted(medians)[len(medians) // 2]
    return {"case": name, "kforge_medians_ms": medians, "kforge_median_ms": median, "do_bench_ms": bench,
            "rel_diff": (median - bench) / bench,
            "spread_of_medians_pct": 100 * (max(medians) - min(medians)) / median}


if __name__ == "__main__":
    main()
