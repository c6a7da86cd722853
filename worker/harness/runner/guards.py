# Run-time guards around a `triton` candidate's forward(): a torch dispatch mode that
# refuses torch compute (allocation and views only) and NaN-poisons every allocation,
# and a launch counter on Triton's kernel launchers (a decoy kernel that never runs is
# caught). Test: ctest -R harness_triton_runner (tests/worker/harness/triton_runner_test.py).
import math
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# aten ops a forward may call: allocation, fills (zero-initialised accumulators) and views.
# Anything else (arithmetic, matmul, copies, dtype casts, reductions) is compute that
# belongs in a Triton kernel.
ALLOWED_OPS = {
    "empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided", "zeros", "zeros_like", "new_zeros",
    "full", "full_like", "new_full", "ones", "ones_like", "new_ones", "fill_", "zero_", "lift_fresh",
    "view", "_unsafe_view", "reshape", "as_strided", "t", "transpose", "permute", "expand", "select", "slice",
    "unsqueeze", "squeeze", "flatten", "unflatten", "detach", "alias", "split", "split_with_sizes", "chunk",
    "unbind", "narrow", "diagonal", "movedim", "view_as", "expand_as", "_reshape_alias", "sym_size", "sym_stride",
    "sym_numel", "is_contiguous", "contiguous", "size", "stride", "numel", "dim",
}
# Allocations whose memory the guard poisons before forward sees it.
ALLOCATING_OPS = {"empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided"}


def op_name(func):
    """'mm' for aten.mm.default, 'empty' for aten.empty.memory_format."""
    parts = str(func).split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def poison_(tensor):
    """Fills fresh memory with a value no correct kernel leaves behind (NaN for floats)."""
    if tensor.is_floating_point():
        tensor.fill_(math.nan)
    elif tensor.dtype == torch.bool:
        tensor.fill_(True)
    else:
        tensor.fill_(-123456789 if tensor.dtype in (torch.int32, torch.int64) else 0x5A)


class TorchComputeError(Exception):
    """forward called a torch op that computes (the candidate must use Triton kernels)."""


GUARD_BYTES = 64 * 1024
GUARD_BYTE = 0xA5


class ForwardGuard(TorchDispatchMode):
    """Active while a candidate's forward runs: refuses compute, poisons allocations and,
    on verified calls, puts guard regions on both sides of every contiguous allocation."""

    def __init__(self, poison_allocations=True):
        super().__init__()
        self.refused = None
        # Timed calls leave poisoning to the runner (done before the timed region).
        self.poison_allocations = poison_allocations
        self.in_launch = 0  # > 0 while Triton's own launcher runs (the CPU interpreter copies tensors)
        self.guarded = []   # (flat uint8 view of the whole allocation, data start, data end)

    def guard(self, out):
        """The same tensor, allocated inside a larger block whose edges hold a pattern."""
        size = out.element_size()
        pad = -(-GUARD_BYTES // size)
        flat = torch.empty(out.numel() + 2 * pad, dtype=out.dtype, device=out.device)
        poison_(flat)
        raw = flat.view(torch.uint8)
        raw[: pad * size].fill_(GUARD_BYTE)
        raw[(pad + out.numel()) * size:].fill_(GUARD_BYTE)
        self.guarded.append((raw, pad * size, (pad + out.numel()) * size))
        return flat[pad: pad + out.numel()].view(out.shape)

    def damaged(self):
        """True if a write landed in a guard region (outside what forward allocated)."""
        for raw, start, end in self.guarded:
            if bool((raw[:start] != GUARD_BYTE).any()) or bool((raw[end:] != GUARD_BYTE).any()):
                return True
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = op_name(func)
        if self.in_launch == 0 and name not in ALLOWED_OPS:
            if self.refused is None:
                self.refused = name
            raise TorchComputeError(f"forward called torch op aten.{name}: compute must happen in @triton.jit "
                                    "kernels (forward may only allocate outputs, take views and launch kernels)")
        out = func(*args, **(kwargs or {}))
        if self.poison_allocations and name in ALLOCATING_OPS and isinstance(out, torch.Tensor):
            if out.is_contiguous() and out.numel() > 0:
                return self.guard(out)
            poison_(out)
        return out


class LaunchCounter:
    """Counts Triton kernel launches (JIT and interpreter) by wrapping the launchers' run().
    While a launch runs, the active ForwardGuard (if any) lets Triton's own torch calls
    through: a compiled launch makes none, the CPU interpreter copies arguments."""

    def __init__(self):
        self.launches = 0
        self.guard = None
        self._installed = []
        # While true (the runner's "prepare"), a launch is a compile: run(warmup=True), the
        # binary loaded and its launcher built, nothing run on the device and nothing counted.
        self.compile_only = False
        self.compiled = 0
        # Seconds inside Triton's compiler (JITFunction._do_compile: the passes, ptxas) and in
        # loading a compiled kernel (CompiledKernel._init_handles: the launcher, the module),
        # summed since start: where a candidate's first run goes.
        self.jit_s = 0.0
        self.load_s = 0.0

    def install(self):
        import triton.runtime.jit as jit_module

        targets = [jit_module.JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction
            targets.append(InterpretedFunction)
        except ImportError:
            pass
        counter = self
        for cls in targets:
            original = cls.run

            def counted(self, *args, _original=original, **kwargs):
                compile_only = counter.compile_only
                if compile_only:
                    kwargs["warmup"] = True
                elif not kwargs.get("warmup", False):
                    counter.launches += 1
                guard = counter.guard
                if guard is not None:
                    guard.in_launch += 1
                try:
                    if compile_only:
                        counter.load(_original(self, *args, **kwargs))
                        return None
                    return _original(self, *args, **kwargs)
                finally:
                    if guard is not None:
                        guard.in_launch -= 1

            cls.run = counted
            self._installed.append((cls, original))
        self._time_method(jit_module.JITFunction, "_do_compile", "jit_s")
        try:
            from triton.compiler.compiler import CompiledKernel

            self._time_method(CompiledKernel, "_init_handles", "load_s")
        except ImportError:
            pass
        return self

    def _time_method(self, cls, name, total):
        """Adds the seconds every call of cls.name takes to self.<total> (when Triton has it)."""
        original = getattr(cls, name, None)
        if original is None:
            return
        counter = self

        def timed(self, *args, **kwargs):
            started = time.perf_counter()
            try:
                return original(self, *args, **kwargs)
            finally:
                setattr(counter, total, getattr(counter, total) + time.perf_counter() - started)

        setattr(cls, name, timed)
        self._installed.append((cls, original))

    def load(self, kernel):
        """A kernel compiled by run(warmup=True) made ready to launch, as a first launch would
        (an asynchronous compile's future awaited). The interpreter compiles nothing: None."""
        if kernel is None:
            return
        if hasattr(kernel, "result"):
            kernel = kernel.result()
        if hasattr(kernel, "_init_handles"):
            kernel._init_handles()
        self.compiled += 1


def fix_interpreter_scalar_index():
    """Triton 3.6's CPU interpreter holds a scalar kernel argument as a 1-element 1-d numpy
    array and turns it into a Python int (range(0, n, BLOCK)) with int(array), which NumPy
    2.4 refuses ("only 0-dimensional arrays can be converted to Python scalars"). Makes
    that conversion take the array's single element. Only the interpreter is touched."""
    try:
        import triton.runtime.interpreter as interpreter
    except ImportError:
        return False
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or getattr(original, "kforge_fixed", False):
        return False

    def patched(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    patched.kforge_fixed = True
    interpreter._patch_lang_tensor = patched
    return True

