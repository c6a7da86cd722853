#!/usr/bin/env python3
# Converts a KernelBench problem file (class Model, get_inputs, get_init_inputs) into a
# kforge op JSON: the forward as a TorchScript function over builtins, parameters as inputs.
# Run: /usr/bin/python3 tools/import_kernelbench.py <problem>.py [-o op.json]; test: ctest -R tools_import
"""KernelBench problem -> kforge op.

The module's forward is traced with torch.fx; every node becomes one line of a
TorchScript function that libtorch's C++ frontend compiles (torch.<aten op> builtins,
no torch.nn.functional). Parameters and buffers become inputs named after their path
(fc.weight -> fc_weight) with a distribution matching their initialisation. The
result is checked before it is written: the generated function, run eagerly on the
problem's own inputs and the model's own parameters, must reproduce Model.forward.
Anything that cannot be converted exits with status 2 and one line saying what.
"""
import argparse
import ast
import bisect
import contextlib
import dis
import inspect
import io
import json
import math
import operator
import os
import re
import sys

try:
    import torch
    import torch.fx
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as exc:  # pragma: no cover
    sys.exit(f"import_kernelbench: needs PyTorch (Debian: apt-get install python3-torch): {exc}")

from kernelbench_builtins import (DECOMPOSED, DROP_KWARGS, LOSS_MODULES, ConvertError, decompose, einsum,
                                  literal, scaled_dot_product_attention)


def _proxy_iter(self):
    """torch.fx.Proxy.__iter__ as torch 2.x has it: `b, c, h, w = x.shape` unpacks into
    getitem nodes. torch 1.13 (Debian 12) finds the UNPACK_SEQUENCE by f_lasti // 2, which
    Python 3.11's inline caches break ("list index out of range")."""
    calling_frame = inspect.currentframe().f_back
    instructions = list(dis.get_instructions(calling_frame.f_code))
    offsets = [inst.offset for inst in instructions]
    inst = instructions[bisect.bisect_left(offsets, calling_frame.f_lasti)]
    if inst.opname == "UNPACK_SEQUENCE":
        return (self[i] for i in range(inst.argval))
    return self.tracer.iter(self)


if sys.version_info >= (3, 11) and int(torch.__version__.split(".")[0]) < 2:
    torch.fx.proxy.Proxy.__iter__ = _proxy_iter


INFIX = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
         operator.matmul: "@", operator.pow: "**", operator.gt: ">", operator.lt: "<",
         operator.ge: ">=", operator.le: "<=", operator.eq: "==", operator.floordiv: "//"}
# Tensor attributes (fx records `x.T` as getattr(x, "T")) as TorchScript expressions.
TENSOR_ATTRS = {"shape": "{}.size()", "T": "{}.t()", "mT": "{}.transpose(-2, -1)", "ndim": "{}.dim()",
                "dtype": "{}.dtype", "device": "{}.device",
                "values": "{}[0]", "indices": "{}[1]"}  # torch.max(x, 1).values
# torch.min / max / minimum / maximum of a tensor and a number, as the elementwise bound.
SCALAR_BOUNDS = {"min": "clamp_max", "minimum": "clamp_max", "max": "clamp_min", "maximum": "clamp_min"}
# Keyword arguments dropped when None (their builtin default, or not optional in the builtin).
NONE_KWARGS = {"out", "dtype", "layout", "device", "memory_format", "generator"}
# Dropout is taken as the identity (its eval form): a random mask cannot be verified.
IDENTITY_MODULES = (nn.Identity, nn.Dropout, nn.Dropout1d if hasattr(nn, "Dropout1d") else nn.Dropout,
                    nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout)
CONV_MODULES = {nn.Conv1d: "conv1d", nn.Conv2d: "conv2d", nn.Conv3d: "conv3d", nn.ConvTranspose1d: "conv_transpose1d",
                nn.ConvTranspose2d: "conv_transpose2d", nn.ConvTranspose3d: "conv_transpose3d"}
POOL_MODULES = {nn.MaxPool1d: ("max_pool1d", 1), nn.MaxPool2d: ("max_pool2d", 2), nn.MaxPool3d: ("max_pool3d", 3),
                nn.AvgPool1d: ("avg_pool1d", 1), nn.AvgPool2d: ("avg_pool2d", 2), nn.AvgPool3d: ("avg_pool3d", 3),
                nn.AdaptiveAvgPool1d: ("adaptive_avg_pool1d", 1), nn.AdaptiveAvgPool2d: ("adaptive_avg_pool2d", 2),
                nn.AdaptiveAvgPool3d: ("adaptive_avg_pool3d", 3)}
