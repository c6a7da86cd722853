// Triton emission (emit_triton.h): the module around the kernels (imports, forward with
// its allocations and launches), and the pointwise, scan and arg_reduce stages.
// Test: ctest -R 'codegen_(lower|triton)'.
#include "worker/codegen/emit_triton.h"

#include <regex>
#include <set>
#include <sstream>

namespace kforge::codegen::emit {
namespace {

// Names forward and the kernels use themselves, Python keywords, and what Triton's rules
// refuse (worker/harness/runner/triton_rules.py): an input called one of these is renamed.
const std::set<std::string> kReservedPy = {
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "eval", "exec", "compile", "open",
    "input", "globals", "locals", "vars", "getattr", "setattr", "delattr", "breakpoint", "memoryview", "type",
    "object", "super", "id", "hash", "exit", "quit", "help", "dir", "float", "int", "range", "min", "max", "len",
    "torch", "triton", "tl", "math", "forward", "out", "offs", "mask", "pid", "rows", "cols", "rmask", "cmask",
    "fmask", "base", "carry", "best", "best_idx", "o", "i", "r", "r0", "k0", "m", "n", "bat", "rm", "rn", "rk",
    "inner", "groups", "lines", "nib", "imask", "lmask", "start", "acc", "partial", "a_ptrs", "b_ptrs", "a_tile",
    "b_tile", "vals", "chunk", "chunk_idx", "take", "num_m", "num_n", "per_group", "first_m", "group_rows", "pid_m", "pid_n", "M", "N", "K",
    "ci", "grp", "cog", "cnt", "sk", "k_slice", "k_first", "splitk", "wt", "tap", "co"};

std::string py_param_name(const std::string& name) {
  static const std::regex generated(R"((v|c|acc|red|tmp|partial)\d*|(splitk|wt)_\w+|(xoff|woff|kd|ix|ok|t|o)\d+|.*_size\d+|[A-Z_]+)");
  if (kReservedPy.count(name) || std::regex_match(name, generated) || name.empty() || name[0] == '_')
    return "in_" + (name.empty() || name[0] != '_' ? name : name.substr(name.find_first_not_of('_')));
  return name;
}

}  // namespace

// ------------------------------------------------------------------ TritonKernel

std::string TritonKernel::buffer(const std::string& forward_name) {
  auto it = buffer_param.find(forward_name);
  if (it != buffer_param.end()) return it->second;
  buffer_param[forward_name] = forward_name;
  params.insert(params.begin() + static_cast<long>(buffers_read), forward_name);
  args.insert(args.begin() + static_cast<long>(buffers_read), forward_name);
  ++buffers_read;
  ++buffers;
  return forward_name;
}

std::string TritonKernel::output(const std::string& forward_name) {
  auto it = buffer_param.find(forward_name);
  if (it != buffer_param.end()) return it->second;
  buffer_param[forward_name] = forward_name;
  params.insert(params.begin() + static_cast<long>(buffers), forward_name);
  args.insert(args.begin() + static_cast<long>(buffers), forward_name);
  ++buffers;
  return forward_name;
}

std::string TritonKernel::size(const std::string& expr, const std::string& preferred) {
  bool literal = !expr.empty() && expr.find_first_not_of("0123456789") == std::string::npos;
  if (literal) return expr;
  auto it = size_param.find(expr);
  if (it != size_param.end()) return it->second;
  std::string name = preferred;
  for (int suffix = 2; std::find(params.begin(), params.end(), name) != params.end(); ++suffix)
    name = preferred + std::to_string(suffix);
  size_param[expr] = name;
  params.push_back(name);
  args.push_back(expr);
  return name;
}

std::string TritonKernel::constant(const std::string& name, const std::string& value) {
  constexprs.emplace_back(name, value);
  return name;
}

std::string TritonKernel::render() const {
  std::ostringstream out;
  out << "@triton.jit\ndef " << name << "(";
  for (size_t idx = 0; idx < params.size(); ++idx) out << (idx ? ", " : "") << params[idx];
  for (size_t idx = 0; idx < constexprs.size(); ++idx)
    out << (params.empty() && idx == 0 ? "" : ", ") << constexprs[idx].first << ": tl.constexpr";
  out << "):\n" << body;
  return out.str();
}

std::string TritonKernel::launch() const {
  std::ostringstream out;
  out << "    " << name << "[" << grid << "](";
  for (size_t idx = 0; idx < args.size(); ++idx) out << (idx ? ", " : "") << args[idx];
  for (const auto& [key, value] : constexprs) out << ", " << key << "=" << value;
  out << ", num_warps=" << warps;
  if (stages > 0) out << ", num_stages=" << stages;
  out << ")\n";
  return out.str();
}

// ----------------------------------------------------------------- TritonEmitter

TritonEmitter::TritonEmitter(const Analysis& a, const Schedule& s) : StageBuffers(a), s_(s) {
  for (const auto& name : g_.input_names) py_name_[name] = py_param_name(name);
  for (int root : scratch_roots_)
    allocations_.push_back("    " + buffer_of_.at(root) + " = torch.empty((" + py(numel_expr(g_.nodes[root].shape)) +
                           ",), device=" + py_name_.at(g_.input_names.at(0)) + ".device, dtype=torch.float32)\n");
}

std::string TritonEmitter::py(const std::string& size_expr) const {
  // "x.size(1)" names the op's input; forward may call it differently. Launch formulas
  // divide integers with C's "/" (conv output sizes): Python's is "//".
  static const std::regex size_call(R"(\b(\w+)\.size\()");
  std::string out;
  auto begin = std::sregex_iterator(size_expr.begin(), size_expr.end(), size_call);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out += size_expr.substr(last, it->position(0) - last);
    auto renamed = py_name_.find((*it)[1].str());
    out += (renamed == py_name_.end() ? (*it)[1].str() : renamed->second) + ".size(";
    last = it->position(0) + it->length(0);
  }
  out += size_expr.substr(last);
  for (size_t pos = 0; (pos = out.find(" / ", pos)) != std::string::npos; pos += 4) out.replace(pos, 3, " // ");
  return out;
}

