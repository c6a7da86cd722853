#!/usr/bin/env python3
# Writes the built-in op suite (suite/level1/*.json, suite/level2/*.json) from the
# table below, with a fixed stratified train/held-out split. Run: python3 tools/make_suite.py
# (idempotent; the JSON files are committed, this script is how they were made).
import hashlib
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Default shapes are large enough that eager libtorch takes >= ~1 ms on 2 CPU
# threads; extra shapes are odd sizes (same rank) that catch hard-coded sizes and
# missing bounds checks.
M2 = [4096, 2048]
X2 = [[1023, 777], [7, 33]]
M3 = [32, 512, 512]
X3 = [[3, 101, 67], [2, 5, 33]]

TOL_EXACT = {"atol": 1e-5, "rtol": 1e-5}
TOL_TRANS = {"atol": 1e-4, "rtol": 1e-4}
TOL_RED = {"atol": 1e-3, "rtol": 1e-4}
TOL_MM = {"atol": 1e-3, "rtol": 1e-3}

OPS = []


def op(level, category, name, source, inputs, extra, tol, note=None):
    """inputs: list of (name, shape, dist[, dtype]); extra: list of {name: shape}."""
    ins = []
    for item in inputs:
        spec = {"name": item[0], "shape": item[1], "dtype": item[3] if len(item) > 3 else "float32",
                "dist": item[2]}
        ins.append(spec)
    args = ", ".join(f"{i['name']}: Tensor" for i in ins)
    body = source if "\n" in source.strip() else f"    return {source}\n"
    src = f"def forward({args}) -> Tensor:\n{body}"
    entry = {"name": name, "level": level, "category": category, "source": src, "inputs": ins,
             "extra_shapes": extra, "tolerance": tol}
    if note:
        entry["note"] = note
    OPS.append(entry)


def same(names, shapes):
    """extra_shapes where every input has the same shape."""
    return [{n: s for n in names} for s in shapes]


# ---------------------------------------------------------------- level 1: unary
N = "normal"
POS = {"uniform": [0.1, 10.0]}
unary = [
    ("relu", "torch.relu(x)", N, TOL_EXACT),
    ("gelu", "torch.gelu(x)", N, TOL_TRANS),
    ("gelu_tanh", "torch.gelu(x, approximate='tanh')", N, TOL_TRANS),
    ("silu", "torch.silu(x)", N, TOL_TRANS),
    ("tanh", "torch.tanh(x)", N, TOL_TRANS),
    ("sigmoid", "torch.sigmoid(x)", N, TOL_TRANS),
    ("exp", "torch.exp(x)", N, TOL_TRANS),
    ("log", "torch.log(x)", POS, TOL_TRANS),
    ("abs", "torch.abs(x)", N, TOL_EXACT),
    ("sqrt", "torch.sqrt(x)", POS, TOL_TRANS),
    ("rsqrt", "torch.rsqrt(x)", POS, TOL_TRANS),
    ("neg", "torch.neg(x)", N, TOL_EXACT),
    ("sin", "torch.sin(x)", N, TOL_TRANS),
    ("cos", "torch.cos(x)", N, TOL_TRANS),
    ("erf", "torch.erf(x)", N, TOL_TRANS),
    ("reciprocal", "torch.reciprocal(x)", POS, TOL_TRANS),
    ("square", "torch.square(x)", N, TOL_EXACT),
    ("clamp", "torch.clamp(x, -0.5, 0.5)", N, TOL_EXACT),
    ("clamp_min", "torch.clamp_min(x, 0.1)", N, TOL_EXACT),
    ("leaky_relu", "torch.where(x > 0.0, x, x * 0.01)", N, TOL_EXACT),
    ("elu", "torch.where(x > 0.0, x, torch.exp(x) - 1.0)", N, TOL_TRANS),
    ("softplus", "torch.log1p(torch.exp(x))", N, TOL_TRANS),
    ("log_sigmoid", "torch.log(torch.sigmoid(x))", N, TOL_TRANS),
]
for name, expr, dist, tol in unary:
    op(1, "elementwise", name, expr, [("x", M2, dist)], same(["x"], X2), tol)