# Functional adaptive average pools: spatial rank, to spread an int output size.
ADAPTIVE_POOL_RANK = {"adaptive_avg_pool1d": 1, "adaptive_avg_pool2d": 2, "adaptive_avg_pool3d": 3}
ACTIVATION_MODULES = {nn.ReLU: "relu", nn.GELU: "gelu", nn.SiLU: "silu", nn.Tanh: "tanh",
                      nn.Sigmoid: "sigmoid", nn.Mish: "mish", nn.Softplus: "softplus",
                      nn.ELU: "elu", nn.Hardtanh: "hardtanh", nn.LeakyReLU: "leaky_relu",
                      nn.Hardswish: "hardswish", nn.Hardsigmoid: "hardsigmoid", nn.SELU: "selu"}


def is_number(text):
    """Whether an emitted expression is a numeric literal."""
    try:
        float(text)
        return True
    except ValueError:
        return False


def ident(name):
    """fc.weight -> fc_weight: an input name usable in the function signature."""
    return name.replace(".", "_")


class Emitter:
    """Turns one fx graph into the lines of a TorchScript function body."""

    def __init__(self, module):
        self.module = module
        self.names = {}      # fx node -> expression or variable name
        self.params = {}     # input name -> qualified parameter/buffer name
        self.init_dist = {}  # input name -> dist known from the module's init scheme
        self.lines = []
        self.constant_inputs = []  # forward arguments fed by scalars from get_inputs()
        self.traced = None  # the GraphModule, for tensors fx lifts out of forward

    def arg(self, value):
        if isinstance(value, torch.fx.Node):
            return self.names[value]
        if isinstance(value, (list, tuple)) and any(isinstance(v, torch.fx.Node) for v in value):
            return "[" + ", ".join(self.arg(v) for v in value) + "]"
        return literal(value)

    def call(self, fn, args, kwargs):
        parts = [self.arg(a) for a in args]
        parts += [f"{k}={self.arg(v)}" for k, v in kwargs.items() if k not in DROP_KWARGS]
        return f"{fn}({', '.join(parts)})"

    def param(self, qualname):
        name = ident(qualname)
        self.params[name] = qualname
        return name

    def function(self, node):
        target = node.target
        if target in INFIX:
            a, b = (self.arg(x) for x in node.args)
            return f"({a} {INFIX[target]} {b})"
        if target is operator.neg:
            return f"(-{self.arg(node.args[0])})"
        if target is operator.getitem:
            base, index = node.args
            items = index if isinstance(index, tuple) else (index,)
            return f"{self.arg(base)}[{', '.join(self.arg(i) if isinstance(i, torch.fx.Node) else literal(i) for i in items)}]"
        if target is getattr:
            base, attr = self.arg(node.args[0]), node.args[1]
            if attr not in TENSOR_ATTRS:
                raise ConvertError(f"forward reads tensor attribute .{attr}, which the importer does not convert "
                                   f"(supported: {', '.join(sorted(TENSOR_ATTRS))})")
            return TENSOR_ATTRS[attr].format(base)
        if target in (F.dropout, torch.dropout):
            return self.arg(node.args[0])  # inference: dropout is the identity
        module = getattr(target, "__module__", "") or ""
        name = getattr(target, "__name__", None)
        if name in DECOMPOSED and (module.startswith("torch") or target is scaled_dot_product_attention):
            return decompose(name, node.args, node.kwargs, self.arg)
        if name and (module.startswith("torch.nn.functional") or module == "torch" or
                     module.startswith("torch._C") or module == "torch.functional"):
            if name.startswith("_"):
                raise ConvertError(f"forward calls private function {module}.{name}")
            kwargs = {k: v for k, v in node.kwargs.items()
                      if not (v is None and (module.startswith("torch.nn") or k in NONE_KWARGS))}
            if name == "norm":
                return self.norm_call(node, kwargs)
            if name == "einsum":
                return einsum(node.args, self.arg)
            if name in ADAPTIVE_POOL_RANK and len(node.args) >= 2:
                # F.adaptive_avg_pool2d(x, 1): aten's builtin takes one size per spatial dim.
                size = node.args[1]
                size = [size] * ADAPTIVE_POOL_RANK[name] if isinstance(size, int) else list(size)
                if None in size:
                    raise ConvertError(f"{name} with a None output size")
                return self.call(f"torch.{name}", (node.args[0], size) + tuple(node.args[2:]), kwargs)
            if name in SCALAR_BOUNDS and len(node.args) == 2 and not kwargs:
                # torch.min(x, torch.tensor(0.5)): the constant became a number, and
                # aten::min has no (Tensor, Scalar) form; clamp_max is that elementwise bound.
                bound = self.arg(node.args[1])
                if is_number(bound):
                    return f"torch.{SCALAR_BOUNDS[name]}({self.arg(node.args[0])}, {bound})"
            return self.call(f"torch.{name}", node.args, kwargs)
        raise ConvertError(f"forward calls {module}.{name or target}, which has no TorchScript builtin")

    def attribute(self, target):
        """A parameter or buffer becomes an input; a tensor fx lifted out of forward
        (torch.tensor(0.5) -> _tensor_constant0) is written as its value when it is one number."""
        state = dict(self.module.named_parameters())
        state.update(dict(self.module.named_buffers()))
        if target in state or self.traced is None:
            return self.param(target)
        value = getattr(self.traced, target, None)
        if isinstance(value, torch.Tensor) and value.numel() == 1 and value.device.type != "meta":
            return literal(value.item())
        shape = list(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
        raise ConvertError(f"forward makes a constant tensor ({shape}); only one-element constants are converted")

    def norm_call(self, node, kwargs):
        """torch.norm is a Python function; its TorchScript builtin (aten::norm) takes a
        numeric p and a dim list: 'fro' is p=2, and dim=None is every dim (the rank comes
        from shape propagation)."""
        params = dict(zip(("input", "p", "dim", "keepdim"), node.args))
        params.update(kwargs)
        p, dim = params.get("p", "fro"), params.get("dim")
        if p == "fro":
            p = 2
        if not isinstance(p, (int, float)) or isinstance(p, bool):
            raise ConvertError(f"torch.norm with p={p!r} has no TorchScript builtin")
        if dim is None:
            meta = params["input"].meta.get("tensor_meta") if isinstance(params["input"], torch.fx.Node) else None
            if meta is None:
                raise ConvertError("torch.norm over every dim of a tensor whose rank is unknown")
            dim = list(range(len(meta.shape)))
        dim = [dim] if isinstance(dim, int) else list(dim)
        return self.call("torch.norm", [params["input"], p, dim, bool(params.get("keepdim", False))], {})

    def init_uniform(self, names, weight_shape):
        """Linear and the conv family draw weight and bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
        fan_in = weight.shape[1] * prod(kernel) (torch.nn.init's rule, transposed convs too)."""
        fan_in = weight_shape[1] * math.prod(weight_shape[2:])
        bound = round(1.0 / math.sqrt(fan_in), 6)
        for p in filter(None, names):
            self.init_dist[p] = {"uniform": [-bound, bound]}

    def optional_param(self, prefix, attr, mod):
        return self.param(f"{prefix}.{attr}") if getattr(mod, attr, None) is not None else "None"

    def submodule(self, node):
        mod = self.module.get_submodule(node.target)
        x = node.args[0] if node.args else None
        prefix = node.target
        if isinstance(mod, IDENTITY_MODULES):
            return self.arg(x)
        for cls, fn in ACTIVATION_MODULES.items():
            if type(mod) is cls:
                kwargs = {}
                if cls is nn.GELU and mod.approximate != "none":
                    kwargs["approximate"] = mod.approximate
                if cls is nn.LeakyReLU:
                    kwargs["negative_slope"] = mod.negative_slope
                if cls is nn.Hardtanh:
                    kwargs.update(min_val=mod.min_val, max_val=mod.max_val)
                if cls is nn.ELU:
                    kwargs["alpha"] = mod.alpha
                if cls is nn.Softplus:
                    kwargs.update(beta=mod.beta, threshold=mod.threshold)
                return self.call(f"torch.{fn}", [x], kwargs)
        if isinstance(mod, (nn.Softmax, nn.LogSoftmax)):
            if mod.dim is None:
                raise ConvertError(f"{prefix}: {type(mod).__name__} without dim (implicit dim is deprecated)")
            fn = "softmax" if isinstance(mod, nn.Softmax) else "log_softmax"
            return self.call(f"torch.{fn}", [x, mod.dim], {})
        if type(mod) in LOSS_MODULES:
            fn, attrs = LOSS_MODULES[type(mod)]
            kwargs = {attr: getattr(mod, attr) for attr in attrs}
            if getattr(mod, "weight", None) is not None:
                raise ConvertError(f"{prefix}: {type(mod).__name__} with class weights")
            return decompose(fn, node.args, kwargs, self.arg)
        if type(mod) is nn.Flatten:
            return self.call("torch.flatten", [x, mod.start_dim, mod.end_dim], {})
        if type(mod) is nn.Linear:
            weight = self.param(f"{prefix}.weight")
            bias = self.param(f"{prefix}.bias") if mod.bias is not None else None
            self.init_uniform((weight, bias), list(mod.weight.shape))
            args = [self.arg(x), weight] + ([bias] if bias else [])
            return f"torch.linear({', '.join(args)})"
        if type(mod) is nn.LayerNorm:
            w, b = self.optional_param(prefix, "weight", mod), self.optional_param(prefix, "bias", mod)
            return f"torch.layer_norm({self.arg(x)}, {literal(list(mod.normalized_shape))}, {w}, {b}, {literal(mod.eps)})"
        if type(mod) is nn.Embedding:
            return f"torch.embedding({self.param(prefix + '.weight')}, {self.arg(x)})"
        if isinstance(mod, nn.modules.batchnorm._BatchNorm) or isinstance(mod, nn.modules.instancenorm._InstanceNorm):
            return self.norm(mod, prefix, x)
        if type(mod) is nn.GroupNorm:
            w, b = self.optional_param(prefix, "weight", mod), self.optional_param(prefix, "bias", mod)
            return f"torch.group_norm({self.arg(x)}, {mod.num_groups}, {w}, {b}, {literal(mod.eps)}, False)"
        if type(mod) in CONV_MODULES:
            return self.conv(mod, prefix, x)
        if type(mod) in POOL_MODULES:
            return self.pool(mod, prefix, x)
        raise ConvertError(f"submodule '{prefix}' is a {type(mod).__module__}.{type(mod).__name__}, "
                           "which the importer does not convert (supported: Linear, the conv family incl. transposed, "
                           "Batch/Instance/Group/LayerNorm, Max/Avg/AdaptiveAvg pooling, Embedding, Flatten, "
                           "Softmax/LogSoftmax, Dropout, Identity, common activations, the common losses)")

    def norm(self, mod, prefix, x):
        """BatchNorm and InstanceNorm as KernelBench runs them: Model is never put in eval mode,
        so both normalise with the batch's (instance's) statistics. The running buffers are
        left out (None), which keeps the function pure; their update is a side effect the op
        does not return."""
        w = self.optional_param(prefix, "weight", mod) if mod.affine else "None"
        b = self.optional_param(prefix, "bias", mod) if mod.affine else "None"
        if isinstance(mod, nn.modules.batchnorm._BatchNorm):
            return f"torch.batch_norm({self.arg(x)}, {w}, {b}, None, None, True, 0.1, {literal(mod.eps)}, False)"
        return f"torch.instance_norm({self.arg(x)}, {w}, {b}, None, None, True, 0.1, {literal(mod.eps)}, False)"

    def conv(self, mod, prefix, x):
        if mod.padding_mode != "zeros" or isinstance(mod.padding, str):
            raise ConvertError(f"{prefix}: {type(mod).__name__} with padding {mod.padding!r} / mode {mod.padding_mode}")
        weight = self.param(prefix + ".weight")
        bias = self.param(f"{prefix}.bias") if mod.bias is not None else None
        self.init_uniform((weight, bias), list(mod.weight.shape))
        fn = CONV_MODULES[type(mod)]
        b = bias or "None"
        if fn.startswith("conv_transpose"):
            return (f"torch.{fn}({self.arg(x)}, {weight}, {b}, {literal(list(mod.stride))}, {literal(list(mod.padding))}, "
                    f"{literal(list(mod.output_padding))}, {mod.groups}, {literal(list(mod.dilation))})")
        return (f"torch.{fn}({self.arg(x)}, {weight}, {b}, {literal(list(mod.stride))}, "
                f"{literal(list(mod.padding))}, {literal(list(mod.dilation))}, {mod.groups})")

    def pool(self, mod, prefix, x):
        fn, rank = POOL_MODULES[type(mod)]
        def spread(value):
            return list(value) if isinstance(value, (list, tuple)) else [value] * rank
        if fn.startswith("adaptive"):
            size = spread(mod.output_size)
            if None in size:
                raise ConvertError(f"{prefix}: {type(mod).__name__} with a None output size")
            return f"torch.{fn}({self.arg(x)}, {literal(size)})"
        if fn.startswith("max"):
            if mod.return_indices:
                raise ConvertError(f"{prefix}: {type(mod).__name__}(return_indices=True) returns a tuple")
            stride = spread(mod.stride if mod.stride is not None else mod.kernel_size)
            return (f"torch.{fn}({self.arg(x)}, {literal(spread(mod.kernel_size))}, {literal(stride)}, "
                    f"{literal(spread(mod.padding))}, {literal(spread(mod.dilation))}, {literal(mod.ceil_mode)})")
        stride = spread(mod.stride if mod.stride is not None else mod.kernel_size)
        args = (f"{self.arg(x)}, {literal(spread(mod.kernel_size))}, {literal(stride)}, {literal(spread(mod.padding))}, "
                f"{literal(mod.ceil_mode)}, {literal(mod.count_include_pad)}")
        if rank > 1:
            args += f", {literal(getattr(mod, 'divisor_override', None))}"
        return f"torch.{fn}({args})"

    def emit(self, graph, constants):
        """constants: placeholder position -> value of a scalar input (written as a literal)."""
        inputs, result = [], None
        for node in graph.nodes:
            if node.op == "placeholder":
                if node.target.startswith("*"):
                    raise ConvertError("forward takes *args; name each input")
                if len(inputs) + len(self.constant_inputs) in constants:
                    self.constant_inputs.append(node.target)
                    self.names[node] = literal(constants[len(inputs) + len(self.constant_inputs) - 1])
                    continue
                self.names[node] = node.target
                inputs.append(node.target)
                continue
            if node.op == "get_attr":
                self.names[node] = self.attribute(node.target)
                continue
            if node.op == "output":
                if not isinstance(node.args[0], torch.fx.Node):
                    raise ConvertError("forward returns a tuple or constant; kforge ops return one tensor")
                result = self.names[node.args[0]]
                continue
            if node.op == "call_function":
                expr = self.function(node)
            elif node.op == "call_method":
                if node.target.endswith("_") and node.target not in ("__getitem__",):
                    raise ConvertError(f"forward calls in-place method .{node.target}(); use the out-of-place form")
                base, rest = node.args[0], node.args[1:]
                expr = self.call(f"{self.arg(base)}.{node.target}", rest, dict(node.kwargs))
            elif node.op == "call_module":
                expr = self.submodule(node)
            else:
                raise ConvertError(f"unknown fx node kind {node.op}")
            var = ident(node.name)
            self.lines.append(f"    {var} = {expr}")
            self.names[node] = var
        return inputs, result


def describe_dist(tensor, is_param, known=None):
    """A kforge dist that matches how the tensor was drawn: the module's init scheme
    when known, else estimated from its values."""
    if known is not None:
        return known
    if tensor.dtype in (torch.int32, torch.int64):
        return {"randint": [int(tensor.min()), int(tensor.max()) + 1]}
    if tensor.dtype == torch.bool:
        return {"randint": [0, 2]}  # the op format draws bool inputs as 0 / 1
    t = tensor.detach().double().flatten()
    lo, hi = float(t.min()), float(t.max())
    mean, std = float(t.mean()), float(t.std()) if t.numel() > 1 else 0.0
    if std < 1e-12:
        # Constant init (norm weight 1, bias 0): spread it a little so a kernel that
        # ignores the parameter cannot pass verification.
        return {"uniform": [round(lo - 0.5, 6), round(lo + 0.5, 6)]}
    # A uniform draw fills its range evenly: std ~ (hi - lo) / sqrt(12).
    if abs(std - (hi - lo) / math.sqrt(12.0)) < 0.05 * (hi - lo):
        if lo >= 0.0 and hi <= 1.0 and hi - lo > 0.9 and not is_param:
            return "uniform"
        return {"uniform": [round(lo, 6), round(hi, 6)]}
    if abs(mean) < 0.05 and abs(std - 1.0) < 0.05:
        return "normal"
    return {"normal": [round(mean, 6), round(std, 6)]}


def dtype_name(tensor):
    names = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
             torch.int32: "int32", torch.int64: "int64", torch.bool: "bool"}
    if tensor.dtype not in names:
        raise ConvertError(f"unsupported dtype {tensor.dtype}")
    return names[tensor.dtype]


