// Triton spellings of the IR's unary and binary operators for ExprEmitter (emit_expr.h):
// block expressions over tl.* with the functions triton.language lacks (tanh, log1p,
// expm1, pow, fmod, sign) written out from exp / log / floor so that they run both
// compiled and in Triton's CPU interpreter. Test: ctest -R 'codegen_(lower|triton)'.
#include <cmath>
#include <map>
#include <stdexcept>

#include "worker/codegen/emit_expr.h"

namespace kforge::codegen {

std::string ExprEmitter::unary_triton(const Node& node, const std::string& a) {
  const std::string& op = node.op;
  if (op == "bool_to_float") return "(" + a + " != 0).to(tl.float32)";
  if (op == "relu") return "tl.maximum(" + a + ", 0.0)";
  if (op == "gelu") return "0.5 * " + a + " * (1.0 + tl.erf(" + a + " * 0.707106781))";
  if (op == "gelu_tanh") {
    std::string inner = helper_value("0.797884561 * (" + a + " + 0.044715 * " + a + " * " + a + " * " + a + ")");
    return "0.5 * " + a + " * (1.0 + " + fast_tanh(inner) + ")";
  }
  if (op == "erf") return "tl.erf(" + a + ")";
  if (op == "tanh") return fast_tanh(a);
  if (op == "silu") return a + " / (1.0 + tl.exp(-" + a + "))";
  if (op == "sigmoid") return "1.0 / (1.0 + tl.exp(-" + a + "))";
  if (op == "abs") return "tl.abs(" + a + ")";
  if (op == "neg") return "-" + a;
  if (op == "reciprocal") return "1.0 / " + a;
  if (op == "square") return a + " * " + a;
  if (op == "leaky_relu")
    return "tl.maximum(" + a + ", 0.0) + " + float_literal(node.scalar, Target::triton) + " * tl.minimum(" + a + ", 0.0)";
  if (op == "clamp") {
    std::string v = a;
    if (node.has_lo) v = "tl.maximum(" + v + ", " + float_literal(node.lo, Target::triton) + ")";
    if (node.has_hi) v = "tl.minimum(" + v + ", " + float_literal(node.hi, Target::triton) + ")";
    return v;
  }
  if (op == "pow_scalar") {
    double e = node.scalar;
    if (e == 1.0) return a;
    if (e == 2.0) return a + " * " + a;
    if (e == 3.0) return a + " * " + a + " * " + a;
    if (e == 0.5) return "tl.sqrt(" + a + ")";
    if (e == -1.0) return "1.0 / " + a;
    const std::string lit = float_literal(e, Target::triton);
    if (e != std::floor(e)) return "tl.exp2(" + lit + " * tl.log2(" + a + "))";  // NaN below 0, as torch
    // An integer power: |a|^e, negative for an odd e and a negative base.
    std::string magnitude = helper_value("tl.exp2(" + lit + " * tl.log2(tl.abs(" + a + ")))");
    if (std::fmod(std::fabs(e), 2.0) == 0.0) return magnitude;
    return "tl.where(" + a + " < 0.0, -" + magnitude + ", " + magnitude + ")";
  }
  if (op == "log1p") {
    // log(u) * a / (u - 1) with u = 1 + a cancels the rounding of 1 + a (Goldberg's trick).
    std::string u = helper_value("1.0 + " + a);
    return "tl.where(" + u + " == 1.0, " + a + ", tl.log(" + u + ") * (" + a + " / (" + u + " - 1.0)))";
  }
  if (op == "expm1") return "tl.where(tl.abs(" + a + ") < 1e-5, " + a + " + 0.5 * " + a + " * " + a + ", tl.exp(" + a + ") - 1.0)";
  if (op == "sign") return "(" + a + " > 0.0).to(tl.float32) - (" + a + " < 0.0).to(tl.float32)";
  static const std::vector<std::string> kDirect = {"exp", "log", "sqrt", "rsqrt", "sin", "cos", "floor", "ceil"};
  for (const auto& name : kDirect)
    if (op == name) return "tl." + name + "(" + a + ")";
  throw std::logic_error("unary op without triton emission: " + op);
}

std::string ExprEmitter::binary_triton(const Node& node, const std::string& a, const std::string& b, bool& boolean) {
  const std::string& op = node.op;
  if (op == "add") return a + " + " + b;
  if (op == "sub") return a + " - " + b;
  if (op == "mul") return a + " * " + b;
  if (op == "div") return a + " / " + b;
  if (op == "maximum") return "tl.maximum(" + a + ", " + b + ")";
  if (op == "minimum") return "tl.minimum(" + a + ", " + b + ")";
  if (op == "pow") {
    // exp2(b log2|a|); a negative base keeps its sign for odd integer b and is NaN for a
    // fractional b (as torch.pow); b == 0 gives 1 even for a == 0.
    std::string magnitude = helper_value("tl.exp2(" + b + " * tl.log2(tl.abs(" + a + ")))");
    std::string whole = helper_value("tl.floor(" + b + ") == " + b);
    std::string odd = helper_value("(" + b + " - 2.0 * tl.floor(" + b + " * 0.5)) == 1.0");
    std::string negative = helper_value("tl.where(" + whole + ", tl.where(" + odd + ", -" + magnitude + ", " + magnitude +
                                        "), float('nan'))");
    return "tl.where(" + b + " == 0.0, 1.0, tl.where(" + a + " < 0.0, " + negative + ", " + magnitude + "))";
  }
  if (op == "fmod") {
    // C fmod: the remainder of truncated division, with the sign of a.
    std::string q = helper_value(a + " / " + b);
    return a + " - " + b + " * tl.where(" + q + " < 0.0, tl.ceil(" + q + "), tl.floor(" + q + "))";
  }
  static const std::map<std::string, std::string> kCompare = {{"gt", ">"}, {"lt", "<"}, {"ge", ">="},
                                                              {"le", "<="}, {"eq", "=="}, {"ne", "!="}};
  auto it = kCompare.find(op);
  if (it != kCompare.end()) {
    boolean = true;
    return "(" + a + " " + it->second + " " + b + ")";
  }
  throw std::logic_error("binary op without triton emission: " + op);
}

}  // namespace kforge::codegen
