# Rewrites the module TorchInductor generates for an op (its Python wrapper: kernels as
# async_compile.triton('name', '''...''') and a `def call(args)`) into kforge's `triton`
# candidate format: plain @triton.jit kernels and a forward(*inputs) that allocates and
# launches them with the autotuned config fixed. A pure function of the text, the graph's
# argument bindings and the chosen configs; anything it cannot rewrite is refused with the
# reason (extern kernels, aten fallbacks, unknown helpers), never a candidate that calls
# torch compute. Test: ctest -R harness_inductor_rewrite (tests/worker/harness/inductor_rewrite_test.py).
import ast
import io
import re
import tokenize

# Kernel kinds (triton_heuristics.<kind>) the rewriter knows how to launch.
KERNEL_KINDS = {"pointwise", "reduction", "persistent_reduction"}
# Launch grids Inductor names in inductor_meta['grid_type'] that the rewriter computes.
GRID_TYPES = {"Grid1D", "Grid2D", "Grid3D"}
# libdevice functions with a triton.language.math equivalent that lowers to the same
# device function (and runs in Triton's CPU interpreter); the rest stay libdevice calls.
LIBDEVICE_TO_TL_MATH = {"erf": "erf", "rsqrt": "rsqrt", "sqrt": "sqrt_rn", "floor": "floor", "ceil": "ceil",
                        "abs": "abs", "fma": "fma", "exp2": "exp2", "log2": "log2"}
# Wrapper-level names that allocate: empty_strided_<device>(size, stride, dtype).
ALLOCATORS = {"empty_strided_cuda", "empty_strided_cpu", "empty_strided"}
# Wrapper statements that only check or pick a device: dropped.
DROPPED_CALLS = {"assert_size_stride", "assert_size_stride_grouped", "assert_alignment", "get_raw_stream",
                 "check_memory_overlap"}
# Wrapper-level calls that return their argument unchanged for the harness's inputs (which
# are contiguous and aligned): copy_if_misaligned(x) is x.
IDENTITY_CALLS = {"copy_if_misaligned"}
# torch attributes a wrapper may name: dtypes of allocations.
TORCH_DTYPES = {"float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool"}

# kforge's own versions of the torch._inductor.runtime.triton_helpers functions Inductor's
# kernels call (a candidate may import only torch, triton and math). Same semantics: NaN
# wins a max/min; Welford's running mean/M2/weight; floor division of integers.
HELPERS = {
    "promote_to_tensor": ("", "def ih_promote_to_tensor(x):\n    return x + tl.zeros((1,), tl.int1)\n"),
    "maximum": ("", "def ih_maximum(a, b):\n    keep = (a > b) | (a != a)\n    return tl.where(keep, a, b)\n"),
    "minimum": ("", "def ih_minimum(a, b):\n    keep = (a < b) | (a != a)\n    return tl.where(keep, a, b)\n"),
    "max2": ("maximum", "def ih_max2(a, dim):\n    return tl.reduce(a, dim, ih_maximum)\n"),
    "min2": ("minimum", "def ih_min2(a, dim):\n    return tl.reduce(a, dim, ih_minimum)\n"),
    "welford_reduce": ("", "def ih_welford_reduce(value, mean, m2, weight, first_iteration):\n"
                           "    if first_iteration:\n"
                           "        new_weight = tl.full(weight.shape, 1, weight.dtype)\n"
                           "        new_mean = value\n"
                           "        new_m2 = tl.zeros_like(m2)\n"
                           "    else:\n"
                           "        delta = value - mean\n"
                           "        new_weight = weight + 1\n"
                           "        new_mean = mean + delta / new_weight\n"
                           "        new_m2 = m2 + delta * (value - new_mean)\n"
                           "    return new_mean, new_m2, new_weight\n"),
    "welford_combine": ("", "def ih_welford_combine(mean_a, m2_a, weight_a, mean_b, m2_b, weight_b):\n"
                            "    delta = mean_b - mean_a\n"
                            "    weight = weight_a + weight_b\n"
                            "    share_b = tl.where(weight == 0.0, 0.0, weight_b / weight)\n"
                            "    return mean_a + delta * share_b, m2_a + m2_b + delta * delta * weight_a * share_b, weight\n"),
    "welford": ("welford_combine", "def ih_welford(mean, m2, weight, dim):\n"
                                   "    return tl.reduce((mean, m2, weight), dim, ih_welford_combine)\n"),
    "div_floor_integer": ("", "def ih_div_floor_integer(a, b):\n"
                              "    quot = a // b\n"
                              "    fixed = tl.where((a % b) != 0, quot - 1, quot)\n"
                              "    return tl.where((a < 0) != (b < 0), fixed, quot)\n"),
}