# --------------------------------------------------------------- level 1: binary
UPOS = {"uniform": [0.5, 2.0]}
binary2 = [
    ("add", "x + y", N, N, TOL_EXACT),
    ("sub", "x - y", N, N, TOL_EXACT),
    ("mul", "x * y", N, N, TOL_EXACT),
    ("div", "x / y", N, UPOS, TOL_TRANS),
    ("maximum", "torch.maximum(x, y)", N, N, TOL_EXACT),
    ("minimum", "torch.minimum(x, y)", N, N, TOL_EXACT),
    ("pow_tensor", "torch.pow(x, y)", UPOS, N, TOL_TRANS),
    ("where_gt", "torch.where(x > y, x, y * 0.5)", N, N, TOL_EXACT),
]
for name, expr, dx, dy, tol in binary2:
    op(1, "elementwise", name, expr, [("x", M2, dx), ("y", M2, dy)], same(["x", "y"], X2), tol)

scalar_ops = [
    ("add_scalar", "x + 3.0", N, TOL_EXACT),
    ("mul_scalar", "x * 0.125", N, TOL_EXACT),
    ("div_scalar", "x / 7.0", N, TOL_TRANS),
    ("rsub_scalar", "1.0 - x", N, TOL_EXACT),
    ("pow_scalar", "torch.pow(x, 1.5)", POS, TOL_TRANS),
    ("pow_two", "torch.pow(x, 2.0)", N, TOL_TRANS),
]
for name, expr, dist, tol in scalar_ops:
    op(1, "elementwise", name, expr, [("x", M2, dist)], same(["x"], X2), tol)

op(1, "elementwise", "add_bias_row", "x + b", [("x", M2, N), ("b", [2048], N)],
   [{"x": [1023, 777], "b": [777]}, {"x": [7, 33], "b": [33]}], TOL_EXACT)
op(1, "elementwise", "mul_col_scale", "x * s", [("x", M2, N), ("s", [4096, 1], N)],
   [{"x": [1023, 777], "s": [1023, 1]}, {"x": [7, 33], "s": [7, 1]}], TOL_EXACT)
op(1, "elementwise", "add_bcast_3d", "x + y", [("x", M3, N), ("y", [32, 1, 512], N)],
   [{"x": [3, 101, 67], "y": [3, 1, 67]}, {"x": [2, 5, 33], "y": [2, 1, 33]}], TOL_EXACT)
op(1, "elementwise", "sub_outer", "x - y", [("x", [4096, 1], N), ("y", [1, 2048], N)],
   [{"x": [1023, 1], "y": [1, 777]}, {"x": [7, 1], "y": [1, 33]}], TOL_EXACT)
op(1, "elementwise", "mul_channel_4d", "x * w", [("x", [16, 64, 96, 96], N), ("w", [1, 64, 1, 1], N)],
   [{"x": [3, 5, 17, 19], "w": [1, 5, 1, 1]}, {"x": [1, 3, 7, 9], "w": [1, 3, 1, 1]}], TOL_EXACT)

# ----------------------------------------------------------- level 1: reductions
red = [
    ("sum_last", "torch.sum(x, -1)", TOL_RED),
    ("sum_dim0", "torch.sum(x, 0)", TOL_RED),
    ("mean_last", "torch.mean(x, -1)", TOL_RED),
    ("mean_keepdim", "torch.mean(x, -1, keepdim=True)", TOL_RED),
    ("amax_last", "torch.amax(x, -1)", TOL_EXACT),
    ("amin_last", "torch.amin(x, -1)", TOL_EXACT),
    ("amax_dim0", "torch.amax(x, 0)", TOL_EXACT),
    ("var_last", "torch.var(x, -1)", TOL_RED),
    ("std_last", "torch.std(x, -1)", TOL_RED),
    ("norm_last", "torch.norm(x, 2.0, -1)", TOL_RED),
    ("logsumexp_last", "torch.logsumexp(x, -1)", TOL_RED),
    ("sum_all", "torch.sum(x)", {"atol": 1e-1, "rtol": 1e-3}),
]
for name, expr, tol in red:
    op(1, "reduction", name, expr, [("x", M2, N)], same(["x"], X2), tol)