class AtenShim:
    """`torch` for checking the generated source eagerly in Python: torch.gelu and
    friends exist in libtorch's TorchScript but not in Python's torch module."""

    def __getattr__(self, name):
        if hasattr(torch, name):
            return getattr(torch, name)
        return getattr(torch.ops.aten, name)


def generated_fn(source):
    namespace = {"torch": AtenShim(), "Tensor": torch.Tensor}
    exec(source, namespace)
    return namespace["forward"]


# The op format's per-input limit (spec/op_spec.cpp kMaxElementsPerInput): 1 GiB of float32.
OP_MAX_INPUT_ELEMENTS = 1 << 28
# The self-check runs Model.forward and the generated function on the CPU at a scaled-down
# size: inputs and parameters together at most this many elements.
CHECK_MAX_ELEMENTS = 1 << 21
FACTORIES = ("randn", "rand", "randint", "randperm", "zeros", "ones", "empty", "full", "tensor", "arange",
             "eye", "linspace", "normal")


class MetaFactories:
    """While active, torch's tensor factories make meta tensors (shape and dtype, no data):
    get_inputs() and Model(...) at KernelBench's GPU-sized shapes cost no memory."""

    def __enter__(self):
        self.saved = {name: getattr(torch, name) for name in FACTORIES}
        for name, fn in self.saved.items():
            setattr(torch, name, self.wrap(fn))
        return self

    @staticmethod
    def wrap(fn):
        def on_meta(*args, **kwargs):
            kwargs["device"] = "meta"
            return fn(*args, **kwargs)
        return on_meta

    def __exit__(self, *exc):
        for name, fn in self.saved.items():
            setattr(torch, name, fn)


