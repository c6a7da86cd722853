# kforge-runner: the Python child the C++ harness drives for GPU work. One JSON line per
# command on stdin, one reply per line on the reply pipe ($KFORGE_REPLY_FD, fd 4, given
# by kforge-jail; run by hand: a private copy of stdout), fd 1 itself pointed at stderr,
# so nothing a candidate prints can pass for a reply; the op's arena: inputs on fd 3,
# output slots on fd 5 (or past the inputs on fd 3), as for kforge-sandbox.
#   --role candidate: a `triton` candidate (module with forward(*inputs) launching
#       @triton.jit kernels): build (rules, import), run (guarded), time.
#   --role reference: the op's own source (TorchScript, run as PyTorch eager or
#       torch.compile): reference outputs on the device, and the eager / compile baselines;
#       on a GPU, harvest: Inductor's Triton kernels for the op as a candidate (inductor_harvest.py).
# Both roles time with one protocol (CUDA events, L2 flushed before every run, inputs
# rotated through verified sets copied in place, outputs of the last run of every set
# returned for checking). Started before its op (a ChildPool's, $KFORGE_ATTACH_FD), the
# first command it needs the arena for follows an "attach", which brings fds 3 and 5 over
# the attach socket. --warm (pooled runners) pays torch.compile's start-up before ready; a
# candidate runner on a GPU always compiles a trivial Triton kernel before ready.
# Usage (by the harness): python3 kforge_runner.py --role R [--device cuda|cpu] [--warm].
# Test: ctest -R 'harness_(triton_runner|child_pool)'.
import argparse
import importlib.util
import json
import math
import mmap
import os
import sys
import tempfile
import time
import traceback

ARENA_FD = 3  # inputs (a sealed memfd)
# Output slots: the fd named by $KFORGE_ARENA_OUTPUT_FD (5, given by kforge-jail); without
# it, past the inputs on fd 3 (the tests' single memfd).
ARENA_OUTPUT_FD = int(os.environ.get("KFORGE_ARENA_OUTPUT_FD", "-1"))
DTYPES = {}  # filled after torch is imported


def ms_since(start):
    return (time.perf_counter() - start) * 1000.0


class Arena:
    """The inputs read-only (fd 3) and the output slots (fd 5, or fd 3 past input_region),
    seen as uint8 tensors over the mappings: a read is one copy to the device, a write one
    copy back."""

    def __init__(self):
        self.inputs = self.outputs = None
        self.input_tensor = self.output_tensor = None
        self.input_region = self.output_bytes = -1
        self.pinned = False
        self.pin_note = "not pinned"

    def map_given(self, torch):
        """At start-up, with the jail's two fds: maps both whole (their sizes are the
        regions'), so a pre-started runner has the arena ready before its candidate."""
        if ARENA_OUTPUT_FD < 0:
            return False
        try:
            in_size, out_size = os.fstat(ARENA_FD).st_size, os.fstat(ARENA_OUTPUT_FD).st_size
        except OSError:
            return False
        self._map(torch, in_size, in_size + out_size)
        return True

    def map(self, torch, input_region, total):
        if input_region == self.input_region and total - input_region <= self.output_bytes:
            return
        self._map(torch, input_region, total)

    def _map(self, torch, input_region, total):
        import warnings

        self.inputs = mmap.mmap(ARENA_FD, input_region, prot=mmap.PROT_READ) if input_region > 0 else None
        if ARENA_OUTPUT_FD >= 0:
            out_fd, out_offset = ARENA_OUTPUT_FD, 0
        else:
            out_fd, out_offset = ARENA_FD, input_region
        self.outputs = mmap.mmap(out_fd, total - input_region, offset=out_offset) if total > input_region else None
        with warnings.catch_warnings():  # the inputs' mapping is read-only, as it should be
            warnings.simplefilter("ignore")
            self.input_tensor = torch.frombuffer(self.inputs, dtype=torch.uint8) if self.inputs else None
        self.output_tensor = torch.frombuffer(self.outputs, dtype=torch.uint8) if self.outputs else None
        self.input_region, self.output_bytes = input_region, total - input_region

    def pin(self, torch):
        """Page-locks the inputs in place, read-only to the device (cudaHostRegisterReadOnly),
        and the output slots (writable, for direct copies back), so copies run at bus
        speed. Best effort: a failure leaves them pageable (pin_note says why)."""
        if self.input_tensor is None:
            return False
        try:
            cudart = torch.cuda.cudart()
            status = cudart.cudaHostRegister(self.input_tensor.data_ptr(), self.input_tensor.numel(), 8)
            self.pinned = status == cudart.cudaError.success
            self.pin_note = "page-locked, read-only to the device" if self.pinned else f"cudaHostRegister: {status}"
            if self.output_tensor is not None:
                cudart.cudaHostRegister(self.output_tensor.data_ptr(), self.output_tensor.numel(), 0)
        except Exception as error:
            self.pinned, self.pin_note = False, short_error(error, 200)
        return self.pinned

    def read(self, torch, spec, device):
        """A fresh, writable tensor holding the input (on `device`)."""
        dtype = DTYPES[spec["dtype"]]
        count = math.prod(spec["shape"]) * torch.empty((), dtype=dtype).element_size()
        if count == 0:
            return torch.empty(spec["shape"], dtype=dtype, device=device)
        host = self.input_tensor[spec["offset"]:spec["offset"] + count].view(dtype).reshape(spec["shape"])
        # On the CPU .to() would hand out the read-only mapping itself: copy.
        return host.to(device) if device.type != "cpu" else host.clone()

    def write(self, torch, spec, tensor):
        data = tensor.detach().contiguous().reshape(-1).view(torch.uint8)
        start = spec["offset"] - self.input_region
        self.output_tensor[start:start + data.numel()].copy_(data)