for name, expr, tol in [("sum_dim1_3d", "torch.sum(x, 1)", TOL_RED),
                        ("mean_dim1_3d", "torch.mean(x, 1)", TOL_RED),
                        ("amax_dim1_3d", "torch.amax(x, 1)", TOL_EXACT)]:
    op(1, "reduction", name, expr, [("x", M3, N)], same(["x"], X3), tol)

# ------------------------------------------------------------- level 1: row ops
row = [
    ("softmax_last", "torch.softmax(x, -1)"),
    ("log_softmax_last", "torch.log_softmax(x, -1)"),
    ("layer_norm_noaffine", "torch.layer_norm(x, [x.size(-1)])"),
]
for name, expr in row:
    op(1, "row", name, expr, [("x", M2, N)], same(["x"], X2), TOL_TRANS)
op(1, "row", "softmax_dim1_3d", "torch.softmax(x, 1)", [("x", M3, N)], same(["x"], X3), TOL_TRANS)
op(1, "row", "layer_norm", "torch.layer_norm(x, [x.size(-1)], w, b, 1e-5)",
   [("x", M2, N), ("w", [2048], {"uniform": [0.5, 1.5]}), ("b", [2048], {"uniform": [-0.1, 0.1]})],
   [{"x": [1023, 777], "w": [777], "b": [777]}, {"x": [7, 33], "w": [33], "b": [33]}], TOL_TRANS)
op(1, "row", "rms_norm", "x * torch.rsqrt(torch.mean(x * x, -1, keepdim=True) + 1e-6) * w",
   [("x", M2, N), ("w", [2048], {"uniform": [0.5, 1.5]})],
   [{"x": [1023, 777], "w": [777]}, {"x": [7, 33], "w": [33]}], TOL_TRANS)
op(1, "row", "l2_normalize", "x / torch.norm(x, 2.0, -1, True)", [("x", M2, N)], same(["x"], X2), TOL_TRANS)

# ------------------------------------------------------------- level 1: matmul
W = {"uniform": [-0.03, 0.03]}  # ~ kaiming-uniform init for fan-in 1024
mmx = [{"x": [127, 65], "w": [65, 33]}, {"x": [5, 3], "w": [3, 7]}]
op(1, "matmul", "matmul", "torch.matmul(x, w)", [("x", [1024, 1024], N), ("w", [1024, 1024], W)], mmx, TOL_MM)
op(1, "matmul", "matmul_rect", "torch.mm(x, w)", [("x", [2048, 512], N), ("w", [512, 768], W)], mmx, TOL_MM)
op(1, "matmul", "matmul_tall_skinny", "torch.mm(x, w)", [("x", [16384, 256], N), ("w", [256, 64], W)], mmx, TOL_MM)
op(1, "matmul", "matvec", "torch.mv(x, v)", [("x", [8192, 2048], N), ("v", [2048], W)],
   [{"x": [127, 65], "v": [65]}, {"x": [5, 3], "v": [3]}], TOL_MM)
op(1, "matmul", "mm_transposed", "torch.mm(x, w.t())", [("x", [1024, 1024], N), ("w", [1024, 1024], W)],
   [{"x": [127, 65], "w": [33, 65]}, {"x": [5, 3], "w": [7, 3]}], TOL_MM)
lin_x = [{"x": [127, 65], "w": [33, 65], "b": [33]}, {"x": [5, 3], "w": [7, 3], "b": [7]}]
op(1, "matmul", "linear", "torch.linear(x, w, b)",
   [("x", [1024, 1024], N), ("w", [1024, 1024], W), ("b", [1024], W)], lin_x, TOL_MM)
op(1, "matmul", "linear_nobias", "torch.linear(x, w)", [("x", [1024, 1024], N), ("w", [1024, 1024], W)],
   [{"x": [127, 65], "w": [33, 65]}, {"x": [5, 3], "w": [7, 3]}], TOL_MM)
bmm_x = [{"x": [3, 67, 45], "y": [3, 45, 29]}, {"x": [2, 5, 3], "y": [2, 3, 7]}]
op(1, "matmul", "bmm", "torch.bmm(x, y)", [("x", [16, 256, 256], N), ("y", [16, 256, 256], W)], bmm_x, TOL_MM)
op(1, "matmul", "matmul_batched", "torch.matmul(x, y)", [("x", [8, 512, 256], N), ("y", [8, 256, 256], W)],
   bmm_x, TOL_MM)

