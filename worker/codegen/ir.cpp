// Shape helpers for the codegen IR (ir.h): numel and launch expressions of shapes, and
// the output sizes of window nodes (convolutions, pooling) as launch formulas.
// Test: ctest -R codegen_lower.
#include <algorithm>

#include "worker/codegen/ir.h"

namespace kforge::codegen {
namespace {

// "e + 3", "e - 2", or "e" for 0.
std::string plus(const std::string& expr, int64_t c) {
  if (c == 0) return expr;
  return expr + (c > 0 ? " + " : " - ") + std::to_string(c > 0 ? c : -c);
}

std::string times(int64_t coef, const std::string& expr) {
  return coef == 1 ? expr : std::to_string(coef) + " * " + expr;
}

// The output size along spatial dim `sd` for input size `in` and kernel size `k`, or a
// size below 1 when the window does not fit. Integer division as torch's floor (the
// numerator is never negative for a window that fits).
Dim window_dim(const Window& win, int sd, const Dim& in, const Dim& k, const std::string& name) {
  const int64_t s = win.stride[sd], p = win.padding[sd], d = win.dilation[sd];
  std::string formula;
  int64_t value = 0;
  if (win.op == "conv_transpose") {
    // (in - 1) * s - 2p + d * (k - 1) + output_padding + 1 = s * in + d * k + c
    const int64_t c = 1 + win.output_padding[sd] - s - 2 * p - d;
    value = s * in.value + d * k.value + c;
    formula = k.is_literal() ? plus(times(s, in.expr()), d * k.value + c)
                             : plus(times(s, in.expr()) + " + " + times(d, k.expr()), c);
  } else {
    // (in + 2p - d * (k - 1) - 1) / s + 1, the numerator = in - d * k + c
    const int64_t c = 2 * p + d - 1;
    const int64_t numerator = in.value - d * k.value + c;
    if (numerator < 0) return Dim::literal(0);
    value = numerator / s + 1;
    const std::string base = k.is_literal() ? in.expr() : in.expr() + " - " + times(d, k.expr());
    const int64_t offset = k.is_literal() ? c - d * k.value : c;  // numerator = base + offset
    formula = s == 1 ? plus(base, offset + 1) : "(" + plus(base, offset) + ") / " + std::to_string(s) + " + 1";
  }
  if (formula == in.expr()) return in;
  return Dim::computed(value, formula, name);
}

}  // namespace

std::string numel_expr(const Shape& shape) {
  std::string out;
  for (const auto& dim : shape) {
    if (dim.is_literal() && dim.value == 1) continue;
    out += (out.empty() ? "" : "*") + dim.expr();
  }
  return out.empty() ? "1" : out;
}

int64_t numel_value(const Shape& shape) {
  int64_t n = 1;
  for (const auto& dim : shape) n *= dim.value;
  return n;
}

std::vector<int> Graph::users(int id) const {
  std::vector<int> out;
  for (int node_id = 0; node_id < static_cast<int>(nodes.size()); ++node_id)
    for (int a : nodes[node_id].args)
      if (a == id) {
        out.push_back(node_id);
        break;
      }
  return out;
}

bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out) {
  size_t rank = std::max(a.size(), b.size());
  out.assign(rank, Dim::literal(1));
  for (size_t k = 0; k < rank; ++k) {
    const Dim* da = k < rank - a.size() ? nullptr : &a[k - (rank - a.size())];
    const Dim* db = k < rank - b.size() ? nullptr : &b[k - (rank - b.size())];
    if (da && db && da->value != db->value && da->value != 1 && db->value != 1) return false;
    // Prefer the side whose size is not 1; between two equal sizes prefer an input's dim.
    if (!da) out[k] = *db;
    else if (!db) out[k] = *da;
    else if (da->value == 1 && db->value != 1) out[k] = *db;
    else if (db->value == 1 && da->value != 1) out[k] = *da;
    else out[k] = da->axis >= 0 ? *da : *db;
  }
  return true;
}

}  // namespace kforge::codegen

