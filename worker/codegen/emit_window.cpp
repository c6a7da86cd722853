// Window stages (conv, conv_transpose, max / avg pooling) behind emit_program.h: one
// work-item per output element walks its window (the group's input channels times the
// kernel positions) into a register, then applies the stage's fused epilogue (bias,
// activation, scale...) before its single store. The loop text is shared with the Triton
// emitter (window_loops). Test: ctest -R 'codegen_(lower|window)'.
#include <sstream>

#include "worker/codegen/emit_program.h"

namespace kforge::codegen::emit {
namespace {

// "c2 * 2 - 1 + kd0 * 3", leaving out unit factors and zero terms.
std::string scaled(const std::string& var, int64_t factor) {
  return factor == 1 ? var : var + " * " + std::to_string(factor);
}

std::string plus(const std::string& expr, int64_t c) {
  if (c == 0) return expr;
  return expr + (c > 0 ? " + " : " - ") + std::to_string(c > 0 ? c : -c);
}

// Writes one target's statements at a nesting depth (C: braces; Triton: indentation).
class LoopWriter {
 public:
  LoopWriter(Target target, const std::string& indent) : py_(target == Target::triton), indent_(indent) {}
  void line(const std::string& text) { out_ << indent_ << text << "\n"; }
  void let(const std::string& var, const std::string& expr) {
    line(py_ ? var + " = " + expr : "const int " + var + " = " + expr + ";");
  }
  void open(const std::string& var, const std::string& bound) {
    line(py_ ? "for " + var + " in range(0, " + bound + "):"
             : "for (int " + var + " = 0; " + var + " < " + bound + "; ++" + var + ") {");
    indent_ += py_ ? "    " : "  ";
    ++depth_;
  }
  std::string close_all() {
    for (; depth_ > 0; --depth_) {
      indent_.resize(indent_.size() - (py_ ? 4 : 2));
      if (!py_) line("}");
    }
    return out_.str();
  }

