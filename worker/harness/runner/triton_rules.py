# Static rules for a `triton` candidate (a Python module defining forward(*inputs) that
# launches @triton.jit kernels), checked on the AST before any of it runs.
# Test: ctest -R harness_triton_runner (tests/worker/harness/triton_runner_test.py).
import ast

# What a candidate module may import: torch for allocation and views, triton, math.
ALLOWED_IMPORTS = {"torch", "triton", "triton.language", "math"}
# Calls that would escape the checks: dynamic code, reflection, process state.
BANNED_NAMES = {
    "eval", "exec", "compile", "open", "input", "globals", "locals", "vars", "getattr", "setattr",
    "delattr", "__import__", "breakpoint", "memoryview", "type", "object", "super", "id", "hash",
    "exit", "quit", "help", "dir",
}
# torch namespaces a forward must not touch: streams, graphs, events, timers, the C layer,
# compiled or scripted code (compute hidden from the dispatcher), distributed and threads.
BANNED_TORCH_ATTRS = {
    "cuda", "backends", "jit", "compile", "compiler", "library", "ops", "utils", "autograd", "distributed",
    "multiprocessing", "profiler", "classes", "hub", "fx", "export", "set_num_threads", "manual_seed",
    "cpu", "mps", "xpu", "storage", "Storage", "UntypedStorage", "from_file", "save", "load",
}
# triton namespaces a candidate must not touch: the runtime (hooks, caches, launchers),
# knobs, the testing timer and the compiler.
BANNED_TRITON_ATTRS = {"runtime", "knobs", "testing", "compiler", "backends", "tools", "profiler"}


class RuleViolation(Exception):
    """A broken rule: `rule` names it, the message says what to change."""

    def __init__(self, rule, message, line=0):
        super().__init__(message)
        self.rule = rule
        self.line = line


def _attr_chain(node):
    """['torch', 'cuda', 'Stream'] for torch.cuda.Stream; [] when the root is not a name."""
    chain = []
    while isinstance(node, ast.Attribute):
        chain.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        chain.append(node.id)
        return list(reversed(chain))
    return []


def check_module(source):
    """Parses `source` and applies the rules; returns the tree. Raises SyntaxError or RuleViolation."""
    tree = ast.parse(source, filename="candidate.py")
    aliases = {}  # local name -> module it refers to ('tl' -> 'triton.language')
    jit_kernels = 0
    has_forward = False
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in ALLOWED_IMPORTS:
                    raise RuleViolation("banned_import", f"line {line}: import {alias.name}: a candidate may import "
                                        f"only {', '.join(sorted(ALLOWED_IMPORTS))}", line)
                aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            for alias in node.names:
                full = f"{module}.{alias.name}"
                if module not in ALLOWED_IMPORTS and full not in ALLOWED_IMPORTS:
                    raise RuleViolation("banned_import", f"line {line}: from {module} import {alias.name}: a candidate "
                                        f"may import only {', '.join(sorted(ALLOWED_IMPORTS))}", line)
                if alias.name == "*":
                    raise RuleViolation("banned_import", f"line {line}: star imports hide names; import what you use", line)
                aliases[alias.asname or alias.name] = full if full in ALLOWED_IMPORTS else module
        elif isinstance(node, ast.Name):
            if node.id.startswith("_"):
                raise RuleViolation("private_name", f"line {line}: names starting with '_' ({node.id}) are not allowed "
                                    "in a candidate", line)
            if node.id in BANNED_NAMES:
                raise RuleViolation("banned_call", f"line {line}: {node.id} is not allowed in a candidate", line)
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise RuleViolation("private_name", f"line {line}: attribute '{node.attr}' starts with '_': private and "
                                    "dunder attributes are not allowed in a candidate", line)
            chain = _attr_chain(node)
            if len(chain) >= 2:
                root = aliases.get(chain[0], chain[0])
                if root == "torch" and chain[1] in BANNED_TORCH_ATTRS:
                    raise RuleViolation("banned_torch", f"line {line}: torch.{chain[1]} is not allowed in a candidate "
                                        "(streams, graphs, compiled code, timers and files are off limits)", line)
                if root == "triton" and chain[1] in BANNED_TRITON_ATTRS:
                    raise RuleViolation("banned_triton", f"line {line}: triton.{chain[1]} is not allowed in a candidate "
                                        "(use triton.jit, triton.cdiv, triton.next_power_of_2, triton.autotune/Config and triton.language)", line)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            raise RuleViolation("global_state", f"line {line}: global/nonlocal state is not allowed: a forward must "
                                "compute its outputs from its inputs on every call", line)
        elif isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.Yield, ast.YieldFrom)):
            raise RuleViolation("banned_construct", f"line {line}: async code and generators are not allowed", line)
        elif isinstance(node, ast.FunctionDef):
            if node.name == "forward" and node in tree.body:
                has_forward = True
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                chain = _attr_chain(target)
                if chain and aliases.get(chain[0], chain[0]) == "triton" and chain[-1] == "jit":
                    jit_kernels += 1
                elif chain and chain[-1] in ("autotune", "heuristics"):
                    continue
                else:
                    raise RuleViolation("banned_decorator", f"line {line}: decorator on {node.name}: only "
                                        "@triton.jit (and triton.autotune/heuristics) are allowed", line)
    if not has_forward:
        raise RuleViolation("missing_forward", "the module defines no top-level `def forward(...)`: define "
                            "forward(*inputs) that allocates outputs and launches @triton.jit kernels")
    if jit_kernels == 0:
        raise RuleViolation("no_triton_kernel", "the module defines no @triton.jit kernel: compute must happen in "
                            "Triton kernels that forward launches")
    return tree