# ----------------------------------------------------------- level 1: movement
op(1, "movement", "transpose2d", "x.t().contiguous()", [("x", M2, N)], same(["x"], X2), TOL_EXACT)
op(1, "movement", "permute_021", "x.permute([0, 2, 1]).contiguous()", [("x", M3, N)], same(["x"], X3), TOL_EXACT)
op(1, "movement", "permute_102", "x.permute([1, 0, 2]).contiguous()", [("x", M3, N)], same(["x"], X3), TOL_EXACT)
op(1, "movement", "cumsum_last", "torch.cumsum(x, -1)", [("x", M2, N)], same(["x"], X2), TOL_RED)
op(1, "movement", "cumsum_dim0", "torch.cumsum(x, 0)", [("x", M2, N)], same(["x"], X2), TOL_RED)
op(1, "movement", "argmax_last", "torch.argmax(x, -1)", [("x", M2, N)], same(["x"], X2), TOL_EXACT)
op(1, "movement", "argmin_last", "torch.argmin(x, -1)", [("x", M2, N)], same(["x"], X2), TOL_EXACT)
op(1, "movement", "embedding", "torch.embedding(w, idx)",
   [("w", [32000, 512], N), ("idx", [8, 2048], {"randint": [0, 32000]}, "int64")],
   [{"w": [32000, 33], "idx": [3, 17]}, {"w": [32000, 5], "idx": [1, 7]}], TOL_EXACT)
op(1, "movement", "gather_last", "torch.gather(x, 1, idx)",
   [("x", M2, N), ("idx", [4096, 512], {"randint": [0, 33]}, "int64")],
   [{"x": [1023, 777], "idx": [1023, 101]}, {"x": [7, 33], "idx": [7, 5]}], TOL_EXACT)
op(1, "movement", "index_select_rows", "torch.index_select(x, 0, idx)",
   [("x", M2, N), ("idx", [4096], {"randint": [0, 7]}, "int64")],
   [{"x": [1023, 777], "idx": [333]}, {"x": [7, 33], "idx": [5]}], TOL_EXACT)
op(1, "movement", "cat_last", "torch.cat([x, y], -1)", [("x", M2, N), ("y", M2, N)], same(["x", "y"], X2), TOL_EXACT)
op(1, "movement", "flip_last", "torch.flip(x, [-1])", [("x", M2, N)], same(["x"], X2), TOL_EXACT)

# ============================================================ level 2: fusions
# Linear / matmul with epilogues.
lin_in = [("x", [1024, 1024], N), ("w", [1024, 1024], W), ("b", [1024], W)]
for act, expr in [("relu", "torch.relu(y)"), ("gelu", "torch.gelu(y)"), ("silu", "torch.silu(y)"),
                  ("tanh", "torch.tanh(y)"), ("sigmoid", "torch.sigmoid(y)"),
                  ("leaky_relu", "torch.where(y > 0.0, y, y * 0.01)")]:
    op(2, "matmul_epilogue", f"linear_{act}", f"    y = torch.linear(x, w, b)\n    return {expr}\n",
       lin_in, lin_x, TOL_MM)
op(2, "matmul_epilogue", "matmul_bias_relu", "torch.relu(torch.matmul(x, w) + b)",
   [("x", [1024, 1024], N), ("w", [1024, 1024], W), ("b", [1024], W)],
   [{"x": [127, 65], "w": [65, 33], "b": [33]}, {"x": [5, 3], "w": [3, 7], "b": [7]}], TOL_MM)
op(2, "matmul_epilogue", "matmul_scale_residual", "torch.matmul(x, w) * 0.5 + r",
   [("x", [1024, 1024], N), ("w", [1024, 1024], W), ("r", [1024, 1024], N)],
   [{"x": [127, 65], "w": [65, 33], "r": [127, 33]}, {"x": [5, 3], "w": [3, 7], "r": [5, 7]}], TOL_MM)
op(2, "matmul_epilogue", "linear_residual_relu", "torch.relu(torch.linear(x, w, b) + r)",
   lin_in + [("r", [1024, 1024], N)],
   [dict(e, r=[e["x"][0], e["w"][0]]) for e in lin_x], TOL_MM)
