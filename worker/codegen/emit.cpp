// Kernel program emission: one OpenCL kernel per stage (pointwise, row reduction,
// two-pass full reduction, tiled matmul with fused epilogue) for a given Schedule,
// plus the kforge launch and scratch lines. Test: ctest -R codegen.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "worker/codegen/codegen.h"
#include "worker/codegen/emit_expr.h"

namespace kforge::codegen {
namespace {

// Identifiers the generated kernels use themselves; an input with one of these
// names gets a different parameter name (launch args are positional).
const std::set<std::string> kReserved = {
    "i", "j", "n", "kk", "k0", "m", "m0", "lx", "ly", "lid", "gid", "row", "col", "bat", "base", "len", "inner",
    "groups", "acc", "red", "tile_a", "tile_b", "M", "N", "K", "stride", "step", "out", "wr", "tr",
    "ri", "am", "ak", "bk", "bn", "bv", "av", "sum", "kt", "c", "n0", "r", "k", "c0", "c1", "c2", "c3", "c4", "c5", "kernel", "global", "local", "constant", "private",
    "float", "int", "half", "double", "long", "char", "short", "uint", "bool", "void"};

// A kernel under construction: parameters with their launch arguments, then the body.
struct Kernel {
  std::string name;
  std::vector<std::string> params, args;  // parallel
  std::map<std::string, std::string> buffer_param;  // buffer name -> parameter name
  std::map<std::string, std::string> size_param;    // launch expression -> parameter name
  std::vector<std::string> size_params, size_args;
  std::string grid, block, attributes, body, scratch;
  std::string output_buffer;
  std::string output_type = "float";  // "long" for argmax / argmin

  std::string buffer(const std::string& name, const std::string& type = "float") {
    auto it = buffer_param.find(name);
    if (it != buffer_param.end()) return it->second;
    bool var_like = name.size() > 1 && name[0] == 'v' &&
                    name.find_first_not_of("0123456789", 1) == std::string::npos;  // v0, v1... are values
    bool acc_like = name.rfind("acc", 0) == 0;
    std::string param = kReserved.count(name) || var_like || acc_like ? "in_" + name : name;
    buffer_param[name] = param;
    params.push_back("__global const " + type + "* restrict " + param);
    args.push_back(name);
    return param;
  }

  // An int parameter carrying a launch expression; literals stay literals.
  std::string size(const std::string& expr, const std::string& preferred) {
    bool literal = std::all_of(expr.begin(), expr.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (literal) return expr;
    auto it = size_param.find(expr);
    if (it != size_param.end()) return it->second;
    std::string name = preferred;
    for (int suffix = 2; std::find(size_params.begin(), size_params.end(), name) != size_params.end(); ++suffix)
      name = preferred + std::to_string(suffix);
    size_param[expr] = name;
    size_params.push_back(name);
    size_args.push_back(expr);
    return name;
  }

  std::string dim(const Dim& d) {
    if (!d.formula.empty()) return size(d.formula, "size_sum");
    if (d.axis < 0) return std::to_string(d.value);
    return size(d.expr(), d.input + "_size" + std::to_string(d.axis));
  }

  std::string render() const {
    std::ostringstream out;
    std::string all_args;
    std::vector<std::string> all_params = params;
    std::vector<std::string> launch = args;
    all_params.push_back("__global " + output_type + "* restrict " + output_buffer);
    launch.push_back(output_buffer);
    for (size_t idx = 0; idx < size_params.size(); ++idx) {
      all_params.push_back("int " + size_params[idx]);  // the harness parser reads `int n`, not `const int n`
      launch.push_back(size_args[idx]);
    }
    for (size_t idx = 0; idx < launch.size(); ++idx) all_args += (idx ? "," : "") + launch[idx];
    out << "// kforge-launch: " << name << " grid=" << grid << " block=" << block << " args=" << all_args << "\n";
    std::string head = attributes.empty() ? "__kernel void " + name + "(" : "void " + name + "(";
    if (!attributes.empty()) out << "__kernel " << attributes.substr(0, attributes.size() - 1) << "\n";
    out << head;
    // One line: the harness's signature parser (worker/harness/program.cpp trim) keeps
    // newlines inside parameter types, so a wrapped signature fails its rules.
    for (size_t idx = 0; idx < all_params.size(); ++idx) out << (idx ? ", " : "") << all_params[idx];
    out << ") {\n" << body << "}\n";
    return out.str();
  }
};

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t idx = 0; idx < parts.size(); ++idx) out += (idx ? sep : "") + parts[idx];
  return out;
}

// Re-indents emitted lines (each already ends in a newline) to `to`.
std::string reindent(const std::string& text, const std::string& to) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) out += to + line.substr(std::min(line.find_first_not_of(' '), line.size())) + "\n";
  return out;
}

// Adds `extra` in front of every line.
std::string indent_more(const std::string& text, const std::string& extra) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) out += extra + line + "\n";
  return out;
}

// Lines of a local-memory tree reduction of `var` over a work-group of `wg` items.
std::string group_reduce(const std::string& var, const std::string& op, int wg, const std::string& indent) {
  std::ostringstream s;
  s << indent << "red[lid] = " << var << ";\n";
  s << indent << "barrier(CLK_LOCAL_MEM_FENCE);\n";
  s << indent << "for (int stride = " << wg / 2 << "; stride > 0; stride >>= 1) {\n";
  s << indent << "  if (lid < stride) red[lid] = " << combine_code(op, "red[lid]", "red[lid + stride]") << ";\n";
  s << indent << "  barrier(CLK_LOCAL_MEM_FENCE);\n";
  s << indent << "}\n";
  s << indent << var << " = red[0];\n";
  s << indent << "barrier(CLK_LOCAL_MEM_FENCE);\n";
  return s.str();
}

std::string unroll_pragma(int unroll, const std::string& indent) {
  return unroll > 1 ? indent + "#pragma unroll " + std::to_string(unroll) + "\n" : "";
}

struct PatternMap;

class ProgramEmitter {
 public:
  ProgramEmitter(const Analysis& a, const Schedule& s) : a_(a), g_(a.graph), s_(s) {
    for (size_t stage_idx = 0; stage_idx < a.stages.size(); ++stage_idx) {
      int root = a.stages[stage_idx].root;
      if (root == g_.output) {
        buffer_of_[root] = "out";
      } else {
        std::string name = "tmp" + std::to_string(scratch_.size());
        buffer_of_[root] = name;
        scratch_.push_back("// kforge-scratch: " + name + " float " + numel_expr(g_.nodes[root].shape) + "\n");
      }
    }
  }

