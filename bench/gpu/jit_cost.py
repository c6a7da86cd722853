#!/usr/bin/env python3
"""Where a Triton candidate's first runs go on a GPU host, outside the harness.

The end-to-end split on the H200 (2026-11-28) showed every triton candidate's `run` phase
at 4-5 s while its timed runs took about 1 s. This script takes the teacher's first schedule
for each op (kforge-codegen emit OP 0 --target triton) and, in a fresh Python process per op
as the harness's candidate runner is, times: importing torch and triton, the runner's own
warm-up kernel (worker/harness/runner/warm_kernels.py), importing the candidate module, and
each forward call on the op's main shapes (first call: Triton's JIT; second: cached) and on
each of its extra shapes (a new specialisation when a size is no longer a multiple of 16).

Usage (GPU host): python3 bench/gpu/jit_cost.py --bin build-gpu/bin [--ops silu_mul,...] [--out F]
Prints one JSON line per op; --out writes them all as one JSON object.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROBE = r"""
import importlib.util, json, sys, time
t0 = time.perf_counter()
import torch, triton
sys.path.insert(0, sys.argv[3])
from warm_kernels import warm_triton
out = {"import_torch_triton_s": time.perf_counter() - t0}
t = time.perf_counter(); warm_triton(torch, torch.device("cuda")); torch.cuda.synchronize()
out["warm_kernel_s"] = time.perf_counter() - t
t = time.perf_counter()
spec = importlib.util.spec_from_file_location("cand", sys.argv[1]); mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
out["import_candidate_s"] = time.perf_counter() - t
op = json.load(open(sys.argv[2]))
DT = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "int64": torch.int64,
      "int32": torch.int32, "bool": torch.bool}
def inputs(shapes):
    xs = []
    for inp in op["inputs"]:
        shape = shapes.get(inp["name"], inp["shape"]) if shapes else inp["shape"]
        dt = DT.get(inp.get("dtype", "float32"), torch.float32)
        xs.append(torch.randn(shape, device="cuda").to(dt) if dt.is_floating_point
                  else torch.randint(0, 2, shape, device="cuda").to(dt))
    return xs
calls = []
for label, shapes in [("main", None)] + [(f"extra{i + 1}", s) for i, s in enumerate(op.get("extra_shapes", []))]:
    xs = inputs(shapes)
    for attempt in ("first", "second"):
        t = time.perf_counter()
        with torch.no_grad():
            mod.forward(*xs)
        torch.cuda.synchronize()
        calls.append({"shapes": label, "call": attempt, "s": round(time.perf_counter() - t, 4)})
out["calls"] = calls
out["first_calls_s"] = round(sum(c["s"] for c in calls if c["call"] == "first"), 3)
print(json.dumps(out))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=os.path.join(ROOT, "build-gpu", "bin"))
    parser.add_argument("--ops", default="silu_mul,gelu_add,softmax_bias,rms_norm_silu,add_layer_norm")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    results = {}
    runner_dir = os.path.join(ROOT, "worker", "harness", "runner")
    with tempfile.TemporaryDirectory() as work:
        for op in args.ops.split(","):
            path = os.path.join(ROOT, "suite", f"{op}.json" if "/" in op else f"level2/{op}.json")
            emitted = subprocess.run([os.path.join(args.bin, "kforge-codegen"), "emit", path, "0", "--target", "triton"],
                                     capture_output=True, text=True)
            if emitted.returncode != 0:
                results[op] = {"error": "kforge-codegen emit: " + emitted.stderr[-300:]}
                continue
            module = os.path.join(work, op.replace("/", "_") + ".py")
            with open(module, "w") as file:
                file.write(emitted.stdout)
            # A private Triton cache per op, as each candidate runner has one.
            env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(work, "cache_" + op.replace("/", "_")))
            probe = subprocess.run([args.python, "-c", PROBE, module, path, runner_dir], capture_output=True,
                                   text=True, env=env, timeout=300)
            lines = [line for line in probe.stdout.splitlines() if line.startswith("{")]
            results[op] = json.loads(lines[-1]) if lines else {"error": probe.stderr[-500:]}
            print(op, json.dumps(results[op]), flush=True)
    if args.out:
        with open(args.out, "w") as file:
            json.dump({"ops": results, "command": " ".join(sys.argv)}, file, indent=1)


if __name__ == "__main__":
    main()