std::string TritonEmitter::dim(TritonKernel& k, const Dim& d) const {
  if (!d.formula.empty()) return k.size(py(d.formula), d.name.empty() ? "size_sum" : d.name);
  if (d.axis < 0) return std::to_string(d.value);
  return k.size(py(d.expr()), py_name_.at(d.input) + "_size" + std::to_string(d.axis));
}

std::string TritonEmitter::forward_buffer(int id) const {
  const std::string name = buffer_name(id);
  auto renamed = py_name_.find(name);
  return g_.nodes[g_.storage(id)].kind == NodeKind::input && renamed != py_name_.end() ? renamed->second : name;
}

TritonKernel TritonEmitter::kernel(const std::string& name) const {
  TritonKernel k;
  k.name = name;
  k.warps = s_.warps;
  return k;
}

ExprEmitter TritonEmitter::expr(int* counter, int root) const {
  ExprEmitter e(g_, 1, counter, Target::triton);
  e.is_leaf = [this, root](int id) { return is_buffer_leaf(id, root); };
  return e;
}

std::string TritonEmitter::load(TritonKernel& k, int id, const std::string& idx, const std::string& mask,
                                const std::string& evict) {
  const Node& leaf = g_.nodes[id];
  const std::string buf = k.buffer(forward_buffer(id));
  if (numel_value(leaf.shape) == 1) return "tl.load(" + buf + ")";
  const std::string other = leaf.int_type.empty() ? "0.0" : "0";
  const std::string policy = evict.empty() ? "" : ", eviction_policy=\"" + evict + "\"";
  return "tl.load(" + buf + " + " + idx + ", mask=" + mask + ", other=" + other + policy + ")";
}