def read_problem(path):
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path) as fh:
            return fh.read()
    except OSError as exc:
        raise ConvertError(f"cannot read {path}: {exc.strerror}")


def sizes_of(code):
    """Module-level names bound to an int literal or int arithmetic (batch_size = 4096,
    N = 2048 * 2, height = width = 128), and each int of a tuple of ints (input_shape =
    (32768,) gives "input_shape[0]"): the knobs that scale a problem."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ConvertError(f"problem is not valid Python: {exc}")
    knobs = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            try:
                value = eval(compile(ast.Expression(stmt.value), "<size>", "eval"), {})
            except Exception:
                continue
            if type(value) is int:
                knobs += [(t.id, value) for t in stmt.targets]
            elif isinstance(value, tuple) and value and all(type(v) is int for v in value):
                knobs += [(f"{t.id}[{idx}]", v) for t in stmt.targets for idx, v in enumerate(value)]
    return dict(knobs)


def rewrite_sizes(code, overrides):
    """The problem's source with some module-level sizes replaced: each override is assigned
    right after the original line, so values derived from it later (bias_shape = (C, 1, 1))
    follow. A tuple knob ("input_shape[0]") rebinds the whole tuple with that item replaced."""
    if not overrides:
        return code
    tree = ast.parse(code)
    body = []
    for stmt in tree.body:
        body.append(stmt)
        if not isinstance(stmt, ast.Assign):
            continue
        for target in stmt.targets:
            if not isinstance(target, ast.Name):
                continue
            items = {int(k[len(target.id) + 1:-1]): v for k, v in overrides.items()
                     if k.startswith(target.id + "[")}
            if target.id in overrides:
                value = ast.Constant(overrides[target.id])
            elif items:
                value = ast.Tuple([ast.Constant(items.get(idx, v)) for idx, v in enumerate(
                    eval(compile(ast.Expression(stmt.value), "<size>", "eval"), {}))], ast.Load())
            else:
                continue
            assign = ast.Assign(targets=[ast.Name(target.id, ast.Store())], value=value)
            for node in ast.walk(assign):
                ast.copy_location(node, stmt)
            body.append(assign)
    tree.body = body
    return ast.fix_missing_locations(tree)


def load_problem(path, code, overrides=None):
    namespace = {"__name__": "kernelbench_problem", "__file__": path}
    try:
        exec(compile(rewrite_sizes(code, overrides or {}), path, "exec"), namespace)
    except Exception as exc:
        raise ConvertError(f"{path} does not run: {type(exc).__name__}: {exc}")
    for needed in ("Model", "get_inputs", "get_init_inputs"):
        if needed not in namespace:
            raise ConvertError(f"{path} lacks {needed} (a KernelBench problem defines class Model, "
                               "get_inputs() and get_init_inputs())")
    return namespace


class Instance:
    """One build of a problem: Model(*get_init_inputs()) and get_inputs(), real or meta."""

    def __init__(self, path, code, overrides=None, meta=False, seed=0):
        ns = load_problem(path, code, overrides)
        self.meta = meta
        torch.manual_seed(seed)
        context = MetaFactories() if meta else contextlib.nullcontext()
        with context:
            try:
                self.model = ns["Model"](*ns["get_init_inputs"]())
            except Exception as exc:
                raise ConvertError(f"Model(*get_init_inputs()) fails: {type(exc).__name__}: {exc}")
            try:
                self.inputs = list(ns["get_inputs"]())
            except Exception as exc:
                raise ConvertError(f"get_inputs() fails: {type(exc).__name__}: {exc}")
        # KernelBench never calls .eval(): norms use batch statistics. Dropout is the one
        # module taken in its eval form (the identity), since a random mask cannot be checked.
        self.model.train()
        for mod in self.model.modules():
            if isinstance(mod, IDENTITY_MODULES):
                mod.eval()
        self.constants = {}
        for pos, value in enumerate(self.inputs):
            if isinstance(value, torch.Tensor):
                continue
            if type(value) not in (int, float, bool):
                raise ConvertError(f"get_inputs()[{pos}] is a {type(value).__name__}; kforge ops take tensors "
                                   "(scalars int/float/bool become constants)")
            self.constants[pos] = value
        self.tensors = [v for v in self.inputs if isinstance(v, torch.Tensor)]
        state = dict(self.model.named_parameters())
        state.update(dict(self.model.named_buffers()))
        self.state = state

    def elements(self, params):
        return [v.numel() for v in self.tensors] + [self.state[q].numel() for q in params.values()]


class ConstantsOnAnyDevice:
    """While tracing, `torch.tensor(v, device=x.device)` makes its constant without the
    device: x.device is a proxy there, and the constant is written as a literal anyway."""

    def __enter__(self):
        self.saved = torch.tensor

        def tensor(data, *args, **kwargs):
            if isinstance(kwargs.get("device"), torch.fx.Proxy):
                del kwargs["device"]
            return self.saved(data, *args, **kwargs)
        torch.tensor = tensor
        return self

    def __exit__(self, *exc):
        torch.tensor = self.saved


def trace(instance):
    names = inspect.signature(instance.model.forward).parameters
    arg_names = [n for n in names if names[n].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                       inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    concrete = {arg_names[pos]: value for pos, value in instance.constants.items() if pos < len(arg_names)}
    try:
        with ConstantsOnAnyDevice():
            traced = torch.fx.symbolic_trace(instance.model, concrete_args=concrete or None)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConvertError(f"forward cannot be traced (data-dependent control flow or Python-side logic): {first}")
    # concrete_args adds `assert arg == value` nodes; the values are baked in, drop them.
    for node in list(traced.graph.nodes):
        if node.op == "call_function" and node.target is torch._assert:
            traced.graph.erase_node(node)
    traced.graph.eliminate_dead_code()
    instance.largest = largest_value(traced, instance)  # also leaves node.meta["tensor_meta"] for norm_call
    emitter = Emitter(instance.model)
    emitter.traced = traced
    arg_names, result = emitter.emit(traced.graph, instance.constants)
    if len(arg_names) + len(emitter.constant_inputs) != len(instance.inputs):
        raise ConvertError(f"forward takes {len(arg_names) + len(emitter.constant_inputs)} inputs but get_inputs() "
                           f"returns {len(instance.inputs)}")
    all_names = arg_names + list(emitter.params)
    signature = ", ".join(f"{n}: Tensor" for n in all_names)
    source = f"def forward({signature}) -> Tensor:\n" + "\n".join(emitter.lines) + f"\n    return {result}\n"
    return source, arg_names, emitter


def largest_value(traced, instance):
    """Elements of the largest tensor forward makes (its output or an intermediate),
    propagated on the instance's tensors; None when that fails."""
    from torch.fx.passes.shape_prop import ShapeProp
    traced.recompile()
    try:  # ShapeProp prints the failing node's traceback before raising: keep stderr clean
        with torch.no_grad(), contextlib.redirect_stderr(io.StringIO()):
            ShapeProp(traced).propagate(*instance.inputs)
    except Exception:
        return None  # an op without a meta kernel, or sizes the problem's forward cannot take
    sizes = [node.meta["tensor_meta"].shape for node in traced.graph.nodes
             if isinstance(node.meta.get("tensor_meta"), torch.fx.passes.shape_prop.TensorMetadata)]
    return max((math.prod(size) for size in sizes), default=0)