  Generated run() {
    Generated gen;
    std::string kernels;
    for (size_t stage_idx = 0; stage_idx < a_.stages.size(); ++stage_idx) {
      const Stage& stage = a_.stages[stage_idx];
      // Kernel names carry the stage kind, so an op named like a builtin (abs, exp) stays legal.
      static const char* kSuffix[] = {"pointwise", "rows", "reduce", "matmul", "scan", "argreduce"};
      std::string base = a_.op_name + "_" + kSuffix[static_cast<int>(stage.kind)];
      if (a_.stages.size() > 1) base += std::to_string(stage_idx);
      std::string err;
      std::string text;
      switch (stage.kind) {
        case StageKind::pointwise: text = pointwise(stage, base, err); break;
        case StageKind::reduce_rows: text = reduce_rows(stage, base, err); break;
        case StageKind::reduce_full: text = reduce_full(stage, base, err); break;
        case StageKind::matmul: text = matmul(stage, base, err); break;
        case StageKind::scan: text = scan(stage, base, err); break;
        case StageKind::arg_reduce: text = arg_reduce(stage, base, err); break;
      }
      if (!err.empty()) {
        gen.unsupported = err;
        return gen;
      }
      kernels += (kernels.empty() ? "" : "\n") + text;
    }
    std::string header = "// " + a_.op_name + ": generated by the kforge teacher compiler (" + a_.describe() +
                         ", schedule " + s_.label() + ")\n";
    gen.program = header + join(scratch_, "") + kernels;
    return gen;
  }

 private:
  const Analysis& a_;
  const Graph& g_;
  const Schedule& s_;
  std::map<int, std::string> buffer_of_;
  std::vector<std::string> scratch_;

  bool is_buffer_leaf(int id, int root) const {
    if (id == root) return false;
    return g_.nodes[id].kind == NodeKind::input || buffer_of_.count(id) > 0;
  }

  std::string buffer_name(int id) const {
    if (g_.nodes[id].kind == NodeKind::input) return g_.input_names[g_.nodes[id].input_index];
    return buffer_of_.at(id);
  }

  // Offset of a coordinate tuple in a contiguous tensor of `shape`, e.g. "c1 + c0*x_size1".
  std::string offset(Kernel& k, const Shape& shape, const std::vector<std::string>& coords) {
    std::vector<std::string> terms;
    for (int axis = static_cast<int>(shape.size()) - 1; axis >= 0; --axis) {
      if (coords[axis] == "0") continue;
      // Stride of `axis`: the product of the later dims (registered as size params only when used).
      std::string stride;
      for (int later = axis + 1; later < static_cast<int>(shape.size()); ++later) {
        if (shape[later].is_literal() && shape[later].value == 1) continue;
        std::string d = k.dim(shape[later]);
        if (d != "1") stride += (stride.empty() ? "" : "*") + d;
      }
      terms.push_back(stride.empty() ? coords[axis] : coords[axis] + "*" + stride);
    }
    return terms.empty() ? "0" : join(terms, " + ");
  }


  std::string pointwise(const Stage& stage, const std::string& name, std::string& err);
  std::string reduce_rows(const Stage& stage, const std::string& name, std::string& err);
  std::string column_vectors(const Stage& stage, Kernel& k, PatternMap& patterns, const std::vector<int>& reduces,
                             const std::string& len, const std::string& inner, const std::string& groups,
                             std::string& err);
  std::string reduce_full(const Stage& stage, const std::string& name, std::string& err);
  std::string matmul(const Stage& stage, const std::string& name, std::string& err);
  std::string matmul_registers(const Stage& stage, const std::string& name, std::string& err);
  std::string scan(const Stage& stage, const std::string& name, std::string& err);
  std::string arg_reduce(const Stage& stage, const std::string& name, std::string& err);
};

// ------------------------------------------------------------- scan, arg_reduce
// One work-item per line along one dim of the [outer, len, inner] view of `shape`;
// adjacent work-items take adjacent inner positions, so for inner > 1 each step of
// the loop reads a contiguous run. Returns the lines that compute `base` (the line's
// first element) and sets `len` / `step` (the loop's bound and element offset).
std::string line_start(Kernel& k, const Shape& shape, int axis, int work_group, std::string& len, std::string& step) {
  Shape outer_dims(shape.begin(), shape.begin() + axis), inner_dims(shape.begin() + axis + 1, shape.end());
  Shape line_dims = outer_dims;
  line_dims.insert(line_dims.end(), inner_dims.begin(), inner_dims.end());
  const std::string lines_expr = numel_expr(line_dims);
  const std::string lines = k.size(lines_expr, "lines");
  len = k.dim(shape[axis]);
  std::string inner = "1";
  for (const auto& d : inner_dims) {
    std::string size = k.dim(d);
    if (size != "1") inner = inner == "1" ? size : inner + "*" + size;
  }
  k.grid = "cdiv(" + lines_expr + ", " + std::to_string(work_group) + ")";
  k.block = std::to_string(work_group);
  std::ostringstream body;
  body << "  const int gid = get_global_id(0);\n";
  body << "  if (gid >= " << lines << ") return;\n";
  if (inner == "1") {
    body << "  const int base = gid * " << len << ";\n";
  } else if (outer_dims.empty()) {
    body << "  const int base = gid;\n";
  } else {
    body << "  const int base = (gid / " << inner << ") * " << len << " * " << inner << " + gid % " << inner << ";\n";
  }
  step = inner == "1" ? "r" : "r * " + inner;
  return body.str();
}

// A running sum in a register: one read and one write per element.
std::string ProgramEmitter::scan(const Stage& stage, const std::string& name, std::string& err) {
  const Node& node = g_.nodes[stage.anchor];
  if (node.op != "sum") {
    err = "scan op " + node.op + " has no emission";
    return "";
  }
  Kernel k;
  k.name = name;
  k.output_buffer = buffer_of_.at(stage.root);
  const std::string src = k.buffer(buffer_name(node.args[0]));
  std::string len, step;
  std::ostringstream body;
  body << line_start(k, node.shape, node.axes.at(0), s_.work_group, len, step);
  body << "  float acc = 0.0f;\n";
  if (s_.unroll > 1) body << "  #pragma unroll " << s_.unroll << "\n";
  body << "  for (int r = 0; r < " << len << "; ++r) {\n";
  body << "    acc += " << src << "[base + " << step << "];\n";
  body << "    " << k.output_buffer << "[base + " << step << "] = acc;\n";
  body << "  }\n";
  k.body = body.str();
  return k.render();
}

// argmax / argmin along one dim: the first index of the extreme (NaN counts as the
// maximum and the minimum, as in torch), written as a long.
std::string ProgramEmitter::arg_reduce(const Stage& stage, const std::string& name, std::string& err) {
  const Node& node = g_.nodes[stage.anchor];
  if (node.op != "argmax" && node.op != "argmin") {
    err = "arg reduction " + node.op + " has no emission";
    return "";
  }
  Kernel k;
  k.name = name;
  k.output_buffer = buffer_of_.at(stage.root);
  k.output_type = "long";
  const std::string src = k.buffer(buffer_name(node.args[0]));
  std::string len, step;
  std::ostringstream body;
  body << line_start(k, g_.nodes[node.args[0]].shape, node.axes.at(0), s_.work_group, len, step);
  const std::string better = node.op == "argmax" ? ">" : "<";
  body << "  float best = " << src << "[base];\n";
  body << "  int best_idx = 0;\n";
  if (s_.unroll > 1) body << "  #pragma unroll " << s_.unroll << "\n";
  body << "  for (int r = 1; r < " << len << "; ++r) {\n";
  body << "    const float v = " << src << "[base + " << step << "];\n";
  body << "    if (v " << better << " best || (isnan(v) && !isnan(best))) {\n";
  body << "      best = v;\n";
  body << "      best_idx = r;\n";
  body << "    }\n";
  body << "  }\n";
  body << "  " << k.output_buffer << "[gid] = best_idx;\n";
  k.body = body.str();
  return k.render();
}

