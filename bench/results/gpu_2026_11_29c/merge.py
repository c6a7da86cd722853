#!/usr/bin/env python3
"""Builds this folder's teacher_triton.json and teacher_cuda.json from the calls' files and
rewrites bench/results/gpu.json's `teacher` section from them (README.md here says what each
call measured). Run from the repository root:
    python3 bench/results/gpu_2026_11_29c/merge.py"""
import json
import os
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))
results = os.path.dirname(here)
sys.path.insert(0, os.path.join(results, "..", "gpu"))
from summarize import replace_rows, teacher_summary  # noqa: E402


def load(name, folder=here):
    return json.load(open(os.path.join(folder, name)))


# triton: level 1 from the second session of 2026-11-29 (gpu_2026_11_29b) with matvec re-timed
# (call 1, the .lg rows form); level 2 entirely from call 2 (25 ops re-timed after the
# eviction-policy change, the 37 others carried in the resumed shard files).
triton = load("teacher_triton.json", os.path.join(results, "gpu_2026_11_29b"))
matvec = load("call1_teacher_triton_matvec.json")["ops"]
level2 = load("call2_teacher_triton_level2.json")["ops"]
rows = [r for r in triton["ops"] if r.get("level") == 1]
rows = replace_rows(rows, matvec, "gpu_2026_11_29c call 1 (83bcca9's parent 0fc4751: .lg matvec)")
rows += level2
triton["ops"] = rows
triton["merged_from"] = ["gpu_2026_11_29b/teacher_triton.json (level 1)", "call1_teacher_triton_matvec.json",
                         "call2_teacher_triton_level2.json (level 2)"]
json.dump(triton, open(os.path.join(here, "teacher_triton.json"), "w"), indent=1)

# cuda: level 2 from call 3 (the 18 matmul-class ops re-timed with the register tiles, the 44
# others carried); level 1's matmul-class ops from call 4 (the first cuda level-1 rows on an H200).
cuda = load("call3_teacher_cuda_level2.json")
cuda["ops"] = cuda["ops"] + load("call4_teacher_cuda_level1_matmul.json")["ops"]
cuda["merged_from"] = ["call3_teacher_cuda_level2.json", "call4_teacher_cuda_level1_matmul.json (level 1: 7 matmul ops)"]
json.dump(cuda, open(os.path.join(here, "teacher_cuda.json"), "w"), indent=1)

ceiling = load("call1_copy_ceiling.json")
summary = teacher_summary([here], ceiling["copy_ceiling_gbps"])
gpu_path = os.path.join(results, "gpu.json")
gpu = json.load(open(gpu_path))
teacher = gpu["teacher"]
device = "NVIDIA H200 (1 GPU, 16 cores), torch 2.11.0+cu130, triton 3.6.0"
for level in ("level1", "level2"):
    for key, per_target in summary.get(level, {}).items():
        for target, value in per_target.items():
            if level == "level1" and target == "cuda":
                continue  # 7 matmul rows: reported under matmul_vs_eager_min, not as a level-1 geomean
            teacher[level].setdefault(key, {})[target] = value
teacher["level2"]["device"] = device
teacher["level2"]["measured_at"] = "2026-11-29"
teacher["level2"]["command"] = (
    "export CALL_END=$(( $(date +%s) + 565 )); bash bench/gpu/run_device.sh prebuilt; OUT=$OUT/t "
    "TEACHER_TARGETS=<target> TEACHER_FILTER=level2/ TEACHER_SHARDS=4 TEACHER_ARGS='--max-schedules 3 --trials 3 "
    "--time-budget 0.5' bash bench/gpu/run_device.sh teacher summarize, resumed from the shard files of "
    "gpu_2026_11_29b with the rows of the ops whose programs changed removed (triton: 25 reductions at 83bcca9, "
    "call 2; cuda: 18 matmul-class ops at c270584, call 3); bench/results/gpu_2026_11_29c/README.md")
teacher["level2"]["notes"] = ("complete: all 62 level-2 ops in both targets, every one correct; each op's best of the "
                              "first 3 schedules spread over its space, side by side with CUDA eager and torch.compile "
                              "in one check")
teacher["level1"]["device"]["triton"] = "NVIDIA H200, 2026-11-29 (all 85 ops; matvec re-timed in gpu_2026_11_29c)"
teacher["level1"]["device"]["cuda"] = ("NVIDIA H100, 2026-11-24 (53 of 85 ops, cut off by the budget); on the H200 only "
                                       "the 7 matmul-class ops were timed (gpu_2026_11_29c call 4)")

correct = lambda bench: [r for r in bench["ops"] if r.get("outcome") == "correct"]  # noqa: E731
for target, bench in (("triton", triton), ("cuda", cuda)):
    mm = [r for r in correct(bench) if "gflops" in r]
    low = min(mm, key=lambda r: r["speedup_vs_eager"])
    teacher["matmul_vs_eager_min"][target] = low["speedup_vs_eager"]
    teacher["matmul_vs_eager_min_op"][target] = f"level{low['level']}/{low['name']}"
    fused = [r["gbps"] for r in correct(bench) if r.get("level") == 2 and "gflops" not in r]
    teacher["memory_bound_gbps_median"][target] = statistics.median(fused)
    teacher["memory_bound_copy_fraction_median"][target] = statistics.median(fused) / ceiling["copy_ceiling_gbps"]
    teacher.setdefault("memory_bound_copy_32mib_fraction_median", {})[target] = (
        statistics.median(fused) / ceiling["copy_32mib_gbps"])
teacher["matmul_vs_eager_min_note"] = (
    "over every correct matmul-class row on the H200 (triton: levels 1 and 2; cuda: level 2 and level 1's 7 matmul "
    "ops). triton's .lg rows form took level1/matvec from 0.38x to 1.31x eager. cuda's matmuls are SIMT fp32 kernels "
    "(no tensor cores; eager runs cuBLAS fp32 with TF32 off): the 2-D register tiles (single-buffered, c270584) raised linear_* from 0.40-0.44x "
    "to 0.46-0.63x, and linear_swiglu (two products and a gated epilogue) kept the 1-D tile at 0.36x.")
teacher["copy_ceiling_gbps"] = {"h200_1gib": ceiling["copy_ceiling_gbps"], "h200_32mib": ceiling["copy_32mib_gbps"]}
teacher["memory_bound_copy_fraction_note"] = (
    "median over the correct level-2 ops that are not matmul-class, GB/s (bytes read + written over the kernel's "
    "time) over the H200's device-to-device copy ceiling measured in the same session with do_bench "
    "(bench/gpu/copy_ceiling.py): 4,223 GB/s for a 1 GiB copy (memory_bound_copy_fraction_median) and 3,192 GB/s "
    "for a 32 MiB copy, the size of the suite's level-2 tensors (memory_bound_copy_32mib_fraction_median). "
    "The suite's ops move 64-128 MiB, between the two.")
teacher["coverage_note"] = ("level 2 complete in both targets on the H200; level 1 complete in triton on the H200; "
                            "cuda level 1 from the H100's partial run, plus its 7 matmul-class ops on the H200")
json.dump(gpu, open(gpu_path, "w"), indent=1)
print(json.dumps({k: teacher[k] for k in ("matmul_vs_eager_min", "matmul_vs_eager_min_op", "memory_bound_gbps_median",
                                          "memory_bound_copy_fraction_median",
                                          "memory_bound_copy_32mib_fraction_median")}, indent=1))
for level in ("level1", "level2"):
    print(level, {k: teacher[level][k] for k in ("geomean_vs_eager", "geomean_vs_compile", "correct_share", "ops")})
