// Reduction stages behind emit_program.h: row reductions over one dim (a work-group per
// row, or a work-item per output with optional floatN along the row or across adjacent
// outputs) with their fused prologue and epilogue, and two-pass full reductions.
// Test: ctest -R codegen.
#include <algorithm>
#include <functional>
#include <set>
#include <sstream>

#include "worker/codegen/emit_patterns.h"
#include "worker/codegen/emit_program.h"

namespace kforge::codegen::emit {

// A row reduction as the [outer, len, inner] view of the reduced tensor, the schedule's
// layout choices and the kernel names its loops use.
struct RowLayout {
  Shape outer_dims, inner_dims;
  bool last = false;     // the reduced dim is the last one (or every later dim is 1)
  bool group = false;    // one work-group per row (else one work-item per output)
  bool columns = false;  // item strategy, a dim other than the last: floatN across adjacent outputs
  int vec = 1;
  std::string len, inner, groups;             // size parameters (or literals)
  int64_t len_value = 0;                       // the reduced length at the main shape
  std::string full_idx, lane_idx, group_idx;  // where a full / lane / group operand is read
  std::string loop, vloop, tail_loop, vn;     // the loops over one row
  // A row held in registers (Schedule::row_regs): full-pattern loads read `<buffer>_row[j]`,
  // and the buffers they name are listed here for the kernel to load; null: loads from memory.
  std::vector<std::string>* held = nullptr;
};

// Rows longer than this at the main shape sum in blocks (the suite's longest rows are
// 32000 elements, KernelBench's batch norms reduce millions).
constexpr int64_t kBlockedSumRow = 65536;
constexpr int kSumBlock = 4096;

// True for a sum over long rows by one work-item (the item strategy, scalar loads).
bool blocked_sum(const RowLayout& layout, const Node& reduction) {
  return reduction.op == "sum" && !layout.group && layout.len_value > kBlockedSumRow;
}

// ------------------------------------------------------------------ reduce_rows

std::string ProgramEmitter::reduce_rows(const Stage& stage, const std::string& name, std::string& err) {
  Kernel k = kernel(name, buffer_of_.at(stage.root));
  if (d_.cuda() && s_.vector_width > 1) {
    err = "cuda row reductions read one float per thread (vector_width applies to opencl)";
    return "";
  }
  RowLayout layout;
  if (!row_layout(stage, k, layout, err)) return "";
  if (s_.row_regs > 0 && !(d_.cuda() && layout.group && layout.last && s_.split_r == 1)) {
    err = "row_regs (a row held in registers) applies to cuda row reductions along the last dim by a block";
    return "";
  }
  PatternMap patterns{g_, stage, [&](int id) { return is_buffer_leaf(id, stage.root); }, {}, ""};
  int counter = 0;
  ExprEmitter e = row_emitter(1, stage, layout, k, patterns, &counter);
  ExprEmitter ev = row_emitter(layout.columns ? 1 : std::max(layout.vec, 1), stage, layout, k, patterns, &counter);
  std::vector<int> reduces = region_reductions(stage);
  patterns.of(stage.root);
  for (int id : reduces) patterns.of(g_.nodes[id].args[0]);
  if (!patterns.error.empty()) {
    err = patterns.error;
    return "";
  }
  if (s_.split_r > 1) return reduce_rows_split(stage, name, layout, k, patterns, e, reduces, err);
  const std::string header = row_header(layout, k);
  // CUDA, a block per row along the last dim: the last pass over a row reads it for the last
  // time, so its loads stream (__ldcs, evict-first) and do not displace rows still to be read,
  // as the Triton rows' evict_first does (83bcca9; 0.88x the time there).
  const bool stream = d_.cuda() && layout.group && layout.last;
  const Pattern out_pattern = patterns.of(stage.root);
  const bool store_along_row = out_pattern == Pattern::full || out_pattern == Pattern::lane;
  std::string body = row_accumulators(layout, reduces, e, ev, stream && !store_along_row);
  stream_loads_ = stream && store_along_row;
  body += row_store(stage, layout, k, patterns, e, ev);
  stream_loads_ = false;
  k.body = header + (s_.row_regs > 0 ? rows_in_registers(stage, layout, k, patterns, reduces) : "") + body;
  if (layout.columns) {
    std::string vector_part = column_vectors(stage, k, patterns, reduces, layout.len, layout.inner, layout.groups, err);
    if (!err.empty()) return "";
    const int wg = s_.work_group, vec = layout.vec;
    const std::string& len = layout.len;
    const std::string& inner = layout.inner;
    // Outputs whose floatN group would cross a row of the inner dims go one by one.
    k.grid = "cdiv(" + numel_expr(layout.outer_dims) + "*" + numel_expr(layout.inner_dims) + ", " +
             std::to_string(wg * vec) + ")";
    k.body = "  // one work-item per " + std::to_string(vec) + " adjacent outputs: float" + std::to_string(vec) +
             " loads across the inner dim, one loop over the " + len + " reduced elements\n" + vector_part +
             "  } else {\n    for (int gid = q0; gid < min(q0 + " + std::to_string(vec) + ", " + layout.groups +
             "); ++gid) {\n" + "      const int base = (gid / " + inner + ") * " + len + " * " + inner + " + gid % " +
             inner + ";\n" + indent_more(body, "    ") + "    }\n  }\n";
  }
  return k.render();
}

// Few outputs over a long reduced dim (split_r > 1, a dim other than the last, one work-item
// per output): work-item (output, slice) reduces split_r-th of the dim into the scratch
// `rsplit`, then a second kernel combines each output's slices and applies the epilogue.
std::string ProgramEmitter::reduce_rows_split(const Stage& stage, const std::string& name, RowLayout& layout,
                                              Kernel& k, PatternMap& patterns, ExprEmitter& e,
                                              const std::vector<int>& reduces, std::string& err) {
  if (layout.group || layout.last || layout.vec > 1 || reduces.size() != 1 ||
      patterns.of(stage.root) != Pattern::group || blocked_sum(layout, g_.nodes[reduces[0]])) {
    err = "a split reduction is one reduction over a dim other than the last, one value per output, "
          "by work-items with scalar loads";
    return "";
  }
  const Node& red = g_.nodes[reduces[0]];
  const int wg = s_.work_group, split = s_.split_r;
  const std::string splits = std::to_string(split);
  const std::string groups_expr = numel_expr(layout.outer_dims) + "*" + numel_expr(layout.inner_dims);
  const std::string scratch = stage_scratch(stage, "rsplit");
  scratch_.push_back("// kforge-scratch: " + scratch + " float " + splits + " * " + groups_expr + "\n");
  // Pass 1: `k` (its sizes registered by row_layout, its operands by `e`) writes the scratch
  // instead of the output.
  const std::string& len = layout.len;
  const std::string& groups = layout.groups;
  const std::string v = e.value(red.args[0], {});
  const std::string loop_lines = e.take_lines("    ");
  Kernel k1 = k;
  k1.name = name + "_partial";
  k1.output_buffer = scratch;
  k1.grid = "cdiv(" + groups_expr + " * " + splits + ", " + std::to_string(wg) + ")";
  k1.block = std::to_string(wg);
  std::ostringstream b1;
  b1 << "  // pass 1 of 2: one work-item per output and " << splits << "th of the " << len
     << " reduced elements (few outputs over a long dim)\n";
  b1 << "  const int item = " << d_.global_id(0) << ";\n  if (item >= " << groups << " * " << splits << ") return;\n";
  b1 << "  const int gid = item % " << groups << ";\n  const int sp = item / " << groups << ";\n";
  b1 << "  const int base = (gid / " << layout.inner << ") * " << len << " * " << layout.inner << " + gid % "
     << layout.inner << ";\n";
  b1 << "  const int per = (" << len << " + " << splits << " - 1) / " << splits << ";\n";
  b1 << "  const int rend = min(" << len << ", sp * per + per);\n";
  b1 << e.take_outer("  ");
  b1 << "  float acc = " << reduce_init(red.op, d_.target) << ";\n" << unroll_pragma(s_.unroll, "  ");
  b1 << "  for (int ri = sp * per; ri < rend; ++ri) {\n" << loop_lines << "    acc = "
     << combine_code(red.op, "acc", v, d_.target) << ";\n  }\n";
  b1 << "  " << k1.output_buffer << "[sp * " << groups << " + gid] = acc;\n";
  k1.body = b1.str();

  // Pass 2: one work-item per output combines its slices, then the epilogue and the store.
  Kernel k2 = kernel(name, buffer_of_.at(stage.root));
  const std::string partial = k2.buffer(scratch);
  const std::string groups2 = k2.size(groups_expr, "groups");
  const std::string len2 = k2.size(stage.reduce_shape[stage.reduce_axes.at(0)].expr(), "len");
  int counter = 0;
  ExprEmitter e2 = expr(1, &counter);
  e2.red_len = len2;
  e2.dim = [&k2](const Dim& d) { return k2.dim(d); };
  e2.is_leaf = [this, &stage](int id) { return is_buffer_leaf(id, stage.root); };
  e2.load = [this, &k2, &patterns](int id, const std::vector<std::string>&) -> std::string {
    std::string buf = k2.buffer(buffer_name(id));
    return patterns.of(id) == Pattern::scalar ? buf + "[0]" : buf + "[gid]";
  };
  e2.known[reduces[0]] = "acc";
  const std::string result = e2.value(stage.root, {});
  k2.grid = "cdiv(" + groups_expr + ", " + std::to_string(wg) + ")";
  k2.block = std::to_string(wg);
  std::ostringstream b2;
  b2 << "  // pass 2 of 2: one work-item per output combines its " << splits << " partial results\n";
  b2 << "  const int gid = " << d_.global_id(0) << ";\n  if (gid >= " << groups2 << ") return;\n";
  b2 << "  float acc = " << reduce_init(red.op, d_.target) << ";\n";
  b2 << "  for (int sp = 0; sp < " << splits << "; ++sp) acc = "
     << combine_code(red.op, "acc", partial + "[sp * " + groups2 + " + gid]", d_.target) << ";\n";
  b2 << e2.take_outer("  ") << e2.take_lines("  ") << "  " << k2.output_buffer << "[gid] = " << result << ";\n";
  k2.body = b2.str();
  return k1.render() + "\n" + k2.render();
}

// The layout of a row reduction under this schedule; false and `err` when the schedule
// does not apply. Registers the len / inner / groups size parameters, in that order.
bool ProgramEmitter::row_layout(const Stage& stage, Kernel& k, RowLayout& layout, std::string& err) {
  const Shape& ref = stage.reduce_shape;
  const int axis = stage.reduce_axes.at(0);
  layout.outer_dims = Shape(ref.begin(), ref.begin() + axis);
  layout.inner_dims = Shape(ref.begin() + axis + 1, ref.end());
  layout.last = layout.inner_dims.empty() || numel_value(layout.inner_dims) == 1;
  layout.group = s_.reduce == ReduceStrategy::group;
  const bool last = layout.last, group = layout.group;
  if (group && !last) {
    err = "the group reduce strategy needs a last-dim reduction";
    return false;
  }
  layout.len = k.size(ref[axis].expr(), "len");
  layout.len_value = ref[axis].value;
  layout.inner = last ? "1" : k.size(numel_expr(layout.inner_dims), "inner");
  layout.groups = "1";
  if (!group && !(layout.outer_dims.empty() && last))
    layout.groups =
        k.size(numel_expr(layout.outer_dims) + (last ? "" : "*" + numel_expr(layout.inner_dims)), "groups");
  layout.full_idx = group ? "base + col" : (last ? "base + ri" : "base + ri * " + layout.inner);
  layout.lane_idx = group ? "col" : "ri";
  layout.group_idx = group ? "row" : "gid";
  // vector_width > 1 (item strategy, last dim): floatN loads along the row, a scalar tail.
  layout.vec = s_.vector_width;
  if (layout.vec > 1 && group) {
    err = "vector_width applies to the item strategy only";
    return false;
  }
  layout.columns = !group && !last && layout.vec > 1;
  const std::string& len = layout.len;
  layout.loop = group ? "for (int col = lid; col < " + len + "; col += " + std::to_string(s_.work_group) + ")"
                      : "for (int ri = 0; ri < " + len + "; ++ri)";
  layout.vn = std::to_string(layout.vec);
  layout.vloop = "for (; ri + " + layout.vn + " <= " + len + "; ri += " + layout.vn + ")";
  layout.tail_loop = "for (; ri < " + len + "; ++ri)";
  return true;
}

// An expression emitter for the region: operands are read where their pattern says
// (floatN along the row for `width` > 1), and per-row values are hoisted out of the loop.
ExprEmitter ProgramEmitter::row_emitter(int width, const Stage& stage, const RowLayout& layout, Kernel& k,
                                        PatternMap& patterns, int* counter) {
  ExprEmitter e = expr(width, counter);
  e.red_len = layout.len;
  e.dim = [&k](const Dim& d) { return k.dim(d); };
  e.is_leaf = [this, &stage](int id) { return is_buffer_leaf(id, stage.root); };
  e.hoist = [&patterns](int id) {
    Pattern p = patterns.of(id);
    return p == Pattern::group || p == Pattern::scalar;
  };
  e.load = [this, &k, &patterns, &layout, width](int id, const std::vector<std::string>&) -> std::string {
    std::string buf = k.buffer(buffer_name(id));
    std::string vload = "vload" + std::to_string(width) + "(0, " + buf + " + ";
    switch (patterns.of(id)) {
      case Pattern::scalar: return buf + "[0]";
      case Pattern::lane: return width > 1 ? vload + layout.lane_idx + ")" : buf + "[" + layout.lane_idx + "]";
      case Pattern::group: return buf + "[" + layout.group_idx + "]";
      case Pattern::full:
        if (layout.held) {
          if (std::find(layout.held->begin(), layout.held->end(), buf) == layout.held->end())
            layout.held->push_back(buf);
          return buf + "_row[j]";
        }
        if (width > 1) return vload + layout.full_idx + ")";
        return stream_loads_ ? "__ldcs(&" + buf + "[" + layout.full_idx + "])" : buf + "[" + layout.full_idx + "]";
    }
    return "";
  };
  return e;
}

// The launch geometry and the kernel's first lines: which row or output this work-item
// (or work-group) takes and where it starts (`base`).
std::string ProgramEmitter::row_header(const RowLayout& layout, Kernel& k) {
  const int wg = s_.work_group;
  const std::string outer = numel_expr(layout.outer_dims);
  std::ostringstream body;
  if (layout.group) {
    k.attributes = d_.work_group_attribute(wg, 1);
    k.grid = outer.empty() ? "1" : outer;
    k.block = std::to_string(wg);
    body << "  // one work-group per row of " << layout.len << " elements; partial results combine in local memory\n";
    body << "  " << d_.shared() << " float red[" << wg << "];\n";
    body << "  const int row = " << d_.group_id(0) << ";\n  const int lid = " << d_.local_id(0) << ";\n";
    body << "  const int base = row * " << layout.len << ";\n";
    return body.str();
  }
  k.grid = "cdiv(" + (outer + (layout.last ? "" : "*" + numel_expr(layout.inner_dims))) + ", " + std::to_string(wg) + ")";
  k.block = std::to_string(wg);
  body << "  // one work-item per " << (layout.last ? "row" : "output") << ": a sequential loop over the " << layout.len
       << " reduced elements\n";
  body << "  const int gid = " << d_.global_id(0) << ";\n  if (gid >= " << layout.groups << ") return;\n";
  if (layout.last) {
    body << "  const int base = gid * " << layout.len << ";\n";
  } else {
    body << "  const int base = (gid / " << layout.inner << ") * " << layout.len << " * " << layout.inner
         << " + gid % " << layout.inner << ";\n";
  }
  return body.str();
}

// One accumulator per reduction (acc0, acc1...), each a loop over the row: floatN
// partial sums then a scalar tail when vectorised along the row, a tree reduction in
// local memory for the group strategy.
std::string ProgramEmitter::row_accumulators(const RowLayout& layout, const std::vector<int>& reduces, ExprEmitter& e,
                                             ExprEmitter& ev, bool stream_last) {
  const int vec = layout.vec;
  const std::string& vn = layout.vn;
  std::ostringstream body;
  for (size_t red_idx = 0; red_idx < reduces.size(); ++red_idx) {
    const Node& r = g_.nodes[reduces[red_idx]];
    std::string acc = "acc" + std::to_string(red_idx);
    stream_loads_ = stream_last && red_idx + 1 == reduces.size();
    std::string v = e.value(r.args[0], {});
    stream_loads_ = false;
    std::string loop_lines = e.take_lines("    ");
    if (vec > 1 && layout.last) {
      std::string vv = ev.value(r.args[0], {});
      std::string vlines = ev.take_lines("    ");
      body << ev.take_outer("  ") << e.take_outer("  ");
      std::string accv = acc + "v";
      std::string h = accv + ".s0";
      for (int lane = 1; lane < vec; ++lane) h = combine_code(r.op, h, accv + ".s" + "0123456789abcdef"[lane]);
      body << "  float " << acc << ";\n  {\n";
      body << "    float" << vn << " " << accv << " = (float" << vn << ")(" << reduce_init(r.op) << ");\n";
      body << "    int ri = 0;\n" << unroll_pragma(s_.unroll, "    ");
      body << "    " << layout.vloop << " {\n" << reindent(vlines, "      ") << "      " << accv << " = "
           << combine_code(r.op, accv, vv) << ";\n    }\n";
      body << "    " << acc << " = " << h << ";\n";
      body << "    " << layout.tail_loop << " {\n" << reindent(loop_lines, "      ") << "      " << acc << " = "
           << combine_code(r.op, acc, v) << ";\n    }\n  }\n";
    } else if (blocked_sum(layout, r)) {
      // One float summing a whole long row (batch norm over N*D*H*W) rounds away digits as
      // it grows: partial sums per block of kSumBlock elements keep the error near one
      // block's.
      const std::string block = std::to_string(kSumBlock);
      body << e.take_outer("  ");
      body << "  float " << acc << " = 0.0f;\n";
      body << "  for (int rb = 0; rb < " << layout.len << "; rb += " << block << ") {\n";
      body << "    float part = 0.0f;\n";
      body << "    const int rend = min(rb + " << block << ", " << layout.len << ");\n";
      body << unroll_pragma(s_.unroll, "    ");
      body << "    for (int ri = rb; ri < rend; ++ri) {\n" << indent_more(loop_lines, "  ") << "      part = part + " << v
           << ";\n    }\n";
      body << "    " << acc << " = " << acc << " + part;\n  }\n";
    } else {
      body << e.take_outer("  ");
      body << "  float " << acc << " = " << reduce_init(r.op, d_.target) << ";\n";
      if (!layout.group) body << unroll_pragma(s_.unroll, "  ");
      body << "  " << layout.loop << " {\n" << loop_lines << "    " << acc << " = "
           << combine_code(r.op, acc, v, d_.target) << ";\n  }\n";
      if (layout.group) body << group_reduce(acc, r.op, s_.work_group, "  ", d_);
    }
    e.known[reduces[red_idx]] = acc;
    ev.known[reduces[red_idx]] = acc;
  }
  return body.str();
}

// The epilogue and its store: once per row (a per-row result), or a second loop over the
// row when the output varies along it (softmax's normalisation).
std::string ProgramEmitter::row_store(const Stage& stage, const RowLayout& layout, Kernel& k, PatternMap& patterns,
                                      ExprEmitter& e, ExprEmitter& ev) {
  Pattern out_pattern = patterns.of(stage.root);
  std::string result = e.value(stage.root, {});
  const bool along_row = out_pattern == Pattern::full || out_pattern == Pattern::lane;
  std::ostringstream body;
  if (along_row && layout.vec > 1 && layout.last) {
    std::string loop_lines = e.take_lines("    ");
    std::string vresult = ev.value(stage.root, {});
    std::string vlines = ev.take_lines("    ");
    body << ev.take_outer("  ") << e.take_outer("  ");
    body << "  int ri = 0;\n  " << layout.vloop << " {\n" << vlines << "    vstore" << layout.vn << "(" << vresult
         << ", 0, " << k.output_buffer << " + " << layout.full_idx << ");\n  }\n";
    body << "  " << layout.tail_loop << " {\n" << loop_lines << "    " << k.output_buffer << "[" << layout.full_idx
         << "] = " << result << ";\n  }\n";
  } else if (along_row) {
    std::string loop_lines = e.take_lines("    ");
    body << e.take_outer("  ");
    body << "  " << layout.loop << " {\n" << loop_lines << "    " << k.output_buffer << "[" << layout.full_idx
         << "] = " << result << ";\n  }\n";
  } else {
    body << e.take_outer("  ") << e.take_lines("  ");
    if (layout.group) body << "  if (lid == 0) " << k.output_buffer << "[row] = " << result << ";\n";
    else body << "  " << k.output_buffer << "[gid] = " << result << ";\n";
  }
  return body.str();
}

// CUDA, a block per row along the last dim with Schedule::row_regs: when the row fits in the
// block's registers (len <= work_group x row_regs), each thread loads its elements (col = lid,
// lid + wg, ...) of every operand read along the row once, streaming (__ldcs: the only read),
// and every pass (each reduction, then the store) reads them from registers; the loops over
// j unroll fully, so `x_row[j]` stays a register. Longer rows skip this block and take the
// passes over memory that follow it. Triton's whole-row schedules hold the row the same way.
std::string ProgramEmitter::rows_in_registers(const Stage& stage, RowLayout layout, Kernel& k, PatternMap& patterns,
                                              const std::vector<int>& reduces) {
  const std::string regs = std::to_string(s_.row_regs), wg = std::to_string(s_.work_group);
  const std::string walk = "for (int j = 0, col = lid; j < " + regs + "; ++j, col += " + wg + ")";
  // A constant trip count, so the loop unrolls and j is a constant in every copy.
  layout.loop = "#pragma unroll\n  " + walk + " if (col < " + layout.len + ")";
  std::vector<std::string> cached;
  layout.held = &cached;
  int counter = 0;  // the block is its own scope
  ExprEmitter e = row_emitter(1, stage, layout, k, patterns, &counter);
  ExprEmitter ev = row_emitter(1, stage, layout, k, patterns, &counter);
  std::string passes = row_accumulators(layout, reduces, e, ev);
  passes += row_store(stage, layout, k, patterns, e, ev);
  std::ostringstream body;
  body << "  if (" << layout.len << " <= " << wg << " * " << regs << ") {\n";
  body << "    // the row in registers: up to " << regs << " elements a thread, read once\n";
  for (const std::string& buf : cached) {
    body << "    float " << buf << "_row[" << regs << "];\n";
    body << "    #pragma unroll\n    " << walk << "\n      " << buf << "_row[j] = col < " << layout.len
         << " ? __ldcs(&" << buf << "[base + col]) : 0.0f;\n";
  }
  body << indent_more(passes, "  ") << "    return;\n  }\n";
  return body.str();
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

// ------------------------------------------------------------------ reduce_full

// Two passes over everything: `partials` work-groups each reduce a grid-stride slice
// into scratch, then one work-group combines the partials and applies the epilogue.
std::string ProgramEmitter::reduce_full(const Stage& stage, const std::string& name, std::string& err) {
  const std::vector<int> reduces = region_reductions(stage);
  if (reduces.size() != 1) {
    err = "a full reduction region must hold exactly one reduction";
    return "";
  }
  const std::string partial = stage_scratch(stage, "partial");
  scratch_.push_back("// kforge-scratch: " + partial + " float " + std::to_string(s_.partials) + "\n");
  int counter = 0;
  Kernel k1 = full_partial_kernel(stage, reduces[0], name + "_partial", partial, &counter, err);
  if (!err.empty()) return "";
  Kernel k2 = full_final_kernel(stage, reduces[0], name + "_final", partial, k1.attributes, &counter);
  return k1.render() + "\n" + k2.render();
}

// Pass 1: each of the `partials` work-groups reduces a grid-stride slice into scratch.
Kernel ProgramEmitter::full_partial_kernel(const Stage& stage, int reduce_id, const std::string& name,
                                           const std::string& partial, int* counter, std::string& err) {
  const Node& red = g_.nodes[reduce_id];
  const int wg = s_.work_group, parts = s_.partials;
  Kernel k1 = kernel(name, partial);
  const std::string n = k1.size(numel_expr(stage.reduce_shape), "n");
  // Operands of the reduced tensor's shape are read at i; broadcast ones (mean(x * w) with
  // w over the last dim) at the coordinates of i, computed only when one needs them.
  std::vector<std::string> coords;
  for (size_t axis = 0; axis < stage.reduce_shape.size(); ++axis) coords.push_back("c" + std::to_string(axis));
  bool need_coords = false;
  ExprEmitter e1 = expr(1, counter);
  e1.is_leaf = [&](int id) { return is_buffer_leaf(id, stage.root); };
  e1.load = [&](int id, const std::vector<std::string>& c) -> std::string {
    std::string buf = k1.buffer(buffer_name(id));
    const Shape& shape = g_.nodes[id].shape;
    if (numel_value(shape) == 1) return buf + "[0]";
    if (reads_in_order(shape, c, coords, stage.reduce_shape)) return buf + "[i]";
    need_coords = true;
    return buf + "[" + offset(k1, shape, c) + "]";
  };
  std::string v = e1.value(red.args[0], coords);
  std::string lines = e1.take_lines("    ");
  if (need_coords) lines = coordinate_lines(k1, stage.reduce_shape, coords) + lines;
  if (!err.empty()) return k1;
  k1.attributes = d_.work_group_attribute(wg, 1);
  k1.grid = std::to_string(parts);
  k1.block = std::to_string(wg);
  std::ostringstream b1;
  b1 << "  // pass 1 of 2: each of the " << parts << " work-groups reduces a grid-stride slice\n";
  b1 << "  " << d_.shared() << " float red[" << wg << "];\n  const int lid = " << d_.local_id(0) << ";\n";
  b1 << "  float acc = " << reduce_init(red.op, d_.target) << ";\n";
  std::string start = d_.global_id(0);
  if (d_.cuda() && s_.vector_width > 1) {
    if (s_.vector_width != 4 || need_coords) {
      err = "cuda full reductions read float4 (vector_width 4) when every operand is read in the reduced tensor's order";
      return k1;
    }
    b1 << full_partial_float4(stage, red, k1, n, coords, counter, err);
    if (!err.empty()) return k1;
    start = "(" + n + " / 4) * 4 + " + start;  // the last n % 4 elements
  }
  b1 << unroll_pragma(s_.unroll, "  ");
  b1 << "  for (int i = " << start << "; i < " << n << "; i += " << d_.global_size(0) << ") {\n" << lines;
  b1 << "    acc = " << combine_code(red.op, "acc", v, d_.target) << ";\n  }\n";
  b1 << group_reduce("acc", red.op, wg, "  ", d_);
  b1 << "  if (lid == 0) " << partial << "[" << d_.group_id(0) << "] = acc;\n";
  k1.body = b1.str();
  return k1;
}

// CUDA, vector_width 4: the grid-stride loop of pass 1 over float4s, each operand (all read in
// the reduced tensor's order) one 16-byte load a step (buffers are 256-byte aligned), the four
// lanes combined in turn; the scalar loop after it takes the last n % 4 elements.
std::string ProgramEmitter::full_partial_float4(const Stage& stage, const Node& red, Kernel& k1, const std::string& n,
                                                const std::vector<std::string>& coords, int* counter,
                                                std::string& err) {
  std::ostringstream loads, lanes;
  std::vector<std::string> loaded;
  for (int lane = 0; lane < 4; ++lane) {
    ExprEmitter e = expr(1, counter);
    e.is_leaf = [&](int id) { return is_buffer_leaf(id, stage.root); };
    e.on_view = [&] { err = "cuda float4 full reductions read no operand through a view"; };
    e.load = [&, lane](int id, const std::vector<std::string>&) -> std::string {
      const Node& leaf = g_.nodes[id];
      const std::string buf = k1.buffer(buffer_name(id));
      if (numel_value(leaf.shape) == 1) return buf + "[0]";
      if (!leaf.int_type.empty()) err = "cuda float4 full reductions read float operands";
      if (std::find(loaded.begin(), loaded.end(), buf) == loaded.end()) {
        loaded.push_back(buf);
        loads << "    const float4 r_" << buf << " = reinterpret_cast<const float4*>(" << buf << ")[i4];\n";
      }
      return "r_" + buf + "." + "xyzw"[lane];
    };
    const std::string v = e.value(red.args[0], coords);
    lanes << e.take_lines("    ") << "    acc = " << combine_code(red.op, "acc", v, d_.target) << ";\n";
  }
  std::ostringstream body;
  body << unroll_pragma(s_.unroll, "  ");
  body << "  for (int i4 = " << d_.global_id(0) << "; i4 < " << n << " / 4; i4 += " << d_.global_size(0) << ") {\n"
       << loads.str() << lanes.str() << "  }\n";
  return body.str();
}

// Pass 2: one work-group combines the partial results and applies the epilogue.
Kernel ProgramEmitter::full_final_kernel(const Stage& stage, int reduce_id, const std::string& name,
                                         const std::string& partial, const std::string& attributes, int* counter) {
  const Node& red = g_.nodes[reduce_id];
  const int wg = s_.work_group, parts = s_.partials;
  Kernel k2 = kernel(name, buffer_of_.at(stage.root));
  k2.buffer(partial);
  const std::string n2 = k2.size(numel_expr(stage.reduce_shape), "n");
  ExprEmitter e2 = expr(1, counter);
  e2.red_len = n2;
  e2.is_leaf = [&](int id) { return is_buffer_leaf(id, stage.root); };
  e2.load = [&](int id, const std::vector<std::string>&) { return k2.buffer(buffer_name(id)) + "[0]"; };
  e2.known[reduce_id] = "acc";
  std::string result = e2.value(stage.root, {});
  k2.attributes = attributes;
  k2.grid = "1";
  k2.block = std::to_string(wg);
  std::ostringstream b2;
  b2 << "  // pass 2 of 2: one work-group combines the " << parts << " partial results\n";
  b2 << "  " << d_.shared() << " float red[" << wg << "];\n  const int lid = " << d_.local_id(0) << ";\n";
  b2 << "  float acc = " << reduce_init(red.op, d_.target) << ";\n";
  b2 << "  for (int i = lid; i < " << parts << "; i += " << wg << ") acc = "
     << combine_code(red.op, "acc", k2.buffer_param[partial] + "[i]", d_.target) << ";\n";
  b2 << group_reduce("acc", red.op, wg, "  ", d_);
  b2 << "  if (lid == 0) {\n" << e2.take_outer("    ") << e2.take_lines("    ") << "    " << k2.output_buffer
     << "[0] = " << result << ";\n  }\n";
  k2.body = b2.str();
  return k2;
}

}  // namespace kforge::codegen::emit