// ------------------------------------------------------------------- pointwise
// One work-item per output element (or per_item of them, grid-stride; or floatN
// vectors when every operand is contiguous with the output's shape or a scalar).
std::string ProgramEmitter::pointwise(const Stage& stage, const std::string& name, std::string& err) {
  Kernel k;
  k.name = name;
  k.output_buffer = buffer_of_.at(stage.root);
  const Shape& out_shape = g_.nodes[stage.root].shape;
  const int rank = static_cast<int>(out_shape.size());
  std::vector<std::string> coords;
  for (int axis = 0; axis < rank; ++axis) coords.push_back("c" + std::to_string(axis));
  const std::string n_expr = numel_expr(out_shape);
  const std::string n = k.size(n_expr, "n");
  int counter = 0;
  bool need_coords = false, contiguous = true;
  auto make = [&](int vec) {
    ExprEmitter e(g_, vec, &counter);
    e.is_leaf = [&](int id) { return is_buffer_leaf(id, stage.root); };
    e.on_view = [&] { contiguous = false; };
    e.dim = [&](const Dim& d) { return k.dim(d); };
    e.load = [&, vec](int id, const std::vector<std::string>& c) -> std::string {
      const Node& leaf = g_.nodes[id];
      std::string buf = k.buffer(buffer_name(id), leaf.int_type.empty() ? "float" : leaf.int_type);
      const Shape& shape = leaf.shape;
      if (numel_value(shape) == 1) return vec > 1 ? "(float" + std::to_string(vec) + ")(" + buf + "[0])" : buf + "[0]";
      bool linear = static_cast<int>(c.size()) == rank && c == coords;
      for (int axis = 0; linear && axis < rank; ++axis) linear = shape[axis].value == out_shape[axis].value;
      if (linear) return vec > 1 ? "vload" + std::to_string(vec) + "(0, " + buf + " + i)" : buf + "[i]";
      need_coords = true;
      contiguous = false;
      return buf + "[" + offset(k, shape, c) + "]";
    };
    return e;
  };

  ExprEmitter scalar = make(1);
  std::string result = scalar.value(stage.root, coords);
  std::string scalar_lines = scalar.take_lines("    ");
  const int vec = s_.vector_width;
  if (vec > 1 && !contiguous) {
    err = "vector_width " + std::to_string(vec) + " needs every operand contiguous with the output";
    return "";
  }
  std::string coord_lines;
  if (need_coords) {
    // Output coordinates from the flat index, innermost dim first.
    std::string rest = "i";
    for (int axis = rank - 1; axis >= 1; --axis) {
      std::string d = k.dim(out_shape[axis]);
      coord_lines += "    const int " + coords[axis] + " = " + rest + " % " + d + ";\n";
      rest = rest == "i" ? "i / " + d : "(" + rest + ") / " + d;
    }
    coord_lines = "    const int c0 = " + rest + ";\n" + coord_lines;
    if (rank == 1) coord_lines = "    const int c0 = i;\n";
  }
  const int per_item = std::max(1, s_.per_item);
  k.grid = "cdiv(" + n_expr + ", " + std::to_string(s_.work_group * per_item * vec) + ")";
  k.block = std::to_string(s_.work_group);
  // With per_item > 1 each work-item takes per_item grid-strided steps (stays coalesced).
  const std::string ind = per_item > 1 ? "    " : "  ";
  const std::string vec_mul = vec > 1 ? " * " + std::to_string(vec) : "";
  std::ostringstream body;
  if (per_item > 1) {
    body << "  for (int step = 0; step < " << per_item << "; ++step) {\n";
    body << ind << "const int i = (get_global_id(0) + step * get_global_size(0))" << vec_mul << ";\n";
  } else {
    body << ind << "const int i = get_global_id(0)" << vec_mul << ";\n";
  }
  body << ind << "if (i >= " << n << ") return;\n";
  if (vec == 1) {
    body << reindent(coord_lines, ind) << reindent(scalar_lines, ind) << ind << k.output_buffer << "[i] = " << result
         << ";\n";
  } else {
    ExprEmitter vector = make(vec);
    std::string vresult = vector.value(stage.root, coords);
    body << ind << "if (i + " << vec << " <= " << n << ") {\n"
         << vector.take_lines(ind + "  ") << ind << "  vstore" << vec << "(" << vresult << ", 0, " << k.output_buffer
         << " + i);\n";
    body << ind << "} else {  // the last n % " << vec << " elements, one at a time\n";
    body << ind << "  for (int j = i; j < " << n << "; ++j) {\n";
    ExprEmitter tail = make(1);
    std::string tresult = tail.value(stage.root, coords);
    std::string tail_lines = tail.take_lines(ind + "    ");
    std::string tail_body = tail_lines;
    // The tail reads element j where the vector path reads i.
    for (size_t pos = 0; (pos = tail_body.find("[i]", pos)) != std::string::npos; pos += 3) tail_body.replace(pos, 3, "[j]");
    body << tail_body << ind << "    " << k.output_buffer << "[j] = " << tresult << ";\n";
    body << ind << "  }\n" << ind << "}\n";
  }
  if (per_item > 1) body << "  }\n";
  k.body = body.str();
  return k.render();
}

// ------------------------------------------------------------------ reductions
// Patterns of a value relative to the reduced tensor [outer, len, inner]:
// full (varies along everything), lane (only along the reduced dim), group (constant
// along the reduced dim), scalar.
enum class Pattern { scalar, lane, group, full };

Pattern join(Pattern a, Pattern b) {
  if (a == b) return a;
  if (a == Pattern::scalar) return b;
  if (b == Pattern::scalar) return a;
  return Pattern::full;
}

struct PatternMap {
  const Graph& g;
  const Stage& stage;
  std::function<bool(int)> is_leaf;
  std::map<int, Pattern> memo;
  std::string error;

  Pattern leaf(const Shape& shape) {
    const Shape& ref = stage.reduce_shape;
    if (numel_value(shape) == 1) return Pattern::scalar;
    auto reduced = [&](size_t axis) {
      return std::find(stage.reduce_axes.begin(), stage.reduce_axes.end(), static_cast<int>(axis)) !=
             stage.reduce_axes.end();
    };
    if (shape.size() <= ref.size()) {
      size_t offset = ref.size() - shape.size();
      bool full = true, lane = true, group = true;
      for (size_t axis = 0; axis < ref.size(); ++axis) {
        int64_t v = axis < offset ? 1 : shape[axis - offset].value;
        full = full && v == ref[axis].value;
        lane = lane && (reduced(axis) ? v == ref[axis].value : v == 1);
        group = group && (reduced(axis) ? v == 1 : v == ref[axis].value);
      }
      if (full) return Pattern::full;
      if (lane) return Pattern::lane;
      if (group) return Pattern::group;
      // A tensor without the reduced dims (keepdim=False result) is per-row too.
      if (shape.size() == ref.size() - stage.reduce_axes.size()) {
        bool kept = true;
        size_t pos = 0;
        for (size_t axis = 0; axis < ref.size(); ++axis)
          if (!reduced(axis)) kept = kept && shape[pos++].value == ref[axis].value;
        if (kept) return Pattern::group;
      }
    }
    error = "an operand of shape " + std::to_string(shape.size()) + "-d does not line up with the reduced tensor";
    return Pattern::full;
  }