Generated TritonEmitter::run() {
  Generated gen;
  for (size_t stage_idx = 0; stage_idx < a_.stages.size(); ++stage_idx) {
    const Stage& stage = a_.stages[stage_idx];
    std::string base = kernel_name(a_, stage_idx);
    std::string err;
    switch (stage.kind) {
      case StageKind::pointwise: pointwise(stage, base, err); break;
      case StageKind::reduce_rows: reduce_rows(stage, base, err); break;
      case StageKind::reduce_full: reduce_full(stage, base, err); break;
      case StageKind::matmul: matmul(stage, base, err); break;
      case StageKind::scan: scan(stage, base, err); break;
      case StageKind::arg_reduce: arg_reduce(stage, base, err); break;
      case StageKind::window: window(stage, base, err); break;
    }
    if (!err.empty()) {
      gen.unsupported = err;
      return gen;
    }
  }
  std::ostringstream out;
  out << "# " << a_.op_name << ": generated by the kforge teacher compiler (" << a_.describe() << ", schedule "
      << s_.label() << ", target triton)\n";
  bool has_matmul = false;  // a tl.dot: a matmul stage or a conv as an implicit GEMM
  for (const Stage& stage : a_.stages)
    has_matmul |= stage.kind == StageKind::matmul ||
                  (stage.kind == StageKind::window && conv_as_gemm(g_.nodes[stage.anchor]));
  has_matmul &= !s_.line_group;  // a matrix-vector product as rows: products and a tl.sum, no tl.dot
  if (has_matmul && s_.dot_x3)
    out << "# tl.dot with input_precision=\"tf32x3\": each fp32 product as three TF32 products on the tensor cores\n"
           "# (error close to fp32's); the harness's reference and baselines run in fp32 with TF32 off\n";
  else if (has_matmul)
    out << "# tl.dot in fp32 with input_precision=\"ieee\": TF32 off, as the harness's reference and its eager and\n"
           "# torch.compile baselines run\n";
  out << "import torch\nimport triton\nimport triton.language as tl\n";
  for (const auto& k : kernels_) out << "\n\n" << k.render();
  out << "\n\ndef forward(";
  for (size_t idx = 0; idx < g_.input_names.size(); ++idx) out << (idx ? ", " : "") << py_name_.at(g_.input_names[idx]);
  out << "):\n";
  const Node& result = g_.nodes[g_.output];
  std::string shape;
  for (const Dim& d : result.shape) shape += py(d.expr()) + ", ";
  if (result.shape.size() > 1) shape = shape.substr(0, shape.size() - 2);
  out << "    out = torch.empty((" << shape << "), device=" << py_name_.at(g_.input_names.at(0))
      << ".device, dtype=" << (result.int_type.empty() ? "torch.float32" : "torch.int64") << ")\n";
  for (const auto& line : allocations_) out << line;
  for (const auto& k : kernels_) out << k.launch();
  out << "    return out\n";
  gen.program = out.str();
  return gen;
}

// ------------------------------------------------------------------- pointwise

// One program per BLOCK output elements; operands with the output's shape are read at the
// flat offset, others (broadcast, permuted, flipped, gathered, joined) at coordinates
// c0..cR of the output computed from it.
void TritonEmitter::pointwise(const Stage& stage, const std::string& name, std::string& err) {
  TritonKernel k = kernel(name);
  const Shape& out_shape = g_.nodes[stage.root].shape;
  std::vector<std::string> coords;
  for (int axis = 0; axis < static_cast<int>(out_shape.size()); ++axis) coords.push_back("c" + std::to_string(axis));
  const std::string out = k.output(buffer_of_.at(stage.root));
  const std::string n = k.size(py(numel_expr(out_shape)), "n");
  int counter = 0;
  bool need_coords = false;
  ExprEmitter e = element_expr(stage, k, coords, &counter, need_coords);
  const std::string result = e.value(stage.root, coords);
  const std::string lines = e.take_lines("    ");
  std::ostringstream body;
  body << element_head(k, out_shape, n);
  if (need_coords) body << coordinate_lines(k, out_shape);
  body << lines << "    tl.store(" << out << " + offs, " << result << ", mask=mask)\n";
  k.body = body.str();
  (void)err;
  kernels_.push_back(k);
}

// Operands with the output's shape are read at the flat offset, others (broadcast,
// permuted, flipped, gathered, joined) at the output coordinates (setting `need_coords`).
ExprEmitter TritonEmitter::element_expr(const Stage& stage, TritonKernel& k, const std::vector<std::string>& coords,
                                        int* counter, bool& need_coords) {
  const Shape& out_shape = g_.nodes[stage.root].shape;
  ExprEmitter e = expr(counter, stage.root);
  e.dim = [this, &k](const Dim& d) { return dim(k, d); };
  e.on_coords = [&need_coords] { need_coords = true; };
  e.load = [this, &k, &coords, &out_shape, &need_coords](int id, const std::vector<std::string>& c) -> std::string {
    const Shape& shape = g_.nodes[id].shape;
    const bool linear = reads_in_order(shape, c, coords, out_shape);
    if (!linear && numel_value(shape) > 1) need_coords = true;
    return load(k, id, linear ? "offs" : "(" + offset_expr(shape, c, [&](const Dim& d) { return dim(k, d); }) + ")",
                "mask");
  };
  return e;
}