op(2, "matmul_epilogue", "linear_gelu_scale", "torch.gelu(torch.linear(x, w, b)) * 1.702", lin_in, lin_x, TOL_MM)
op(2, "matmul_epilogue", "bmm_scale", "torch.bmm(x, y) * 0.0625",
   [("x", [16, 256, 256], N), ("y", [16, 256, 256], W)], bmm_x, TOL_MM)
op(2, "matmul_epilogue", "bmm_scale_add", "torch.bmm(x, y) * 0.125 + z",
   [("x", [16, 256, 256], N), ("y", [16, 256, 256], W), ("z", [16, 256, 256], N)],
   [dict(e, z=[e["x"][0], e["x"][1], e["y"][2]]) for e in bmm_x], TOL_MM)
op(2, "matmul_epilogue", "linear_swiglu", "torch.silu(torch.linear(x, w1)) * torch.linear(x, w2)",
   [("x", [512, 1024], N), ("w1", [1024, 1024], W), ("w2", [1024, 1024], W)],
   [{"x": [127, 65], "w1": [33, 65], "w2": [33, 65]}, {"x": [5, 3], "w1": [7, 3], "w2": [7, 3]}], TOL_MM)
op(2, "matmul_epilogue", "linear_clamp_add", "torch.clamp(torch.linear(x, w, b), -0.1, 0.1) + 1.0",
   lin_in, lin_x, TOL_MM)

# Softmax of a scaled product (attention scores).
att = [{"q": [3, 67, 45], "k": [3, 29, 45]}, {"q": [2, 5, 3], "k": [2, 7, 3]}]
op(2, "attention", "softmax_scaled_scores", "torch.softmax(torch.bmm(q, k.transpose(1, 2)) * 0.125, -1)",
   [("q", [16, 512, 64], N), ("k", [16, 512, 64], N)], att, TOL_TRANS)
op(2, "attention", "softmax_scores_2d", "torch.softmax(torch.mm(q, k.t()) * 0.0884, -1)",
   [("q", [2048, 128], N), ("k", [2048, 128], N)],
   [{"q": [67, 45], "k": [29, 45]}, {"q": [5, 3], "k": [7, 3]}], TOL_TRANS)
op(2, "attention", "log_softmax_scores", "torch.log_softmax(torch.bmm(q, k.transpose(1, 2)) * 0.125, -1)",
   [("q", [16, 512, 64], N), ("k", [16, 512, 64], N)], att, TOL_TRANS)
op(2, "attention", "attention",
   "    s = torch.softmax(torch.bmm(q, k.transpose(1, 2)) * 0.125, -1)\n    return torch.bmm(s, v)\n",
   [("q", [16, 512, 64], N), ("k", [16, 512, 64], N), ("v", [16, 512, 64], N)],
   [dict(e, v=[e["k"][0], e["k"][1], 11]) for e in att], TOL_TRANS)

# Norm + activation / residual.
nw = {"uniform": [0.5, 1.5]}
nb = {"uniform": [-0.1, 0.1]}
ln_in = [("x", M2, N), ("w", [2048], nw), ("b", [2048], nb)]
ln_x = [{"x": [1023, 777], "w": [777], "b": [777]}, {"x": [7, 33], "w": [33], "b": [33]}]
op(2, "norm_fusion", "layer_norm_relu", "torch.relu(torch.layer_norm(x, [x.size(-1)], w, b, 1e-5))",
   ln_in, ln_x, TOL_TRANS)
op(2, "norm_fusion", "layer_norm_gelu", "torch.gelu(torch.layer_norm(x, [x.size(-1)], w, b, 1e-5))",
   ln_in, ln_x, TOL_TRANS)
op(2, "norm_fusion", "add_layer_norm", "torch.layer_norm(x + r, [x.size(-1)], w, b, 1e-5)",
   ln_in + [("r", M2, N)], [dict(e, r=e["x"]) for e in ln_x], TOL_TRANS)
rms_src = "x * torch.rsqrt(torch.mean(x * x, -1, keepdim=True) + 1e-6) * w"
op(2, "norm_fusion", "rms_norm_silu", f"torch.silu({rms_src})",
   [("x", M2, N), ("w", [2048], nw)], [{"x": [1023, 777], "w": [777]}, {"x": [7, 33], "w": [33]}], TOL_TRANS)
