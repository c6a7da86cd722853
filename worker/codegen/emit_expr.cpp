// Expression emission (see emit_expr.h): one `const float vN = ...;` line per IR
// node, with broadcasting and views resolved into coordinates. Test: ctest -R codegen.
#include "worker/codegen/emit_expr.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace kforge::codegen {

std::string Dialect::global_id(int dim) const {
  static const char* kAxis[] = {"x", "y", "z"};
  if (!cuda()) return "get_global_id(" + std::to_string(dim) + ")";
  return std::string("(blockIdx.") + kAxis[dim] + " * blockDim." + kAxis[dim] + " + threadIdx." + kAxis[dim] + ")";
}

std::string Dialect::local_id(int dim) const {
  static const char* kAxis[] = {"x", "y", "z"};
  return cuda() ? std::string("threadIdx.") + kAxis[dim] : "get_local_id(" + std::to_string(dim) + ")";
}

std::string Dialect::group_id(int dim) const {
  static const char* kAxis[] = {"x", "y", "z"};
  return cuda() ? std::string("blockIdx.") + kAxis[dim] : "get_group_id(" + std::to_string(dim) + ")";
}

std::string Dialect::global_size(int dim) const {
  static const char* kAxis[] = {"x", "y", "z"};
  if (!cuda()) return "get_global_size(" + std::to_string(dim) + ")";
  return std::string("(gridDim.") + kAxis[dim] + " * blockDim." + kAxis[dim] + ")";
}

std::string Dialect::barrier() const { return cuda() ? "__syncthreads()" : "barrier(CLK_LOCAL_MEM_FENCE)"; }

std::string Dialect::shared() const { return cuda() ? "__shared__" : "__local"; }

std::string Dialect::work_group_attribute(int x, int y) const {
  if (cuda()) return "__launch_bounds__(" + std::to_string(x * y) + ") ";
  return "__attribute__((reqd_work_group_size(" + std::to_string(x) + ", " + std::to_string(y) + ", 1))) ";
}

std::string Dialect::fn(const std::string& name) const {
  // CUDA C++ has float overloads of some of these too, but the f-suffixed names are the
  // ones every NVRTC version resolves without a header.
  return cuda() ? name + "f" : name;
}

std::string Dialect::infinity(bool negative) const {
  if (cuda()) return negative ? "__int_as_float(0xff800000)" : "__int_as_float(0x7f800000)";
  return negative ? "-INFINITY" : "INFINITY";
}

std::string Dialect::clamp_int(const std::string& value, const std::string& lo, const std::string& hi) const {
  return cuda() ? "min(max(" + value + ", " + lo + "), " + hi + ")" : "clamp(" + value + ", " + lo + ", " + hi + ")";
}

