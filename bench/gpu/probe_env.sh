#!/usr/bin/env bash
# Reads what a GPU host offers kforge (OS, glibc, compilers, CUDA/NVRTC/driver libraries,
# OpenCL ICDs, torch/triton versions, torch.compile, Triton's launch hook) and writes
# $OUT/env_probe.txt. Run on the device machine: bash bench/gpu/probe_env.sh
set -uo pipefail
OUT=${OUT:-/tmp/kforge_out}; mkdir -p "$OUT"
{
echo "== os"; cat /etc/os-release | head -3; ldd --version | head -1; uname -r; nproc; free -g | head -2
echo "== compilers"; which -a gcc g++ cmake ninja nvcc python3; gcc --version | head -1; /usr/bin/g++ --version | head -1; cmake --version | head -1; nvcc --version | tail -2
echo "== gpu"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,memory.total --format=csv
echo "== libs"; ldconfig -p | grep -E 'libcuda\.so|libnvrtc|libOpenCL|libpq|libpqxx|libcpprest|libssl\.so|libicu|libbrotli|libldap|libgtest' | head -30
ls /etc/OpenCL/vendors/ 2>/dev/null; cat /etc/OpenCL/vendors/* 2>/dev/null
ls /usr/include/CL /usr/include/nlohmann /usr/include/gtest 2>&1 | head -5
which clinfo && clinfo -l
echo "== python"
python3 - <<'PY'
import torch, triton, sys, os, time
print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)
print("cmake_prefix", torch.utils.cmake_prefix_path)
p = torch.cuda.get_device_properties(0)
print(p.name, "sm", p.multi_processor_count, "L2", getattr(p, "L2_cache_size", None), "cc", p.major, p.minor)
for mod in ["cuda.bindings", "cuda.core", "cupy", "numpy", "pytest", "selenium"]:
    try:
        __import__(mod); print("have", mod)
    except Exception as e:
        print("no", mod, type(e).__name__)
try:
    from cuda.bindings import nvrtc, driver
    print("cuda.bindings nvrtc version", nvrtc.nvrtcVersion())
except Exception as e:
    print("cuda.bindings error", e)
import triton.language as tl
@triton.jit
def k(x, y, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B); m = o < n
    tl.store(y + o, tl.load(x + o, mask=m) * 2, mask=m)
launches = []
try:
    from triton import knobs
    print("knobs.runtime attrs", [a for a in dir(knobs.runtime) if not a.startswith("_")])
    knobs.runtime.launch_enter_hook = lambda meta: launches.append(1)
except Exception as e:
    print("knobs error", e)
x = torch.randn(1 << 20, device="cuda"); y = torch.empty_like(x)
k[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), B=1024); torch.cuda.synchronize()
print("hook launches", len(launches), "ok", bool(torch.allclose(y, 2 * x)))
from triton.testing import do_bench
print("do_bench ms", do_bench(lambda: k[(1024,)](x, y, x.numel(), B=1024), return_mode="median"))
f = lambda a, b: torch.nn.functional.silu(a) * b
t0 = time.time(); cf = torch.compile(f); a = torch.randn(4096, 4096, device="cuda"); cf(a, a); torch.cuda.synchronize()
print("torch.compile first call s", round(time.time() - t0, 2))
print("eager ms", do_bench(lambda: f(a, a), return_mode="median"), "compile ms", do_bench(lambda: cf(a, a), return_mode="median"))
print("tf32 matmul default", torch.backends.cuda.matmul.allow_tf32, "cudnn", torch.backends.cudnn.allow_tf32)
PY
echo "== pip"; python3 -m pip list 2>/dev/null | grep -iE 'cuda|nvrtc|triton|torch |numpy|cupy' | head -20
} > "$OUT/env_probe.txt" 2>&1
cat "$OUT/env_probe.txt"
