# The functions KernelBench problems call that have no TorchScript builtin the teacher
# lowers (losses, attention, einsum), written as the builtins they are made of; used by
# tools/import_kernelbench.py. Test: ctest -R tools_import.
"""Decompositions for the KernelBench importer.

Each function takes the traced call's arguments (torch.fx nodes or constants) and `arg`,
which turns one argument into TorchScript source, and returns one TorchScript expression,
or raises ConvertError naming what it does not convert.
"""
import inspect
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# Keyword arguments of torch.nn.functional that aten builtins do not take.
DROP_KWARGS = {"inplace", "_stacklevel"}


class ConvertError(Exception):
    """A problem the importer cannot turn into a kforge op; the message says why."""


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


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """F.scaled_dot_product_attention for a torch that lacks it (1.13): softmax(q k^T * scale) v.
    Traced as one call (torch_function dispatch) and decomposed like torch 2.x's."""
    if torch.overrides.has_torch_function((query, key, value)):
        return torch.overrides.handle_torch_function(
            scaled_dot_product_attention, (query, key, value), query, key, value, attn_mask=attn_mask,
            dropout_p=dropout_p, is_causal=is_causal, scale=scale)
    if attn_mask is not None or dropout_p != 0 or is_causal:
        raise NotImplementedError("kforge's stand-in takes no mask, dropout or is_causal")
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    return torch.matmul(torch.softmax(torch.matmul(query, key.transpose(-2, -1)) * scale, -1), value)


if not hasattr(F, "scaled_dot_product_attention"):
    F.scaled_dot_product_attention = scaled_dot_product_attention

# Functions written as the builtins they are made of (Emitter.decomposed); the signatures
# are torch's, so positional and keyword calls bind alike (**newer: arguments a later torch
# added, accepted while they hold their default None).
DECOMPOSED = {
    "smooth_l1_loss": inspect.Signature.from_callable(
        lambda input, target, size_average=None, reduce=None, reduction="mean", beta=1.0, **newer: None),
    "huber_loss": inspect.Signature.from_callable(
        lambda input, target, reduction="mean", delta=1.0, **newer: None),
    "mse_loss": inspect.Signature.from_callable(
        lambda input, target, size_average=None, reduce=None, reduction="mean", **newer: None),
    "l1_loss": inspect.Signature.from_callable(
        lambda input, target, size_average=None, reduce=None, reduction="mean", **newer: None),
    "kl_div": inspect.Signature.from_callable(
        lambda input, target, size_average=None, reduce=None, reduction="mean", log_target=False, **newer: None),
    "cross_entropy": inspect.Signature.from_callable(
        lambda input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
        label_smoothing=0.0, **newer: None),
    "triplet_margin_loss": inspect.Signature.from_callable(
        lambda anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None, reduce=None,
        reduction="mean", **newer: None),
    "scaled_dot_product_attention": inspect.Signature.from_callable(
        lambda query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **newer: None),
}
# Loss modules: the function each calls and the attributes it passes.
LOSS_MODULES = {
    nn.SmoothL1Loss: ("smooth_l1_loss", ("reduction", "beta")),
    nn.HuberLoss: ("huber_loss", ("reduction", "delta")),
    nn.MSELoss: ("mse_loss", ("reduction",)),
    nn.L1Loss: ("l1_loss", ("reduction",)),
    nn.KLDivLoss: ("kl_div", ("reduction", "log_target")),
    nn.CrossEntropyLoss: ("cross_entropy", ("ignore_index", "reduction", "label_smoothing")),
    nn.TripletMarginLoss: ("triplet_margin_loss", ("margin", "p", "eps", "swap", "reduction")),
}



def rank(value):
    """The rank of a traced tensor, from shape propagation (largest_value)."""
    meta = value.meta.get("tensor_meta") if isinstance(value, torch.fx.Node) else None
    if meta is None:
        raise ConvertError("the rank of a tensor is needed and shape propagation did not give it")
    return len(meta.shape)


def reduce(expr, reduction, what):
    """A loss's reduction ('none', 'mean', 'sum') applied to its elementwise expression."""
    if reduction == "none":
        return expr
    if reduction in ("mean", "sum"):
        return f"torch.{reduction}({expr})"
    raise ConvertError(f"{what} with reduction={reduction!r}")


