# Joins the three H100 calls of 2026-11-24 into bench/results/gpu.json and adds what the
# summary cannot know (coverage, the lost earlier timing run, how to read the numbers).
# Usage: python3 bench/gpu/annotate_2026_11_24.py A_DIR B_DIR C_DIR  (the calls' output folders)
import json
import subprocess
import sys

a, b, c = sys.argv[1:4]
command = (
    "three device calls on one H100, 2026-11-24: (A 13:18) E2E_TARGETS=opencl HARNESS_ARGS='--warm 6 --cold 2' "
    "BUDGET_S=555 bash bench/gpu/run_device.sh build e2e adversarial harness timing summarize; (B 14:35) "
    "E2E_OPS=silu_mul,rms_norm_silu E2E_TARGETS=triton,cuda E2E_SAMPLES=2 HARNESS_ARGS='--warm 4 --cold 1 --targets "
    "cuda,triton' TEACHER_FILTER=level2/ TEACHER_SHARDS=5 TEACHER_ARGS='--max-schedules 3 --trials 3 --time-budget 0.5' "
    "BUDGET_S=560 bash bench/gpu/run_device.sh build e2e harness teacher summarize; (C 14:44, the same warm machine) "
    "the same TEACHER_* with BUDGET_S=235 bash bench/gpu/run_device.sh teacher timing summarize; joined with "
    "python3 bench/gpu/annotate_2026_11_24.py A B C")
# No call of these three measured the copy ceiling; the earlier run's 3002 GB/s (earlier_run
# below) scales the teacher's memory-bound fractions.
subprocess.run([sys.executable, "bench/gpu/summarize.py", "--in", a, b, c, "--out", "bench/results/gpu.json",
                "--command", command, "--copy-ceiling-gbps", "3002"], check=True)
d = json.load(open("bench/results/gpu.json"))
d["sources"] = {k: v.replace(a, "call A").replace(b, "call B").replace(c, "call C") for k, v in d["sources"].items()}
d["measured_at"] = "2026-11-24"
d["code"] = ("main before the merges of the security (kforge-jail, seccomp) and deploy branches: "
             "the GPU paths have not been re-run under the jail")
d["e2e"]["notes"] = ("all generations of a call are posted at once to one worker with one slot, so seconds_to_result "
                     "includes waiting behind the earlier ones; opencl on NVIDIA samples 4, triton and cuda samples 2")
d["teacher"]["coverage_note"] = (
    "level 2 only, cut off by the device budget: cuda measured 42 of 62 ops, triton 21 of 62 (each of 5 shards "
    "takes its ops in sorted order); shares and geomeans are over the measured ops; level 1 not measured")
d["teacher"]["memory_bound_copy_fraction_note"] = (
    "gbps of correct level-2 ops without a matmul over the 3002 GB/s copy ceiling of earlier_run")
d["earlier_run"] = {
    "source": ("printed by bash bench/gpu/run_device.sh build test check timing at 11:28 UTC the same day, on code "
               "before the 100 ms minimum warm-up; its timing.json was overwritten by a later call's output folder, "
               "so these are the numbers as printed, not a file; re-run `bash bench/gpu/run_device.sh build timing "
               "summarize`"),
    "copy_ceiling_gbps": 3002,
    "timing_vs_do_bench_rel_diff": {"add_16M_72us": -0.009, "add_1M_9us": -0.123, "softmax_4096x1024_16us": -0.075,
                                    "eager_silu_mul": -0.011, "compile_silu_mul": -0.006},
    "timing_vs_do_bench_max_rel_diff": 0.123}
d["harness"]["timing_vs_do_bench_max_rel_diff"] = None
d["harness"]["notes"] = (
    "overhead_ms_warm is total minus compile, run and timing per warm candidate (silu_mul 4096x2048); it is "
    "dominated by each candidate's fresh sandbox process: a CUDA context (cuda) or a Python runner importing torch "
    "and triton (triton); timing_spread_pct is (max-min)/median of the kernel medians of 4 distinct candidates of "
    "the same kernel")
json.dump(d, open("bench/results/gpu.json", "w"), indent=1)
print("bench/results/gpu.json:", ", ".join(sorted(d)))