  Pattern of(int id) {
    auto it = memo.find(id);
    if (it != memo.end()) return it->second;
    const Node& node = g.nodes[id];
    Pattern p = Pattern::scalar;
    if (is_leaf(id)) {
      p = leaf(node.shape);
    } else if (node.kind == NodeKind::reduce) {
      p = Pattern::group;
    } else if (node.kind == NodeKind::constant || node.kind == NodeKind::red_len) {
      p = Pattern::scalar;
    } else if (node.kind == NodeKind::view) {
      p = of(node.args[0]);
      bool size_one_only = true;  // squeeze/unsqueeze only: any other view would reorder data
      int kept = 0;
      for (int s : node.src)
        if (s >= 0) size_one_only = size_one_only && s == kept++;
      if (!size_one_only || !node.flip.empty()) error = "a permuting view inside a reduction region is not supported";
    } else {
      for (int a : node.args) p = join(p, of(a));
    }
    return memo[id] = p;
  }
};

std::string ProgramEmitter::reduce_rows(const Stage& stage, const std::string& name, std::string& err) {
  Kernel k;
  k.name = name;
  k.output_buffer = buffer_of_.at(stage.root);
  const Shape& ref = stage.reduce_shape;
  const int axis = stage.reduce_axes.at(0);
  Shape outer_dims(ref.begin(), ref.begin() + axis), inner_dims(ref.begin() + axis + 1, ref.end());
  const bool last = inner_dims.empty() || numel_value(inner_dims) == 1;
  const bool group = s_.reduce == ReduceStrategy::group;
  if (group && !last) {
    err = "the group reduce strategy needs a last-dim reduction";
    return "";
  }
  PatternMap patterns{g_, stage, [&](int id) { return is_buffer_leaf(id, stage.root); }, {}, ""};
  std::string len = k.size(ref[axis].expr(), "len");
  std::string inner = last ? "1" : k.size(numel_expr(inner_dims), "inner");
  std::string groups = "1";
  if (!group && !(outer_dims.empty() && last))
    groups = k.size(numel_expr(outer_dims) + (last ? "" : "*" + numel_expr(inner_dims)), "groups");
  const std::string full_idx = group ? "base + col" : (last ? "base + ri" : "base + ri * " + inner);
  const std::string lane_idx = group ? "col" : "ri";
  const std::string group_idx = group ? "row" : "gid";

  // vector_width > 1 (item strategy, last dim): floatN loads along the row, a scalar tail.
  const int vec = s_.vector_width;
  if (vec > 1 && group) {
    err = "vector_width applies to the item strategy only";
    return "";
  }
  // Column mode (item strategy, a dim other than the last): floatN across adjacent outputs.
  const bool columns = !group && !last && vec > 1;
  int counter = 0;
  auto make = [&](int width) {
    ExprEmitter e(g_, width, &counter);
    e.red_len = len;
    e.is_leaf = [&](int id) { return is_buffer_leaf(id, stage.root); };
    e.hoist = [&](int id) {
      Pattern p = patterns.of(id);
      return p == Pattern::group || p == Pattern::scalar;
    };
    e.load = [&, width](int id, const std::vector<std::string>&) -> std::string {
      std::string buf = k.buffer(buffer_name(id));
      std::string vload = "vload" + std::to_string(width) + "(0, " + buf + " + ";
      switch (patterns.of(id)) {
        case Pattern::scalar: return buf + "[0]";
        case Pattern::lane: return width > 1 ? vload + lane_idx + ")" : buf + "[" + lane_idx + "]";
        case Pattern::group: return buf + "[" + group_idx + "]";
        case Pattern::full: return width > 1 ? vload + full_idx + ")" : buf + "[" + full_idx + "]";
      }
      return "";
    };
    return e;
  };
  ExprEmitter e = make(1);
  ExprEmitter ev = make(columns ? 1 : std::max(vec, 1));

  std::vector<int> reduces;
  for (int id = 0; id <= stage.root; ++id) {
    const Node& node = g_.nodes[id];
    if (node.kind == NodeKind::reduce && !is_buffer_leaf(id, stage.root)) {
      // Only reductions feeding this stage's root (the region) belong here.
      std::vector<int> stack = {stage.root};
      std::set<int> seen;
      bool in_region = false;
      while (!stack.empty() && !in_region) {
        int cur = stack.back();
        stack.pop_back();
        if (!seen.insert(cur).second) continue;
        if (cur == id) in_region = true;
        if (cur != stage.root && is_buffer_leaf(cur, stage.root)) continue;
        for (int a : g_.nodes[cur].args) stack.push_back(a);
      }
      if (in_region) reduces.push_back(id);
    }
  }
  patterns.of(stage.root);
  for (int id : reduces) patterns.of(g_.nodes[id].args[0]);
  if (!patterns.error.empty()) {
    err = patterns.error;
    return "";
  }

  const int wg = s_.work_group;
  std::ostringstream body;
  if (group) {
    k.attributes = "__attribute__((reqd_work_group_size(" + std::to_string(wg) + ", 1, 1))) ";
    k.grid = numel_expr(outer_dims).empty() ? "1" : numel_expr(outer_dims);
    k.block = std::to_string(wg);
    body << "  // one work-group per row of " << len << " elements; partial results combine in local memory\n";
    body << "  __local float red[" << wg << "];\n";
    body << "  const int row = get_group_id(0);\n  const int lid = get_local_id(0);\n";
    body << "  const int base = row * " << len << ";\n";
  } else {
    k.grid = "cdiv(" + (numel_expr(outer_dims) + (last ? "" : "*" + numel_expr(inner_dims))) + ", " + std::to_string(wg) + ")";
    k.block = std::to_string(wg);
    body << "  // one work-item per " << (last ? "row" : "output") << ": a sequential loop over the " << len
         << " reduced elements\n";
    body << "  const int gid = get_global_id(0);\n  if (gid >= " << groups << ") return;\n";
    if (last) {
      body << "  const int base = gid * " << len << ";\n";
    } else {
      body << "  const int base = (gid / " << inner << ") * " << len << " * " << inner << " + gid % " << inner << ";\n";
    }
  }
  const std::string header = body.str();
  body.str("");
  const std::string loop = group ? "for (int col = lid; col < " + len + "; col += " + std::to_string(wg) + ")"
                                 : "for (int ri = 0; ri < " + len + "; ++ri)";
  const std::string vn = std::to_string(vec);
  const std::string vloop = "for (; ri + " + vn + " <= " + len + "; ri += " + vn + ")";
  const std::string tail_loop = "for (; ri < " + len + "; ++ri)";
  for (size_t red_idx = 0; red_idx < reduces.size(); ++red_idx) {
    const Node& r = g_.nodes[reduces[red_idx]];
    std::string acc = "acc" + std::to_string(red_idx);
    std::string v = e.value(r.args[0], {});
    std::string loop_lines = e.take_lines("    ");
    if (vec > 1 && last) {
      std::string vv = ev.value(r.args[0], {});
      std::string vlines = ev.take_lines("    ");
      body << ev.take_outer("  ") << e.take_outer("  ");
      std::string accv = acc + "v";
      std::string h = accv + ".s0";
      for (int lane = 1; lane < vec; ++lane) h = combine_code(r.op, h, accv + ".s" + "0123456789abcdef"[lane]);
      body << "  float " << acc << ";\n  {\n";
      body << "    float" << vn << " " << accv << " = (float" << vn << ")(" << reduce_init(r.op) << ");\n";
      body << "    int ri = 0;\n" << unroll_pragma(s_.unroll, "    ");
      body << "    " << vloop << " {\n" << reindent(vlines, "      ") << "      " << accv << " = "
           << combine_code(r.op, accv, vv) << ";\n    }\n";
      body << "    " << acc << " = " << h << ";\n";
      body << "    " << tail_loop << " {\n" << reindent(loop_lines, "      ") << "      " << acc << " = "
           << combine_code(r.op, acc, v) << ";\n    }\n  }\n";
      e.known[reduces[red_idx]] = acc;
      ev.known[reduces[red_idx]] = acc;
      continue;
    }
    body << e.take_outer("  ");
    body << "  float " << acc << " = " << reduce_init(r.op) << ";\n";
    if (!group) body << unroll_pragma(s_.unroll, "  ");
    body << "  " << loop << " {\n" << loop_lines << "    " << acc << " = " << combine_code(r.op, acc, v) << ";\n  }\n";
    if (group) body << group_reduce(acc, r.op, wg, "  ");
    e.known[reduces[red_idx]] = acc;
    ev.known[reduces[red_idx]] = acc;
  }
  Pattern out_pattern = patterns.of(stage.root);
  std::string result = e.value(stage.root, {});
  if ((out_pattern == Pattern::full || out_pattern == Pattern::lane) && vec > 1 && last) {
    std::string loop_lines = e.take_lines("    ");
    std::string vresult = ev.value(stage.root, {});
    std::string vlines = ev.take_lines("    ");
    body << ev.take_outer("  ") << e.take_outer("  ");
    body << "  int ri = 0;\n  " << vloop << " {\n" << vlines << "    vstore" << vn << "(" << vresult << ", 0, "
         << k.output_buffer << " + " << full_idx << ");\n  }\n";
    body << "  " << tail_loop << " {\n" << loop_lines << "    " << k.output_buffer << "[" << full_idx << "] = " << result
         << ";\n  }\n";
  } else if (out_pattern == Pattern::full || out_pattern == Pattern::lane) {
    std::string loop_lines = e.take_lines("    ");
    body << e.take_outer("  ");
    body << "  " << loop << " {\n" << loop_lines << "    " << k.output_buffer << "[" << full_idx << "] = " << result << ";\n  }\n";
  } else {
    body << e.take_outer("  ") << e.take_lines("  ");
    if (group) body << "  if (lid == 0) " << k.output_buffer << "[row] = " << result << ";\n";
    else body << "  " << k.output_buffer << "[gid] = " << result << ";\n";
  }
  k.body = header + body.str();
  if (columns) {
    std::string vector_part = column_vectors(stage, k, patterns, reduces, len, inner, groups, err);
    if (!err.empty()) return "";
    // Outputs whose floatN group would cross a row of the inner dims go one by one.
    k.grid = "cdiv(" + numel_expr(outer_dims) + "*" + numel_expr(inner_dims) + ", " + std::to_string(wg * vec) + ")";
    k.body = "  // one work-item per " + std::to_string(vec) + " adjacent outputs: float" + std::to_string(vec) +
             " loads across the inner dim, one loop over the " + len + " reduced elements\n" + vector_part +
             "  } else {\n    for (int gid = q0; gid < min(q0 + " + std::to_string(vec) + ", " + groups + "); ++gid) {\n" +
             "      const int base = (gid / " + inner + ") * " + len + " * " + inner + " + gid % " + inner + ";\n" +
             indent_more(body.str(), "    ") + "    }\n  }\n";
  }
  return k.render();
}

