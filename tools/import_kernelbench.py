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


class ConvertError(Exception):
    """A problem the importer cannot turn into a kforge op; the message says why."""


INFIX = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
         operator.matmul: "@", operator.pow: "**", operator.gt: ">", operator.lt: "<",
         operator.ge: ">=", operator.le: "<=", operator.eq: "==", operator.floordiv: "//"}
# Keyword arguments of torch.nn.functional that aten builtins do not take.
DROP_KWARGS = {"inplace", "_stacklevel"}
IDENTITY_MODULES = (nn.Identity, nn.Dropout)
ACTIVATION_MODULES = {nn.ReLU: "relu", nn.GELU: "gelu", nn.SiLU: "silu", nn.Tanh: "tanh",
                      nn.Sigmoid: "sigmoid", nn.Mish: "mish", nn.Softplus: "softplus",
                      nn.ELU: "elu", nn.Hardtanh: "hardtanh", nn.LeakyReLU: "leaky_relu"}


def literal(value):
    """A Python constant as TorchScript source."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float):
        if math.isinf(value) or math.isnan(value):
            raise ConvertError(f"non-finite constant {value} in forward")
        return repr(value)
    if isinstance(value, (int, str)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, slice):
        parts = ["" if p is None else literal(p) for p in (value.start, value.stop)]
        text = ":".join(parts)
        return text + (":" + literal(value.step) if value.step is not None else "")
    if value is Ellipsis:
        return "..."
    raise ConvertError(f"cannot express constant {value!r} ({type(value).__name__}) in TorchScript")


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
        if target is getattr and node.args[1] == "shape":
            return f"{self.arg(node.args[0])}.size()"
        if target in (F.dropout, torch.dropout):
            return self.arg(node.args[0])  # inference: dropout is the identity
        module = getattr(target, "__module__", "") or ""
        name = getattr(target, "__name__", None)
        if name and (module.startswith("torch.nn.functional") or module == "torch" or
                     module.startswith("torch._C") or module == "torch.functional"):
            if name.startswith("_"):
                raise ConvertError(f"forward calls private function {module}.{name}")
            kwargs = {k: v for k, v in node.kwargs.items() if not (v is None and module.startswith("torch.nn"))}
            return self.call(f"torch.{name}", node.args, kwargs)
        raise ConvertError(f"forward calls {module}.{name or target}, which has no TorchScript builtin")

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
        if type(mod) is nn.Linear:
            weight = self.param(f"{prefix}.weight")
            bias = self.param(f"{prefix}.bias") if mod.bias is not None else None
            # nn.Linear draws weight and bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
            bound = round(1.0 / math.sqrt(mod.in_features), 6)
            for p in filter(None, (weight, bias)):
                self.init_dist[p] = {"uniform": [-bound, bound]}
            args = [self.arg(x), weight] + ([bias] if bias else [])
            return f"torch.linear({', '.join(args)})"
        if type(mod) is nn.LayerNorm:
            w = self.param(f"{prefix}.weight") if mod.weight is not None else "None"
            b = self.param(f"{prefix}.bias") if mod.bias is not None else "None"
            return f"torch.layer_norm({self.arg(x)}, {literal(list(mod.normalized_shape))}, {w}, {b}, {literal(mod.eps)})"
        if type(mod) is nn.Embedding:
            return f"torch.embedding({self.param(prefix + '.weight')}, {self.arg(x)})"
        if type(mod) in (nn.Conv1d, nn.Conv2d):
            if mod.padding_mode != "zeros" or isinstance(mod.padding, str):
                raise ConvertError(f"{prefix}: {type(mod).__name__} with padding {mod.padding!r} / mode {mod.padding_mode}")
            fn = "conv1d" if type(mod) is nn.Conv1d else "conv2d"
            b = self.param(f"{prefix}.bias") if mod.bias is not None else "None"
            return (f"torch.{fn}({self.arg(x)}, {self.param(prefix + '.weight')}, {b}, {literal(list(mod.stride))}, "
                    f"{literal(list(mod.padding))}, {literal(list(mod.dilation))}, {mod.groups})")
        raise ConvertError(f"submodule '{prefix}' is a {type(mod).__module__}.{type(mod).__name__}, "
                           "which the importer does not convert (supported: Linear, LayerNorm, Embedding, "
                           "Conv1d/2d, Softmax/LogSoftmax, Dropout, Identity, common activations)")

    def emit(self, graph):
        inputs, result = [], None
        for node in graph.nodes:
            if node.op == "placeholder":
                if node.target.startswith("*"):
                    raise ConvertError("forward takes *args; name each input")
                self.names[node] = node.target
                inputs.append(node.target)
                continue
            if node.op == "get_attr":
                self.names[node] = self.param(node.target)
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


def load_problem(path):
    namespace = {"__name__": "kernelbench_problem", "__file__": path}
    with open(path) as fh:
        code = fh.read()
    try:
        exec(compile(code, path, "exec"), namespace)
    except Exception as exc:
        raise ConvertError(f"{path} does not run: {type(exc).__name__}: {exc}")
    for needed in ("Model", "get_inputs", "get_init_inputs"):
        if needed not in namespace:
            raise ConvertError(f"{path} lacks {needed} (a KernelBench problem defines class Model, "
                               "get_inputs() and get_init_inputs())")
    return namespace


def describe_dist(tensor, is_param, known=None):
    """A kforge dist that matches how the tensor was drawn: the module's init scheme
    when known, else estimated from its values."""
    if known is not None:
        return known
    if tensor.dtype in (torch.int32, torch.int64):
        return {"randint": [int(tensor.min()), int(tensor.max()) + 1]}
    if tensor.dtype == torch.bool:
        raise ConvertError("boolean inputs are not supported by the importer")
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


def convert(path, name=None, level=None, seed=0):
    torch.manual_seed(seed)
    ns = load_problem(path)
    try:
        model = ns["Model"](*ns["get_init_inputs"]()).eval()
    except Exception as exc:
        raise ConvertError(f"Model(*get_init_inputs()) fails: {type(exc).__name__}: {exc}")
    example = ns["get_inputs"]()
    for pos, value in enumerate(example):
        if not isinstance(value, torch.Tensor):
            raise ConvertError(f"get_inputs()[{pos}] is a {type(value).__name__}; kforge ops take tensors only "
                               "(move constants into Model.__init__ via get_init_inputs)")
    try:
        traced = torch.fx.symbolic_trace(model)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConvertError(f"forward cannot be traced (data-dependent control flow or Python-side logic): {first}")
    emitter = Emitter(model)
    arg_names, result = emitter.emit(traced.graph)
    if len(arg_names) != len(example):
        raise ConvertError(f"forward takes {len(arg_names)} inputs but get_inputs() returns {len(example)}")
    all_names = arg_names + list(emitter.params)
    signature = ", ".join(f"{n}: Tensor" for n in all_names)
    source = f"def forward({signature}) -> Tensor:\n" + "\n".join(emitter.lines) + f"\n    return {result}\n"

    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    param_values = [state[q] for q in emitter.params.values()]
    with torch.no_grad():
        expected = model(*example)
        if not isinstance(expected, torch.Tensor):
            raise ConvertError("Model.forward returns a non-tensor; kforge ops return one tensor")
        try:
            actual = generated_fn(source)(*example, *param_values)
        except Exception as exc:
            raise ConvertError(f"generated source fails: {type(exc).__name__}: {exc}\n{source}")
    if actual.shape != expected.shape or not torch.allclose(actual, expected, atol=1e-5, rtol=1e-5, equal_nan=True):
        raise ConvertError("generated source disagrees with Model.forward (importer bug); source was:\n" + source)

    inputs = []
    for arg, value in zip(arg_names, example):
        inputs.append({"name": arg, "shape": list(value.shape), "dtype": dtype_name(value),
                       "dist": describe_dist(value, False)})
    for arg, value in zip(emitter.params, param_values):
        inputs.append({"name": arg, "shape": list(value.shape), "dtype": dtype_name(value),
                       "dist": describe_dist(value, True, emitter.init_dist.get(arg))})

    heavy = any(k in source for k in ("linear", "matmul", "@", "bmm", "conv", "mm("))
    op = {"name": name or os.path.splitext(os.path.basename(path))[0],
          "source": source, "inputs": inputs,
          "extra_shapes": extra_shapes(source, arg_names, example, emitter.params, param_values),
          "tolerance": {"atol": 1e-3 if heavy else 1e-4, "rtol": 1e-3 if heavy else 1e-4}}
    if level is not None:
        op["level"] = level
    return op


def extra_shapes(source, arg_names, example, params, param_values):
    """Odd batch sizes: the leading dim of every problem input (not parameters) set to
    an odd value; kept only when the function still runs with them."""
    fn = generated_fn(source)
    shapes = []
    for divisor in (3, 17):
        new = [list(v.shape) for v in example]
        for s in new:
            if s:
                s[0] = max(1, s[0] // divisor) | 1
        if all(s == list(v.shape) for s, v in zip(new, example)):
            continue
        trial = [torch.randn(s) if v.is_floating_point() else torch.zeros(s, dtype=v.dtype)
                 for s, v in zip(new, example)]
        try:
            with torch.no_grad():
                fn(*trial, *param_values)
        except Exception:
            continue
        entry = {n: s for n, s in zip(arg_names, new)}
        entry.update({n: list(v.shape) for n, v in zip(params, param_values)})
        if entry not in shapes:
            shapes.append(entry)
    return shapes


def main(argv=None):
    parser = argparse.ArgumentParser(description="KernelBench problem file -> kforge op JSON")
    parser.add_argument("problem", help="path to a KernelBench problem .py (class Model, get_inputs, get_init_inputs)")
    parser.add_argument("-o", "--output", help="write the op JSON here (default: stdout)")
    parser.add_argument("--name", help="op name (default: the file's stem)")
    parser.add_argument("--level", type=int, help="suite level to record")
    args = parser.parse_args(argv)
    try:
        op = convert(args.problem, args.name, args.level)
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