class Refused(Exception):
    """The module cannot become a kforge candidate; the message says why."""


class Kernel:
    """One async_compile.triton kernel: its rewritten text and what launching it needs."""

    def __init__(self, name):
        self.name = name
        self.kind = ""
        self.grid_type = "Grid1D"
        self.params = []        # every parameter, in order
        self.block_params = []  # constexpr block sizes the heuristics decorator supplied
        self.body_blocks = {}   # constexpr blocks fixed in the body (XBLOCK: tl.constexpr = 1)
        self.text = ""


def _literal_dict_value(node, key):
    """The literal value of `key` in a dict display (None if absent or not a literal)."""
    if not isinstance(node, ast.Dict):
        return None
    for k, v in zip(node.keys, node.values):
        if isinstance(k, ast.Constant) and k.value == key:
            try:
                return ast.literal_eval(v)
            except ValueError:
                return None
    return None


def _rename_token(name):
    """A private Inductor name (_tmp3, _triton_helper_fn_add0) as a public one."""
    return "ind" + name if name.startswith("_") else name


def _rewrite_tokens(text, helpers_used):
    """Token-level edits of a kernel's text: triton_helpers.f -> ih_f, libdevice.f -> tl.math.f
    (or tl.extra.libdevice.f), tl_math.f -> tl.math.f, private names made public."""
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    edits = []  # (start, end, replacement) in (row, col)
    idx = 0
    while idx < len(tokens):
        tok = tokens[idx]
        if tok.type == tokenize.NAME and idx + 2 < len(tokens) and tokens[idx + 1].string == "." \
                and tokens[idx + 2].type == tokenize.NAME:
            module, attr = tok.string, tokens[idx + 2].string
            replacement = None
            if module == "triton_helpers":
                if attr not in HELPERS:
                    raise Refused(f"the kernel calls triton_helpers.{attr}, which kforge has no version of")
                helpers_used.add(attr)
                replacement = "ih_" + attr
            elif module == "libdevice":
                replacement = "tl.math." + LIBDEVICE_TO_TL_MATH[attr] if attr in LIBDEVICE_TO_TL_MATH \
                    else "tl.extra.libdevice." + attr
            elif module == "tl_math":
                replacement = "tl.math." + attr
            if replacement is not None:
                edits.append((tok.start, tokens[idx + 2].end, replacement))
                idx += 3
                continue
        if tok.type == tokenize.NAME and tok.string.startswith("_"):
            if idx > 0 and tokens[idx - 1].string == ".":
                raise Refused(f"the kernel uses the private attribute .{tok.string}")
            edits.append((tok.start, tok.end, _rename_token(tok.string)))
        idx += 1
    lines = text.splitlines(keepends=True)
    for (row, col), (end_row, end_col), replacement in reversed(edits):
        if row != end_row:
            raise Refused("a kernel expression spans lines the rewriter cannot edit")
        line = lines[row - 1]
        lines[row - 1] = line[:col] + replacement + line[end_col:]
    return "".join(lines)