// Column mode of reduce_rows: work-item q handles outputs q0 .. q0+vec-1, which are
// adjacent along the inner dims, so every load along the reduced dim is one floatN.
std::string ProgramEmitter::column_vectors(const Stage& stage, Kernel& k, PatternMap& patterns,
                                           const std::vector<int>& reduces, const std::string& len,
                                           const std::string& inner, const std::string& groups, std::string& err) {
  const int vec = s_.vector_width;
  const std::string vn = std::to_string(vec);
  int counter = 0;  // the vector branch is its own scope
  ExprEmitter e(g_, vec, &counter);
  e.red_len = len;
  e.is_leaf = [&](int id) { return is_buffer_leaf(id, stage.root); };
  e.hoist = [&](int id) {
    Pattern p = patterns.of(id);
    return p == Pattern::group || p == Pattern::scalar;
  };
  e.load = [&](int id, const std::vector<std::string>&) -> std::string {
    std::string buf = k.buffer(buffer_name(id));
    switch (patterns.of(id)) {
      case Pattern::scalar: return buf + "[0]";
      case Pattern::lane: return buf + "[ri]";
      case Pattern::group: return "vload" + vn + "(0, " + buf + " + q0)";
      case Pattern::full: return "vload" + vn + "(0, " + buf + " + base + ri * " + inner + ")";
    }
    return "";
  };
  std::ostringstream body;
  body << "  const int q0 = get_global_id(0) * " << vec << ";\n  if (q0 >= " << groups << ") return;\n";
  body << "  if (q0 % " << inner << " + " << vec << " <= " << inner << ") {\n";
  body << "    const int base = (q0 / " << inner << ") * " << len << " * " << inner << " + q0 % " << inner << ";\n";
  for (size_t red_idx = 0; red_idx < reduces.size(); ++red_idx) {
    const Node& r = g_.nodes[reduces[red_idx]];
    std::string acc = "acc" + std::to_string(red_idx);
    std::string v = e.value(r.args[0], {});
    std::string lines = e.take_lines("      ");
    body << e.take_outer("    ");
    body << "    float" << vn << " " << acc << " = (float" << vn << ")(" << reduce_init(r.op) << ");\n";
    body << unroll_pragma(s_.unroll, "    ");
    body << "    for (int ri = 0; ri < " << len << "; ++ri) {\n" << lines << "      " << acc << " = "
         << combine_code(r.op, acc, v) << ";\n    }\n";
    e.known[reduces[red_idx]] = acc;
  }
  Pattern out_pattern = patterns.of(stage.root);
  std::string result = e.value(stage.root, {});
  const std::string out = buffer_of_.at(stage.root);
  if (out_pattern == Pattern::full || out_pattern == Pattern::lane) {
    std::string lines = e.take_lines("      ");
    body << e.take_outer("    ");
    body << "    for (int ri = 0; ri < " << len << "; ++ri) {\n" << lines << "      vstore" << vn << "(" << result << ", 0, "
         << out << " + base + ri * " << inner << ");\n    }\n";
  } else {
    body << e.take_outer("    ") << e.take_lines("    ");
    body << "    vstore" << vn << "(" << result << ", 0, " << out << " + q0);\n";
  }
  return body.str();
}

