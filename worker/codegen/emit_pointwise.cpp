// Pointwise stages (one work-item per output element, grid-strided or floatN) and the
// line kernels (scan, arg_reduce: one work-item per line along one dim, or with
// Schedule::line_group a work-group per line along the last dim), behind emit_program.h.
// Test: ctest -R codegen.
#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <sstream>

#include "worker/codegen/emit_program.h"

namespace kforge::codegen::emit {
namespace {

// One work-item per line along one dim of the [outer, len, inner] view of `shape`;
// adjacent work-items take adjacent inner positions, so for inner > 1 each step of
// the loop reads a contiguous run. Returns the lines that compute `base` (the line's
// first element) and sets `len` / `step` (the loop's bound and element offset).
std::string line_start(Kernel& k, const Shape& shape, int axis, int work_group, const Dialect& d, std::string& len,
                       std::string& step) {
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
  body << "  const int gid = " << d.global_id(0) << ";\n";
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

// A work-group of `work_group` items per line along the last dim of `shape` (Schedule::
// line_group): the items read the line in coalesced chunks. Returns the lines that compute
// `base` and `lid`, sets `len`; sets `err` when `axis` is not the last dim (its lines are
// strided: one work-item per line reads them coalesced already).
std::string line_group_start(Kernel& k, const Shape& shape, int axis, int work_group, const Dialect& d,
                             std::string& len, std::string& err) {
  if (numel_value(Shape(shape.begin() + axis + 1, shape.end())) != 1) {
    err = "line_group needs a line along the last dim";
    return "";
  }
  Shape line_dims(shape.begin(), shape.begin() + axis);
  len = k.dim(shape[axis]);
  k.grid = line_dims.empty() ? "1" : numel_expr(line_dims);
  k.block = std::to_string(work_group);
  k.attributes = d.work_group_attribute(work_group, 1);
  std::ostringstream body;
  body << "  // one work-group per line of " << len << " elements, read in coalesced chunks of " << work_group << "\n";
  body << "  const int lid = " << d.local_id(0) << ";\n";
  body << "  const int base = " << d.group_id(0) << " * " << len << ";\n";
  return body.str();
}

}  // namespace

// Output coordinates c0..cR from the flat index i, innermost dim first.
std::string coordinate_lines(Kernel& k, const Shape& out_shape, const std::vector<std::string>& coords) {
  const int rank = static_cast<int>(out_shape.size());
  std::string lines;
  std::string rest = "i";
  for (int axis = rank - 1; axis >= 1; --axis) {
    std::string d = k.dim(out_shape[axis]);
    lines += "    const int " + coords[axis] + " = " + rest + " % " + d + ";\n";
    rest = rest == "i" ? "i / " + d : "(" + rest + ") / " + d;
  }
  lines = "    const int c0 = " + rest + ";\n" + lines;
  if (rank == 1) lines = "    const int c0 = i;\n";
  return lines;
}

namespace {

// The floatN body of a pointwise kernel: vloadN / vstoreN for whole vectors, then the
// last n % vec elements one at a time.
std::string vector_body(const std::function<ExprEmitter(int)>& make, int root, const std::vector<std::string>& coords,
                        int vec, const std::string& n, const std::string& ind, const std::string& out) {
  std::ostringstream body;
  ExprEmitter vector = make(vec);
  std::string vresult = vector.value(root, coords);
  body << ind << "if (i + " << vec << " <= " << n << ") {\n"
       << vector.take_lines(ind + "  ") << ind << "  vstore" << vec << "(" << vresult << ", 0, " << out << " + i);\n";
  body << ind << "} else {  // the last n % " << vec << " elements, one at a time\n";
  body << ind << "  for (int j = i; j < " << n << "; ++j) {\n";
  ExprEmitter tail = make(1);  // the same emitter kind, scalar
  std::string tresult = tail.value(root, coords);
  std::string tail_body = tail.take_lines(ind + "    ");
  // The tail reads element j where the vector path reads i.
  for (size_t pos = 0; (pos = tail_body.find("[i]", pos)) != std::string::npos; pos += 3) tail_body.replace(pos, 3, "[j]");
  body << tail_body << ind << "    " << out << "[j] = " << tresult << ";\n";
  body << ind << "  }\n" << ind << "}\n";
  return body.str();
}

}  // namespace

// ------------------------------------------------------------- scan, arg_reduce

// A running sum (product) in a register: one read and one write per element.
std::string ProgramEmitter::scan(const Stage& stage, const std::string& name, std::string& err) {
  const Node& node = g_.nodes[stage.anchor];
  if (node.op != "sum" && node.op != "prod") {
    err = "scan op " + node.op + " has no emission";
    return "";
  }
  Kernel k = kernel(name, buffer_of_.at(stage.root));
  const std::string src = k.buffer(buffer_name(node.args[0]));
  std::string len, step;
  std::ostringstream body;
  const bool prod = node.op == "prod";
  if (s_.line_group) {
    // Per chunk: a Hillis-Steele scan in local memory (log2(wg) steps), plus the carry of
    // the chunks before it.
    const int wg = s_.work_group;
    const std::string identity = prod ? "1.0f" : "0.0f", op = prod ? " * " : " + ";
    body << line_group_start(k, node.shape, node.axes.at(0), wg, d_, len, err);
    if (!err.empty()) return "";
    body << "  " << d_.shared() << " float part[" << wg << "];\n";
    body << "  float carry = " << identity << ";\n";
    body << "  for (int c0 = 0; c0 < " << len << "; c0 += " << wg << ") {\n";
    body << "    const int r = c0 + lid;\n";
    body << "    part[lid] = r < " << len << " ? " << src << "[base + r] : " << identity << ";\n";
    body << "    " << d_.barrier() << ";\n";
    body << "    for (int off = 1; off < " << wg << "; off <<= 1) {\n";
    body << "      const float t = lid >= off ? part[lid - off] : " << identity << ";\n";
    body << "      " << d_.barrier() << ";\n";
    body << "      part[lid] = part[lid]" << op << "t;\n";
    body << "      " << d_.barrier() << ";\n";
    body << "    }\n";
    body << "    if (r < " << len << ") " << k.output_buffer << "[base + r] = carry" << op << "part[lid];\n";
    body << "    carry = carry" << op << "part[" << wg - 1 << "];\n";
    body << "    " << d_.barrier() << ";  // every item has read part before the next chunk overwrites it\n";
    body << "  }\n";
    k.body = body.str();
    return k.render();
  }
  body << line_start(k, node.shape, node.axes.at(0), s_.work_group, d_, len, step);
  body << "  float acc = " << (prod ? "1.0f" : "0.0f") << ";\n";
  if (s_.unroll > 1) body << "  #pragma unroll " << s_.unroll << "\n";
  body << "  for (int r = 0; r < " << len << "; ++r) {\n";
  body << "    acc " << (prod ? "*=" : "+=") << " " << src << "[base + " << step << "];\n";
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
  Kernel k = kernel(name, buffer_of_.at(stage.root));
  k.output_type = "long";
  const std::string src = k.buffer(buffer_name(node.args[0]));
  std::string len, step;
  std::ostringstream body;
  const std::string better = node.op == "argmax" ? ">" : "<";
  if (s_.line_group) {
    // Each item keeps the first extreme of its strided elements (index len: none yet), then
    // a tree in local memory keeps the better pair, the earlier index among equals.
    const int wg = s_.work_group;
    body << line_group_start(k, g_.nodes[node.args[0]].shape, node.axes.at(0), wg, d_, len, err);
    if (!err.empty()) return "";
    body << "  " << d_.shared() << " float best_v[" << wg << "];\n";
    body << "  " << d_.shared() << " int best_i[" << wg << "];\n";
    body << "  float best = 0.0f;\n";
    body << "  int best_idx = " << len << ";\n";
    body << "  for (int r = lid; r < " << len << "; r += " << wg << ") {\n";
    body << "    const float v = " << src << "[base + r];\n";
    body << "    if (best_idx == " << len << " || v " << better << " best || (isnan(v) && !isnan(best))) {\n";
    body << "      best = v;\n";
    body << "      best_idx = r;\n";
    body << "    }\n";
    body << "  }\n";
    body << "  best_v[lid] = best;\n";
    body << "  best_i[lid] = best_idx;\n";
    body << "  " << d_.barrier() << ";\n";
    body << "  for (int width = " << wg / 2 << "; width > 0; width >>= 1) {\n";
    body << "    if (lid < width) {\n";
    body << "      const float v = best_v[lid + width], b = best_v[lid];\n";
    body << "      const int i = best_i[lid + width], bi = best_i[lid];\n";
    body << "      const int take = i < " << len << " && (bi == " << len << " || (isnan(v) ? (!isnan(b) || i < bi)\n";
    body << "                     : (!isnan(b) && (v " << better << " b || (v == b && i < bi)))));\n";
    body << "      if (take) {\n";
    body << "        best_v[lid] = v;\n";
    body << "        best_i[lid] = i;\n";
    body << "      }\n";
    body << "    }\n";
    body << "    " << d_.barrier() << ";\n";
    body << "  }\n";
    body << "  if (lid == 0) " << k.output_buffer << "[" << d_.group_id(0) << "] = best_i[0];\n";
    k.body = body.str();
    return k.render();
  }
  body << line_start(k, g_.nodes[node.args[0]].shape, node.axes.at(0), s_.work_group, d_, len, step);
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

// Reads are linear (vloadN-able) when an operand has the output's shape, else through the
// output coordinates `coords` (which sets `need_coords` and clears `contiguous`).
ExprEmitter ProgramEmitter::element_emitter(const Stage& stage, Kernel& k, const std::vector<std::string>& coords,
                                            int vec, int* counter, bool& need_coords, bool& contiguous) {
  const Shape& out_shape = g_.nodes[stage.root].shape;
  ExprEmitter e = expr(vec, counter);
  e.is_leaf = [this, &stage](int id) { return is_buffer_leaf(id, stage.root); };
  e.on_view = [&contiguous] { contiguous = false; };
  e.on_coords = [&need_coords, &contiguous] {
    need_coords = true;
    contiguous = false;
  };
  e.dim = [&k](const Dim& d) { return k.dim(d); };
  e.load = [this, &k, &coords, &out_shape, &need_coords, &contiguous, vec](
               int id, const std::vector<std::string>& c) -> std::string {
    const Node& leaf = g_.nodes[id];
    std::string buf = k.buffer(buffer_name(id), leaf.int_type.empty() ? "float" : leaf.int_type);
    const Shape& shape = leaf.shape;
    if (numel_value(shape) == 1) return vec > 1 ? "(float" + std::to_string(vec) + ")(" + buf + "[0])" : buf + "[0]";
    if (!leaf.int_type.empty()) contiguous = false;  // no floatN loads of a byte or integer buffer
    if (reads_in_order(shape, c, coords, out_shape))
      return vec > 1 ? "vload" + std::to_string(vec) + "(0, " + buf + " + i)" : buf + "[i]";
    need_coords = true;
    contiguous = false;
    return buf + "[" + offset(k, shape, c) + "]";
  };
  return e;
}

// One work-item per output element (or per_item of them, grid-stride; or floatN
// vectors when every operand is contiguous with the output's shape or a scalar).
std::string ProgramEmitter::pointwise(const Stage& stage, const std::string& name, std::string& err) {
  Kernel k = kernel(name, buffer_of_.at(stage.root));
  const Shape& out_shape = g_.nodes[stage.root].shape;
  const int rank = static_cast<int>(out_shape.size());
  std::vector<std::string> coords;
  for (int axis = 0; axis < rank; ++axis) coords.push_back("c" + std::to_string(axis));
  const std::string n_expr = numel_expr(out_shape);
  const std::string n = k.size(n_expr, "n");
  int counter = 0;
  bool need_coords = false, contiguous = true;
  auto make = [&](int vec) { return element_emitter(stage, k, coords, vec, &counter, need_coords, contiguous); };

  ExprEmitter scalar = make(1);
  std::string result = scalar.value(stage.root, coords);
  std::string scalar_lines = scalar.take_lines("    ");
  const int vec = s_.vector_width;
  // CUDA also vectorizes over operands broadcast along the rows (a bias, a per-row scale):
  // cuda_vector_body checks each one.
  if (vec > 1 && !contiguous && !d_.cuda()) {
    err = "vector_width " + std::to_string(vec) + " needs every operand contiguous with the output";
    return "";
  }
  std::string coord_lines = need_coords ? coordinate_lines(k, out_shape, coords) : "";
  const int per_item = std::max(1, s_.per_item);
  k.grid = "cdiv(" + n_expr + ", " + std::to_string(s_.work_group * per_item * vec) + ")";
  k.block = std::to_string(s_.work_group);
  // With per_item > 1 each work-item takes per_item grid-strided steps (stays coalesced).
  const std::string ind = per_item > 1 ? "    " : "  ";
  const std::string vec_mul = vec > 1 ? " * " + std::to_string(vec) : "";
  std::ostringstream body;
  if (per_item > 1) {
    body << "  for (int step = 0; step < " << per_item << "; ++step) {\n";
    body << ind << "const int i = (" << d_.global_id(0) << " + step * " << d_.global_size(0) << ")" << vec_mul << ";\n";
  } else {
    body << ind << "const int i = " << d_.global_id(0) << vec_mul << ";\n";
  }
  body << ind << "if (i >= " << n << ") return;\n";
  if (vec == 1) {
    body << reindent(coord_lines, ind) << reindent(scalar_lines, ind) << ind << k.output_buffer << "[i] = " << result
         << ";\n";
  } else if (d_.cuda()) {
    // Where operands broadcast, the elements the vectors cannot take go through the scalar form.
    const std::string element = coord_lines + scalar_lines + "    " + k.output_buffer + "[i] = " + result + ";\n";
    body << cuda_vector_body(stage, k, n, ind, need_coords ? coords : std::vector<std::string>{}, element, err);
    if (!err.empty()) return "";
  } else {
    body << vector_body(make, stage.root, coords, vec, n, ind, k.output_buffer);
  }
  if (per_item > 1) body << "  }\n";
  k.body = body.str();
  return k.render();
}

// CUDA has float4 loads but no float4 arithmetic: each thread loads `vec` consecutive
// elements of every operand with 16-byte loads (buffers are 256-byte aligned and i is a
// multiple of vec), computes each lane with scalar code, and stores float4s; the last
// n % vec elements go one at a time. With `coords` (some operand is broadcast: read through
// the output coordinates) the lanes share every coordinate but the last when the last dim is a
// multiple of vec (checked at run time, else the elements go one at a time): an operand that
// runs along the last dim (a bias of the row's length) is one 16-byte load at the first lane's
// offset, one constant along it (a per-row scale, [rows, 1]) one scalar load for all lanes;
// `element` (the kernel's scalar form, computing and storing element i) takes the others.
std::string ProgramEmitter::cuda_vector_body(const Stage& stage, Kernel& k, const std::string& n,
                                             const std::string& ind, const std::vector<std::string>& coords,
                                             const std::string& element, std::string& err) {
  const int vec = s_.vector_width;
  if (vec % 4 != 0) {
    err = "cuda vector_width must be 4 or 8";
    return "";
  }
  const Shape& out_shape = g_.nodes[stage.root].shape;
  const bool broadcast = !coords.empty();
  const std::string last = broadcast ? coords.back() : "";
  const std::regex last_word(broadcast ? "\\b" + last + "\\b" : "$^");
  const int quads = vec / 4;
  int counter = 0;
  std::ostringstream loads, lanes;
  std::map<std::string, std::string> loaded;  // what a lane reads -> its register (array)
  std::vector<std::string> results;
  std::string refused;
  for (int lane = 0; lane < vec; ++lane) {
    ExprEmitter e = expr(1, &counter);
    e.is_leaf = [&](int id) { return is_buffer_leaf(id, stage.root); };
    e.dim = [&](const Dim& d) { return k.dim(d); };
    e.on_view = [&] { refused = "an operand read through a view"; };
    e.load = [&, lane](int id, const std::vector<std::string>& c) -> std::string {
      const Node& leaf = g_.nodes[id];
      std::string buf = k.buffer(buffer_name(id), leaf.int_type.empty() ? "float" : leaf.int_type);
      if (numel_value(leaf.shape) == 1) return buf + "[0]";
      if (!leaf.int_type.empty()) {
        refused = "an integer operand";
        return buf + "[0]";
      }
      std::string at = "i";  // a run of vec elements at this offset, or one element for all lanes
      bool run = true;
      if (broadcast && !reads_in_order(leaf.shape, c, coords, out_shape)) {
        at = offset(k, leaf.shape, c);
        // Not broadcast along the last dim: then (broadcasting's rule) as long as the output's.
        const bool along_last = !c.empty() && c.back() == last && !leaf.shape.empty() &&
                                leaf.shape.back().value == out_shape.back().value && leaf.shape.back().value > 1;
        run = along_last;
        if (!along_last && std::regex_search(at, last_word)) refused = "an operand read across the last dim";
      }
      const std::string key = buf + "@" + at;
      auto it = loaded.find(key);
      if (it == loaded.end()) {
        std::string regs = "r_" + buf + (at == "i" ? "" : std::to_string(loaded.size()));
        if (run) {
          for (int quad = 0; quad < quads; ++quad)
            loads << ind << "  const float4 " << regs << quad << " = reinterpret_cast<const float4*>(" << buf << " + "
                  << at << ")[" << quad << "];\n";
        } else {
          loads << ind << "  const float " << regs << " = " << buf << "[" << at << "];\n";
        }
        it = loaded.emplace(key, regs).first;
      }
      if (!run) return it->second;
      return it->second + std::to_string(lane / 4) + "." + "xyzw"[lane % 4];
    };
    std::string result = e.value(stage.root, broadcast ? coords : std::vector<std::string>{});
    lanes << ind << "  // lane " << lane << "\n" << e.take_lines(ind + "  ");
    results.push_back(result);
  }
  if (!refused.empty()) {
    err = "cuda vector_width " + std::to_string(vec) + " with broadcast operands: " + refused;
    return "";
  }
  std::ostringstream body;
  if (broadcast) {
    body << ind << "if (i + " << vec << " <= " << n << " && " << k.dim(out_shape.back()) << " % " << vec
         << " == 0) {  // the lanes share a row\n";
    body << reindent(coordinate_lines(k, out_shape, coords), ind + "  ");
  } else {
    body << ind << "if (i + " << vec << " <= " << n << ") {\n";
  }
  body << loads.str() << lanes.str();
  for (int quad = 0; quad < quads; ++quad)
    body << ind << "  reinterpret_cast<float4*>(" << k.output_buffer << " + i)[" << quad << "] = make_float4("
         << results[quad * 4] << ", " << results[quad * 4 + 1] << ", " << results[quad * 4 + 2] << ", "
         << results[quad * 4 + 3] << ");\n";
  body << ind << "} else {  // " << (broadcast ? "a row's length not a multiple of " + std::to_string(vec) + ", or " : "")
       << "the last n % " << vec << " elements: one at a time\n";
  body << ind << "  for (int j = i; j < i + " << vec << " && j < " << n << "; ++j) {\n";
  if (broadcast) {
    body << ind << "    const int i = j;\n" << reindent(element, ind + "    ");  // the scalar form at i = j
  } else {
    ExprEmitter tail = expr(1, &counter);
    tail.is_leaf = [&](int id) { return is_buffer_leaf(id, stage.root); };
    tail.dim = [&](const Dim& d) { return k.dim(d); };
    tail.load = [&](int id, const std::vector<std::string>&) -> std::string {
      std::string buf = k.buffer(buffer_name(id));
      return numel_value(g_.nodes[id].shape) == 1 ? buf + "[0]" : buf + "[j]";
    };
    const std::string tresult = tail.value(stage.root, {});
    body << tail.take_lines(ind + "    ") << ind << "    " << k.output_buffer << "[j] = " << tresult << ";\n";
  }
  body << ind << "  }\n" << ind << "}\n";
  return body.str();
}

}  // namespace kforge::codegen::emit