def decompose(name, args, kwargs, arg):
    """A loss or attention function as the builtins it is made of (pointwise ops,
    reductions, norms, softmax, matmul): what the teacher compiler lowers and a
    TorchScript builtin exists for in every torch version. The arithmetic follows
    torch's documentation of each function."""
    try:
        bound = DECOMPOSED[name].bind(*args, **{k: v for k, v in kwargs.items() if k not in DROP_KWARGS})
    except TypeError as exc:
        raise ConvertError(f"{name}: {exc}")
    bound.apply_defaults()
    p = bound.arguments
    for extra, value in p.pop("newer", {}).items():
        if value is not None:
            raise ConvertError(f"{name} with {extra}={value!r}")
    for legacy in ("size_average", "reduce"):
        if p.get(legacy) is not None:
            raise ConvertError(f"{name} with the deprecated {legacy} argument")
    a = arg
    if name in ("smooth_l1_loss", "huber_loss"):
        d = f"({a(p['input'])} - {a(p['target'])})"
        if name == "huber_loss":
            delta = p["delta"]
            loss = f"torch.where(torch.abs({d}) < {literal(delta)}, 0.5 * {d} * {d}, " \
                   f"{literal(delta)} * (torch.abs({d}) - {literal(0.5 * delta)}))"
        elif p["beta"] == 0:
            loss = f"torch.abs({d})"
        else:
            beta = p["beta"]
            loss = f"torch.where(torch.abs({d}) < {literal(beta)}, 0.5 * {d} * {d} / {literal(beta)}, " \
                   f"torch.abs({d}) - {literal(0.5 * beta)})"
        return reduce(loss, p["reduction"], name)
    if name == "mse_loss":
        d = f"({a(p['input'])} - {a(p['target'])})"
        return reduce(f"({d} * {d})", p["reduction"], name)
    if name == "l1_loss":
        return reduce(f"torch.abs({a(p['input'])} - {a(p['target'])})", p["reduction"], name)
    if name == "kl_div":
        x, t = a(p["input"]), a(p["target"])
        if p["log_target"]:
            loss = f"(torch.exp({t}) * ({t} - {x}))"
        else:  # target * (log target - input), 0 where target is 0 (torch's xlogy)
            loss = f"(torch.where({t} > 0, {t} * torch.log({t}), torch.zeros_like({t})) - {t} * {x})"
        if p["reduction"] == "batchmean":
            dims = rank(p["input"])
            return (f"torch.mean(torch.sum({loss}, {literal(list(range(1, dims)))}))" if dims > 1
                    else f"torch.sum({loss})")
        return reduce(loss, p["reduction"], name)
    if name == "cross_entropy":
        if p["weight"] is not None or p["label_smoothing"] not in (0, 0.0):
            raise ConvertError("cross_entropy with class weights or label smoothing")
        target = p["target"]
        meta = target.meta.get("tensor_meta") if isinstance(target, torch.fx.Node) else None
        if meta is None or meta.dtype not in (torch.int64, torch.int32) or rank(p["input"]) != 2:
            raise ConvertError("cross_entropy is converted for (N, C) logits and integer class targets only")
        # ignore_index (-100) is left out: the targets are drawn from [0, C).
        picked = f"torch.gather(torch.log_softmax({a(p['input'])}, 1), 1, {a(target)}.unsqueeze(1))"
        return reduce(f"(-{picked}.squeeze(1))", p["reduction"], name)
    if name == "triplet_margin_loss":
        if p["swap"]:
            raise ConvertError("triplet_margin_loss with swap=True")
        def distance(x, y):  # F.pairwise_distance: the p-norm of x - y + eps over the last dim
            return f"torch.norm({a(x)} - {a(y)} + {literal(p['eps'])}, {literal(p['p'])}, [-1], False)"
        loss = (f"torch.clamp_min({literal(p['margin'])} + {distance(p['anchor'], p['positive'])} - "
                f"{distance(p['anchor'], p['negative'])}, 0.0)")
        return reduce(loss, p["reduction"], name)
    if name == "scaled_dot_product_attention":
        if p["attn_mask"] is not None or p["dropout_p"] != 0 or p["is_causal"]:
            raise ConvertError("scaled_dot_product_attention with a mask, dropout or is_causal")
        query = p["query"]
        scale = p.get("scale")
        if scale is None:
            meta = query.meta.get("tensor_meta") if isinstance(query, torch.fx.Node) else None
            if meta is None:
                raise ConvertError("scaled_dot_product_attention: the head size is unknown")
            scale = 1.0 / math.sqrt(meta.shape[-1])
        scores = f"torch.matmul({a(query)}, {a(p['key'])}.transpose(-2, -1)) * {literal(scale)}"
        return f"torch.matmul(torch.softmax({scores}, -1), {a(p['value'])})"
    raise ConvertError(f"no decomposition for {name}")


def einsum(args, arg):
    """A two-operand einsum that is one matmul, each operand's last two dims transposed
    where needed ("bijl,lk->bijk" is A @ B; "bij,bkj->bik" is A @ B^T): the teacher
    lowers matmul, and no einsum builtin exists in its IR."""
    equation, *operands = args
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = list(operands[0])
    if not isinstance(equation, str) or len(operands) != 2 or "->" not in equation or "." in equation:
        raise ConvertError("einsum is converted for two operands and an explicit '->' output only")
    inputs, out = equation.replace(" ", "").split("->")
    a, b = inputs.split(",")
    def forms(spec, operand):  # the operand as written, and with its last two dims swapped
        yield spec, arg(operand)
        if len(spec) >= 2:
            yield spec[:-2] + spec[-1] + spec[-2], f"{arg(operand)}.transpose(-2, -1)"
    for a_spec, a_expr in forms(a, operands[0]):
        for b_spec, b_expr in forms(b, operands[1]):
            if len(a_spec) < 2 or len(b_spec) < 2 or a_spec[-1] != b_spec[-2] or a_spec[-1] in out:
                continue
            batch = a_spec[:-2] if len(b_spec) > 2 else a_spec[:-1]
            if len(b_spec) > 2 and b_spec[:-2] != a_spec[:-2]:
                continue
            if batch + (a_spec[-2] if len(b_spec) > 2 else "") + b_spec[-1] == out:
                return f"torch.matmul({a_expr}, {b_expr})"
    raise ConvertError(f"einsum '{equation}' is not one matmul (the importer converts those only)")

