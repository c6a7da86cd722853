#!/usr/bin/env python3
"""Builds this folder's teacher_cuda.json from gpu_2026_11_29d's and this session's calls
(teacher_triton.json is gpu_2026_11_29d's, unchanged) and rewrites bench/results/gpu.json's
`teacher` cuda entries from them (README.md here says what each call measured). Run from the
repository root:
    python3 bench/results/gpu_2026_11_29e/merge.py"""
import json
import os
import shutil
import sys

here = os.path.dirname(os.path.abspath(__file__))
results = os.path.dirname(here)
sys.path.insert(0, os.path.join(results, "..", "gpu"))
from summarize import replace_rows, set_target_teacher, teacher_summary  # noqa: E402


def load(name, folder=here):
    return json.load(open(os.path.join(folder, name)))


previous = os.path.join(results, "gpu_2026_11_29d")
shutil.copy(os.path.join(previous, "teacher_triton.json"), os.path.join(here, "teacher_triton.json"))

# Later calls replace earlier rows of the same op (each call measured the code of its commit):
calls = [
    ("call1_teacher_cuda_rows.json", "gpu_2026_11_29e call 1 (bfac700: rows held in registers, float4 full reductions)"),
    ("call1_teacher_cuda_matmul_rows.json", "gpu_2026_11_29e call 1 (bfac700), the first 4 schedules"),
    ("call2_teacher_cuda_level2_partial.json", "gpu_2026_11_29e call 2 (2bfea81), level 2 in path order"),
    ("call2_teacher_cuda_changed.json", "gpu_2026_11_29e call 2 (2bfea81: reciprocals, float4 full reductions)"),
    ("call2_teacher_cuda_matmul_rows.json", "gpu_2026_11_29e call 2 (2bfea81), the first 4 schedules"),
    # f22d9b9 put split reductions unrolled 4 first; reverted (45e073c) after this call. Each
    # op's best was a schedule both commits have (unroll 1), the other ops' programs are the same.
    ("call3_teacher_cuda_dim0.json", "gpu_2026_11_29e call 3 (f22d9b9: split reductions unrolled 4, reverted)"),
    ("call3_teacher_cuda_level2_rest.json", "gpu_2026_11_29e call 3 (f22d9b9), the level-2 ops calls 1-2 did not reach"),
    ("call4_teacher_cuda_dim0.json", "gpu_2026_11_29e call 4 (3b07d1c: twice the slices), the first 3 schedules"),
]
cuda = load("teacher_cuda.json", previous)
for name, why in calls:
    cuda["ops"] = replace_rows(cuda["ops"], load(name)["ops"], why)
cuda["merged_from"] = ["gpu_2026_11_29d/teacher_cuda.json"] + [name for name, _ in calls]
json.dump(cuda, open(os.path.join(here, "teacher_cuda.json"), "w"), indent=1)

ceiling = load("call1_copy_ceiling.json", os.path.join(results, "gpu_2026_11_29c"))
summary = teacher_summary([here], ceiling["copy_ceiling_gbps"])
gpu_path = os.path.join(results, "gpu.json")
gpu = json.load(open(gpu_path))
teacher = gpu["teacher"]
set_target_teacher(teacher, "cuda", cuda["ops"], summary, ceiling)
level1_rows = [r for r in cuda["ops"] if r.get("level") == 1]
level2_rows = [r for r in cuda["ops"] if r.get("level") == 2]
this_session = [r for r in level2_rows if r.get("source", "").startswith("gpu_2026_11_29e")]
teacher["level2"]["command"] = (
    "export CALL_END=$(( $(date +%s) + 565 )); bash bench/gpu/run_device.sh prebuilt; OUT=$OUT/t "
    "TEACHER_TARGETS=<target> TEACHER_FILTER=level2/ TEACHER_SHARDS=4 TEACHER_ARGS='--max-schedules 3 --trials 3 "
    "--time-budget 0.5' bash bench/gpu/run_device.sh teacher summarize; triton: gpu_2026_11_29c; cuda: "
    f"{len(this_session)} of 62 ops timed at bfac700..3b07d1c (bench/results/gpu_2026_11_29e/README.md)")
teacher["level1"]["device"]["cuda"] = (
    f"NVIDIA H200, 2026-11-29: {len(level1_rows)} of 85 ops (gpu_2026_11_29d calls 5-6, gpu_2026_11_29e calls 1-2)")
teacher["level1"]["command"]["cuda"] = (
    "OUT=$OUT/l1 TEACHER_TARGETS=cuda TEACHER_SHARDS=4 TEACHER_FILTER=level1/ TEACHER_ARGS='--max-schedules 3 --trials 3 "
    "--time-budget 0.5' bash bench/gpu/run_device.sh teacher (gpu_2026_11_29d call 5, f4e96c1), the ops it did not "
    "reach and those the later commits change re-timed with the same arguments and their filters "
    "(gpu_2026_11_29e calls 1-4, bench/results/gpu_2026_11_29e/README.md)")
teacher["level2"]["notes"] = (
    "complete: all 62 level-2 ops in both targets, every one correct; each op's best of the first 3 schedules spread "
    "over its space, side by side with CUDA eager and torch.compile in one check (cuda: the 4 ops with a matmul and "
    "a softmax row stage, the first 4 schedules of their space, the row forms of one tensor-core tile)")
teacher["coverage_note"] = (
    f"level 2 complete in both targets on the H200; level 1 complete in triton on the H200 and {len(level1_rows)} of "
    "85 ops in cuda on the H200")
json.dump(gpu, open(gpu_path, "w"), indent=1)
print(json.dumps({k: teacher[k] for k in ("matmul_vs_eager_min", "matmul_vs_eager_min_op",
                                          "memory_bound_copy_fraction_median",
                                          "memory_bound_copy_32mib_fraction_median")}, indent=1))
for level in ("level1", "level2"):
    print(level, {k: teacher[level][k] for k in ("geomean_vs_eager", "geomean_vs_compile", "correct_share", "ops")})
print(f"level 2 cuda rows re-timed this session: {len(this_session)}")