// BLOCK outputs per program: the grid, and the `offs` / `mask` lines. A row reduction's
// whole-row schedules set block 0 (ops with both stage kinds: group_norm's affine); such
// element kernels keep 1024.
std::string TritonEmitter::element_head(TritonKernel& k, const Shape& out_shape, const std::string& n) const {
  const int block_value = s_.block > 0 ? s_.block : 1024;
  const std::string block = k.constant("BLOCK", std::to_string(block_value));
  k.grid = "(triton.cdiv(" + py(numel_expr(out_shape)) + ", " + std::to_string(block_value) + "),)";
  return "    offs = tl.program_id(0) * " + block + " + tl.arange(0, " + block + ")\n    mask = offs < " + n + "\n";
}

// c0..cR of the flat output offsets `offs`, innermost dim first.
std::string TritonEmitter::coordinate_lines(TritonKernel& k, const Shape& out_shape) const {
  std::ostringstream lines;
  std::string rest = "offs";
  for (int axis = static_cast<int>(out_shape.size()) - 1; axis >= 1; --axis) {
    std::string d = dim(k, out_shape[axis]);
    lines << "    c" << axis << " = " << rest << " % " << d << "\n";
    rest = "(" + rest + " // " + d + ")";
  }
  if (!out_shape.empty()) lines << "    c0 = " << rest << "\n";
  return lines.str();
}

// ---------------------------------------------------------------------- window

// conv, conv_transpose, max / avg pooling: BLOCK outputs per program, as the pointwise
// kernel lays them out; each walks its window (masked loads where a position falls outside
// x) into `acc`, then the fused epilogue and the store.
void TritonEmitter::window(const Stage& stage, const std::string& name, std::string& err) {
  const Node& node = g_.nodes[stage.anchor];
  if (conv_as_gemm(node)) return conv_gemm(stage, name, err);
  TritonKernel k = kernel(name);
  const Shape& out_shape = g_.nodes[stage.root].shape;
  const int rank = static_cast<int>(out_shape.size());
  std::vector<std::string> coords;
  for (int axis = 0; axis < rank; ++axis) coords.push_back("c" + std::to_string(axis));
  const std::string x = k.buffer(forward_buffer(node.args[0]));
  const std::string w = node.window.is_conv() ? k.buffer(forward_buffer(node.args[1])) : "";
  const std::string out = k.output(buffer_of_.at(stage.root));
  const std::string n = k.size(py(numel_expr(out_shape)), "n");
  WindowNames names = window_names(
      g_, node, [&](const Dim& d) { return dim(k, d); },
      [&](const std::string& expr, const std::string& preferred) { return k.size(py(expr), preferred); });
  names.x = x;
  names.w = w;
  names.coords = coords;
  std::string result;
  const std::string lines = window_epilogue(stage, k, coords, result);
  std::ostringstream body;
  body << element_head(k, out_shape, n);
  body << coordinate_lines(k, out_shape);
  body << window_loops(node.window, names, Target::triton, "    ");
  body << lines << "    tl.store(" << out << " + offs, " << result << ", mask=mask)\n";
  k.body = body.str();
  (void)err;
  kernels_.push_back(k);
}

// The stage's epilogue on `acc`, the window's value, at the output coordinates: its lines,
// and the value to store in `result`.
std::string TritonEmitter::window_epilogue(const Stage& stage, TritonKernel& k, const std::vector<std::string>& coords,
                                           std::string& result) {
  int counter = 0;
  bool need_coords = true;
  ExprEmitter e = element_expr(stage, k, coords, &counter, need_coords);
  e.is_leaf = [this, &stage](int id) { return id != stage.anchor && is_buffer_leaf(id, stage.root); };
  e.known[stage.anchor] = "acc";
  result = e.value(stage.root, coords);
  return e.take_lines("    ");
}

// ------------------------------------------------------------- scan, arg_reduce

// ROWS lines per program over the `outer` lines of a last-dim scan or arg reduction,
// each walked in BLOCK chunks: sets the grid and writes the `rows` and `rmask` lines.
TritonEmitter::LastDimLines TritonEmitter::last_dim_lines(TritonKernel& k, const Shape& outer,
                                                          std::ostringstream& body) const {
  LastDimLines out;
  const std::string lines = k.size(py(numel_expr(outer)), "lines");
  out.rows = k.constant("ROWS", std::to_string(s_.rows));
  out.block = k.constant("BLOCK", std::to_string(s_.block > 0 ? s_.block : 1024));
  k.grid = "(triton.cdiv(" + py(numel_expr(outer)) + ", " + std::to_string(s_.rows) + "),)";
  body << "    rows = tl.program_id(0) * " << out.rows << " + tl.arange(0, " << out.rows << ")[:, None]\n";
  body << "    rmask = rows < " << lines << "\n";
  return out;
}

