// Triton reduction stages (emit_triton.h). Row reductions over one dim work on 2-D tiles:
// the last dim as [ROWS, BLOCK] (ROWS rows per program, reduced along axis 1), another dim
// as [RB, IB] (IB adjacent outputs per program, RB reduced elements per step, along axis
// 0). A whole-row schedule (block 0, or rows 0 for another dim) loads the row once into
// registers for every pass (softmax's max, sum and store read it once); otherwise each
// reduction loops over the row in chunks into a tile accumulator. A split schedule (split_r
// > 1) for a single reduction over another dim with few outputs cuts the reduced dim into
// split_r slices (grid axis 1), each program writing its partial [1, IB] to a scratch, and a
// second launch reduces the slices and applies the epilogue. Full reductions take two
// launches through a scratch of `partials` values. Operands of the reduced tensor's shape are
// loaded "evict_first" in the pass that reads them last and "evict_last" in the passes before
// it (Inductor's policy): a stream read once leaves L2 to the rows still to be read again
// (sum(x * y, -1) on an H200: 25.2 -> 21.9 us; bench/gpu/reduction_ab.py, 2026-11-29).
// Test: ctest -R 'codegen_(lower|triton)'.
#include <sstream>

#include "worker/codegen/emit_patterns.h"
#include "worker/codegen/emit_triton.h"