op(2, "norm_fusion", "add_rms_norm",
   "    h = x + r\n    return h * torch.rsqrt(torch.mean(h * h, -1, keepdim=True) + 1e-6) * w\n",
   [("x", M2, N), ("r", M2, N), ("w", [2048], nw)],
   [{"x": [1023, 777], "r": [1023, 777], "w": [777]}, {"x": [7, 33], "r": [7, 33], "w": [33]}], TOL_TRANS)
op(2, "norm_fusion", "softmax_temperature", "torch.softmax(x / 0.7, -1)", [("x", M2, N)], same(["x"], X2), TOL_TRANS)
op(2, "norm_fusion", "softmax_bias", "torch.softmax(x + b, -1)", [("x", M2, N), ("b", [2048], N)],
   [{"x": [1023, 777], "b": [777]}, {"x": [7, 33], "b": [33]}], TOL_TRANS)
op(2, "norm_fusion", "batch_norm_infer_relu",
   "torch.relu((x - mean) * torch.rsqrt(var + 1e-5) * w + b)",
   [("x", M2, N), ("mean", [2048], nb), ("var", [2048], nw), ("w", [2048], nw), ("b", [2048], nb)],
   [{"x": [1023, 777], "mean": [777], "var": [777], "w": [777], "b": [777]},
    {"x": [7, 33], "mean": [33], "var": [33], "w": [33], "b": [33]}], TOL_TRANS)
op(2, "norm_fusion", "manual_layer_norm",
   "    m = torch.mean(x, -1, keepdim=True)\n    d = x - m\n"
   "    v = torch.mean(d * d, -1, keepdim=True)\n    return d * torch.rsqrt(v + 1e-5)\n",
   [("x", M2, N)], same(["x"], X2), TOL_TRANS)

# Chains of 3-6 elementwise ops.
chains1 = [
    ("silu_mul", "torch.silu(x) * y", 2),
    ("gelu_add", "torch.gelu(x + y)", 2),
    ("mish", "x * torch.tanh(torch.log1p(torch.exp(x)))", 1),
    ("gelu_tanh_manual", "0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))", 1),
    ("hardswish_manual", "x * torch.clamp(x + 3.0, 0.0, 6.0) / 6.0", 1),
    ("relu_square", "torch.square(torch.relu(x))", 1),
    ("softsign", "x / (1.0 + torch.abs(x))", 1),
    ("swish_scale_add", "x * torch.sigmoid(1.702 * x) + y", 2),
    ("sigmoid_mul_add", "torch.sigmoid(x) * y + z", 3),
    ("fma_relu", "torch.relu(x * y + z)", 3),
    ("tanh_scale_shift", "torch.tanh(x) * 2.5 - 0.5", 1),
    ("exp_sub_mul", "torch.exp(x - 1.0) * y", 2),
    ("residual_relu_mul", "torch.relu(x + y) * z", 3),
    ("clamp_scale_bias", "torch.clamp(x * 1.5 + 0.25, -1.0, 1.0) * y", 2),
    ("abs_log1p", "torch.log1p(torch.abs(x)) * torch.sign(x)", 1),
    ("sigmoid_gate", "x * torch.sigmoid(y) + (1.0 - torch.sigmoid(y)) * z", 3),
    ("leaky_relu_scale", "torch.where(x > 0.0, x, 0.2 * x) * 1.41421356", 1),
    ("elu_add_mul", "torch.where(x + y > 0.0, x + y, torch.exp(x + y) - 1.0) * z", 3),
    ("polynomial", "((0.5 * x + 0.25) * x - 1.0) * x + 2.0", 1),
    ("rsqrt_norm_pointwise", "x * torch.rsqrt(y * y + 1e-3)", 2),
    ("dropout_free_bias_gelu", "torch.gelu(x + b) * 0.9", -1),
    ("bias_silu_scale", "torch.silu(x + b) * s", -2),
]
for name, expr, arity in chains1:
    if arity > 0:
        names = ["x", "y", "z"][:arity]
        op(2, "elementwise_chain", name, expr, [(n, M2, N) for n in names], same(names, X2), TOL_TRANS)
    elif arity == -1:
        op(2, "elementwise_chain", name, expr, [("x", M2, N), ("b", [2048], N)],
           [{"x": [1023, 777], "b": [777]}, {"x": [7, 33], "b": [33]}], TOL_TRANS)
    else:
        op(2, "elementwise_chain", name, expr, [("x", M2, N), ("b", [2048], N), ("s", [4096, 1], N)],
           [{"x": [1023, 777], "b": [777], "s": [1023, 1]}, {"x": [7, 33], "b": [33], "s": [7, 1]}], TOL_TRANS)