// cumsum / cumprod along one dim. Last dim: ROWS lines per program, chunks of BLOCK
// scanned with tl.cumsum (tl.cumprod) plus (times) the running total of the chunks before.
// Another dim: IB adjacent lines per program, RB steps per [RB, IB] tile (contiguous
// loads), the same carry. A product's carry is the scanned chunk's last line: masked
// elements load as 1, so that line holds the whole chunk's product.
void TritonEmitter::scan(const Stage& stage, const std::string& name, std::string& err) {
  const Node& node = g_.nodes[stage.anchor];
  if (node.op != "sum" && node.op != "prod") {
    err = "scan op " + node.op + " has no emission";
    return;
  }
  const bool prod = node.op == "prod";
  const std::string identity = prod ? "1.0" : "0.0";
  TritonKernel k = kernel(name);
  const std::string src = k.buffer(forward_buffer(node.args[0]));
  const std::string out = k.output(buffer_of_.at(stage.root));
  const int axis = node.axes.at(0);
  const Shape& shape = node.shape;
  Shape outer(shape.begin(), shape.begin() + axis), inner(shape.begin() + axis + 1, shape.end());
  const bool last = numel_value(inner) == 1;
  const std::string len = dim(k, shape[axis]);
  std::ostringstream body;
  if (last) {
    if (s_.rows < 1) {
      err = "a last-dim scan needs rows >= 1 per program";
      return;
    }
    const auto [rows, block] = last_dim_lines(k, outer, body);
    body << "    carry = tl.full([" << rows << ", 1], " << identity << ", dtype=tl.float32)\n";
    body << "    for r0 in range(0, " << len << ", " << block << "):\n";
    body << "        cols = r0 + tl.arange(0, " << block << ")[None, :]\n";
    body << "        fmask = rmask & (cols < " << len << ")\n";
    body << "        vals = tl.load(" << src << " + rows * " << len << " + cols, mask=fmask, other=" << identity << ")\n";
    if (prod) {
      body << "        scanned = tl.cumprod(vals, axis=1) * carry\n";
      body << "        tl.store(" << out << " + rows * " << len << " + cols, scanned, mask=fmask)\n";
      body << "        carry = tl.sum(tl.where(cols == r0 + " << block << " - 1, scanned, 0.0), axis=1, keep_dims=True)\n";
    } else {
      body << "        tl.store(" << out << " + rows * " << len << " + cols, tl.cumsum(vals, axis=1) + carry, mask=fmask)\n";
      body << "        carry = carry + tl.sum(vals, axis=1, keep_dims=True)\n";
    }
  } else {
    // [RB, IB] tiles: tl.cumsum down axis 0 plus the running total of the tiles above.
    const std::string inner_size = k.size(py(numel_expr(inner)), "inner");
    const int ib = s_.block > 0 ? s_.block : 64, rb = s_.rows > 0 ? s_.rows : 32;
    const std::string iblock = k.constant("IB", std::to_string(ib));
    const std::string rblock = k.constant("RB", std::to_string(rb));
    k.grid = "(" + py(numel_expr(outer)) + " * triton.cdiv(" + py(numel_expr(inner)) + ", " + std::to_string(ib) + "),)";
    body << "    pid = tl.program_id(0)\n";
    body << "    nib = tl.cdiv(" << inner_size << ", " << iblock << ")\n";
    body << "    i = (pid % nib) * " << iblock << " + tl.arange(0, " << iblock << ")[None, :]\n";
    body << "    imask = i < " << inner_size << "\n";
    body << "    base = (pid // nib) * " << len << " * " << inner_size << " + i\n";
    body << "    carry = tl.full([1, " << iblock << "], " << identity << ", dtype=tl.float32)\n";
    body << "    for r0 in range(0, " << len << ", " << rblock << "):\n";
    body << "        r = r0 + tl.arange(0, " << rblock << ")[:, None]\n";
    body << "        fmask = (r < " << len << ") & imask\n";
    body << "        vals = tl.load(" << src << " + base + r * " << inner_size << ", mask=fmask, other=" << identity << ")\n";
    if (prod) {
      body << "        scanned = tl.cumprod(vals, axis=0) * carry\n";
      body << "        tl.store(" << out << " + base + r * " << inner_size << ", scanned, mask=fmask)\n";
      body << "        carry = tl.sum(tl.where(r == r0 + " << rblock << " - 1, scanned, 0.0), axis=0, keep_dims=True)\n";
    } else {
      body << "        tl.store(" << out << " + base + r * " << inner_size << ", tl.cumsum(vals, axis=0) + carry, mask=fmask)\n";
      body << "        carry = carry + tl.sum(vals, axis=0, keep_dims=True)\n";
    }
  }
  k.body = body.str();
  kernels_.push_back(k);
}

