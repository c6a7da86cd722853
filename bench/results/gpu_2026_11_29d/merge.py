#!/usr/bin/env python3
"""Builds this folder's teacher_cuda.json from the calls' files (teacher_triton.json is
gpu_2026_11_29c's, unchanged) and rewrites bench/results/gpu.json's `teacher` cuda entries
from them (README.md here says what each call measured). Run from the repository root:
    python3 bench/results/gpu_2026_11_29d/merge.py"""
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


previous = os.path.join(results, "gpu_2026_11_29c")
shutil.copy(os.path.join(previous, "teacher_triton.json"), os.path.join(here, "teacher_triton.json"))

# cuda level 2: gpu_2026_11_29c's 62 rows, the 18 matmul-class ones re-timed in call 5 (f4e96c1:
# tensor-core tiles first). Level 1: call 5's level-1 run (f4e96c1), its 8 matmul-class rows
# from call 5's matmul run, and call 6's rows for the ops call 5 did not reach.
cuda = load("teacher_cuda.json", previous)
matmul = load("call5_teacher_cuda_matmul.json")["ops"]
# call 5's level-1 file merges the shard files its matmul run had written too: an op measured in
# both runs (bmm, mm_transposed) appears twice; keep the matmul run's row (set below).
level1 = list({r["name"]: r for r in load("call5_teacher_cuda_level1.json")["ops"] if r.get("level") == 1}.values())
rows = [r for r in cuda["ops"] if r.get("level") == 2] + level1
cuda["ops"] = replace_rows(rows, matmul, "gpu_2026_11_29d call 5 (f4e96c1: tensor-core tiles)")
# Call 6 (da5d12f): 12 ops re-timed after the broadcast float4 pointwise form (a33e4ac) and the
# streaming last pass of block-per-row reductions (da5d12f).
cuda["ops"] = replace_rows(cuda["ops"], load("call6_teacher_cuda_broadcast_stream.json")["ops"],
                           "gpu_2026_11_29d call 6 (da5d12f: broadcast float4 pointwise, streaming row reductions)")
cuda["merged_from"] = ["gpu_2026_11_29c/teacher_cuda.json (level 2)", "call5_teacher_cuda_level1.json (level 1)",
                       "call5_teacher_cuda_matmul.json (18 level-2 and 8 level-1 matmul-class ops)",
                       "call6_teacher_cuda_broadcast_stream.json (4 level-1 and 8 level-2 ops)"]
json.dump(cuda, open(os.path.join(here, "teacher_cuda.json"), "w"), indent=1)

ceiling = load("call1_copy_ceiling.json", previous)
summary = teacher_summary([here], ceiling["copy_ceiling_gbps"])
gpu_path = os.path.join(results, "gpu.json")
gpu = json.load(open(gpu_path))
teacher = gpu["teacher"]
level1_rows = [r for r in cuda["ops"] if r.get("level") == 1]
set_target_teacher(teacher, "cuda", cuda["ops"], summary, ceiling)
teacher["level2"]["command"] = (
    "export CALL_END=$(( $(date +%s) + 565 )); bash bench/gpu/run_device.sh prebuilt; OUT=$OUT/t "
    "TEACHER_TARGETS=<target> TEACHER_FILTER=level2/ TEACHER_SHARDS=4 TEACHER_ARGS='--max-schedules 3 --trials 3 "
    "--time-budget 0.5' bash bench/gpu/run_device.sh teacher summarize; triton: gpu_2026_11_29c; cuda: "
    "gpu_2026_11_29c with its 18 matmul-class ops re-timed at f4e96c1 (TEACHER_FILTER=level1/bmm,level1/linear,"
    "level1/matmul,level1/mm_transposed,level2/attention,level2/bmm,level2/linear,level2/matmul,_scores), "
    "bench/results/gpu_2026_11_29d/README.md")
teacher["level1"]["device"]["cuda"] = (
    f"NVIDIA H200, 2026-11-29: {len(level1_rows)} of 85 ops at f4e96c1 (gpu_2026_11_29d calls 5-6)")
teacher["matmul_vs_eager_min_note"] = (
    "over every correct matmul-class row on the H200 (levels 1 and 2, both targets). Both targets' matmuls run fp32 "
    "on the tensor cores as 3xTF32 (three TF32 products per fp32 product; eager is cuBLAS fp32 with TF32 off): "
    "triton through tl.dot(input_precision=\"tf32x3\"), cuda through the WMMA builtins (f4e96c1, 64 x 64 x 32 "
    "block tiles, 4 warps of 32 x 32), which took cuda's linear_* from 0.46-0.63x to 1.11-1.28x eager and "
    "1024^3 from 100 to 53 us (cuBLAS 64). triton's .lg rows form took level1/matvec from 0.38x to 1.31x eager.")
teacher["coverage_note"] = (
    f"level 2 complete in both targets on the H200; level 1 complete in triton on the H200 and {len(level1_rows)} of "
    "85 ops in cuda on the H200")
json.dump(gpu, open(gpu_path, "w"), indent=1)
print(json.dumps({k: teacher[k] for k in ("matmul_vs_eager_min", "matmul_vs_eager_min_op",
                                          "memory_bound_copy_fraction_median")}, indent=1))
for level in ("level1", "level2"):
    print(level, {k: teacher[level][k] for k in ("geomean_vs_eager", "geomean_vs_compile", "correct_share", "ops")})