 private:
  bool py_;
  std::string indent_;
  int depth_ = 0;
  std::ostringstream out_;
};

}  // namespace

WindowNames window_names(const Graph& g, const Node& node, const std::function<std::string(const Dim&)>& dim,
                         const std::function<std::string(const std::string&, const std::string&)>& size) {
  const Window& win = node.window;
  const Shape& xs = g.nodes[node.args[0]].shape;
  const int spatial = win.spatial(), rank = static_cast<int>(xs.size());
  WindowNames names;
  for (int sd = 0; sd < spatial; ++sd) names.in.push_back(dim(xs[rank - spatial + sd]));
  if (!win.is_conv()) {
    for (int sd = 0; sd < spatial; ++sd) names.kernel.push_back(std::to_string(win.kernel[sd]));
    for (int axis = 0; axis < rank - spatial; ++axis) names.lead.push_back(dim(xs[axis]));
    return names;
  }
  const Shape& ws = g.nodes[node.args[1]].shape;
  for (int sd = 0; sd < spatial; ++sd) names.kernel.push_back(dim(ws[2 + sd]));
  names.channels = dim(xs[1]);
  const std::string groups = std::to_string(win.groups);
  if (win.op == "conv") {  // weight [C_out, C_in / groups, k...]
    names.cin_group = dim(ws[1]);
    if (win.groups > 1) names.cout_group = size(ws[0].expr() + " / " + groups, "cout_group");
  } else {  // weight [C_in, C_out / groups, k...]
    names.cin_group = win.groups == 1 ? names.channels : size(xs[1].expr() + " / " + groups, "cin_group");
    names.cout_group = dim(ws[1]);
  }
  return names;
}

// Conv: acc = sum over ci < C_in/groups and the window of x[n, g*C_in/groups + ci, o*s - p
// + k*d] * w[co, ci, k]. Transposed (the gather form): each output sums the inputs that
// map onto it, i = (o + p - k*d) / s where that divides exactly, with w[g*C_in/groups + ci,
// co % (C_out/groups), k]. Pooling: max or sum over the window of x[lead, o*s - p + k*d].
// With no padding a forward window never leaves x (the output size formula), so it is
// read without bounds checks.
std::string window_loops(const Window& win, const WindowNames& n, Target target, const std::string& indent) {
  const bool py = target == Target::triton;
  const int spatial = win.spatial(), rank = static_cast<int>(n.coords.size());
  const std::string& c0 = n.coords[0];
  LoopWriter out(target, indent);
  const bool max = win.op == "max_pool", avg = win.op == "avg_pool", transposed = win.op == "conv_transpose";
  const bool count = avg && !win.count_include_pad && win.divisor == 0;
  if (py) {
    out.line(max ? "acc = tl.full([BLOCK], float('-inf'), dtype=tl.float32)" : "acc = tl.zeros([BLOCK], dtype=tl.float32)");
    if (count) out.line("cnt = tl.zeros([BLOCK], dtype=tl.float32)");
  } else {
    out.line("float acc = " + (max ? Dialect{target}.infinity(true) : std::string("0.0f")) + ";");
    if (count) out.line("int cnt = 0;");
  }
  std::string channel_row;  // x's row (batch, channel) before the spatial dims
  std::string w_row;        // the weight's row (out, in channel) before the kernel dims
  if (win.is_conv()) {
    const std::string& c1 = n.coords[1];
    const bool grouped = !n.cout_group.empty() && win.groups > 1;
    if (grouped) out.let("grp", c1 + (py ? " // " : " / ") + n.cout_group);
    if (transposed && grouped) out.let("cog", c1 + " - grp * " + n.cout_group);
    out.open("ci", n.cin_group);
    const std::string channel = grouped ? "grp * " + n.cin_group + " + ci" : "ci";
    channel_row = c0 + " * " + n.channels + " + " + channel;
    w_row = transposed ? "(" + channel + ") * " + n.cout_group + " + " + (grouped ? "cog" : c1)
                       : c1 + " * " + n.cin_group + " + ci";
    out.let("woff0", "(" + w_row + ") * " + n.kernel[0]);
  } else {
    channel_row = n.coords[0];
    for (int axis = 1; axis < rank - spatial; ++axis)
      channel_row = (axis > 1 ? "(" + channel_row + ")" : channel_row) + " * " + n.lead[axis] + " + " + n.coords[axis];
  }
  out.let("xoff0", "(" + channel_row + ") * " + n.in[0]);
  std::string ok = "mask";  // Triton: which lanes read a position inside x
  for (int sd = 0; sd < spatial; ++sd) {
    const std::string kd = "kd" + std::to_string(sd), ix = "ix" + std::to_string(sd), sdn = std::to_string(sd);
    const std::string& oc = n.coords[rank - spatial + sd];
    const int64_t s = win.stride[sd], p = win.padding[sd], d = win.dilation[sd];
    // Conditions for a position inside x, as (valid, its negation) for Triton's masks and C's skips.
    std::vector<std::pair<std::string, std::string>> valid;
    out.open(kd, n.kernel[sd]);
    if (!transposed) {
      out.let(ix, plus(scaled(oc, s), -p) + " + " + scaled(kd, d));
      if (p > 0) valid = {{ix + " >= 0", ix + " < 0"}, {ix + " < " + n.in[sd], ix + " >= " + n.in[sd]}};
    } else if (s == 1) {
      out.let(ix, plus(oc, p) + " - " + scaled(kd, d));
      valid = {{ix + " >= 0", ix + " < 0"}, {ix + " < " + n.in[sd], ix + " >= " + n.in[sd]}};
    } else {
      const std::string t = "t" + sdn;
      out.let(t, plus(oc, p) + " - " + scaled(kd, d));
      out.let(ix, t + (py ? " // " : " / ") + std::to_string(s));
      const std::string rem = t + " % " + std::to_string(s);
      valid = {{t + " >= 0", t + " < 0"}, {rem + " == 0", rem + " != 0"}, {ix + " < " + n.in[sd], ix + " >= " + n.in[sd]}};
    }
    if (!valid.empty()) {
      if (py) {
        std::string cond = ok;
        for (const auto& v : valid) cond += " & (" + v.first + ")";
        ok = "ok" + sdn;
        out.line(ok + " = " + cond);
      } else {
        std::string skip;
        for (const auto& v : valid) skip += (skip.empty() ? "" : " || ") + v.second;
        out.line("if (" + skip + ") continue;");
      }
    }
    if (sd + 1 < spatial) {
      const std::string next = std::to_string(sd + 1);
      out.let("xoff" + next, "(xoff" + sdn + " + " + ix + ") * " + n.in[sd + 1]);
      if (win.is_conv()) out.let("woff" + next, "(woff" + sdn + " + " + kd + ") * " + n.kernel[sd + 1]);
    }
  }
  const std::string last = std::to_string(spatial - 1);
  const std::string x_at = "xoff" + last + " + ix" + last, w_at = "woff" + last + " + kd" + last;
  if (py) {
    auto load = [&](const std::string& buf, const std::string& at, const std::string& mask, const std::string& other) {
      return "tl.load(" + buf + " + " + at + ", mask=" + mask + ", other=" + other + ")";
    };
    if (win.is_conv()) out.line("acc += " + load(n.x, x_at, ok, "0.0") + " * " + load(n.w, w_at, "mask", "0.0"));
    else if (max) out.line("acc = tl.maximum(acc, " + load(n.x, x_at, ok, "-float('inf')") + ")");
    else out.line("acc += " + load(n.x, x_at, ok, "0.0"));
    if (count) out.line("cnt += " + ok + ".to(tl.float32)");
  } else {
    if (win.is_conv()) {
      out.line("acc += " + n.x + "[" + x_at + "] * " + n.w + "[" + w_at + "];");
    } else if (max) {
      out.line("const float xv = " + n.x + "[" + x_at + "];");
      out.line("if (xv > acc || isnan(xv)) acc = xv;  // NaN wins, as in torch");
    } else {
      out.line("acc += " + n.x + "[" + x_at + "];");
    }
    if (count) out.line("cnt += 1;");
  }
  std::string text = out.close_all();
  if (avg) {
    // torch divides by the window's size (padding counted), the override, or the positions inside x.
    int64_t window_size = 1;
    for (int64_t k : win.kernel) window_size *= k;
    const std::string divisor = count ? (py ? "cnt" : "(float)cnt")
                                      : float_literal(static_cast<double>(win.divisor ? win.divisor : window_size), target);
    text += indent + "acc = acc / " + divisor + (py ? "" : ";") + "\n";
  }
  return text;
}

// One work-item per output element: its coordinates, the window into `acc`, the epilogue.
std::string ProgramEmitter::window(const Stage& stage, const std::string& name, std::string& err) {
  const Node& node = g_.nodes[stage.anchor];
  Kernel k = kernel(name, buffer_of_.at(stage.root));
  const Shape& out_shape = g_.nodes[stage.root].shape;
  std::vector<std::string> coords;
  for (int axis = 0; axis < static_cast<int>(out_shape.size()); ++axis) coords.push_back("c" + std::to_string(axis));
  const std::string x = k.buffer(buffer_name(node.args[0]));
  const std::string w = node.window.is_conv() ? k.buffer(buffer_name(node.args[1])) : "";
  const std::string n_expr = numel_expr(out_shape);
  const std::string n = k.size(n_expr, "n");
  WindowNames names = window_names(
      g_, node, [&k](const Dim& d) { return k.dim(d); },
      [&k](const std::string& expr, const std::string& preferred) { return k.size(expr, preferred); });
  names.x = x;
  names.w = w;
  names.coords = coords;
  int counter = 0;
  bool need_coords = false, contiguous = true;
  ExprEmitter e = element_emitter(stage, k, coords, 1, &counter, need_coords, contiguous);
  e.is_leaf = [this, &stage](int id) { return id != stage.anchor && is_buffer_leaf(id, stage.root); };
  e.known[stage.anchor] = "acc";
  const std::string result = e.value(stage.root, coords);
  const std::string epilogue = e.take_lines("  ");
  k.grid = "cdiv(" + n_expr + ", " + std::to_string(s_.work_group) + ")";
  k.block = std::to_string(s_.work_group);
  std::ostringstream body;
  body << "  const int i = " << d_.global_id(0) << ";\n";
  body << "  if (i >= " << n << ") return;\n";
  body << reindent(coordinate_lines(k, out_shape, coords), "  ");
  body << window_loops(node.window, names, d_.target, "  ");
  body << epilogue << "  " << k.output_buffer << "[i] = " << result << ";\n";
  k.body = body.str();
  (void)err;
  return k.render();
}

}  // namespace kforge::codegen::emit