// Two passes over everything: `partials` work-groups each reduce a grid-stride slice
// into scratch, then one work-group combines the partials and applies the epilogue.
std::string ProgramEmitter::reduce_full(const Stage& stage, const std::string& name, std::string& err) {
  std::vector<int> reduces;
  for (int id = 0; id <= stage.root; ++id)
    if (g_.nodes[id].kind == NodeKind::reduce && !is_buffer_leaf(id, stage.root)) reduces.push_back(id);
  if (reduces.size() != 1) {
    err = "a full reduction region must hold exactly one reduction";
    return "";
  }
  const Node& red = g_.nodes[reduces[0]];
  const int wg = s_.work_group, parts = s_.partials;
  const std::string partial = buffer_of_.at(stage.root) == "out" ? "partial" : "partial_" + buffer_of_.at(stage.root);
  scratch_.push_back("// kforge-scratch: " + partial + " float " + std::to_string(parts) + "\n");

  Kernel k1;
  k1.name = name + "_partial";
  k1.output_buffer = partial;
  const std::string n = k1.size(numel_expr(stage.reduce_shape), "n");
  int counter = 0;
  ExprEmitter e1(g_, 1, &counter);
  e1.is_leaf = [&](int id) { return is_buffer_leaf(id, stage.root); };
  e1.load = [&](int id, const std::vector<std::string>&) -> std::string {
    std::string buf = k1.buffer(buffer_name(id));
    int64_t numel = numel_value(g_.nodes[id].shape);
    if (numel == 1) return buf + "[0]";
    if (numel != numel_value(stage.reduce_shape)) {
      err = "a broadcast operand inside a full reduction is not supported";
      return buf + "[0]";
    }
    return buf + "[i]";
  };
  std::string v = e1.value(red.args[0], {});
  std::string lines = e1.take_lines("    ");
  if (!err.empty()) return "";
  k1.attributes = "__attribute__((reqd_work_group_size(" + std::to_string(wg) + ", 1, 1))) ";
  k1.grid = std::to_string(parts);
  k1.block = std::to_string(wg);
  std::ostringstream b1;
  b1 << "  // pass 1 of 2: each of the " << parts << " work-groups reduces a grid-stride slice\n";
  b1 << "  __local float red[" << wg << "];\n  const int lid = get_local_id(0);\n";
  b1 << "  float acc = " << reduce_init(red.op) << ";\n";
  b1 << unroll_pragma(s_.unroll, "  ");
  b1 << "  for (int i = get_global_id(0); i < " << n << "; i += get_global_size(0)) {\n" << lines;
  b1 << "    acc = " << combine_code(red.op, "acc", v) << ";\n  }\n";
  b1 << group_reduce("acc", red.op, wg, "  ");
  b1 << "  if (lid == 0) " << partial << "[get_group_id(0)] = acc;\n";
  k1.body = b1.str();

  Kernel k2;
  k2.name = name + "_final";
  k2.output_buffer = buffer_of_.at(stage.root);
  k2.buffer(partial);
  const std::string n2 = k2.size(numel_expr(stage.reduce_shape), "n");
  ExprEmitter e2(g_, 1, &counter);
  e2.red_len = n2;
  e2.is_leaf = [&](int id) { return is_buffer_leaf(id, stage.root); };
  e2.load = [&](int id, const std::vector<std::string>&) { return k2.buffer(buffer_name(id)) + "[0]"; };
  e2.known[reduces[0]] = "acc";
  std::string result = e2.value(stage.root, {});
  k2.attributes = k1.attributes;
  k2.grid = "1";
  k2.block = std::to_string(wg);
  std::ostringstream b2;
  b2 << "  // pass 2 of 2: one work-group combines the " << parts << " partial results\n";
  b2 << "  __local float red[" << wg << "];\n  const int lid = get_local_id(0);\n";
  b2 << "  float acc = " << reduce_init(red.op) << ";\n";
  b2 << "  for (int i = lid; i < " << parts << "; i += " << wg << ") acc = "
     << combine_code(red.op, "acc", k2.buffer_param[partial] + "[i]") << ";\n";
  b2 << group_reduce("acc", red.op, wg, "  ");
  b2 << "  if (lid == 0) {\n" << e2.take_outer("    ") << e2.take_lines("    ") << "    " << k2.output_buffer
     << "[0] = " << result << ";\n  }\n";
  k2.body = b2.str();
  return k1.render() + "\n" + k2.render();
}

