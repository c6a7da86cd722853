# A trivial Triton kernel the candidate runner compiles (never launches) before it reports
# ready on a GPU, so the candidate it then gets pays only its own kernel's compile: Triton's
# compiler passes and ptxas are loaded, the driver's helper module and the launcher for three
# fp32 pointers and an int (the teacher's pointwise signature) are built, in the runner's own
# private cache. Imported by kforge_runner.py (Runner.warm). Test: ctest -R harness_triton_runner.
import triton
import triton.language as tl


@triton.jit
def kforge_warm_pointwise(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * tl.load(y + offs, mask=mask), mask=mask)


def warm_triton(torch, device, compile_only_call=None):
    """Compiles the kernel for these argument types and loads it on the device (launcher
    included) without running it: no GPU work that a timed run elsewhere could notice.
    compile_only_call(fn, inputs), the runner's guarded call with every launch turned into a
    compile, then runs a forward the way a candidate's does: it allocates its output under
    the guard (a torch dispatch mode, whose first aten op goes through torch._disable_dynamo
    and so imports Dynamo, SymPy and FSDP: about 5 s of CPU on the H200 host on 2026-11-28,
    where the venv has no bytecode cache, which every candidate's first run paid) and
    launches the kernel (compiled, not run)."""
    x = torch.ones(1024, dtype=torch.float32, device=device)
    kernel = kforge_warm_pointwise.warmup(x, x, x, 1024, BLOCK=256, grid=(4,))
    if hasattr(kernel, "result"):  # an asynchronous compile's future
        kernel = kernel.result()
    if hasattr(kernel, "_init_handles"):
        kernel._init_handles()  # builds the launcher and loads the binary, as a first launch would
    if compile_only_call is not None:
        compile_only_call(lambda t: kforge_warm_pointwise[(4,)](t, t, torch.empty_like(t), 1024, BLOCK=256), [x])