def _parse_kernel(name, source, helpers_used, prefix):
    """The kernel module Inductor compiles for `name`: its @triton.jit functions without the
    heuristics decorator, and the launch facts (kind, grid, block parameters)."""
    tree = ast.parse(source)
    kernel = Kernel(name)
    functions = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            functions.append(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom, ast.Expr)):
            continue  # imports and triton_helpers.set_driver_to_gpu(): the candidate has its own
        else:
            raise Refused(f"kernel {name}: unexpected top-level statement at line {node.lineno}")
    texts = []
    lines = source.splitlines(keepends=True)
    for fn in functions:
        heuristics = None
        jit = False
        for decorator in fn.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                if target.value.id == "triton" and target.attr == "jit":
                    jit = True
                    continue
                if target.value.id == "triton_heuristics":
                    heuristics = (target.attr, decorator)
                    continue
            raise Refused(f"kernel {name}: decorator at line {decorator.lineno} is not triton.jit or Inductor's heuristics")
        if not jit:
            raise Refused(f"kernel {name}: {fn.name} is not a @triton.jit function")
        body = "".join(lines[fn.lineno - 1:fn.end_lineno])
        if heuristics is None:  # a helper (a scan's combine function): renamed per kernel
            texts.append("@triton.jit\n" + body)
            continue
        if fn.name != name:
            raise Refused(f"kernel {name}: the module's kernel is called {fn.name}")
        kind, call = heuristics
        if kind not in KERNEL_KINDS:
            raise Refused(f"kernel {name} is an Inductor {kind} kernel (kforge rewrites pointwise and reduction kernels)")
        kernel.kind = kind
        meta = {kw.arg: kw.value for kw in call.keywords} if isinstance(call, ast.Call) else {}
        grid_type = _literal_dict_value(meta.get("inductor_meta"), "grid_type") or "Grid1D"
        if grid_type not in GRID_TYPES:
            raise Refused(f"kernel {name} launches on an Inductor {grid_type} grid, which the rewriter does not compute")
        kernel.grid_type = grid_type
        for arg in fn.args.args:
            kernel.params.append(arg.arg)
            annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
            if annotation.endswith("constexpr"):
                kernel.block_params.append(arg.arg)
        for stmt in fn.body:  # XBLOCK: tl.constexpr = 1 and the like
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and \
                    isinstance(stmt.value, ast.Constant) and ast.unparse(stmt.annotation).endswith("constexpr"):
                kernel.body_blocks[stmt.target.id] = stmt.value.value
        texts.append("@triton.jit\n" + body)
    if not kernel.kind:
        raise Refused(f"kernel {name}: no function carries Inductor's heuristics decorator")
    text = "\n\n".join(texts)
    # A scan's helper functions are named alike in every kernel module: give them the kernel's prefix.
    text = re.sub(r"\b_triton_helper_fn_(\w+)", lambda m: f"{prefix}_helper_fn_{m.group(1)}", text)
    kernel.text = _rewrite_tokens(text, helpers_used)
    return kernel


def _kernel_sources(tree):
    """{name: source} of every `name = async_compile.triton('name', '''...''')`; refuses any
    other compiled artefact (C++ kernels, CUDA templates, subgraphs)."""
    kernels = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            continue
        func = node.value.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "async_compile"):
            continue
        if func.attr != "triton":
            raise Refused(f"the module compiles a {func.attr} kernel (async_compile.{func.attr}): only Triton kernels "
                          "become kforge candidates")
        args = node.value.args
        if len(args) < 2 or not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args[:2]):
            raise Refused(f"line {node.lineno}: async_compile.triton without a literal name and source")
        kernels[args[0].value] = args[1].value
    return kernels


def _input_expr(binding):
    """The forward-side expression a graph argument binds to: an input, or one of its sizes/strides."""
    if "input" in binding:
        return binding["input"]
    for key in ("size", "stride"):
        if key in binding:
            name, dim = binding[key]
            return f"{name}.{key}({int(dim)})"
    raise Refused(f"graph argument bound to {binding}, which is neither an op input nor one of its sizes or strides")