// ---------------------------------------------------------------------- matmul
// C[b, m, n] = sum_k A[b, m, k] * B[b, k, n] with TS x TS tiles of A and B staged in
// local memory; each work-item accumulates work_per_item rows of one column, then
// applies the fused epilogue before its single store.
std::string ProgramEmitter::matmul(const Stage& stage, const std::string& name, std::string& err) {
  if (s_.tile == 0) return matmul_registers(stage, name, err);
  const int ts = s_.tile, wpt = s_.work_per_item;
  if (wpt < 1 || ts % wpt != 0) {
    err = "work_per_item must divide tile";
    return "";
  }
  const int rts = ts / wpt;
  const Node& mm = g_.nodes[stage.anchor];
  Kernel k;
  k.name = name;
  k.output_buffer = buffer_of_.at(stage.root);
  auto strip = [&](int id, bool& transposed) {
    transposed = false;
    while (g_.nodes[id].kind == NodeKind::view) {
      transposed = !transposed;
      id = g_.nodes[id].args[0];
    }
    return id;
  };
  bool trans_a = false, trans_b = false;
  int a_id = strip(mm.args[0], trans_a), b_id = strip(mm.args[1], trans_b);
  const Shape &a_eff = g_.nodes[mm.args[0]].shape, &b_eff = g_.nodes[mm.args[1]].shape;
  const std::string a = k.buffer(buffer_name(a_id)), b = k.buffer(buffer_name(b_id));
  const bool batched = a_eff.size() == 3;
  const bool b_batched = b_eff.size() == 3;
  const bool mv = b_eff.size() == 1;
  const std::string M = k.size(a_eff[a_eff.size() - 2].expr(), "M");
  const std::string K = k.size(a_eff.back().expr(), "K");
  const std::string N = mv ? "1" : k.size(b_eff.back().expr(), "N");
  const std::string a_off = std::string(batched ? "bat * " + M + " * " + K + " + " : "") +
                            (trans_a ? "ak * " + M + " + am" : "am * " + K + " + ak");
  const std::string b_off = mv ? "bk"
                               : std::string(b_batched ? "bat * " + K + " * " + N + " + " : "") +
                                     (trans_b ? "bn * " + K + " + bk" : "bk * " + N + " + bn");
  k.attributes = "__attribute__((reqd_work_group_size(" + std::to_string(ts) + ", " + std::to_string(rts) + ", 1))) ";
  k.grid = "cdiv(" + b_eff.back().expr() + ", " + std::to_string(ts) + "),cdiv(" + a_eff[a_eff.size() - 2].expr() +
           ", " + std::to_string(ts) + ")" + (batched ? "," + a_eff[0].expr() : ",1");
  if (mv) k.grid = "1,cdiv(" + a_eff[0].expr() + ", " + std::to_string(ts) + "),1";
  k.block = std::to_string(ts) + "," + std::to_string(rts) + ",1";

  // Epilogue: the stage root as a function of acc[w] at coordinates (bat, m, n).
  const Shape& out_shape = g_.nodes[stage.root].shape;
  std::vector<std::string> coords;
  if (out_shape.size() == 3) coords = {"bat", "m", "n"};
  else if (out_shape.size() == 2) coords = {"m", "n"};
  else coords = {"m"};
  const std::string out_idx = out_shape.size() == 3 ? "(bat * " + M + " + m) * " + N + " + n"
                              : out_shape.size() == 2 ? "m * " + N + " + n" : "m";
  int counter = 0;
  ExprEmitter e(g_, 1, &counter);
  e.is_leaf = [&](int id) { return id != stage.anchor && is_buffer_leaf(id, stage.root); };
  e.known[stage.anchor] = "acc[wr]";
  e.load = [&](int id, const std::vector<std::string>& c) -> std::string {
    std::string buf = k.buffer(buffer_name(id));
    const Shape& shape = g_.nodes[id].shape;
    if (numel_value(shape) == 1) return buf + "[0]";
    bool linear = c == coords && shape.size() == out_shape.size();
    for (size_t axis = 0; linear && axis < shape.size(); ++axis) linear = shape[axis].value == out_shape[axis].value;
    if (linear) return buf + "[" + out_idx + "]";
    return buf + "[" + offset(k, shape, c) + "]";
  };
  std::string result = e.value(stage.root, coords);
  std::string epilogue = e.take_outer("      ") + e.take_lines("      ");

  std::ostringstream body;
  body << "  __local float tile_a[" << ts << "][" << ts << "];  // [m][k]\n";
  body << "  __local float tile_b[" << ts << "][" << ts << "];  // [k][n]\n";
  body << "  const int lx = get_local_id(0), ly = get_local_id(1);\n";
  body << "  const int n = get_group_id(0) * " << ts << " + lx;\n";
  body << "  const int m0 = get_group_id(1) * " << ts << ";\n";
  if (batched) body << "  const int bat = get_group_id(2);\n";
  body << "  float acc[" << wpt << "];\n";
  body << "  for (int wr = 0; wr < " << wpt << "; ++wr) acc[wr] = 0.0f;\n";
  body << "  for (int k0 = 0; k0 < " << K << "; k0 += " << ts << ") {\n";
  body << "    for (int wr = 0; wr < " << wpt << "; ++wr) {\n";
  body << "      const int tr = ly + wr * " << rts << ";\n";
  body << "      const int am = m0 + tr, ak = k0 + lx;\n";
  body << "      tile_a[tr][lx] = (am < " << M << " && ak < " << K << ") ? " << a << "[" << a_off << "] : 0.0f;\n";
  body << "      const int bk = k0 + tr, bn = n;\n";
  body << "      tile_b[tr][lx] = (bk < " << K << " && bn < " << N << ") ? " << b << "[" << b_off << "] : 0.0f;\n";
  body << "    }\n    barrier(CLK_LOCAL_MEM_FENCE);\n";
  body << unroll_pragma(s_.unroll, "    ");
  body << "    for (int kk = 0; kk < " << ts << "; ++kk) {\n";
  body << "      const float bv = tile_b[kk][lx];\n";
  body << "      for (int wr = 0; wr < " << wpt << "; ++wr) acc[wr] += tile_a[ly + wr * " << rts << "][kk] * bv;\n";
  body << "    }\n    barrier(CLK_LOCAL_MEM_FENCE);\n  }\n";
  body << "  for (int wr = 0; wr < " << wpt << "; ++wr) {\n";
  body << "    const int m = m0 + ly + wr * " << rts << ";\n";
  body << "    if (m < " << M << " && n < " << N << ") {\n" << epilogue;
  body << "      " << k.output_buffer << "[" << out_idx << "] = " << result << ";\n    }\n  }\n";
  k.body = body.str();
  return k.render();
}