namespace kforge::codegen::emit {
namespace {

// Where a row tile's operands are read and which lanes are valid, by pattern.
struct TritonRows {
  bool last = false, whole = false;
  int axis = 1;                        // the reduced axis of the tile
  std::string tile;                    // "[ROWS, BLOCK]"
  std::string header;                  // program -> rows / outputs
  std::string chunk;                   // lines selecting one chunk of the reduced dim (indent 4)
  std::string loop;                    // "for r0 in range(0, len, BLOCK):"
  std::string full_idx, lane_idx, group_idx;
  std::string full_mask, lane_mask, group_mask;
};

std::string reduce_fn(const std::string& op) { return op == "max" ? "tl.max" : op == "min" ? "tl.min" : "tl.sum"; }

}  // namespace

void TritonEmitter::reduce_rows(const Stage& stage, const std::string& name, std::string& err) {
  TritonKernel k = kernel(name);
  const Shape& ref = stage.reduce_shape;
  const int axis = stage.reduce_axes.at(0);
  Shape outer(ref.begin(), ref.begin() + axis), inner(ref.begin() + axis + 1, ref.end());
  TritonRows t;
  t.last = numel_value(inner) == 1;
  const bool split = s_.split_r > 1;
  if (split && t.last) {
    err = "split reductions are for a dim other than the last";
    return;
  }
  // A split reduction's first kernel writes only its scratch (reduce_rows_split_final).
  const std::string out = split ? "" : k.output(buffer_of_.at(stage.root));
  const std::string len = dim(k, ref[axis]);
  std::ostringstream header, chunk;
  if (t.last) {
    if (s_.rows < 1) {
      err = "a last-dim row reduction needs rows >= 1 per program";
      return;
    }
    t.whole = s_.block == 0;
    t.axis = 1;
    const std::string groups = k.size(py(numel_expr(outer)), "groups");
    const std::string rows = k.constant("ROWS", std::to_string(s_.rows));
    const std::string block =
        k.constant("BLOCK", t.whole ? "triton.next_power_of_2(" + py(ref[axis].expr()) + ")" : std::to_string(s_.block));
    k.grid = "(triton.cdiv(" + py(numel_expr(outer)) + ", " + std::to_string(s_.rows) + "),)";
    t.tile = "[" + rows + ", " + block + "]";
    header << "    rows = tl.program_id(0) * " << rows << " + tl.arange(0, " << rows << ")[:, None]\n";
    header << "    rmask = rows < " << groups << "\n";
    chunk << "cols = " << (t.whole ? "" : "r0 + ") << "tl.arange(0, " << block << ")[None, :]\n";
    chunk << "cmask = cols < " << len << "\n";
    chunk << "fmask = rmask & cmask\n";
    t.loop = "for r0 in range(0, " + len + ", " + block + "):";
    t.full_idx = "rows * " + len + " + cols";
    t.lane_idx = "cols";
    t.group_idx = "rows";
    t.lane_mask = "cmask";
    t.group_mask = "rmask";
  } else {
    if (split && s_.rows == 0) {
      err = "a split reduction walks its slice in chunks (rows >= 1)";
      return;
    }
    t.whole = s_.rows == 0;
    t.axis = 0;
    const std::string inner_size = k.size(py(numel_expr(inner)), "inner");
    const int ib = s_.block > 0 ? s_.block : 64;
    const std::string iblock = k.constant("IB", std::to_string(ib));
    const std::string rblock =
        k.constant("RB", t.whole ? "triton.next_power_of_2(" + py(ref[axis].expr()) + ")" : std::to_string(s_.rows));
    k.grid = "(" + py(numel_expr(outer)) + " * triton.cdiv(" + py(numel_expr(inner)) + ", " + std::to_string(ib) + ")" +
             (split ? ", " + std::to_string(s_.split_r) + ")" : ",)");
    t.tile = "[" + rblock + ", " + iblock + "]";
    header << "    pid = tl.program_id(0)\n";
    header << "    nib = tl.cdiv(" << inner_size << ", " << iblock << ")\n";
    header << "    o = pid // nib\n";
    header << "    i = (pid % nib) * " << iblock << " + tl.arange(0, " << iblock << ")[None, :]\n";
    header << "    imask = i < " << inner_size << "\n";
    std::string slice_start;
    if (split) {  // slice sp: `per` (a multiple of RB) reduced elements from sp * per
      const std::string per = k.size("triton.cdiv(triton.cdiv(" + py(ref[axis].expr()) + ", " +
                                         std::to_string(s_.split_r) + "), " + std::to_string(s_.rows) + ") * " +
                                         std::to_string(s_.rows),
                                     "per");
      header << "    sp = tl.program_id(1)\n";
      slice_start = "sp * " + per + " + ";
      t.loop = "for r0 in range(0, " + per + ", " + rblock + "):";
    } else {
      t.loop = "for r0 in range(0, " + len + ", " + rblock + "):";
    }
    chunk << "r = " << slice_start << (t.whole ? "" : "r0 + ") << "tl.arange(0, " << rblock << ")[:, None]\n";
    chunk << "lmask = r < " << len << "\n";
    chunk << "fmask = lmask & imask\n";
    t.full_idx = "o * " + len + " * " + inner_size + " + r * " + inner_size + " + i";
    t.lane_idx = "r";
    t.group_idx = "o * " + inner_size + " + i";
    t.lane_mask = "lmask";
    t.group_mask = "imask";
  }
  t.full_mask = "fmask";
  t.header = header.str();
  t.chunk = chunk.str();

  PatternMap patterns{g_, stage, [&](int id) { return is_buffer_leaf(id, stage.root); }, {}, ""};
  int counter = 0;
  ExprEmitter e = expr(&counter, stage.root);
  e.red_len = len;
  e.dim = [&](const Dim& d) { return dim(k, d); };
  if (!t.whole)
    e.hoist = [&patterns](int id) {
      Pattern p = patterns.of(id);
      return p == Pattern::group || p == Pattern::scalar;
    };
  std::string full_evict;  // the current pass's policy for the reduced tensor's operands
  e.load = [&](int id, const std::vector<std::string>&) -> std::string {
    switch (patterns.of(id)) {
      case Pattern::scalar: return load(k, id, "0", "None");
      case Pattern::lane: return load(k, id, t.lane_idx, t.lane_mask);
      case Pattern::group: return load(k, id, t.group_idx, t.group_mask);
      case Pattern::full: return load(k, id, t.full_idx, t.full_mask, full_evict);
    }
    return "";
  };
  std::vector<int> reduces = region_reductions(stage);
  patterns.of(stage.root);
  for (int id : reduces) patterns.of(g_.nodes[id].args[0]);
  if (!patterns.error.empty()) {
    err = patterns.error;
    return;
  }
  if (split && (reduces.size() != 1 || patterns.of(stage.root) != Pattern::group)) {
    err = "a split reduction holds one reduction and stores one value per output";
    return;
  }

  // Passes over the row: a whole row is read once; a chunked one once per reduction, and again
  // by the store when the output varies along it (softmax).
  const Pattern out_pattern = patterns.of(stage.root);
  const bool row_output = out_pattern == Pattern::full || out_pattern == Pattern::lane;
  const size_t passes = t.whole ? 1 : reduces.size() + (row_output ? 1 : 0);
  auto enter_pass = [&](size_t pass) { full_evict = pass + 1 >= passes ? "evict_first" : "evict_last"; };
  const std::string ax = std::to_string(t.axis);
  auto chunk_lines = [&](const std::string& indent) { return reindent(t.chunk, indent); };
  std::ostringstream body;
  body << t.header;
  if (t.whole) body << chunk_lines("    ");
  for (size_t red_idx = 0; red_idx < reduces.size(); ++red_idx) {
    const Node& r = g_.nodes[reduces[red_idx]];
    const std::string red = "red" + std::to_string(red_idx), acc = "acc" + std::to_string(red_idx);
    const std::string init = reduce_init(r.op, Target::triton);
    enter_pass(red_idx);
    std::string v = e.value(r.args[0], {});
    if (t.whole) {
      body << e.take_lines("    ", /*keep_memo=*/true);
      body << "    " << red << " = " << reduce_fn(r.op) << "(tl.where(fmask, " << v << ", " << init << "), axis=" << ax
           << ", keep_dims=True)\n";
    } else {
      std::string loop_lines = e.take_lines("        ");
      body << e.take_outer("    ");
      body << "    " << acc << " = tl.full(" << t.tile << ", " << init << ", dtype=tl.float32)\n";
      body << "    " << t.loop << "\n" << chunk_lines("        ") << loop_lines;
      body << "        " << acc << " = " << combine_code(r.op, acc, "tl.where(fmask, " + v + ", " + init + ")", Target::triton)
           << "\n";
      body << "    " << red << " = " << reduce_fn(r.op) << "(" << acc << ", axis=" << ax << ", keep_dims=True)\n";
    }
    e.known[reduces[red_idx]] = red;
  }
  if (split) {
    reduce_rows_split_final(stage, name, k, body, e, reduces.front(), t.group_idx);
    return;
  }
  // The store: the row again when the output varies along it (softmax), else one value per row.
  enter_pass(passes - 1);
  std::string result = e.value(stage.root, {});
  if (row_output) {
    if (t.whole) {
      body << e.take_lines("    ", true) << "    tl.store(" << out << " + " << t.full_idx << ", " << result
           << ", mask=fmask)\n";
    } else {
      std::string loop_lines = e.take_lines("        ");
      body << e.take_outer("    ") << "    " << t.loop << "\n" << chunk_lines("        ") << loop_lines;
      body << "        tl.store(" << out << " + " << t.full_idx << ", " << result << ", mask=fmask)\n";
    }
  } else {
    body << e.take_outer("    ") << e.take_lines("    ", true);
    body << "    tl.store(" << out << " + " << t.group_idx << ", " << result << ", mask=" << t.group_mask << ")\n";
  }
  k.body = body.str();
  kernels_.push_back(k);
}

// The split reduction's two launches: `k` (its body so far: one slice's reduction into red0)
// stores its partial to the scratch, slice-major; `name` reduces the slices of each output and
// applies the stage's epilogue.
void TritonEmitter::reduce_rows_split_final(const Stage& stage, const std::string& name, TritonKernel& k,
                                            std::ostringstream& body, ExprEmitter& e, int reduce,
                                            const std::string& group_idx) {
  const Node& red = g_.nodes[reduce];
  const Shape& ref = stage.reduce_shape;
  const int axis = stage.reduce_axes.at(0);
  const Shape groups_shape = [&] {
    Shape out(ref.begin(), ref.begin() + axis);
    out.insert(out.end(), ref.begin() + axis + 1, ref.end());
    return out;
  }();
  const std::string scratch = stage_scratch(stage, "rsplit");
  allocations_.push_back("    " + scratch + " = torch.empty((" + std::to_string(s_.split_r) + " * " +
                         py(numel_expr(groups_shape)) + ",), device=" + py_name_.at(g_.input_names.at(0)) +
                         ".device, dtype=torch.float32)\n");
  const std::string partial = k.output(scratch);
  const std::string total = k.size(py(numel_expr(groups_shape)), "total");
  body << e.take_outer("    ");
  body << "    tl.store(" << partial << " + sp * " << total << " + " << group_idx << ", red0, mask=imask)\n";
  TritonKernel k1 = k;
  k1.name = name + "_partial";
  k1.body = body.str();
  kernels_.push_back(k1);

  // The final pass: [SPLIT, IB] partials per program.
  TritonKernel k2 = kernel(name);
  const std::string ws = k2.buffer(scratch);
  const std::string out = k2.output(buffer_of_.at(stage.root));
  const std::string inner_size =
      k2.size(py(numel_expr(Shape(ref.begin() + axis + 1, ref.end()))), "inner");
  const std::string total2 = k2.size(py(numel_expr(groups_shape)), "total");
  const std::string iblock = k2.constant("IB", std::to_string(s_.block > 0 ? s_.block : 64));
  const std::string split = k2.constant("SPLIT", std::to_string(s_.split_r));
  k2.grid = k.grid.substr(0, k.grid.rfind(',')) + ",)";
  PatternMap patterns{g_, stage, [&](int id) { return is_buffer_leaf(id, stage.root); }, {}, ""};
  int counter = 0;
  ExprEmitter e2 = expr(&counter, stage.root);
  e2.red_len = dim(k2, ref[axis]);
  e2.dim = [&](const Dim& d) { return dim(k2, d); };
  const std::string idx = "o * " + inner_size + " + i";
  e2.load = [&](int id, const std::vector<std::string>&) -> std::string {
    return patterns.of(id) == Pattern::scalar ? load(k2, id, "0", "None") : load(k2, id, idx, "imask");
  };
  e2.known[reduce] = "red0";
  const std::string result = e2.value(stage.root, {});
  std::ostringstream b2;
  b2 << "    pid = tl.program_id(0)\n";
  b2 << "    nib = tl.cdiv(" << inner_size << ", " << iblock << ")\n";
  b2 << "    o = pid // nib\n";
  b2 << "    i = (pid % nib) * " << iblock << " + tl.arange(0, " << iblock << ")[None, :]\n";
  b2 << "    imask = i < " << inner_size << "\n";
  b2 << "    sp = tl.arange(0, " << split << ")[:, None]\n";
  b2 << "    red0 = " << reduce_fn(red.op) << "(tl.load(" << ws << " + sp * " << total2 << " + " << idx
     << ", mask=imask, other=0.0), axis=0, keep_dims=True)\n";
  b2 << e2.take_outer("    ") << e2.take_lines("    ", true);
  b2 << "    tl.store(" << out << " + " << idx << ", " << result << ", mask=imask)\n";
  k2.body = b2.str();
  kernels_.push_back(k2);
}

// Two launches: `partials` programs each reduce a grid-stride slice of BLOCK-element
// chunks into scratch, then one program combines them and applies the epilogue.
void TritonEmitter::reduce_full(const Stage& stage, const std::string& name, std::string& err) {
  const std::vector<int> reduces = region_reductions(stage);
  if (reduces.size() != 1) {
    err = "a full reduction region must hold exactly one reduction";
    return;
  }
  const Node& red = g_.nodes[reduces[0]];
  const std::string init = reduce_init(red.op, Target::triton);
  const std::string partial = stage_scratch(stage, "partial");
  int parts = 1;
  while (parts < s_.partials) parts <<= 1;  // a power of two: the final pass loads them as one block
  allocations_.push_back("    " + partial + " = torch.empty((" + std::to_string(parts) + ",), device=" +
                         py_name_.at(g_.input_names.at(0)) + ".device, dtype=torch.float32)\n");
  const std::string n_expr = py(numel_expr(stage.reduce_shape));
  int counter = 0;

  TritonKernel k1 = kernel(name + "_partial");
  const std::string n = k1.size(n_expr, "n");
  // Operands of the reduced tensor's shape are read at offs; broadcast ones at the
  // coordinates of offs, computed only when one needs them.
  std::vector<std::string> coords;
  for (size_t axis = 0; axis < stage.reduce_shape.size(); ++axis) coords.push_back("c" + std::to_string(axis));
  bool need_coords = false;
  ExprEmitter e1 = expr(&counter, stage.root);
  e1.load = [&](int id, const std::vector<std::string>& c) -> std::string {
    const Shape& shape = g_.nodes[id].shape;
    if (reads_in_order(shape, c, coords, stage.reduce_shape) || numel_value(shape) == 1)
      return load(k1, id, "offs", "mask", "evict_first");
    need_coords = true;
    return load(k1, id, "(" + offset_expr(shape, c, [&](const Dim& d) { return dim(k1, d); }) + ")", "mask");
  };
  std::string v = e1.value(red.args[0], coords);
  std::string lines = e1.take_lines("        ");
  if (need_coords) lines = reindent(coordinate_lines(k1, stage.reduce_shape), "        ") + lines;
  if (!err.empty()) return;
  const std::string p1 = k1.output(partial);
  const int block_value = s_.block > 0 ? s_.block : 1024;
  const std::string block = k1.constant("BLOCK", std::to_string(block_value));
  const std::string parts_name = k1.constant("PARTS", std::to_string(parts));
  k1.grid = "(" + std::to_string(parts) + ",)";
  std::ostringstream b1;
  b1 << "    pid = tl.program_id(0)\n";
  b1 << "    acc = tl.full([" << block << "], " << init << ", dtype=tl.float32)\n";
  b1 << "    for start in range(pid * " << block << ", " << n << ", " << parts_name << " * " << block << "):\n";
  b1 << "        offs = start + tl.arange(0, " << block << ")\n";
  b1 << "        mask = offs < " << n << "\n" << lines;
  b1 << "        acc = " << combine_code(red.op, "acc", "tl.where(mask, " + v + ", " + init + ")", Target::triton) << "\n";
  b1 << "    tl.store(" << p1 << " + pid, " << reduce_fn(red.op) << "(acc, axis=0))\n";
  k1.body = b1.str();

  TritonKernel k2 = kernel(name + "_final");
  const std::string p2 = k2.buffer(partial);
  const std::string out = k2.output(buffer_of_.at(stage.root));
  ExprEmitter e2 = expr(&counter, stage.root);
  e2.red_len = k2.size(n_expr, "n");
  e2.load = [&](int id, const std::vector<std::string>&) { return load(k2, id, "0", "None"); };
  e2.known[reduces[0]] = "red";
  std::string result = e2.value(stage.root, {});
  const std::string parts2 = k2.constant("PARTS", std::to_string(parts));
  k2.grid = "(1,)";
  std::ostringstream b2;
  b2 << "    red = " << reduce_fn(red.op) << "(tl.load(" << p2 << " + tl.arange(0, " << parts2 << ")), axis=0)\n";
  b2 << e2.take_outer("    ") << e2.take_lines("    ") << "    tl.store(" << out << ", " << result << ")\n";
  k2.body = b2.str();
  kernels_.push_back(k1);
  kernels_.push_back(k2);
}

}  // namespace kforge::codegen::emit