class _CallRewriter:
    """call(args) -> forward body lines."""

    def __init__(self, kernels, bindings, configs):
        self.kernels = kernels
        self.bindings = bindings
        self.configs = configs
        self.lines = []
        self.launched = []

    def expr(self, node):
        """An expression of the wrapper with reinterpret_tensor as a view; refuses compute."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
                if sub.value.id == "torch" and sub.attr in TORCH_DTYPES:
                    continue
                if sub.value.id in ("extern_kernels", "aten", "torch", "inductor_ops"):
                    raise Refused(f"the wrapper calls {sub.value.id}.{sub.attr}: "
                                  + ("an extern kernel (cuBLAS or aten), not a Triton kernel" if sub.value.id == "extern_kernels"
                                     else "a torch fallback, not a Triton kernel") + "; a kforge candidate computes in "
                                  "Triton kernels only")
        text = ast.unparse(_ReinterpretAsView().visit(node))
        if re.search(r"(^|[^\w.])_", text):
            raise Refused(f"the wrapper uses a private name: {text[:120]}")
        return text

    def statement(self, stmt, indent):
        pad = "    " * indent
        if isinstance(stmt, ast.With):  # torch.cuda._DeviceGuard(0): the candidate runs on the inputs' device
            for inner in stmt.body:
                self.statement(inner, indent)
            return
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr == "clear" and isinstance(func.value, ast.Name) and func.value.id == "args":
                return
            if isinstance(func, ast.Attribute) and func.attr == "set_device":
                return
            if isinstance(func, ast.Name) and func.id in DROPPED_CALLS:
                return
            if isinstance(func, ast.Attribute) and func.attr == "run" and isinstance(func.value, ast.Name):
                self.launch(func.value.id, call, pad)
                return
            self.expr(call)  # names extern kernels and torch fallbacks in its refusal
            raise Refused(f"the wrapper calls {ast.unparse(func)}, which is not a Triton kernel launch")
        if isinstance(stmt, ast.Assign):
            if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple) and \
                    isinstance(stmt.value, ast.Name) and stmt.value.id == "args":
                names = [elt.id for elt in stmt.targets[0].elts]
                if len(names) != len(self.bindings):
                    raise Refused(f"call(args) unpacks {len(names)} arguments, the graph has {len(self.bindings)} bindings")
                for arg_name, binding in zip(names, self.bindings):
                    self.lines.append(f"{pad}{arg_name} = {_input_expr(binding)}")
                return
            value = stmt.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
                if value.func.id == "get_raw_stream":
                    return
                if value.func.id in IDENTITY_CALLS and len(value.args) == 1:
                    targets = " = ".join(self.expr(t) for t in stmt.targets)
                    self.lines.append(f"{pad}{targets} = {self.expr(value.args[0])}")
                    return
                if value.func.id in ALLOCATORS:
                    self.allocation(stmt.targets, value, pad)
                    return
            targets = " = ".join(self.expr(t) for t in stmt.targets)
            self.lines.append(f"{pad}{targets} = {self.expr(value)}")
            return
        if isinstance(stmt, ast.Delete):
            return  # the candidate's buffers live until forward returns
        if isinstance(stmt, ast.Return):
            value = stmt.value
            items = value.elts if isinstance(value, ast.Tuple) else [value]
            outs = [self.expr(item) for item in items]
            self.lines.append(f"{pad}return {outs[0]}" if len(outs) == 1 else f"{pad}return ({', '.join(outs)},)")
            return
        raise Refused(f"the wrapper's statement '{ast.unparse(stmt)[:120]}' has no kforge equivalent")

    def allocation(self, targets, call, pad):
        if len(call.args) < 3:
            raise Refused(f"allocation {ast.unparse(call)} without size, stride and dtype")
        size, stride, dtype = (self.expr(a) for a in call.args[:3])
        names = " = ".join(self.expr(t) for t in targets)
        self.lines.append(f"{pad}{names} = torch.empty_strided({size}, {stride}, dtype={dtype}, device=device)")

    def launch(self, name, call, pad):
        kernel = self.kernels.get(name)
        if kernel is None:
            raise Refused(f"the wrapper launches {name}, which is not one of the module's Triton kernels")
        config = self.configs.get(name)
        if config is None:
            raise Refused(f"no autotuned config was recorded for kernel {name}")
        args = [self.expr(a) for a in call.args]
        value_params = [p for p in kernel.params if p not in kernel.block_params]
        if len(args) != len(value_params):
            raise Refused(f"{name}.run passes {len(args)} arguments, the kernel takes {len(value_params)}")
        bound = dict(zip(value_params, args))
        blocks = {}
        for param in kernel.block_params:
            if kernel.kind == "persistent_reduction" and param.startswith("R") and param.endswith("BLOCK"):
                # A persistent reduction holds the whole row: its block must cover the row at any shape.
                numel = bound.get(param[:-5].lower() + "_numel") or bound.get("r0_numel") or bound.get("rnumel")
                if numel is None:
                    raise Refused(f"{name}: persistent reduction without an r0_numel argument")
                blocks[param] = f"triton.next_power_of_2({numel})"
                continue
            if param not in config.get("kwargs", {}):
                raise Refused(f"{name}: the recorded config has no value for {param}")
            blocks[param] = str(int(config["kwargs"][param]))
        grid = []
        for axis, prefix in zip(range({"Grid1D": 1, "Grid2D": 2, "Grid3D": 3}[kernel.grid_type]), "xyz"):
            numel = bound.get(f"{prefix}numel")
            block_name = f"{prefix.upper()}BLOCK"
            block = blocks.get(block_name) or kernel.body_blocks.get(block_name) or config.get("kwargs", {}).get(block_name, 1)
            if numel is None:
                numel = str(kernel_constant(kernel, f"{prefix}numel"))
            grid.append(f"triton.cdiv({numel}, {block})")
        launch_args = args + [f"{param}={value}" for param, value in blocks.items()]
        launch_args.append(f"num_warps={int(config.get('num_warps', 4))}")
        launch_args.append(f"num_stages={int(config.get('num_stages', 1))}")
        self.lines.append(f"{pad}{name}[({', '.join(grid)},)]({', '.join(launch_args)})")
        self.launched.append(name)


def kernel_constant(kernel, name):
    """A numel fixed in the kernel's body (xnumel = 4112): static shapes."""
    match = re.search(rf"^\s+{name} = (\d+)\s*$", kernel.text, re.M)
    if not match:
        raise Refused(f"{kernel.name}: no {name} argument and none fixed in the body")
    return int(match.group(1))