std::string float_literal(double value, Target target) {
  if (std::isinf(value)) {
    if (target == Target::triton) return value > 0 ? "float('inf')" : "-float('inf')";
    return Dialect{target}.infinity(value < 0);
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", value);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return target == Target::triton ? s : s + "f";
}

std::string combine_code(const std::string& op, const std::string& a, const std::string& b, Target target) {
  if (target == Target::triton) {
    if (op == "max") return "tl.maximum(" + a + ", " + b + ")";
    if (op == "min") return "tl.minimum(" + a + ", " + b + ")";
    return a + " + " + b;
  }
  Dialect d{target};
  if (op == "max") return d.fn("fmax") + "(" + a + ", " + b + ")";
  if (op == "min") return d.fn("fmin") + "(" + a + ", " + b + ")";
  return a + " + " + b;
}

std::string reduce_init(const std::string& op, Target target) {
  if (op == "max") return float_literal(-INFINITY, target);
  if (op == "min") return float_literal(INFINITY, target);
  return target == Target::triton ? "0.0" : "0.0f";
}

ExprEmitter::ExprEmitter(const Graph& graph, int vec, int* counter, Target target)
    : g_(graph), vec_(vec), counter_(counter), target_(target), d_{target} {}

std::string ExprEmitter::type(bool boolean) const {
  std::string base = boolean ? "int" : "float";
  return vec_ > 1 ? base + std::to_string(vec_) : base;
}

// Comparisons give int (scalar 0/1, vector 0/-1; int1 blocks in Triton); arithmetic needs floats.
std::string ExprEmitter::as_float(const std::string& var) const {
  auto it = is_bool_.find(var);
  if (it == is_bool_.end() || !it->second) return var;
  if (target_ == Target::triton) return var + ".to(tl.float32)";
  return vec_ > 1 ? "convert_float" + std::to_string(vec_) + "(-" + var + ")" : "(float)" + var;
}

std::string ExprEmitter::as_cond(const std::string& var) const {
  auto it = is_bool_.find(var);
  if (it != is_bool_.end() && it->second) return var;
  return target_ == Target::triton ? "(" + var + " != 0.0)" : "(" + var + " != 0.0f)";
}

std::string ExprEmitter::broadcast(const std::string& scalar) const {
  return vec_ > 1 ? "(float" + std::to_string(vec_) + ")(" + scalar + ")" : scalar;
}

std::string ExprEmitter::value(int id, const std::vector<std::string>& coords) {
  auto known_it = known.find(id);
  if (known_it != known.end()) return known_it->second;
  const Node& node = g_.nodes[id];
  if (node.kind == NodeKind::constant) return broadcast(float_literal(node.scalar, target_));
  // Triton: an int size divides or subtracts from float blocks as a float.
  if (node.kind == NodeKind::red_len) {
    // A reduction of this stage: its length is the stage's; one from an earlier stage (a
    // mean whose sum went to scratch): the product of the reduced sizes.
    if (node.args.empty() || !is_leaf || !is_leaf(node.args[0]))
      return target_ == Target::triton ? red_len : broadcast("(float)" + red_len);
    if (!dim) throw std::logic_error("the length of an earlier stage's reduction needs the kernel's sizes");
    const Node& reduced = g_.nodes[node.args[0]];
    std::string count;
    for (int axis : reduced.axes)
      count += (count.empty() ? "" : " * ") + dim(g_.nodes[reduced.args[0]].shape.at(axis));
    return target_ == Target::triton ? "(" + count + ")" : broadcast("(float)(" + count + ")");
  }
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
  (outer ? outer_ : lines_).push_back(target_ == Target::triton ? var + " = " + expr
                                                                : "const " + type(boolean) + " " + var + " = " + expr + ";");
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
  const bool triton = target_ == Target::triton;
  // Evaluating an operand may visit a hoisted node: helper lines of this node (gelu's erf)
  // go to this node's scope.
  const bool outer = hoist && hoist(id);
  if (node.kind == NodeKind::unary && (node.op == "tril" || node.op == "triu")) {
    // Keeps x where column - row <= diagonal (tril) or >= diagonal (triu), else 0: the
    // last two output coordinates, so the stage computes them (partition keeps these in
    // pointwise and window stages).
    if (!on_coords || coords.size() < 2) throw std::logic_error("tril / triu outside a stage with coordinates");
    on_coords();
    std::string a = f(0);
    current_outer_ = outer;
    const std::string keep = "(" + coords[coords.size() - 1] + " - " + coords[coords.size() - 2] + ") " +
                             (node.op == "tril" ? "<=" : ">=") + " " + std::to_string(static_cast<int64_t>(node.scalar));
    return triton ? "tl.where(" + keep + ", " + a + ", 0.0)" : "(" + keep + " ? " + a + " : 0.0f)";
  }
  if (node.kind == NodeKind::unary) {
    std::string a = f(0);
    current_outer_ = outer;
    return triton ? unary_triton(node, a) : unary_c(node, a);
  }
  if (node.kind == NodeKind::binary) {
    std::string a = f(0), b = f(1);
    current_outer_ = outer;
    if (node.op == "div" && target_ == Target::cuda) {
      // CUDA's `/` is IEEE division, a dozen instructions: softmax_temperature's four a
      // element ran 0.74x torch.compile where softmax_last's one ran 1.18x (H200, 2026-11-29).
      // A divisor that is a literal or the same along the loop (a row's sum, a norm) becomes
      // a multiplication by its reciprocal, computed once (within an ulp of the quotient;
      // Triton's `/` is an approximate division too).
      const Node& divisor = g_.nodes[node.args[1]];
      if (divisor.kind == NodeKind::constant && divisor.scalar != 0.0 && std::isfinite(1.0 / divisor.scalar))
        return a + " * " + float_literal(1.0 / divisor.scalar, target_);
      if (!outer && hoist && hoist(node.args[1])) return a + " * " + outer_reciprocal(b);
    }
    return triton ? binary_triton(node, a, b, boolean) : binary_c(node, a, b, boolean);
  }
  if (node.kind == NodeKind::gather || node.kind == NodeKind::concat) return remap(node, coords);
  if (node.kind == NodeKind::where) {
    std::string c = as_cond(arg(0)), a = f(1), b = f(2);
    if (triton) return "tl.where(" + c + ", " + a + ", " + b + ")";
    if (vec_ > 1) return "select(" + b + ", " + a + ", " + c + ")";
    return c + " ? " + a + " : " + b;
  }
  throw std::logic_error("node kind without expression emission (reduce or matmul outside its stage)");
}

// gather and cat: reads at remapped coordinates (pointwise stages only).
std::string ExprEmitter::remap(const Node& node, const std::vector<std::string>& coords) {
  const bool triton = target_ == Target::triton;
  if (node.kind == NodeKind::gather) {
    // The index is read once into an int, then the data at the gathered coordinate.
    if (!dim) throw std::logic_error("gather outside a pointwise stage");
    if (on_view) on_view();
    std::vector<std::string> index_coords;
    for (int axis : node.index_src) index_coords.push_back(coords.at(axis));
    std::string index = load(node.args[1], index_coords);
    std::string at = triton ? helper_value(index + ".to(tl.int32)") : helper_value("(int)" + index, "int");
    std::vector<std::string> data_coords;
    for (int axis : node.src) data_coords.push_back(axis < 0 ? at : coords.at(axis));
    return as_float(value(node.args[0], data_coords));
  }
  // cat: both parts are read at clamped (always in-bounds) coordinates and one is
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
    part_coords[axis] = triton ? "tl.minimum(tl.maximum(" + local + ", 0), " + size + " - 1)"
                               : d_.clamp_int(local, "0", size + " - 1");
    std::string v = as_float(value(node.args[part], part_coords));
    if (part == 0) result = v;
    else if (triton) result = "tl.where(" + c + " < " + start + ", " + result + ", " + v + ")";
    else result = "(" + c + " < " + start + " ? " + result + " : " + v + ")";
    start = start == "0" ? size : "(" + start + " + " + size + ")";
  }
  return result;
}