// argmax / argmin along one dim: the first index of the extreme, written as int64. (NaN is
// not treated as the extreme here, unlike torch.)
void TritonEmitter::arg_reduce(const Stage& stage, const std::string& name, std::string& err) {
  const Node& node = g_.nodes[stage.anchor];
  if (node.op != "argmax" && node.op != "argmin") {
    err = "arg reduction " + node.op + " has no emission";
    return;
  }
  const bool is_max = node.op == "argmax";
  const std::string worst = is_max ? "-float('inf')" : "float('inf')";
  const std::string better = is_max ? ">" : "<";
  TritonKernel k = kernel(name);
  const std::string src = k.buffer(forward_buffer(node.args[0]));
  const std::string out = k.output(buffer_of_.at(stage.root));
  const int axis = node.axes.at(0);
  const Shape& shape = g_.nodes[node.args[0]].shape;
  Shape outer(shape.begin(), shape.begin() + axis), inner(shape.begin() + axis + 1, shape.end());
  const bool last = numel_value(inner) == 1;
  const std::string len = dim(k, shape[axis]);
  std::ostringstream body;
  if (last) {
    if (s_.rows < 1) {
      err = "a last-dim arg reduction needs rows >= 1 per program";
      return;
    }
    const auto [rows, block] = last_dim_lines(k, outer, body);
    body << "    best = tl.full([" << rows << ", 1], " << worst << ", dtype=tl.float32)\n";
    body << "    best_idx = tl.zeros([" << rows << ", 1], dtype=tl.int32)\n";
    body << "    for r0 in range(0, " << len << ", " << block << "):\n";
    body << "        cols = r0 + tl.arange(0, " << block << ")[None, :]\n";
    body << "        fmask = rmask & (cols < " << len << ")\n";
    body << "        vals = tl.load(" << src << " + rows * " << len << " + cols, mask=fmask, other=" << worst << ")\n";
    body << "        chunk = tl." << (is_max ? "max" : "min") << "(vals, axis=1, keep_dims=True)\n";
    body << "        chunk_idx = tl.min(tl.where(vals == chunk, cols, 2147483647), axis=1, keep_dims=True)\n";
    body << "        take = chunk " << better << " best\n";
    body << "        best_idx = tl.where(take, chunk_idx, best_idx)\n";
    body << "        best = tl.where(take, chunk, best)\n";
    body << "    tl.store(" << out << " + rows, best_idx.to(tl.int64), mask=rmask)\n";
  } else {
    const std::string inner_size = k.size(py(numel_expr(inner)), "inner");
    const int block_value = s_.block > 0 ? s_.block : 128;
    const std::string block = k.constant("BLOCK", std::to_string(block_value));
    k.grid = "(" + py(numel_expr(outer)) + " * triton.cdiv(" + py(numel_expr(inner)) + ", " +
             std::to_string(block_value) + "),)";
    body << "    pid = tl.program_id(0)\n";
    body << "    nib = tl.cdiv(" << inner_size << ", " << block << ")\n";
    body << "    o = pid // nib\n";
    body << "    i = (pid % nib) * " << block << " + tl.arange(0, " << block << ")\n";
    body << "    imask = i < " << inner_size << "\n";
    body << "    base = o * " << len << " * " << inner_size << " + i\n";
    body << "    best = tl.load(" << src << " + base, mask=imask, other=0.0)\n";
    body << "    best_idx = tl.zeros([" << block << "], dtype=tl.int32)\n";
    body << "    for r in range(1, " << len << "):\n";
    body << "        vals = tl.load(" << src << " + base + r * " << inner_size << ", mask=imask, other=0.0)\n";
    body << "        take = vals " << better << " best\n";
    body << "        best_idx = tl.where(take, r, best_idx)\n";
    body << "        best = tl.where(take, vals, best)\n";
    body << "    tl.store(" << out << " + o * " << inner_size << " + i, best_idx.to(tl.int64), mask=imask)\n";
  }
  k.body = body.str();
  kernels_.push_back(k);
}

}  // namespace kforge::codegen::emit