class Protocol:
    """Timing knobs, mirroring worker/harness/timing.h (one window: no CPU contention on a GPU)."""

    def __init__(self, cmd):
        self.max_seconds = float(cmd.get("max_seconds", 1.0))
        self.target_spread = float(cmd.get("target_iqr", 0.01))
        self.min_runs = int(cmd.get("min_runs", 10))
        self.max_runs = int(cmd.get("max_runs", 2000))
        self.settle_tolerance = float(cmd.get("settle_tolerance", 0.05))
        self.max_warmup_fraction = 0.5
        # GPUs ramp their clocks up under load over tens of milliseconds: warm up at least this long.
        self.min_warmup_seconds = float(cmd.get("min_warmup_seconds", 0.0))


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0.0


def iqr(values):
    ordered = sorted(values)
    return ordered[len(ordered) * 3 // 4] - ordered[len(ordered) // 4] if ordered else 0.0


def run_protocol(run, protocol, block):
    """Warm-up in blocks until two block medians agree, then one window until IQR/median is
    under the target (after min_runs) or max_seconds pass. Same rules as timing.cpp."""
    record = {"warmup_runs": 0, "settled": False}
    run_idx = 0
    warm_started = time.perf_counter()
    warm_cap = protocol.max_seconds * protocol.max_warmup_fraction
    previous = -1.0
    while True:
        samples = []
        for _ in range(block):
            samples.append(run(run_idx))
            run_idx += 1
            record["warmup_runs"] += 1
        current = median(samples)
        warm_enough = time.perf_counter() - warm_started >= protocol.min_warmup_seconds
        if warm_enough and previous > 0 and abs(current - previous) <= protocol.settle_tolerance * current:
            record["settled"] = True
            break
        if warm_enough and time.perf_counter() - warm_started > warm_cap:
            break
        previous = current
    window = []
    begin = time.perf_counter()
    while len(window) < protocol.max_runs:
        window.append(run(run_idx))
        run_idx += 1
        if len(window) < protocol.min_runs:
            continue
        if time.perf_counter() - begin > protocol.max_seconds:
            break
        if iqr(window) <= protocol.target_spread * median(window):
            break
    record.update(median_ms=median(window), min_ms=min(window), iqr_ms=iqr(window), runs=len(window),
                  spread_pct=100.0 * iqr(window) / max(median(window), 1e-12), attempts=1, others_cores=-1,
                  disturbed=False)
    return record


def inline_inductor_compiles(torch):
    """Inductor compiles its Triton kernels in this process, not in its pool of compile
    workers. On the H200 (2026-11-28) every torch.compile in a pooled reference runner after a
    worker's first generation failed in a compile worker (SubprocException from
    subproc_pool.do_job), so 9 of 10 generations had no compile baseline; workers forked from
    a process that has initialised CUDA are a known way for Triton's driver to fail there
    (CUTracer #223). An op's few kernels cost seconds in line, in the background of the
    check (the runner compiles from Checker::create on). The setting is read per compile,
    so it holds even after an earlier torch.compile in this process."""
    try:
        import torch._inductor.config as inductor_config
    except ImportError:  # a torch without Inductor (Debian's 1.13 here) compiles nothing
        return
    inductor_config.compile_threads = 1


class Runner:
    def __init__(self, role, device_name):
        import torch

        if not hasattr(torch.Tensor, "untyped_storage"):
            # Debian 12's torch 1.13 (CI, Triton's CPU interpreter) predates the name Triton calls.
            torch.Tensor.untyped_storage = lambda self: self.storage().untyped()
        self.torch = torch
        DTYPES.update(float32=torch.float32, float16=torch.float16, bfloat16=torch.bfloat16, int32=torch.int32,
                      int64=torch.int64, bool=torch.bool)
        self.role = role
        self.gpu = device_name == "cuda"
        if self.gpu and not torch.cuda.is_available():
            raise RuntimeError("no CUDA device visible to the runner (torch.cuda.is_available() is False)")
        self.device = torch.device("cuda" if self.gpu else "cpu")
        self.arena = Arena()
        # The arena mapped (and on a GPU its inputs page-locked) during start-up, which a
        # pre-started runner does before its candidate arrives.
        if self.arena.map_given(torch) and self.gpu:
            self.arena.pin(torch)
        self.forward = None
        self.op_source = ""
        self.compiled = None
        self.guard_cls = self.counter = None
        self.workdir = tempfile.mkdtemp(prefix="kforge-runner-")
        self.flush_buffer = None
        if self.gpu:
            props = torch.cuda.get_device_properties(0)
            l2 = int(getattr(props, "L2_cache_size", 50 << 20))
            # L2 flush: writing well over the L2 size (at least 256 MB, as triton's do_bench)
            # evicts whatever the last run left there.
            self.flush_buffer = torch.empty(max(2 * l2, 256 << 20), dtype=torch.int8, device=self.device)
            # GPU cycles to spin before the flush of a timed call, so the host's launch overhead
            # (Python, the guard, Triton's launcher) is queued behind them, never inside the events.
            self.cycles_per_ms = 2_000_000  # torch.cuda._sleep cycles per ms at a ~2 GHz SM clock (slower: longer)
            self.spin_ms = 0.1  # the first spin, before the host's launch time is known
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        if os.environ.get("TRITON_INTERPRET") == "1":
            from guards import fix_interpreter_scalar_index

            fix_interpreter_scalar_index()
        if role == "reference":
            inline_inductor_compiles(torch)
        if role == "candidate":
            from guards import ForwardGuard, LaunchCounter

            self.guard_cls = ForwardGuard
            self.counter = LaunchCounter().install()

    def attach(self):
        """A pre-started runner gets its op's arena: the inputs and outputs fds (and the GPU gate,
        held while page-locking) arrive on the attach socket and become fds 3 and 5, as if the
        jail had given them at start."""
        import fcntl
        import socket

        started = time.perf_counter()
        sock = socket.socket(fileno=int(os.environ["KFORGE_ATTACH_FD"]))
        try:
            _, fds, _, _ = socket.recv_fds(sock, 1, 4)
        finally:
            sock.close()
        if len(fds) < 2:
            raise RuntimeError("attach: the arena's descriptors did not arrive")
        os.dup2(fds[0], ARENA_FD)
        os.dup2(fds[1], ARENA_OUTPUT_FD)
        os.close(fds[0])
        os.close(fds[1])
        gate = fds[2] if len(fds) > 2 else -1
        asked = time.perf_counter()
        try:
            if gate >= 0:
                fcntl.flock(gate, fcntl.LOCK_EX)
            gate_wait_ms = ms_since(asked)
            if self.arena.map_given(self.torch) and self.gpu:
                self.arena.pin(self.torch)
        finally:
            if gate >= 0:
                os.close(gate)  # closing releases the gate for good
        return {"ok": True, "attached": True, "pinned_inputs": self.arena.pinned, "host_pinning": self.arena.pin_note,
                "attach_ms": ms_since(started), "gate_wait_ms": gate_wait_ms}

    def warm(self, pooled):
        """Pays before ready what the first command would pay: on a GPU a candidate runner
        compiles and loads a trivial Triton kernel (the compiler, the driver's helper module,
        a common launcher: all in its own private cache, trusted code only); a pooled
        reference runner starts torch.compile (Dynamo, Inductor, its compile workers) on a
        pointwise function (no autotuning: no GPU work worth a gate)."""
        torch = self.torch
        started = time.perf_counter()
        what = ""
        try:
            if self.role == "candidate" and self.gpu:
                what = "triton"
                from warm_kernels import warm_triton

                warm_triton(torch, self.device, self.compile_only_call)
            elif self.role == "reference" and pooled and hasattr(torch, "compile"):
                what = "torch.compile"
                fn = torch.compile(lambda a, b: torch.nn.functional.silu(a) * b + 1.0)
                a = torch.randn(4096, device=self.device)
                with torch.no_grad():
                    fn(a, a)
                self.sync()
            else:
                return {}
        except Exception as error:  # a warm-up that fails costs its time later, never the runner
            return {"warm": {"what": what, "error": short_error(error, 300), "ms": ms_since(started)}}
        return {"warm": {"what": what, "ms": ms_since(started)}}

    def compile_only_call(self, fn, inputs):
        """fn(*inputs) under the guard with every Triton launch a compile (nothing runs)."""
        self.counter.compile_only = True
        try:
            self.guarded(fn, inputs, poison=False)
        finally:
            self.counter.compile_only = False

    def precompile(self, cmd):
        """torch.compile of the op on inputs of its own (the shapes and dtypes given; no arena
        needed), so the compile baseline's first call has compiled before its op's arena even
        exists. Dynamo's guards (shapes, dtypes, contiguity, device) match the arena's tensors."""
        torch = self.torch
        if self.compiled is None:
            raise RuntimeError("precompile needs build with compile: true")
        start = time.perf_counter()
        inputs = []
        for spec in cmd["inputs"]:
            dtype = DTYPES[spec["dtype"]]
            if dtype.is_floating_point:
                inputs.append(torch.randn(spec["shape"], device=self.device).to(dtype))
            elif dtype == torch.bool:
                inputs.append(torch.zeros(spec["shape"], dtype=dtype, device=self.device))
            else:
                inputs.append(torch.randint(0, 2, spec["shape"], dtype=dtype, device=self.device))
        self.call(self.compiled, inputs)
        self.sync()
        return {"ok": True, "compile_ms": ms_since(start)}

    def prepare(self, cmd):
        """A candidate's Triton kernels compiled and loaded for each trial's shapes before its
        trials run, with no kernel launched: forward runs under the guard on uninitialised
        tensors while every Triton launch becomes a compile (LaunchCounter.compile_only). The
        harness sends it to the candidate it checks next while the current one is verified
        and timed, so Triton's JIT (CPU seconds per specialisation) overlaps that work instead
        of preceding this candidate's trials. Best effort: whatever ends forward early (an
        autotuned kernel, which would time its configs; a read of tensor data; an error)
        ends it, the trials compile the rest as usual, and nothing here is the verdict."""
        torch = self.torch
        if self.role != "candidate" or self.forward is None:
            return {"ok": False, "kind": "internal_error", "message": "prepare needs a candidate runner after build"}
        start = time.perf_counter()
        stopped = ""
        try:
            from triton.runtime import autotuner

            autotuned_run = autotuner.Autotuner.run

            def refuse(*args, **kwargs):
                raise RuntimeError("an autotuned kernel: its configs are timed on its first real call")

            autotuner.Autotuner.run = refuse
        except ImportError:
            autotuner = None
        self.counter.compiled = 0
        jit_before = self.jit_ms()
        try:
            for shapes in cmd.get("shapes", []):
                inputs = [torch.empty(spec["shape"], dtype=DTYPES[spec["dtype"]], device=self.device) for spec in shapes]
                self.compile_only_call(self.forward, inputs)
        except Exception as error:  # the candidate's own problems show in its trials
            stopped = short_error(error, 200)
        finally:
            if autotuner is not None:
                autotuner.Autotuner.run = autotuned_run
        return {"ok": True, "prepare_ms": ms_since(start), "jit_ms": self.jit_ms() - jit_before,
                "kernels": self.counter.compiled, "stopped": stopped}

    def describe(self):
        torch = self.torch
        info = {"is_cpu": not self.gpu, "torch_version": torch.__version__, "max_work_group": 1024,
                "pinned_inputs": self.arena.pinned, "host_pinning": self.arena.pin_note}
        try:
            import triton

            info["triton_version"] = triton.__version__
        except ImportError:
            info["triton_version"] = ""
        if self.gpu:
            props = torch.cuda.get_device_properties(0)
            info.update(name=props.name, platform="CUDA", compute_units=props.multi_processor_count,
                        version=f"sm_{props.major}{props.minor}", cuda_version=torch.version.cuda or "",
                        l2_bytes=int(getattr(props, "L2_cache_size", 0)), memory_bytes=int(props.total_memory))
        else:
            info.update(name="cpu (Triton interpreter)" if os.environ.get("TRITON_INTERPRET") == "1" else "cpu",
                        platform="CPU", compute_units=os.cpu_count() or 1, version="", driver="")
        return info

    def host_facts(self):
        """The driver version and clocks, from nvidia-smi and NVML: asked outside the GPU gate,
        since they need no CUDA context and nvidia-smi is a process start of its own, which
        every runner starting beside a timed check would otherwise hold the gate for."""
        return {"driver": driver_version(), "clocks": gpu_clocks()} if self.gpu else {}

    # -- build ---------------------------------------------------------------------------
    def build(self, cmd):
        start = time.perf_counter()
        source = cmd["source"]
        if self.role == "reference":
            return self.build_reference(source, bool(cmd.get("compile", False)), start)
        from triton_rules import RuleViolation, check_module

        try:
            check_module(source)
        except SyntaxError as error:
            return {"ok": False, "kind": "compile_error", "log": f"line {error.lineno}: {error.msg}",
                    "build_ms": ms_since(start)}
        except RuleViolation as violation:
            return {"ok": False, "kind": "rule_violation", "rule": violation.rule, "message": str(violation),
                    "build_ms": ms_since(start)}
        path = os.path.join(self.workdir, "candidate.py")  # @triton.jit reads its source from a file
        with open(path, "w") as file:
            file.write(source)
        try:
            spec = importlib.util.spec_from_file_location("kforge_candidate", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except Exception as error:  # an import-time error is the candidate's, reported like a compiler's
            return {"ok": False, "kind": "compile_error", "log": short_error(error), "build_ms": ms_since(start)}
        self.forward = getattr(module, "forward", None)
        if not callable(self.forward):
            return {"ok": False, "kind": "rule_violation", "rule": "missing_forward",
                    "message": "forward is not a function", "build_ms": ms_since(start)}
        return {"ok": True, "build_ms": ms_since(start), "log": ""}

    def build_reference(self, source, compile_too, start):
        """The op's TorchScript source (already compiled by libtorch in the parent) run as
        Python: torch.X resolves as TorchScript resolves it (torch's Python name, else the
        aten builtin, e.g. torch.silu), after an AST check that it only computes."""
        torch = self.torch
        try:
            check_op_source(source)
        except (SyntaxError, ValueError) as error:
            return {"ok": False, "kind": "compile_error", "log": short_error(error), "build_ms": ms_since(start)}
        self.op_source = source
        self.forward = self.op_forward(source)
        if not callable(self.forward):
            return {"ok": False, "kind": "compile_error", "log": "the op defines no forward", "build_ms": ms_since(start)}
        if compile_too:
            self.compiled = torch.compile(self.forward)
        return {"ok": True, "build_ms": ms_since(start), "log": ""}

    def op_forward(self, source):
        """A fresh forward function from the op's (already checked) source."""
        from typing import List, Optional, Tuple

        torch = self.torch
        namespace = {"torch": TorchScriptNames(torch), "Tensor": torch.Tensor, "List": List, "Optional": Optional,
                     "Tuple": Tuple, "math": math}
        exec(compile(source, "op.py", "exec"), namespace)
        return namespace.get("forward")

    # -- harvest -------------------------------------------------------------------------
    def harvest(self, cmd):
        """Inductor's Triton kernels for the op, rewritten into a triton candidate: compiled
        from a fresh copy of the op (never the compile baseline's), on the trial's inputs."""
        if self.role != "reference" or self.forward is None:
            return {"ok": False, "kind": "internal_error", "message": "harvest needs a reference runner after build"}
        if not self.gpu:
            return {"ok": False, "kind": "refused", "reason": "Inductor's Triton kernels are harvested on a CUDA "
                                                              "device; this runner is on the CPU"}
        if not hasattr(self.torch, "compile"):
            return {"ok": False, "kind": "refused", "reason": f"torch {self.torch.__version__} has no torch.compile"}
        from inductor_harvest import harvest

        torch = self.torch
        start = time.perf_counter()
        self.arena.map(torch, int(cmd["input_region"]), int(cmd["arena_bytes"]))
        inputs = [self.arena.read(torch, spec, self.device) for spec in cmd["inputs"]]
        names = [spec.get("name", f"in{idx}") for idx, spec in enumerate(cmd["inputs"])]
        reply = harvest(torch, lambda: self.op_forward(self.op_source), inputs, names)
        reply["harvest_ms"] = ms_since(start)
        if not reply["ok"]:
            reply["kind"] = "refused"
        return reply

    # -- run -----------------------------------------------------------------------------
    def function(self, mode):
        if mode == "compile":
            if self.compiled is None:
                raise RuntimeError("compile mode needs build with compile: true")
            return self.compiled
        return self.forward

    def call(self, fn, inputs, poison=True):
        """One forward call; for candidates under the guard, counting launches."""
        torch = self.torch
        if self.role != "candidate":
            with torch.no_grad():
                return fn(*inputs)
        before = self.counter.launches
        out, guard = self.guarded(fn, inputs, poison)
        if self.counter.launches == before:
            raise CandidateError("rule_violation", "no kernel launched: forward returned without launching a "
                                 "@triton.jit kernel (every forward must compute in Triton)", rule="no_triton_launch")
        if poison:
            self.sync()
            if guard.damaged():
                raise CandidateError("runtime_error", "out-of-bounds write: memory just outside a tensor that forward "
                                     "allocated was modified")
        return out

    def guarded(self, fn, inputs, poison):
        """fn(*inputs) under a fresh ForwardGuard that the launch counter knows about:
        (outputs, guard)."""
        guard = self.guard_cls(poison_allocations=poison)
        self.counter.guard = guard
        try:
            with self.torch.no_grad(), guard:
                return fn(*inputs), guard
        finally:
            self.counter.guard = None

    def check_outputs(self, out, specs):
        torch = self.torch
        outputs = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(outputs) != len(specs):
            raise CandidateError("runtime_error", f"forward returned {len(outputs)} outputs, the op has {len(specs)}")
        for idx, (tensor, spec) in enumerate(zip(outputs, specs)):
            name = "out" if len(specs) == 1 else f"out{idx}"
            if not isinstance(tensor, torch.Tensor):
                raise CandidateError("runtime_error", f"{name}: forward returned {type(tensor).__name__}, not a tensor")
            if list(tensor.shape) != list(spec["shape"]):
                raise CandidateError("runtime_error", f"{name}: shape {list(tensor.shape)}, expected {spec['shape']}")
            if tensor.dtype != DTYPES[spec["dtype"]]:
                raise CandidateError("runtime_error", f"{name}: dtype {str(tensor.dtype).replace('torch.', '')}, "
                                     f"expected {spec['dtype']}")
            if tensor.device.type != self.device.type:
                raise CandidateError("runtime_error", f"{name}: on {tensor.device}, expected {self.device.type}")
        return outputs

    def run(self, cmd):
        torch = self.torch
        self.arena.map(torch, int(cmd["input_region"]), int(cmd["arena_bytes"]))
        fn = self.function(cmd.get("mode", "eager"))
        io_start = time.perf_counter()
        inputs = [self.arena.read(torch, spec, self.device) for spec in cmd["inputs"]]
        pristine = [t.clone() for t in inputs] if self.role == "candidate" else None
        self.sync()
        io_ms = ms_since(io_start)
        start = time.perf_counter()
        jit_before = self.jit_ms()
        out = self.call(fn, inputs)
        self.sync()
        run_ms = ms_since(start)
        jit_ms = self.jit_ms() - jit_before
        io_start = time.perf_counter()
        outputs = self.check_outputs(out, cmd["outputs"])
        if pristine is not None:
            for idx, (now, before) in enumerate(zip(inputs, pristine)):
                if not torch.equal(now.reshape(-1).view(torch.uint8), before.reshape(-1).view(torch.uint8)):
                    return {"ok": False, "kind": "input_mutated", "buffer": cmd["inputs"][idx].get("name", str(idx)),
                            "byte": first_difference(torch, now, before)}
        for spec, tensor in zip(cmd["outputs"], outputs):
            self.arena.write(torch, spec, tensor)
        return {"ok": True, "run_ms": run_ms, "io_ms": io_ms + ms_since(io_start), "jit_ms": jit_ms,
                "launches": self.counter.launches if self.counter else 0}

    def jit_ms(self):
        """Milliseconds this candidate runner has spent compiling and loading Triton kernels."""
        return 1000.0 * (self.counter.jit_s + self.counter.load_s) if self.counter else 0.0

    # -- time ----------------------------------------------------------------------------
    def time(self, cmd):
        """Times fn over verified input sets: before every run the set's inputs are copied
        into the same device tensors (so results cached by address go stale) and L2 is
        flushed; CUDA events bracket the call; on a GPU runs are queued in batches and
        synchronised once per batch. The last outputs of every set go back to the arena so
        the parent can check what was timed."""
        torch = self.torch
        self.arena.map(torch, int(cmd["input_region"]), int(cmd["arena_bytes"]))
        fn = self.function(cmd.get("mode", "eager"))
        sets = cmd["sets"]
        pristine = [[self.arena.read(torch, spec, self.device) for spec in s["inputs"]] for s in sets]
        live = [t.clone() for t in pristine[0]]
        last = [None] * len(sets)
        # Bytes of one call's outputs: before each timed call a NaN block this large is
        # allocated and freed, so the allocations forward makes come from poisoned memory
        # without filling them inside the timed region.
        out_bytes = max(sum(math.prod(o["shape"]) * torch.empty((), dtype=DTYPES[o["dtype"]]).element_size()
                            for o in sets[0]["outputs"]), 1)
        # "spin": false drops the spin before the flush (bench/gpu/timing_vs_do_bench.py compares).
        sleep = getattr(torch.cuda, "_sleep", None) if self.gpu and cmd.get("spin", True) else None
        if cmd.get("mode") == "compile":
            compile_start = time.perf_counter()
            self.call(fn, live)  # the first call compiles; it is never timed
            self.sync()
            compile_ms = ms_since(compile_start)
        else:
            compile_ms = 0.0

        # On a GPU the timed runs are queued back to back and synchronised once per batch,
        # as triton's do_bench does; "dense": false synchronises after every run instead
        # (bench/gpu/timing_vs_do_bench.py compares the two).
        batch = max(1, int(cmd.get("batch", 16))) if self.gpu and cmd.get("dense", True) else 1

        def enqueue(run_idx, spin_ms):
            """Queues one timed run (after a spin of spin_ms, if any); returns the host time its
            call took and a function that gives its device time once it is done."""
            set_idx = run_idx % len(sets)
            for dst, src in zip(live, pristine[set_idx]):
                dst.copy_(src)
            if self.role == "candidate":
                block = torch.empty(out_bytes, dtype=torch.uint8, device=self.device)
                block.fill_(0xFF)  # 0xFF bytes: NaN in every float dtype
                del block
            if not self.gpu:
                begin = time.perf_counter()
                last[set_idx] = self.call(fn, live, poison=False)
                elapsed = ms_since(begin)
                return elapsed, lambda: elapsed
            # Spin first, then flush: the host's launch work is queued behind the spin and
            # the flush, and the flush runs right before the start event, as in triton's
            # do_bench and GPU MODE's harness (the flush's last writes back to memory overlap
            # the timed kernel's start in all three).
            if sleep is not None and spin_ms > 0:
                sleep(int(spin_ms * self.cycles_per_ms))
            self.flush_buffer.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            host_started = time.perf_counter()
            last[set_idx] = self.call(fn, live, poison=False)
            host_ms = ms_since(host_started)
            end.record()
            return host_ms, lambda: start.elapsed_time(end)

        done = []
        host_ms_per_run = self.spin_ms / 2 if self.gpu else 0.0

        def one_run(run_idx):
            nonlocal host_ms_per_run
            if not done:
                # One spin ahead of the batch, twice the host's time for the whole batch (at
                # most 50 ms; the last batch's per-run time, from warm-up on): the host queues
                # every run of the batch before the GPU reaches the first, so no launch work
                # (Python, the guard, the launchers) falls inside the events, and the runs
                # follow each other on the GPU as in do_bench. Unbatched: a spin per run.
                spin_ms = min(2 * host_ms_per_run * batch, 50.0)
                pending = [enqueue(run_idx + k, spin_ms if k == 0 else 0.0) for k in range(batch)]
                self.sync()
                host_ms_per_run = max(host for host, _ in pending)
                done.extend(elapsed() for _, elapsed in pending)
            return done.pop(0)

        protocol = Protocol(cmd)
        if self.gpu:
            protocol.min_warmup_seconds = max(protocol.min_warmup_seconds, 0.1)
        record = run_protocol(one_run, protocol, block=max(3, len(sets)))
        for set_idx, s in enumerate(sets):
            if last[set_idx] is None:
                enqueue(set_idx, 0.0)
                self.sync()
            outputs = self.check_outputs(last[set_idx], s["outputs"])
            for spec, tensor in zip(s["outputs"], outputs):
                self.arena.write(torch, spec, tensor)
        record.update(ok=True, rotations=len(sets), kernel_median_ms=record["median_ms"], compile_ms=compile_ms)
        if self.gpu:
            record["clocks"] = gpu_clocks()
        return record

    def sync(self):
        if self.gpu:
            self.torch.cuda.synchronize()


class TorchScriptNames:
    """`torch` as TorchScript sees it: torch's Python attribute, else the aten builtin of
    that name (torch.silu, torch.gelu are aten ops without a Python torch.* name), else
    torch.nn.functional's."""

    def __init__(self, torch):
        self._torch = torch

    def __getattr__(self, name):
        for space in (self._torch, self._torch.ops.aten, self._torch.nn.functional):
            try:
                return getattr(space, name)
            except (AttributeError, RuntimeError):
                continue
        raise AttributeError(f"torch has no operator {name}")


OP_BANNED_CALLS = {"eval", "exec", "compile", "open", "input", "globals", "locals", "vars", "getattr", "setattr",
                   "delattr", "__import__", "breakpoint"}


def check_op_source(source):
    """An op's source may only compute: no imports, no private or dunder names, no dynamic code."""
    import ast

    for node in ast.walk(ast.parse(source, filename="op.py")):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            raise ValueError(f"line {node.lineno}: an op may not import (torch and math are there)")
        if isinstance(node, ast.Name) and (node.id.startswith("_") or node.id in OP_BANNED_CALLS):
            raise ValueError(f"line {node.lineno}: {node.id} is not allowed in an op")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise ValueError(f"line {node.lineno}: attribute {node.attr} is not allowed in an op")
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            raise ValueError(f"line {node.lineno}: global state is not allowed in an op")


class CandidateError(Exception):
    def __init__(self, kind, message, rule=""):
        super().__init__(message)
        self.kind = kind
        self.rule = rule


def first_difference(torch, a, b):
    diff = (a.reshape(-1).view(torch.uint8) != b.reshape(-1).view(torch.uint8)).nonzero()
    return int(diff[0].item()) if diff.numel() else 0


def short_error(error, limit=1500):
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= limit else text[:limit] + "..."


def driver_version():
    try:
        import subprocess

        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
    except Exception:
        return ""


def gpu_clocks():
    """Current SM and memory clocks (MHz) through NVML, if it is there."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        return {"sm_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                "mem_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
                "sm_max_mhz": pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)}
    except Exception:
        return {}


def classify(error):
    """Maps an exception from a candidate's run to (kind, message, rule)."""
    if isinstance(error, CandidateError):
        return error.kind, str(error), error.rule
    name = type(error).__name__
    if name == "TorchComputeError":
        return "rule_violation", str(error), "torch_compute"
    if name in ("CompilationError", "CompileTimeAssertionFailure") or "triton.compiler" in type(error).__module__:
        return "compile_error", short_error(error), ""
    if isinstance(error, MemoryError) or "out of memory" in str(error):
        return "runtime_error", "out of memory: " + short_error(error, 400), ""
    return "runtime_error", short_error(error), ""


def import_heavy_modules(role):
    """torch, triton and Dynamo (when installed), and for a reference runner Inductor's config:
    seconds of CPU work that needs no GPU, done before the GPU gate is taken and before any
    candidate arrives. Imported under the gate, Inductor held it 4-5 s per reference runner
    start on the H200 (2026-11-28), and the first candidate's timing waited for it; imported
    on demand, Dynamo (the first aten op under the candidate guard's dispatch mode goes through
    torch._disable_dynamo) cost every candidate's first run 5 s there."""
    import torch  # noqa: F401

    try:
        import triton  # noqa: F401
    except ImportError:
        pass
    try:
        import torch._dynamo  # noqa: F401

        if role == "reference":
            import torch._inductor.config  # noqa: F401
    except Exception:  # a torch without Dynamo and Inductor (Debian's 1.13 here), or one whose
        pass  # import fails: paid (or failed) later, where it is needed, never the runner's start


class gpu_gate:
    """Holds the GPU gate ($KFORGE_GPU_GATE_FD) inside the block, then closes it for good.
    wait_ms and held_ms say how long it waited for the gate and then held it."""

    def __enter__(self):
        self.fd = int(os.environ.get("KFORGE_GPU_GATE_FD", "-1"))
        asked = time.perf_counter()
        if self.fd >= 0:
            import fcntl

            fcntl.flock(self.fd, fcntl.LOCK_EX)
        self.taken = time.perf_counter()
        self.wait_ms = (self.taken - asked) * 1000.0
        return self

    def __exit__(self, *exc):
        if self.fd >= 0:
            os.close(self.fd)
        self.held_ms = ms_since(self.taken)
        return False


class Profiler:
    """KFORGE_RUNNER_PROFILE=N (a diagnostic, docs/harness.md): every command's reply carries
    "profile": its wall and CPU milliseconds and cProfile's N costliest functions (cumulative),
    which the harness logs. Wall far above CPU means the runner waited (the GPU, a lock)."""

    def __init__(self):
        self.top = int(os.environ.get("KFORGE_RUNNER_PROFILE", "0") or 0)

    def call(self, name, handler, *args):
        if self.top <= 0:
            return handler(*args)
        import cProfile
        import io
        import pstats

        profile = cProfile.Profile()
        wall, cpu = time.perf_counter(), time.process_time()
        profile.enable()
        try:
            message = handler(*args)
        finally:
            profile.disable()
        if isinstance(message, dict):
            text = io.StringIO()
            pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(self.top)
            message["profile"] = {"cmd": name, "wall_ms": round(ms_since(wall), 1),
                                  "cpu_ms": round((time.process_time() - cpu) * 1000.0, 1),
                                  "top": text.getvalue()[-8000:]}
        return message


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--role", choices=["candidate", "reference"], required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--warm", action="store_true", help="pre-started ahead of its op: warm up torch.compile")
    args = parser.parse_args()
    # Replies go to the reply pipe (or a private copy of stdout); fd 1 and sys.stdout
    # now lead to stderr.
    reply_fd = int(os.environ.get("KFORGE_REPLY_FD", "-1"))
    try:
        os.fstat(reply_fd)
    except (OSError, ValueError):
        reply_fd = os.dup(1)
    reply_file = os.fdopen(reply_fd, "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

    def reply(message):
        reply_file.write(json.dumps(message, allow_nan=False, default=str) + "\n")
        reply_file.flush()

    profiler = Profiler()
    try:
        started = time.perf_counter()
        import_heavy_modules(args.role)
        imported = time.perf_counter()
        # The device is initialised under the GPU gate (sandbox_policy.h): a pre-started
        # runner imports torch and triton at any time, but touches the GPU only while the
        # checker is not timing; the gate is closed before any command arrives.
        with gpu_gate() as gate:
            runner = Runner(args.role, args.device)
            description = runner.describe()
        asked = time.perf_counter()
        description.update(runner.host_facts())
        host_facts_ms = ms_since(asked)
        description.update(runner.warm(args.warm))
        ready = {"ready": True, "device": description}
        if profiler.top > 0:
            ready["profile"] = {"cmd": "start", "wall_ms": round(ms_since(started), 1),
                                "cpu_ms": round(time.process_time() * 1000.0, 1),
                                "import_ms": round((imported - started) * 1000.0, 1),
                                "gate_wait_ms": round(gate.wait_ms, 1), "gate_held_ms": round(gate.held_ms, 1),
                                "host_facts_ms": round(host_facts_ms, 1)}
        reply(ready)
    except Exception as error:
        reply({"ready": False, "message": short_error(error)})
        return 1
    handlers = {"build": runner.build, "attach": lambda _: runner.attach(), "precompile": runner.precompile,
                "prepare": runner.prepare, "run": runner.run, "time": runner.time, "harvest": runner.harvest}
    for line in sys.stdin:
        try:
            cmd = json.loads(line)
        except ValueError as error:
            reply({"ok": False, "kind": "internal_error", "message": f"bad command: {error}"})
            continue
        name = cmd.get("cmd", "")
        if name == "quit":
            break
        try:
            if name in handlers:
                reply(profiler.call(name, handlers[name], cmd))
            else:
                reply({"ok": False, "kind": "internal_error", "message": f"unknown command '{name}'"})
        except Exception as error:
            kind, message, rule = classify(error)
            if os.environ.get("KFORGE_RUNNER_DEBUG"):
                traceback.print_exc()
            reply({"ok": False, "kind": kind, "message": message, "rule": rule})
    return 0


if __name__ == "__main__":
    code = main()
    # Leave at once: a runner that ran torch.compile would otherwise wait at interpreter exit
    # for Inductor's compile workers to shut down (over 30 s on a loaded GPU host), and a
    # sandboxed child has nothing to save.
    sys.stderr.flush()
    os._exit(code or 0)