std::string ExprEmitter::unary_c(const Node& node, const std::string& a) {
  const std::string& op = node.op;
  auto fn = [&](const std::string& name) { return d_.fn(name); };
  if (op == "bool_to_float") return "(" + a + " != 0 ? 1.0f : 0.0f)";
  if (op == "relu") return fn("fmax") + "(" + a + ", " + broadcast("0.0f") + ")";
  if (op == "gelu") {
    std::string scaled = helper_value(a + " * 0.707106781f");
    return "0.5f * " + a + " * (1.0f + " + fast_erf(scaled) + ")";
  }
  if (op == "gelu_tanh") {
    std::string inner = helper_value("0.797884561f * (" + a + " + 0.044715f * " + a + " * " + a + " * " + a + ")");
    return "0.5f * " + a + " * (1.0f + " + fast_tanh(inner) + ")";
  }
  if (op == "erf") return fast_erf(a);
  if (op == "tanh") return fast_tanh(a);
  if (op == "silu") return a + " / (1.0f + " + fn("exp") + "(-" + a + "))";
  if (op == "sigmoid") return "1.0f / (1.0f + " + fn("exp") + "(-" + a + "))";
  if (op == "abs") return fn("fabs") + "(" + a + ")";
  if (op == "neg") return "-" + a;
  if (op == "reciprocal") return "1.0f / " + a;
  if (op == "square") return a + " * " + a;
  if (op == "leaky_relu")
    return fn("fmax") + "(" + a + ", 0.0f) + " + float_literal(node.scalar) + " * " + fn("fmin") + "(" + a + ", 0.0f)";
  if (op == "clamp") {
    std::string v = a;
    if (node.has_lo) v = fn("fmax") + "(" + v + ", " + broadcast(float_literal(node.lo, target_)) + ")";
    if (node.has_hi) v = fn("fmin") + "(" + v + ", " + broadcast(float_literal(node.hi, target_)) + ")";
    return v;
  }
  if (op == "pow_scalar") {
    double e = node.scalar;
    if (e == 1.0) return a;
    if (e == 2.0) return a + " * " + a;
    if (e == 3.0) return a + " * " + a + " * " + a;
    if (e == 0.5) return fn("sqrt") + "(" + a + ")";
    if (e == -1.0) return "1.0f / " + a;
    return fn("pow") + "(" + a + ", " + broadcast(float_literal(e)) + ")";
  }
  // OpenCL's sign(); CUDA has none: (x > 0) - (x < 0), NaN -> 0.
  if (op == "sign" && d_.cuda()) return "(float)((" + a + " > 0.0f) - (" + a + " < 0.0f))";
  static const std::vector<std::string> kDirect = {"exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos",
                                                   "expm1", "floor", "ceil", "sign"};
  for (const auto& name : kDirect)
    if (op == name) return fn(name) + "(" + a + ")";
  throw std::logic_error("unary op without emission: " + op);
}

