// Expression emission (see emit_expr.h): one `const float vN = ...;` line per IR
// node, with broadcasting and views resolved into coordinates. Test: ctest -R codegen.
#include "worker/codegen/emit_expr.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace kforge::codegen {

std::string float_literal(double value) {
  if (std::isinf(value)) return value > 0 ? "INFINITY" : "-INFINITY";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", value);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

std::string combine_code(const std::string& op, const std::string& a, const std::string& b) {
  if (op == "max") return "fmax(" + a + ", " + b + ")";
  if (op == "min") return "fmin(" + a + ", " + b + ")";
  return a + " + " + b;
}

std::string reduce_init(const std::string& op) {
  if (op == "max") return "-INFINITY";
  if (op == "min") return "INFINITY";
  return "0.0f";
}

ExprEmitter::ExprEmitter(const Graph& graph, int vec, int* counter) : g_(graph), vec_(vec), counter_(counter) {}

std::string ExprEmitter::type(bool boolean) const {
  std::string base = boolean ? "int" : "float";
  return vec_ > 1 ? base + std::to_string(vec_) : base;
}

// Comparisons give int (scalar 0/1, vector 0/-1); arithmetic needs floats.
std::string ExprEmitter::as_float(const std::string& var) const {
  auto it = is_bool_.find(var);
  if (it == is_bool_.end() || !it->second) return var;
  return vec_ > 1 ? "convert_float" + std::to_string(vec_) + "(-" + var + ")" : "(float)" + var;
}

std::string ExprEmitter::as_cond(const std::string& var) const {
  auto it = is_bool_.find(var);
  if (it != is_bool_.end() && it->second) return var;
  return vec_ > 1 ? "(" + var + " != 0.0f)" : "(" + var + " != 0.0f)";
}

std::string ExprEmitter::broadcast(const std::string& scalar) const {
  return vec_ > 1 ? "(float" + std::to_string(vec_) + ")(" + scalar + ")" : scalar;
}

std::string ExprEmitter::value(int id, const std::vector<std::string>& coords) {
  auto known_it = known.find(id);
  if (known_it != known.end()) return known_it->second;
  const Node& node = g_.nodes[id];
  if (node.kind == NodeKind::constant) return broadcast(float_literal(node.scalar));
  if (node.kind == NodeKind::red_len) return broadcast("(float)" + red_len);
  std::string key = std::to_string(id);
  for (const auto& c : coords) key += "|" + c;
  bool outer = hoist && hoist(id);
  auto& memo = outer ? outer_memo_ : memo_;
  auto it = memo.find(key);
  if (it != memo.end()) return it->second;
  if (node.kind == NodeKind::view) {
    if (on_view) on_view();
    std::vector<std::string> arg_coords(g_.nodes[node.args[0]].shape.size(), "0");
    for (size_t axis = 0; axis < node.src.size() && axis < coords.size(); ++axis) {
      if (node.src[axis] < 0) continue;
      bool flipped = std::find(node.flip.begin(), node.flip.end(), static_cast<int>(axis)) != node.flip.end();
      if (flipped && !dim) throw std::logic_error("flip outside a pointwise stage");
      // Reversed dim: element c reads from size - 1 - c.
      arg_coords[node.src[axis]] = flipped ? "(" + dim(node.shape[axis]) + " - 1 - " + coords[axis] + ")" : coords[axis];
    }
    return memo[key] = value(node.args[0], arg_coords);
  }
  bool boolean = false;
  current_outer_ = outer;
  // A gather's value is the data variable it reads: no copy line.
  if (node.kind == NodeKind::gather) return memo[key] = compute(id, coords, boolean);
  std::string expr = compute(id, coords, boolean);
  std::string var = "v" + std::to_string((*counter_)++);
  (outer ? outer_ : lines_).push_back("const " + type(boolean) + " " + var + " = " + expr + ";");
  is_bool_[var] = boolean;
  return memo[key] = var;
}

// Coordinates of an operand broadcast into `shape` (right-aligned; size-1 dims read index 0).
static std::vector<std::string> operand_coords(const Shape& shape, const Shape& arg,
                                               const std::vector<std::string>& coords) {
  std::vector<std::string> out(arg.size(), "0");
  if (coords.empty()) return coords;
  size_t offset = shape.size() - arg.size();
  for (size_t axis = 0; axis < arg.size(); ++axis)
    if (arg[axis].value != 1 || shape[axis + offset].value == 1) out[axis] = coords[axis + offset];
  return out;
}

std::string ExprEmitter::compute(int id, const std::vector<std::string>& coords, bool& boolean) {
  const Node& node = g_.nodes[id];
  if (is_leaf && is_leaf(id)) return load(id, coords);
  auto arg = [&](int idx) {
    const Node& a = g_.nodes[node.args[idx]];
    return value(node.args[idx], operand_coords(node.shape, a.shape, coords));
  };
  auto f = [&](int idx) { return as_float(arg(idx)); };
  const std::string& op = node.op;
  if (node.kind == NodeKind::unary) {
    std::string a = f(0);
    if (op == "relu") return "fmax(" + a + ", " + broadcast("0.0f") + ")";
    if (op == "gelu") {
      std::string scaled = helper("const " + type(false) + " %s = " + a + " * 0.707106781f;");
      return "0.5f * " + a + " * (1.0f + " + fast_erf(scaled) + ")";
    }
    if (op == "gelu_tanh") {
      std::string inner = helper("const " + type(false) + " %s = 0.797884561f * (" + a + " + 0.044715f * " + a + " * " +
                                 a + " * " + a + ");");
      return "0.5f * " + a + " * (1.0f + " + fast_tanh(inner) + ")";
    }
    if (op == "erf") return fast_erf(a);
    if (op == "tanh") return fast_tanh(a);
    if (op == "silu") return a + " / (1.0f + exp(-" + a + "))";
    if (op == "sigmoid") return "1.0f / (1.0f + exp(-" + a + "))";
    if (op == "abs") return "fabs(" + a + ")";
    if (op == "neg") return "-" + a;
    if (op == "reciprocal") return "1.0f / " + a;
    if (op == "square") return a + " * " + a;
    if (op == "leaky_relu") return "fmax(" + a + ", 0.0f) + " + float_literal(node.scalar) + " * fmin(" + a + ", 0.0f)";
    if (op == "clamp") {
      std::string v = a;
      if (node.has_lo) v = "fmax(" + v + ", " + broadcast(float_literal(node.lo)) + ")";
      if (node.has_hi) v = "fmin(" + v + ", " + broadcast(float_literal(node.hi)) + ")";
      return v;
    }
    if (op == "pow_scalar") {
      double e = node.scalar;
      if (e == 1.0) return a;
      if (e == 2.0) return a + " * " + a;
      if (e == 3.0) return a + " * " + a + " * " + a;
      if (e == 0.5) return "sqrt(" + a + ")";
      if (e == -1.0) return "1.0f / " + a;
      return "pow(" + a + ", " + broadcast(float_literal(e)) + ")";
    }
    static const std::vector<std::string> kDirect = {"exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos",
                                                     "expm1", "floor", "ceil", "sign"};
    for (const auto& name : kDirect)
      if (op == name) return name + "(" + a + ")";
    throw std::logic_error("unary op without emission: " + op);
  }
  if (node.kind == NodeKind::binary) {
    std::string a = f(0), b = f(1);
    if (op == "add") return a + " + " + b;
    if (op == "sub") return a + " - " + b;
    if (op == "mul") return a + " * " + b;
    if (op == "div") return a + " / " + b;
    if (op == "maximum") return "fmax(" + a + ", " + b + ")";
    if (op == "minimum") return "fmin(" + a + ", " + b + ")";
    if (op == "pow") return "pow(" + a + ", " + b + ")";
    if (op == "fmod") return "fmod(" + a + ", " + b + ")";
    static const std::map<std::string, std::string> kCompare = {{"gt", ">"}, {"lt", "<"}, {"ge", ">="},
                                                                {"le", "<="}, {"eq", "=="}, {"ne", "!="}};
    auto it = kCompare.find(op);
    if (it != kCompare.end()) {
      boolean = true;
      return a + " " + it->second + " " + b;
    }
    throw std::logic_error("binary op without emission: " + op);
  }
  if (node.kind == NodeKind::gather) {
    // The index is read once into an int, then the data at the gathered coordinate.
    if (!dim) throw std::logic_error("gather outside a pointwise stage");
    if (on_view) on_view();
    std::vector<std::string> index_coords;
    for (int axis : node.index_src) index_coords.push_back(coords.at(axis));
    std::string at = helper("const int %s = (int)" + load(node.args[1], index_coords) + ";");
    std::vector<std::string> data_coords;
    for (int axis : node.src) data_coords.push_back(axis < 0 ? at : coords.at(axis));
    return as_float(value(node.args[0], data_coords));
  }
  if (node.kind == NodeKind::concat) {
    // Both parts are read at clamped (always in-bounds) coordinates and one is
    // selected: no out-of-bounds read, no divergent branch.
    if (!dim) throw std::logic_error("cat outside a pointwise stage");
    if (on_view) on_view();
    const int axis = node.axes.at(0);
    const std::string& c = coords.at(axis);
    std::string result, start = "0";  // where the current part begins along `axis`
    for (size_t part = 0; part < node.args.size(); ++part) {
      std::string size = dim(g_.nodes[node.args[part]].shape[axis]);
      std::vector<std::string> part_coords = coords;
      std::string local = start == "0" ? c : "(" + c + " - " + start + ")";
      part_coords[axis] = "clamp(" + local + ", 0, " + size + " - 1)";
      std::string v = as_float(value(node.args[part], part_coords));
      result = part == 0 ? v : "(" + c + " < " + start + " ? " + result + " : " + v + ")";
      start = start == "0" ? size : "(" + start + " + " + size + ")";
    }
    return result;
  }
  if (node.kind == NodeKind::where) {
    std::string c = as_cond(arg(0)), a = f(1), b = f(2);
    if (vec_ > 1) return "select(" + b + ", " + a + ", " + c + ")";
    return c + " ? " + a + " : " + b;
  }
  throw std::logic_error("node kind without expression emission (reduce or matmul outside its stage)");
}

// An extra statement line (with a fresh variable name substituted for %s) in the
// scope of the node being computed; returns the variable.
std::string ExprEmitter::helper(const std::string& pattern) {
  std::string var = "v" + std::to_string((*counter_)++);
  std::string line = pattern;
  line.replace(line.find("%s"), 2, var);
  (current_outer_ ? outer_ : lines_).push_back(line);
  return var;
}

// erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): exp and a polynomial
// vectorise, where the libm erf call does not.
std::string ExprEmitter::fast_erf(const std::string& a) {
  std::string t = helper("const " + type(false) + " %s = 1.0f / (1.0f + 0.3275911f * fabs(" + a + "));");
  return "copysign(1.0f - ((((1.061405429f * " + t + " - 1.453152027f) * " + t + " + 1.421413741f) * " + t +
         " - 0.284496736f) * " + t + " + 0.254829592f) * " + t + " * exp(-" + a + " * " + a + "), " + a + ")";
}

// tanh(a) = 1 - 2 / (exp(2a) + 1): exact at the extremes (exp overflows to inf -> 1).
std::string ExprEmitter::fast_tanh(const std::string& a) {
  return "1.0f - 2.0f / (exp(2.0f * " + a + ") + 1.0f)";
}

std::string ExprEmitter::take_lines(const std::string& indent) {
  std::string out;
  for (const auto& line : lines_) out += indent + line + "\n";
  lines_.clear();
  memo_.clear();
  return out;
}

std::string ExprEmitter::take_outer(const std::string& indent) {
  std::string out;
  for (const auto& line : outer_) out += indent + line + "\n";
  outer_.clear();
  return out;
}

}  // namespace kforge::codegen