# Reductions after elementwise ops.
red2 = [
    ("sum_of_squares", "torch.sum(x * x, -1)", 1),
    ("mean_relu", "torch.mean(torch.relu(x), -1)", 1),
    ("max_abs", "torch.amax(torch.abs(x), -1)", 1),
    ("l1_distance", "torch.sum(torch.abs(x - y), -1)", 2),
    ("squared_distance", "torch.sum(torch.square(x - y), -1)", 2),
    ("dot_rows", "torch.sum(x * y, -1)", 2),
    ("cosine_similarity",
     "torch.sum(x * y, -1) / (torch.norm(x, 2.0, -1) * torch.norm(y, 2.0, -1) + 1e-8)", 2),
    ("mse_loss", "torch.mean(torch.square(x - y))", 2),
    ("logsumexp_manual",
     "    m = torch.amax(x, -1, keepdim=True)\n    return torch.log(torch.sum(torch.exp(x - m), -1)) + torch.squeeze(m, -1)\n", 1),
    ("sum_exp_dim0", "torch.sum(torch.exp(x * 0.1), 0)", 1),
    ("mean_gelu_dim0", "torch.mean(torch.gelu(x), 0)", 1),
    ("max_sigmoid_mul", "torch.amax(torch.sigmoid(x) * y, -1)", 2),
    ("entropy_rows",
     "    p = torch.softmax(x, -1)\n    return -torch.sum(p * torch.log(p + 1e-9), -1)\n", 1),
]
for name, expr, arity in red2:
    names = ["x", "y"][:arity]
    tol = TOL_EXACT if name.startswith("max") else TOL_RED
    if name == "mse_loss":
        tol = {"atol": 1e-3, "rtol": 1e-3}
    op(2, "reduction_fusion", name, expr, [(n, M2, N) for n in names], same(names, X2), tol)


def assign_split(ops):
    """Stratified by level: within each level, ops ordered by a hash of their name;
    every fifth (positions 2, 7, 12...) is held out, so ~20% per level, fixed forever."""
    for level in sorted({o["level"] for o in ops}):
        members = sorted((o for o in ops if o["level"] == level),
                         key=lambda o: hashlib.sha256(o["name"].encode()).hexdigest())
        for pos, o in enumerate(members):
            o["split"] = "heldout" if pos % 5 == 2 else "train"


def main():
    names = [o["name"] for o in OPS]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        sys.exit(f"duplicate op names: {sorted(dup)}")
    assign_split(OPS)
    for level in (1, 2):
        d = os.path.join(ROOT, "suite", f"level{level}")
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            if f.endswith(".json"):
                os.remove(os.path.join(d, f))
    key_order = ["name", "level", "category", "split", "source", "inputs", "extra_shapes", "tolerance", "note"]
    for o in OPS:
        ordered = {k: o[k] for k in key_order if k in o}
        path = os.path.join(ROOT, "suite", f"level{o['level']}", f"{o['name']}.json")
        text = json.dumps(ordered, indent=2)
        # Keep shapes and ranges on one line: [4096, 2048], not one number per line.
        text = re.sub(r"\[\s*([-0-9.e,\s]+?)\s*\]",
                      lambda m: "[" + ", ".join(v.strip() for v in m.group(1).split(",")) + "]", text)
        with open(path, "w") as fh:
            fh.write(text + "\n")
    for level in (1, 2):
        ops = [o for o in OPS if o["level"] == level]
        held = sum(o["split"] == "heldout" for o in ops)
        print(f"level{level}: {len(ops)} ops, {len(ops) - held} train, {held} heldout")


if __name__ == "__main__":
    main()