namespace kforge::codegen {

std::string window_shape(const Window& win, const Shape& x, const Shape* weight, Shape& out) {
  const int spatial = win.spatial();
  const int rank = static_cast<int>(x.size());
  out.clear();
  if (win.is_conv()) {
    if (rank != spatial + 2) return "expects an [N, C, " + std::to_string(spatial) + " spatial dims] input";
    if (!weight || static_cast<int>(weight->size()) != spatial + 2) return "expects a weight of rank " + std::to_string(spatial + 2);
    const Shape& w = *weight;
    const int64_t groups = win.groups;
    const bool transposed = win.op == "conv_transpose";
    // conv: weight [C_out, C_in / groups, k...]; conv_transpose: weight [C_in, C_out / groups, k...].
    const int64_t in_channels = transposed ? w[0].value : w[1].value * groups;
    if (groups < 1 || w[0].value % groups != 0 || x[1].value != in_channels)
      return "input channels (" + std::to_string(x[1].value) + ") do not match the weight and groups";
    out = {x[0], !transposed ? w[0]
                 : groups == 1 ? w[1]
                               : Dim::computed(w[1].value * groups, times(groups, w[1].expr()), "conv_transpose_channels")};
  } else {
    if (rank != spatial + 1 && rank != spatial + 2)
      return "expects an input of rank " + std::to_string(spatial + 1) + " or " + std::to_string(spatial + 2);
    out.assign(x.begin(), x.end() - spatial);
  }
  const std::string prefix = win.op == "conv" ? "conv_size" : win.op == "conv_transpose" ? "conv_transpose_size" : "pool_size";
  for (int sd = 0; sd < spatial; ++sd) {
    const Dim& in = x[rank - spatial + sd];
    const Dim k = win.is_conv() ? (*weight)[2 + sd] : Dim::literal(win.kernel[sd]);
    Dim dim = window_dim(win, sd, in, k, prefix + std::to_string(out.size()));
    if (dim.value < 1) return "the window does not fit the input along spatial dim " + std::to_string(sd);
    out.push_back(dim);
  }
  return "";
}

bool swaps_last_two(const Node& node) {
  const int rank = static_cast<int>(node.src.size());
  if (node.kind != NodeKind::view || !node.flip.empty() || rank < 2) return false;
  for (int axis = 0; axis < rank; ++axis) {
    const int from = axis == rank - 1 ? rank - 2 : axis == rank - 2 ? rank - 1 : axis;
    if (node.src[axis] != from) return false;
  }
  return true;
}

int64_t conv_out_channels_per_group(const Graph& g, const Node& node) {
  if (node.kind != NodeKind::window || !node.window.is_conv()) return 0;
  const Shape& ws = g.nodes[node.args[1]].shape;
  return node.window.op == "conv" ? ws[0].value / node.window.groups : ws[1].value;
}

int64_t conv_in_channels_per_group(const Graph& g, const Node& node) {
  if (node.kind != NodeKind::window || !node.window.is_conv()) return 0;
  const Shape& ws = g.nodes[node.args[1]].shape;
  return node.window.op == "conv" ? ws[1].value : ws[0].value / node.window.groups;
}

std::vector<bool> conv_phased_dims(const Window& win) {
  std::vector<bool> phased(win.spatial(), false);
  for (int sd = 0; sd < win.spatial() && win.op == "conv_transpose"; ++sd)
    phased[sd] = win.stride[sd] > 1 && win.dilation[sd] == 1;
  return phased;
}

bool conv_taps_outer_fits(const Graph& g, const Node& node) {
  const std::vector<bool> phased = conv_phased_dims(node.window);
  if (std::find(phased.begin(), phased.end(), true) != phased.end()) return false;
  // 7x7 in 2-d (3x3x3 in 3-d is 27): past that the unrolled loops grow the kernel more than
  // the per-tap index work they save is worth.
  const Shape& ws = g.nodes[node.args[1]].shape;
  return numel_value(Shape(ws.begin() + 2, ws.end())) <= 49;
}

Dim product_dim(const Shape& dims, const std::string& name) {
  const Dim* only = nullptr;
  int counted = 0;
  for (const auto& dim : dims)
    if (!(dim.is_literal() && dim.value == 1)) {
      only = &dim;
      ++counted;
    }
  if (counted == 0) return Dim::literal(1);
  if (counted == 1) return *only;
  return Dim::computed(numel_value(dims), numel_expr(dims), name);
}

}  // namespace kforge::codegen