std::string ExprEmitter::binary_c(const Node& node, const std::string& a, const std::string& b, bool& boolean) {
  const std::string& op = node.op;
  if (op == "add") return a + " + " + b;
  if (op == "sub") return a + " - " + b;
  if (op == "mul") return a + " * " + b;
  if (op == "div") return a + " / " + b;
  if (op == "maximum") return d_.fn("fmax") + "(" + a + ", " + b + ")";
  if (op == "minimum") return d_.fn("fmin") + "(" + a + ", " + b + ")";
  if (op == "pow") return d_.fn("pow") + "(" + a + ", " + b + ")";
  if (op == "fmod") return d_.fn("fmod") + "(" + a + ", " + b + ")";
  static const std::map<std::string, std::string> kCompare = {{"gt", ">"}, {"lt", "<"}, {"ge", ">="},
                                                              {"le", "<="}, {"eq", "=="}, {"ne", "!="}};
  auto it = kCompare.find(op);
  if (it != kCompare.end()) {
    boolean = true;
    return a + " " + it->second + " " + b;
  }
  throw std::logic_error("binary op without emission: " + op);
}

// An extra statement line computing `expr` (of C type `c_type`, default the emitter's
// float type) in the scope of the node being computed; returns its variable.
std::string ExprEmitter::helper_value(const std::string& expr, const std::string& c_type) {
  std::string var = "v" + std::to_string((*counter_)++);
  std::string line = target_ == Target::triton
                         ? var + " = " + expr
                         : "const " + (c_type.empty() ? type(false) : c_type) + " " + var + " = " + expr + ";";
  (current_outer_ ? outer_ : lines_).push_back(line);
  return var;
}

// erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): exp and a polynomial
// vectorise, where the libm erf call does not.
std::string ExprEmitter::fast_erf(const std::string& a) {
  if (target_ == Target::triton) return "tl.erf(" + a + ")";
  std::string t = helper_value("1.0f / (1.0f + 0.3275911f * " + d_.fn("fabs") + "(" + a + "))");
  return d_.fn("copysign") + "(1.0f - ((((1.061405429f * " + t + " - 1.453152027f) * " + t + " + 1.421413741f) * " + t +
         " - 0.284496736f) * " + t + " + 0.254829592f) * " + t + " * " + d_.fn("exp") + "(-" + a + " * " + a + "), " + a +
         ")";
}

// tanh(a) = 1 - 2 / (exp(2a) + 1): exact at the extremes (exp overflows to inf -> 1).
std::string ExprEmitter::fast_tanh(const std::string& a) {
  if (target_ == Target::triton) return "1.0 - 2.0 / (tl.exp(2.0 * " + a + ") + 1.0)";
  return "1.0f - 2.0f / (" + d_.fn("exp") + "(2.0f * " + a + ") + 1.0f)";
}

std::string ExprEmitter::take_lines(const std::string& indent, bool keep_memo) {
  std::string out;
  for (const auto& line : lines_) out += indent + line + "\n";
  lines_.clear();
  if (!keep_memo) memo_.clear();
  return out;
}

// `1.0f / b` in the outer scope, once per divisor.
std::string ExprEmitter::outer_reciprocal(const std::string& b) {
  auto [it, fresh] = outer_memo_.emplace("1/" + b, "");
  if (!fresh) return it->second;
  it->second = "v" + std::to_string((*counter_)++);
  outer_.push_back("const float " + it->second + " = 1.0f / " + b + ";");
  return it->second;
}

std::string ExprEmitter::take_outer(const std::string& indent) {
  std::string out;
  for (const auto& line : outer_) out += indent + line + "\n";
  outer_.clear();
  return out;
}

}  // namespace kforge::codegen