def fit_sizes(path, code, fits):
    """Halves the problem's largest module-level sizes, one at a time, until `fits(instance,
    params)` holds for the meta build; a size whose halving breaks the build stays. Returns
    the overrides ({} when the problem fits as it is)."""
    knobs = {k: v for k, v in sizes_of(code).items() if v >= 2}
    overrides, frozen = {}, set()
    base = Instance(path, code, {}, meta=True)
    trace(base)
    runs = base.largest is not None
    for _ in range(400):
        instance = Instance(path, code, overrides, meta=True)
        _, _, emitter = trace(instance)
        if fits(instance, emitter.params):
            return overrides
        candidates = [k for k in knobs if k not in frozen and overrides.get(k, knobs[k]) >= 2]
        if not candidates:
            break
        # Plain sizes (batch_size) scale first; an item of a shape tuple only when none is
        # left, so a reduced dim keeps its length where the batch can give way.
        plain = [k for k in candidates if "[" not in k]
        name = max(plain or candidates, key=lambda k: overrides.get(k, knobs[k]))
        current = overrides.get(name, knobs[name])
        # Alone first; then with every knob of the same value (predictions * targets
        # broadcasts only while batch_size == input_shape[0], so those halve together).
        tied = [k for k in candidates if overrides.get(k, knobs[k]) == current]
        for group in ([name], tied) if len(tied) > 1 else ([name],):
            trial = dict(overrides, **{k: current // 2 for k in group})
            try:
                instance = Instance(path, code, trial, meta=True)
                trace(instance)
                # A halving that makes forward fail where it ran is kept off.
                if instance.largest is None and runs:
                    raise ConvertError("forward fails at the halved size")
                overrides = trial
                break
            except ConvertError:
                continue
        else:
            frozen.add(name)
    raise ConvertError("cannot scale the problem's sizes down far enough (module-level sizes: "
                       f"{', '.join(f'{k}={v}' for k, v in knobs.items()) or 'none'})")


def shape_skeleton(source):
    """The source with numbers blanked: equal for two sizes of one problem unless a size
    changes the program (not just its constants)."""
    return re.sub(r"\b\d+(\.\d+)?(e-?\d+)?\b", "#", source)


def convert(path, name=None, level=None, seed=0, max_input_elements=OP_MAX_INPUT_ELEMENTS,
            check_elements=CHECK_MAX_ELEMENTS):
    """The op for the problem at its own shapes (scaled down only where an input would
    exceed the op format's limit), checked against Model.forward at a CPU-sized scale."""
    code = read_problem(path)
    full = fit_sizes(path, code, lambda inst, params: max(inst.elements(params), default=0) <= max_input_elements)
    real = Instance(path, code, full, meta=True, seed=seed)
    source, arg_names, emitter = trace(real)
    # The check also bounds what forward makes: 32768 x 32 @ 32 x 32768 is 2^21 input
    # elements but a 4 GiB product.
    small_sizes = fit_sizes(path, code, lambda inst, params: sum(inst.elements(params)) <= check_elements
                            and (inst.largest or 0) <= 4 * check_elements)
    small = Instance(path, code, small_sizes, seed=seed)
    small_source, small_args, small_emitter = trace(small)
    if shape_skeleton(small_source) != shape_skeleton(source) or small_args != arg_names:
        raise ConvertError("the scaled-down problem traces to a different program than the full one; "
                           "cannot check it on the CPU. Full-size source:\n" + source)
    param_values = [small.state[q] for q in small_emitter.params.values()]
    with torch.no_grad():
        try:
            expected = small.model(*small.inputs)
        except Exception as exc:
            raise ConvertError(f"Model.forward fails at the CPU-checked scale ({small_sizes}): "
                               f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        if not isinstance(expected, torch.Tensor):
            raise ConvertError("Model.forward returns a non-tensor; kforge ops return one tensor")
        try:
            actual = generated_fn(small_source)(*small.tensors, *param_values)
        except Exception as exc:
            raise ConvertError(f"generated source fails: {type(exc).__name__}: {str(exc).splitlines()[0]}\n{small_source}")
    if actual.shape != expected.shape or not torch.allclose(actual, expected, atol=1e-4, rtol=1e-4, equal_nan=True):
        raise ConvertError("generated source disagrees with Model.forward (importer bug); source was:\n" + small_source)

    inputs = []
    for arg, meta, value in zip(arg_names, real.tensors, small.tensors):
        inputs.append({"name": arg, "shape": list(meta.shape), "dtype": dtype_name(value),
                       "dist": describe_dist(value, False)})
    for arg, qual, value in zip(emitter.params, emitter.params.values(), param_values):
        inputs.append({"name": arg, "shape": list(real.state[qual].shape), "dtype": dtype_name(value),
                       "dist": describe_dist(value, True, emitter.init_dist.get(arg))})

    heavy = any(k in source for k in ("linear", "matmul", "@", "bmm", "conv", "mm(", "einsum"))
    op = {"name": name or op_name(path), "source": source, "inputs": inputs,
          "extra_shapes": extra_shapes(source, arg_names, small.tensors, list(emitter.params), param_values,
                                       {i["name"]: i["shape"] for i in inputs}),
          "tolerance": {"atol": 1e-3 if heavy else 1e-4, "rtol": 1e-3 if heavy else 1e-4}}
    if level is not None:
        op["level"] = level
    op_notes = {"scaled_sizes": full, "check_sizes": small_sizes}
    return op, op_notes


def op_name(path):
    """An identifier from the file's stem: 19_ReLU -> kb_19_ReLU (op names start with a letter)."""
    if path == "-":
        return "kernelbench_problem"
    stem = re.sub(r"[^A-Za-z0-9_]", "_", os.path.splitext(os.path.basename(path))[0])
    return (stem if re.match(r"[A-Za-z_]", stem) else "kb_" + stem)[:64]


def extra_shapes(source, arg_names, example, params, param_values, main):
    """Small shapes the harness can also check (the CPU-sized scale of the problem, with
    its leading dims made odd); kept only when the function still runs with them."""
    fn = generated_fn(source)
    shapes = []
    for divisor in (1, 3, 17):
        new = [list(v.shape) for v in example]
        for s in new:
            if s and divisor > 1:
                s[0] = max(1, s[0] // divisor) | 1
        trial = [torch.randn(s) if v.is_floating_point() else torch.zeros(s, dtype=v.dtype)
                 for s, v in zip(new, example)]
        try:
            with torch.no_grad():
                fn(*trial, *param_values)
        except Exception:
            continue
        entry = {n: s for n, s in zip(arg_names, new)}
        entry.update({n: list(v.shape) for n, v in zip(params, param_values)})
        if entry not in shapes and entry != main:
            shapes.append(entry)
    return shapes


def reply(args):
    """The conversion as one JSON line on args.reply_fd: the problem is untrusted code run
    by a server, so every failure is a message, never a traceback."""
    try:
        op, _ = convert(args.problem, args.name, args.level)
        line = {"ok": True, "op": op}
    except ConvertError as exc:
        line = {"ok": False, "message": str(exc)}
    except BaseException as exc:  # the problem's own code may raise anything, or exit
        line = {"ok": False, "message": f"the problem failed: {type(exc).__name__}: {exc}"}
    with os.fdopen(args.reply_fd, "w") as out:
        out.write(json.dumps(line) + "\n")
    return 0 if line["ok"] else 2


def main(argv=None):
    parser = argparse.ArgumentParser(description="KernelBench problem file -> kforge op JSON")
    parser.add_argument("problem", help="path to a KernelBench problem .py (class Model, get_inputs, get_init_inputs)")
    parser.add_argument("-o", "--output", help="write the op JSON here (default: stdout)")
    parser.add_argument("--name", help="op name (default: the file's stem)")
    parser.add_argument("--level", type=int, help="suite level to record")
    parser.add_argument("--reply-fd", type=int, help="write one JSON line ({ok, op} or {ok, message}) to this fd "
                                                     "instead (the API's sandboxed conversion)")
    args = parser.parse_args(argv)
    if args.reply_fd is not None:
        return reply(args)
    try:
        op, _ = convert(args.problem, args.name, args.level)
    except ConvertError as exc:
        print(f"import_kernelbench: cannot convert {args.problem}: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(op, indent=2)
    # Shapes and ranges on one line, as in suite/.
    text = re.sub(r"\[\s*([-0-9.e,\s]+?)\s*\]",
                  lambda m: "[" + ", ".join(v.strip() for v in m.group(1).split(",")) + "]", text) + "\n"
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