// Register-blocked matmul for CPUs (tile 0): no local memory or barriers; each
// work-item keeps a block of outputs in registers and streams A and B through the
// caches with floatN loads. B as [K, N] (plain): floatN across n, work_per_item rows.
// B as [N, K] (a transposed view, e.g. linear's weight): floatN along k for
// work_per_item x per_item dot products, summed across lanes at the end.
std::string ProgramEmitter::matmul_registers(const Stage& stage, const std::string& name, std::string& err) {
  const Node& mm = g_.nodes[stage.anchor];
  const int rm = std::max(1, s_.work_per_item), vec = s_.vector_width, cn = std::max(1, s_.per_item);
  if (vec != 4 && vec != 8) {
    err = "register-blocked matmul needs vector_width 4 or 8";
    return "";
  }
  const std::string vn = std::to_string(vec), fv = "float" + vn;
  Kernel k;
  k.name = name;
  k.output_buffer = buffer_of_.at(stage.root);
  bool trans_a = false, trans_b = false;
  auto strip = [&](int id, bool& transposed) {
    while (g_.nodes[id].kind == NodeKind::view) {
      transposed = !transposed;
      id = g_.nodes[id].args[0];
    }
    return id;
  };
  int a_id = strip(mm.args[0], trans_a), b_id = strip(mm.args[1], trans_b);
  const Shape &a_eff = g_.nodes[mm.args[0]].shape, &b_eff = g_.nodes[mm.args[1]].shape;
  if (trans_a || b_eff.size() == 1) {
    err = "register-blocked matmul needs a plain A and a matrix B";
    return "";
  }
  const std::string a = k.buffer(buffer_name(a_id)), b = k.buffer(buffer_name(b_id));
  const bool batched = a_eff.size() == 3, b_batched = b_eff.size() == 3;
  const std::string M = k.size(a_eff[a_eff.size() - 2].expr(), "M");
  const std::string K = k.size(a_eff.back().expr(), "K");
  const std::string N = k.size(b_eff.back().expr(), "N");
  const std::string a_base = batched ? "bat * " + M + " * " + K + " + " : "";
  const std::string b_base = b_batched ? "bat * " + K + " * " + N + " + " : "";
  const int cols = trans_b ? cn : vec;  // outputs per work-item along n
  k.grid = "cdiv(" + b_eff.back().expr() + ", " + std::to_string(cols * 8) + "),cdiv(" +
           a_eff[a_eff.size() - 2].expr() + ", " + std::to_string(rm * 8) + ")," + (batched ? a_eff[0].expr() : "1");
  k.block = "8,8,1";

  const Shape& out_shape = g_.nodes[stage.root].shape;
  std::vector<std::string> coords;
  if (out_shape.size() == 3) coords = {"bat", "m", "n"};
  else coords = {"m", "n"};
  const std::string out_row = out_shape.size() == 3 ? "(bat * " + M + " + m) * " + N : "m * " + N;
  // Epilogue emitters: scalar at (m, n); vector at (m, n..n+vec-1) for the plain form.
  int counter = 0;
  auto make = [&](int width) {
    ExprEmitter e(g_, width, &counter);
    e.is_leaf = [&](int id) { return id != stage.anchor && is_buffer_leaf(id, stage.root); };
    e.load = [&, width](int id, const std::vector<std::string>& c) -> std::string {
      std::string buf = k.buffer(buffer_name(id));
      const Shape& shape = g_.nodes[id].shape;
      if (numel_value(shape) == 1) return buf + "[0]";
      std::string off = offset(k, shape, c);
      if (width == 1) return buf + "[" + off + "]";
      if (c.empty() || c.back() != "n") {
        // Constant along n: one scalar broadcast to every lane; varying along n in another dim: no floatN load.
        for (const auto& coord : c)
          if (coord == "n") err = "an epilogue operand is transposed along n; use a tiled schedule";
        return buf + "[" + off + "]";
      }
      return "vload" + std::to_string(width) + "(0, " + buf + " + " + off + ")";
    };
    return e;
  };
  std::ostringstream body;
  body << "  const int n0 = get_global_id(0)" << (cols > 1 ? " * " + std::to_string(cols) : "") << ";\n";
  body << "  const int m0 = get_global_id(1) * " << rm << ";\n";
  if (batched) body << "  const int bat = get_global_id(2);\n";
  body << "  if (n0 >= " << N << " || m0 >= " << M << ") return;\n";
  if (!trans_b) {
    ExprEmitter ev = make(vec);
    ev.known[stage.anchor] = "acc[r]";
    std::string vres = ev.value(stage.root, coords);
    std::string vlines = ev.take_lines("        ");
    ExprEmitter es = make(1);
    es.known[stage.anchor] = "sum";
    std::string sres = es.value(stage.root, coords);
    std::string slines = es.take_lines("          ");
    if (!err.empty()) return "";
    body << "  // " << rm << " rows x " << vec << " columns per work-item, " << fv << " accumulators\n";
    body << "  if (n0 + " << vec << " <= " << N << ") {\n";
    body << "    " << fv << " acc[" << rm << "];\n";
    body << "    for (int r = 0; r < " << rm << "; ++r) acc[r] = (" << fv << ")(0.0f);\n";
    body << unroll_pragma(s_.unroll, "    ");
    body << "    for (int kk = 0; kk < " << K << "; ++kk) {\n";
    body << "      const " << fv << " bv = vload" << vn << "(0, " << b << " + " << b_base << "kk * " << N << " + n0);\n";
    body << "      for (int r = 0; r < " << rm << "; ++r)\n";
    body << "        if (m0 + r < " << M << ") acc[r] += " << a << "[" << a_base << "(m0 + r) * " << K << " + kk] * bv;\n";
    body << "    }\n";
    body << "    for (int r = 0; r < " << rm << "; ++r) {\n      const int m = m0 + r;\n      const int n = n0;\n";
    body << "      if (m < " << M << ") {\n" << vlines << "        vstore" << vn << "(" << vres << ", 0, " << k.output_buffer
         << " + " << out_row << " + n);\n      }\n    }\n";
    body << "  } else {  // the last N % " << vec << " columns, one output at a time\n";
    body << "    for (int r = 0; r < " << rm << "; ++r) {\n      const int m = m0 + r;\n      if (m >= " << M
         << ") break;\n";
    body << "      for (int n = n0; n < " << N << "; ++n) {\n        float sum = 0.0f;\n";
    body << "        for (int kk = 0; kk < " << K << "; ++kk) sum += " << a << "[" << a_base << "m * " << K << " + kk] * "
         << b << "[" << b_base << "kk * " << N << " + n];\n";
    body << slines << "          " << k.output_buffer << "[" << out_row << " + n] = " << sres << ";\n      }\n    }\n  }\n";
  } else {
    ExprEmitter es = make(1);
    es.known[stage.anchor] = "sum[r][c]";
    std::string sres = es.value(stage.root, coords);
    std::string slines = es.take_lines("        ");
    if (!err.empty()) return "";
    body << "  // " << rm << " x " << cn << " dot products per work-item along k, " << fv << " partial sums\n";
    body << "  " << fv << " acc[" << rm << "][" << cn << "];\n";
    body << "  for (int r = 0; r < " << rm << "; ++r)\n    for (int c = 0; c < " << cn << "; ++c) acc[r][c] = (" << fv
         << ")(0.0f);\n";
    body << "  int kk = 0;\n" << unroll_pragma(s_.unroll, "  ");
    body << "  for (; kk + " << vec << " <= " << K << "; kk += " << vec << ") {\n";
    body << "    " << fv << " av[" << rm << "];\n";
    body << "    for (int r = 0; r < " << rm << "; ++r)\n      av[r] = m0 + r < " << M << " ? vload" << vn << "(0, " << a
         << " + " << a_base << "(m0 + r) * " << K << " + kk) : (" << fv << ")(0.0f);\n";
    body << "    for (int c = 0; c < " << cn << "; ++c) {\n      if (n0 + c >= " << N << ") break;\n";
    body << "      const " << fv << " bv = vload" << vn << "(0, " << b << " + " << b_base << "(n0 + c) * " << K
         << " + kk);\n";
    body << "      for (int r = 0; r < " << rm << "; ++r) acc[r][c] += av[r] * bv;\n    }\n  }\n";
    std::string h = "acc[r][c].s0";
    for (int lane = 1; lane < vec; ++lane) h += " + acc[r][c].s" + std::string(1, "0123456789abcdef"[lane]);
    body << "  float sum[" << rm << "][" << cn << "];\n";
    body << "  for (int r = 0; r < " << rm << "; ++r)\n    for (int c = 0; c < " << cn << "; ++c) {\n";
    body << "      sum[r][c] = " << h << ";\n";
    body << "      if (m0 + r < " << M << " && n0 + c < " << N << ")\n";
    body << "        for (int kt = kk; kt < " << K << "; ++kt)\n          sum[r][c] += " << a << "[" << a_base
         << "(m0 + r) * " << K << " + kt] * " << b << "[" << b_base << "(n0 + c) * " << K << " + kt];\n    }\n";
    body << "  for (int r = 0; r < " << rm << "; ++r)\n    for (int c = 0; c < " << cn << "; ++c) {\n";
    body << "      const int m = m0 + r, n = n0 + c;\n      if (m < " << M << " && n < " << N << ") {\n" << slines;
    body << "        " << k.output_buffer << "[" << out_row << " + n] = " << sres << ";\n      }\n    }\n";
  }
  k.body = body.str();
  return k.render();
}

}  // namespace

std::vector<std::string> supported_targets() { return {"opencl"}; }

std::string Schedule::label() const {
  std::string s = "wg" + std::to_string(work_group) + ".ept" + std::to_string(per_item) + ".vec" +
                  std::to_string(vector_width) + ".ts" + std::to_string(tile) + ".wpt" + std::to_string(work_per_item) +
                  ".u" + std::to_string(unroll) + (reduce == ReduceStrategy::group ? ".group" : ".item") + ".p" +
                  std::to_string(partials);
  return s;
}

Generated emit_program(const Analysis& analysis, const Schedule& schedule) {
  if (!analysis.ok()) return Generated{"", analysis.unsupported};
  try {
    return ProgramEmitter(analysis, schedule).run();
  } catch (const std::exception& e) {
    return Generated{"", std::string("internal: ") + e.what()};
  }
}

Generated compile_op(const spec::OpSpec& spec, const Schedule& schedule) {
  return emit_program(analyze(spec), schedule);
}

}  // namespace kforge::codegen