class _ReinterpretAsView(ast.NodeTransformer):
    """reinterpret_tensor(buf, size, stride, offset) -> buf.as_strided(size, stride, offset)."""

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "reinterpret_tensor" and len(node.args) >= 3:
            base, rest = node.args[0], node.args[1:]
            return ast.Call(func=ast.Attribute(value=base, attr="as_strided", ctx=ast.Load()), args=rest, keywords=[])
        return node


def _call_functions(tree):
    """Inductor's `def call(args)`: top-level in older wrappers, a method of `class Runner`
    (bound to `call = runner.call`) in current ones."""
    found = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "call"]
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Runner":
            found += [fn for fn in node.body if isinstance(fn, ast.FunctionDef) and fn.name == "call"]
    return found


def rewrite(code, input_names, bindings, configs, header=""):
    """The candidate module for Inductor's output `code`.
    input_names: the op's inputs in forward's order; bindings: per argument of call(args), in
    order, {"input": name} or {"size": [name, dim]} / {"stride": [name, dim]}; configs: per
    kernel, the autotuned {"kwargs": {"XBLOCK": ...}, "num_warps": n, "num_stages": n};
    header: comment lines put first (provenance). Raises Refused with the reason."""
    tree = ast.parse(code)
    sources = _kernel_sources(tree)
    calls = _call_functions(tree)
    if len(calls) != 1:
        raise Refused("the module has no single `def call(args)` (several graphs, or not Inductor's Python wrapper)")
    if not sources:
        raise Refused("Inductor generated no Triton kernel for this op")
    helpers_used = set()
    kernels = {}
    for idx, (name, source) in enumerate(sources.items()):
        kernels[name] = _parse_kernel(name, source, helpers_used, f"k{idx}")
    rewriter = _CallRewriter(kernels, bindings, configs)
    for stmt in calls[0].body:
        rewriter.statement(stmt, 1)
    if not rewriter.launched:
        raise Refused("the wrapper launches no Triton kernel (the op runs as extern kernels or views only)")
    unused = [name for name in kernels if name not in rewriter.launched]
    for name in unused:
        del kernels[name]
    helper_texts = []
    needed = set(helpers_used)
    for name in list(needed):
        dependency = HELPERS[name][0]
        while dependency:
            needed.add(dependency)
            dependency = HELPERS[dependency][0]
    for name in HELPERS:  # dependencies first: the table lists them before their users
        if name in needed:
            helper_texts.append("@triton.jit\n" + HELPERS[name][1])
    out = [header.rstrip("\n") + "\n" if header else "", "import torch\nimport triton\nimport triton.language as tl\n"]
    out += ["\n\n" + text for text in helper_texts]
    out += ["\n\n" + kernel.text.rstrip("\n") + "\n" for kernel in kernels.values()]
    if not input_names:
        raise Refused("the op has no inputs")
    out.append(f"\n\ndef forward({', '.join(input_names)}):\n    device = {input_names[0]}.device\n")
    out.append("\n".join(rewriter.lines) + "\n")
    return "".join(out)


def main():
    """One request as JSON on stdin ({code, inputs, bindings, configs, header}); the reply on
    stdout: {"ok": true, "source": ...} or {"ok": false, "reason": ...}."""
    import json
    import sys

    request = json.load(sys.stdin)
    try:
        source = rewrite(request["code"], request["inputs"], request["bindings"], request.get("configs", {}),
                         request.get("header", ""))
        reply = {"ok": True, "source": source}
    except (Refused, SyntaxError) as error:
        reply = {"ok": False, "reason": str(error)}
    json.dump(reply, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
