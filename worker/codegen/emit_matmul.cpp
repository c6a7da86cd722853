// Matmul stages behind emit_program.h: local-memory tiles for GPUs (tile > 0), register
// blocks with floatN loads for CPUs (tile 0), a work-group per output row for a product
// with one output column (line_group: a matrix-vector product), each with the stage's
// fused epilogue applied before the single store. Test: ctest -R codegen.
#include <algorithm>
#include <functional>
#include <sstream>

#include "worker/codegen/emit_program.h"

namespace kforge::codegen::emit {

// The operands of a matmul stage as its kernel names them.
struct MatmulOperands {
  bool trans_a = false, trans_b = false;  // read through a transposing view
  const Shape* a_eff = nullptr;            // shapes as the matmul sees them (after the views)
  const Shape* b_eff = nullptr;
  std::string a, b;                        // buffer parameters
  std::string M, K, N;                     // size parameters (N is "1" for a matrix-vector product)
  bool batched = false, b_batched = false, mv = false;
};

// The register-blocked layout: rm rows x (vec or cn) columns per work-item.
struct RegisterBlock {
  int rm = 1, vec = 4, cn = 1;
  std::string vn, fv;            // "4", "float4"
  std::string a_base, b_base;    // batch offsets
  std::string out_row;           // offset of output row m
  std::vector<std::string> coords;
};

// Registers A and B (under their views) and the M, K, N sizes, in that order.
MatmulOperands ProgramEmitter::matmul_operands(const Node& mm, Kernel& k) {
  MatmulOperands ops;
  int a_id = strip_views(g_, mm.args[0], ops.trans_a), b_id = strip_views(g_, mm.args[1], ops.trans_b);
  ops.a_eff = &g_.nodes[mm.args[0]].shape;
  ops.b_eff = &g_.nodes[mm.args[1]].shape;
  const Shape &a_eff = *ops.a_eff, &b_eff = *ops.b_eff;
  ops.a = k.buffer(buffer_name(a_id));
  ops.b = k.buffer(buffer_name(b_id));
  ops.batched = a_eff.size() == 3;
  ops.b_batched = b_eff.size() == 3;
  ops.mv = b_eff.size() == 1;
  ops.M = k.size(a_eff[a_eff.size() - 2].expr(), "M");
  ops.K = k.size(a_eff.back().expr(), "K");
  ops.N = ops.mv ? "1" : k.size(b_eff.back().expr(), "N");
  return ops;
}

// ------------------------------------------------------------------ tiled matmul

// C[b, m, n] = sum_k A[b, m, k] * B[b, k, n] with TS x TS tiles of A and B staged in
// local memory; each work-item accumulates work_per_item rows of one column, then
// applies the fused epilogue before its single store.
std::string ProgramEmitter::matmul(const Stage& stage, const std::string& name, std::string& err) {
  if (s_.line_group) return matvec_rows(stage, name, err);
  if (s_.warp_m > 0) return matmul_tensor_cores(stage, name, err);
  if (s_.reg_m > 0) return matmul_register_tiles(stage, name, err);
  if (s_.tile == 0) return matmul_registers(stage, name, err);
  const int ts = s_.tile, wpt = s_.work_per_item;
  if (wpt < 1 || ts % wpt != 0) {
    err = "work_per_item must divide tile";
    return "";
  }
  const int rts = ts / wpt;
  Kernel k = kernel(name, buffer_of_.at(stage.root));
  const MatmulOperands ops = matmul_operands(g_.nodes[stage.anchor], k);
  const Shape &a_eff = *ops.a_eff, &b_eff = *ops.b_eff;
  const std::string &M = ops.M, &K = ops.K, &N = ops.N;
  const std::string a_off = std::string(ops.batched ? "bat * " + M + " * " + K + " + " : "") +
                            (ops.trans_a ? "ak * " + M + " + am" : "am * " + K + " + ak");
  const std::string b_off = ops.mv ? "bk"
                                   : std::string(ops.b_batched ? "bat * " + K + " * " + N + " + " : "") +
                                         (ops.trans_b ? "bn * " + K + " + bk" : "bk * " + N + " + bn");
  k.attributes = d_.work_group_attribute(ts, rts);
  k.grid = "cdiv(" + b_eff.back().expr() + ", " + std::to_string(ts) + "),cdiv(" + a_eff[a_eff.size() - 2].expr() +
           ", " + std::to_string(ts) + ")" + (ops.batched ? "," + a_eff[0].expr() : ",1");
  if (ops.mv) k.grid = "1,cdiv(" + a_eff[0].expr() + ", " + std::to_string(ts) + "),1";
  k.block = std::to_string(ts) + "," + std::to_string(rts) + ",1";
  std::string out_idx, result;
  const std::string epilogue = tiled_epilogue(stage, k, M, N, out_idx, result);

  std::ostringstream body;
  body << "  " << d_.shared() << " float tile_a[" << ts << "][" << ts << "];  // [m][k]\n";
  body << "  " << d_.shared() << " float tile_b[" << ts << "][" << ts << "];  // [k][n]\n";
  body << "  const int lx = " << d_.local_id(0) << ", ly = " << d_.local_id(1) << ";\n";
  body << "  const int n = " << d_.group_id(0) << " * " << ts << " + lx;\n";
  body << "  const int m0 = " << d_.group_id(1) << " * " << ts << ";\n";
  if (ops.batched) body << "  const int bat = " << d_.group_id(2) << ";\n";
  body << "  float acc[" << wpt << "];\n";
  body << "  for (int wr = 0; wr < " << wpt << "; ++wr) acc[wr] = 0.0f;\n";
  body << "  for (int k0 = 0; k0 < " << K << "; k0 += " << ts << ") {\n";
  body << "    for (int wr = 0; wr < " << wpt << "; ++wr) {\n";
  body << "      const int tr = ly + wr * " << rts << ";\n";
  body << "      const int am = m0 + tr, ak = k0 + lx;\n";
  body << "      tile_a[tr][lx] = (am < " << M << " && ak < " << K << ") ? " << ops.a << "[" << a_off << "] : 0.0f;\n";
  body << "      const int bk = k0 + tr, bn = n;\n";
  body << "      tile_b[tr][lx] = (bk < " << K << " && bn < " << N << ") ? " << ops.b << "[" << b_off << "] : 0.0f;\n";
  body << "    }\n    " << d_.barrier() << ";\n";
  body << unroll_pragma(s_.unroll, "    ");
  body << "    for (int kk = 0; kk < " << ts << "; ++kk) {\n";
  body << "      const float bv = tile_b[kk][lx];\n";
  body << "      for (int wr = 0; wr < " << wpt << "; ++wr) acc[wr] += tile_a[ly + wr * " << rts << "][kk] * bv;\n";
  body << "    }\n    " << d_.barrier() << ";\n  }\n";
  body << "  for (int wr = 0; wr < " << wpt << "; ++wr) {\n";
  body << "    const int m = m0 + ly + wr * " << rts << ";\n";
  body << "    if (m < " << M << " && n < " << N << ") {\n" << epilogue;
  body << "      " << k.output_buffer << "[" << out_idx << "] = " << result << ";\n    }\n  }\n";
  k.body = body.str();
  return k.render();
}

// Epilogue of the tiled form: the stage root as a function of acc[wr] at coordinates
// (bat, m, n); returns its lines and sets the output index and the stored value.
std::string ProgramEmitter::tiled_epilogue(const Stage& stage, Kernel& k, const std::string& M, const std::string& N,
                                           std::string& out_idx, std::string& result, const std::string& acc) {
  const Shape& out_shape = g_.nodes[stage.root].shape;
  std::vector<std::string> coords;
  if (out_shape.size() == 3) coords = {"bat", "m", "n"};
  else if (out_shape.size() == 2) coords = {"m", "n"};
  else coords = {"m"};
  out_idx = out_shape.size() == 3 ? "(bat * " + M + " + m) * " + N + " + n"
            : out_shape.size() == 2 ? "m * " + N + " + n" : "m";
  int counter = 0;
  ExprEmitter e = expr(1, &counter);
  e.is_leaf = [&](int id) { return id != stage.anchor && is_buffer_leaf(id, stage.root); };
  e.known[stage.anchor] = acc;
  e.load = [&](int id, const std::vector<std::string>& c) -> std::string {
    std::string buf = k.buffer(buffer_name(id));
    const Shape& shape = g_.nodes[id].shape;
    if (numel_value(shape) == 1) return buf + "[0]";
    if (reads_in_order(shape, c, coords, out_shape)) return buf + "[" + out_idx + "]";
    return buf + "[" + offset(k, shape, c) + "]";
  };
  result = e.value(stage.root, coords);
  return e.take_outer("      ") + e.take_lines("      ");
}

// ---------------------------------------------- double-buffered shared slices

namespace {

// The A and B slices of a block tile, block_k deep, staged through registers into two shared
// buffers per operand (As[2][..][..], Bs[2][..][..]), A k-major ([k][m]) or m-major, B k-major
// or n-major. Global reads run along each operand's contiguous dim ("inner": k for a row-major
// A and a transposed B, m and n otherwise), so they are coalesced. Where the slice divides into
// runs of 4 inner elements per thread evenly, a thread takes runs of 4: one 16-byte load when
// the contiguous dim's size is a multiple of 4 (checked at run time: alignment) and the run is
// in bounds, else four guarded scalar loads; the run is stored as one 16-byte store when the
// shared tile runs along the same dim, else as four. Otherwise a thread takes single elements.
class StagedSlices {
 public:
  StagedSlices(const MatmulOperands& ops, int bm, int bn, int bk, int threads, bool a_kmajor, bool b_kmajor,
               bool cuda)
      : threads_(threads), bk_(std::to_string(bk)), K_(ops.K), cuda_(cuda) {
    const std::string &M = ops.M, &K = ops.K, &N = ops.N;
    // One operand: its m (or n) dim `mn` of size MN, its k dim; k_inner when it runs along k
    // (a row-major A, a transposed B); shared k-major ([k][mn]) or not ([mn][k]).
    auto operand = [&](Slice& sl, const std::string& letter, const std::string& buf, const std::string& base,
                       const std::string& mn, const std::string& MN, const std::string& mn0, int mn_extent,
                       bool k_inner, bool kmajor) {
      sl.regs = "p" + letter;
      sl.tile = letter == "a" ? "As" : "Bs";
      sl.vec = "vec_" + letter;
      const Dim k_dim{"kk", letter + "k", "kn", bk, K}, mn_dim{mn + mn, letter + mn, mn0, mn_extent, MN};
      sl.inner = k_inner ? k_dim : mn_dim;
      sl.outer = k_inner ? mn_dim : k_dim;
      const std::string outer_g = sl.outer.global_idx, outer_stride = k_inner ? K : MN;
      sl.at = [=](const std::string& inner_g) { return buf + "[" + base + outer_g + " * " + outer_stride + " + " + inner_g + "]"; };
      sl.cell = [kmajor](const std::string& m, const std::string& k) {
        return kmajor ? "[" + k + "][" + m + "]" : "[" + m + "][" + k + "]";
      };
      sl.cell_along_inner = kmajor != k_inner;
    };
    operand(slices_[0], "a", ops.a, ops.batched ? "bat * " + M + " * " + K + " + " : "", "m", M, "m0", bm,
            !ops.trans_a, a_kmajor);
    operand(slices_[1], "b", ops.b, ops.b_batched ? "bat * " + K + " * " + N + " + " : "", "n", N, "n0", bn,
            ops.trans_b, b_kmajor);
    for (Slice* sl : {&slices_[0], &slices_[1]}) {
      const int elements = sl->inner.extent * sl->outer.extent;
      sl->count = elements / threads;
      sl->runs = sl->inner.extent % 4 == 0 && elements % (4 * threads) == 0;
    }
  }

  // The main loop: the first slice fetched and stored before it; per step, the next slice's
  // global reads into registers, `products` (this slice's products, reading buffer `buf`),
  // then the next slice's store to the other buffer and one barrier. The global latency of the
  // next slice overlaps this one's arithmetic.
  std::string pipeline(const std::string& products, const std::string& barrier) const {
    std::string out;
    for (const Slice& sl : slices_)
      if (sl.runs)
        out += "  const bool " + sl.vec + " = " + sl.inner.size + " % 4 == 0;  // 16-byte loads stay aligned\n";
    out += "  float " + slices_[0].regs + "[" + std::to_string(slices_[0].count) + "], " + slices_[1].regs + "[" +
           std::to_string(slices_[1].count) + "];\n";
    out += "  {\n    const int kn = 0;\n" + fetch("    ") + store("    ", "0") + "  }\n";
    out += "  " + barrier + ";\n  int buf = 0;\n";
    out += "  for (int k0 = 0; k0 < " + K_ + "; k0 += " + bk_ + ") {\n";
    out += "    const int kn = k0 + " + bk_ + ";\n    const bool more = kn < " + K_ + ";\n";
    out += "    if (more) {\n" + fetch("      ") + "    }\n";
    out += products;
    out += "    if (more) {\n" + store("      ", "buf ^ 1") + "    }\n";
    out += "    buf ^= 1;\n    " + barrier + ";\n  }\n";
    return out;
  }

 private:
  struct Dim {
    std::string tile_idx, global_idx, origin;  // "kk", "ak", "kn": ak = kn + kk
    int extent = 0;                            // in the slice
    std::string size;                          // of the operand's dim
  };
  struct Slice {
    std::string regs, tile, vec;
    Dim inner, outer;
    std::function<std::string(const std::string&)> at;  // element at (outer, inner = the argument)
    std::function<std::string(const std::string&, const std::string&)> cell;  // [buf] + cell(m or n, k)
    bool cell_along_inner = false;  // the shared tile runs along the inner dim
    int count = 0;                  // elements a thread
    bool runs = false;              // runs of 4 inner elements a thread
  };
  Slice slices_[2];
  int threads_;
  std::string bk_, K_;
  bool cuda_;

  // The shared cell of tile indices (inner, outer) in the slice's (m or n, k) order.
  std::string cell(const Slice& sl, const std::string& inner, const std::string& outer) const {
    const bool inner_is_k = sl.inner.tile_idx == "kk";
    return inner_is_k ? sl.cell(outer, inner) : sl.cell(inner, outer);
  }
  // The loop over a thread's elements (or runs), with the tile and global indices of each.
  std::string each(const Slice& sl, const std::string& indent, bool with_global, const std::string& lines) const {
    const Dim &in = sl.inner, &out = sl.outer;
    const int step = sl.runs ? 4 : 1, units = sl.count / step, across = in.extent / step;
    std::string text = indent + "#pragma unroll\n" + indent + "for (int ld = 0; ld < " + std::to_string(units) +
                       "; ++ld) {\n" + indent + "  const int el = tid + ld * " + std::to_string(threads_) + ";\n";
    text += indent + "  const int " + in.tile_idx + " = el % " + std::to_string(across) + (sl.runs ? " * 4" : "") +
            ", " + out.tile_idx + " = el / " + std::to_string(across) + ";\n";
    if (with_global)
      text += indent + "  const int " + in.global_idx + " = " + in.origin + " + " + in.tile_idx + ", " + out.global_idx +
              " = " + out.origin + " + " + out.tile_idx + ";\n";
    return text + lines + indent + "}\n";
  }
  std::string fetch(const std::string& indent) const {
    std::string text;
    for (const Slice& sl : slices_) {
      const Dim &in = sl.inner, &out = sl.outer;
      const std::string i2 = indent + "  ", r = sl.regs;
      std::string lines;
      if (!sl.runs) {
        lines = i2 + r + "[ld] = (" + out.global_idx + " < " + out.size + " && " + in.global_idx + " < " + in.size +
                ") ? " + sl.at(in.global_idx) + " : 0.0f;\n";
      } else {
        const std::string load = cuda_ ? "*reinterpret_cast<const float4*>(&" + sl.at(in.global_idx) + ")"
                                       : "vload4(0, &" + sl.at(in.global_idx) + ")";
        lines = i2 + "if (" + sl.vec + " && " + out.global_idx + " < " + out.size + " && " + in.global_idx + " < " +
                in.size + ") {\n" + i2 + "  const float4 run = " + load + ";\n" + i2 + "  " + r + "[4 * ld] = run.x; " +
                r + "[4 * ld + 1] = run.y; " + r + "[4 * ld + 2] = run.z; " + r + "[4 * ld + 3] = run.w;\n" + i2 +
                "} else {\n" + i2 + "  #pragma unroll\n" + i2 + "  for (int c = 0; c < 4; ++c)\n" + i2 + "    " + r +
                "[4 * ld + c] = (" + out.global_idx + " < " + out.size + " && " + in.global_idx + " + c < " + in.size +
                ") ? " + sl.at(in.global_idx + " + c") + " : 0.0f;\n" + i2 + "}\n";
      }
      text += each(sl, indent, true, lines);
    }
    return text;
  }
  std::string store(const std::string& indent, const std::string& buf) const {
    std::string text;
    for (const Slice& sl : slices_) {
      const Dim &in = sl.inner, &out = sl.outer;
      const std::string i2 = indent + "  ", r = sl.regs, tile = sl.tile + "[" + buf + "]";
      std::string lines;
      if (!sl.runs) {
        lines = i2 + tile + cell(sl, in.tile_idx, out.tile_idx) + " = " + r + "[ld];\n";
      } else if (sl.cell_along_inner) {
        const std::string run = r + "[4 * ld], " + r + "[4 * ld + 1], " + r + "[4 * ld + 2], " + r + "[4 * ld + 3]";
        const std::string at = "&" + tile + cell(sl, in.tile_idx, out.tile_idx);
        lines = cuda_ ? i2 + "*reinterpret_cast<float4*>(" + at + ") = make_float4(" + run + ");\n"
                      : i2 + "vstore4((float4)(" + run + "), 0, " + at + ");\n";
      } else {
        lines = i2 + "#pragma unroll\n" + i2 + "for (int c = 0; c < 4; ++c) " + tile +
                cell(sl, in.tile_idx + " + c", out.tile_idx) + " = " + r + "[4 * ld + c];\n";
      }
      text += each(sl, indent, false, lines);
    }
    return text;
  }
};

}  // namespace

// ---------------------------------------------------------- 2-D register tiles

// The kernel of a block-tiled matmul and its operands, launched as a block of `threads` per
// bm x bn output tile, the batch on the grid's third axis; false (err set) for a
// matrix-vector product, which has its own form.
bool ProgramEmitter::block_tile_kernel(const Stage& stage, const std::string& name, int bm, int bn, int threads,
                                       Kernel& k, MatmulOperands& ops, std::string& err) {
  k = kernel(name, buffer_of_.at(stage.root));
  ops = matmul_operands(g_.nodes[stage.anchor], k);
  if (ops.mv) {
    err = "a matrix-vector product has its own form (line_group)";
    return false;
  }
  const Shape &a_eff = *ops.a_eff, &b_eff = *ops.b_eff;
  k.attributes = d_.work_group_attribute(threads, 1);
  k.grid = "cdiv(" + b_eff.back().expr() + ", " + std::to_string(bn) + "),cdiv(" + a_eff[a_eff.size() - 2].expr() +
           ", " + std::to_string(bm) + ")," + (ops.batched ? a_eff[0].expr() : "1");
  k.block = std::to_string(threads) + ",1,1";
  return true;
}

// C[b, m, n] = sum_k A[b, m, k] * B[b, k, n], a block_m x block_n tile per block of
// (block_m / reg_m) x (block_n / reg_n) threads. Per block_k-deep step, the block stages A's and
// B's slices k-major in shared memory (global reads along each operand's contiguous dim), then
// every thread multiplies its reg_m values of A by its reg_n values of B at each k (an outer
// product into reg_m x reg_n accumulators). A thread's rows (and columns) are runs of 4 spread
// over the tile, 4 * block / reg apart, so a warp's float4 reads of a slice are contiguous
// (no bank conflicts) and the staging stores, padded by 4, spread over the banks. Two buffers:
// the next slice's global reads are in flight during this one's products. The fused
// epilogue is applied to each accumulator before its store. The 1-D form (tile x work_per_item)
// kept 1024^3 fp32 at about 0.4x cuBLAS on an H200 (2026-11-29).
std::string ProgramEmitter::matmul_register_tiles(const Stage& stage, const std::string& name, std::string& err) {
  const int bm = s_.block_m, bn = s_.block_n, bk = s_.block_k, tm = s_.reg_m, tn = s_.reg_n;
  if (tm % 4 != 0 || tn % 4 != 0 || tm > 8 || tn > 8 || bm % tm != 0 || bn % tn != 0) {
    err = "a register tile needs reg_m, reg_n of 4 or 8 dividing block_m, block_n";
    return "";
  }
  const int tx_count = bn / tn, ty_count = bm / tm, threads = tx_count * ty_count;
  if (threads > 1024 || threads < 32 || (bm * bk) % threads != 0 || (bk * bn) % threads != 0) {
    err = "a register tile's block needs 32-1024 threads dividing its A and B slices";
    return "";
  }
  Kernel k;
  MatmulOperands ops;
  if (!block_tile_kernel(stage, name, bm, bn, threads, k, ops, err)) return "";
  const std::string &M = ops.M, &N = ops.N;
  std::string out_idx, result;
  const std::string epilogue = tiled_epilogue(stage, k, M, N, out_idx, result, "acc[i][j]");
  // A thread's i-th row / j-th column of the tile.
  auto spread = [](const std::string& idx, const std::string& lane, int block, int reg) {
    return "(" + idx + " / 4) * " + std::to_string(4 * block / reg) + " + " + lane + " * 4 + " + idx + " % 4";
  };
  auto read4 = [&](const std::string& tile, const std::string& at) {
    return d_.cuda() ? "*reinterpret_cast<const float4*>(&" + tile + "[buf][kk][" + at + "])"
                     : "vload4(0, &" + tile + "[buf][kk][" + at + "])";
  };
  std::ostringstream body;
  body << "  // " << bm << " x " << bn << " outputs per block of " << threads << " threads, " << tm << " x " << tn
       << " per thread; A and B " << bk << "-deep slices k-major in shared memory, two buffers\n";
  body << "  " << d_.shared() << " float As[2][" << bk << "][" << bm + 4 << "];\n";
  body << "  " << d_.shared() << " float Bs[2][" << bk << "][" << bn + 4 << "];\n";
  body << "  const int tid = " << d_.local_id(0) << ";\n";
  body << "  const int tx = tid % " << tx_count << ", ty = tid / " << tx_count << ";\n";
  body << "  const int m0 = " << d_.group_id(1) << " * " << bm << ", n0 = " << d_.group_id(0) << " * " << bn << ";\n";
  if (ops.batched) body << "  const int bat = " << d_.group_id(2) << ";\n";
  body << "  float acc[" << tm << "][" << tn << "];\n";
  // Every loop over the accumulators is unrolled: indexed by a runtime value they would live in
  // local memory instead of registers.
  body << "  #pragma unroll\n  for (int i = 0; i < " << tm << "; ++i)\n    #pragma unroll\n    for (int j = 0; j < " << tn
       << "; ++j) acc[i][j] = 0.0f;\n";
  const StagedSlices slices(ops, bm, bn, bk, threads, true, true, d_.cuda());
  std::ostringstream products;
  products << "    #pragma unroll\n    for (int kk = 0; kk < " << bk << "; ++kk) {\n";
  products << "      float a_reg[" << tm << "], b_reg[" << tn << "];\n";
  // A thread's reg values of one slice at this k: its runs of 4, each one float4 read.
  auto read_runs = [&](const std::string& operand, const std::string& tile, int reg, int block, const std::string& lane) {
    for (int c = 0; c < reg / 4; ++c) {
      const std::string v = operand + "_vec" + std::to_string(c), regs = operand + "_reg[";
      products << "      const float4 " << v << " = "
               << read4(tile, std::to_string(c * 4 * block / reg) + " + " + lane + " * 4") << ";\n      ";
      for (int lane_idx = 0; lane_idx < 4; ++lane_idx)
        products << regs << c * 4 + lane_idx << "] = " << v << "." << "xyzw"[lane_idx] << (lane_idx < 3 ? "; " : ";\n");
    }
  };
  read_runs("a", "As", tm, bm, "ty");
  read_runs("b", "Bs", tn, bn, "tx");
  products << "      #pragma unroll\n      for (int i = 0; i < " << tm << "; ++i)\n";
  products << "        #pragma unroll\n        for (int j = 0; j < " << tn << "; ++j) acc[i][j] += a_reg[i] * b_reg[j];\n";
  products << "    }\n";
  body << slices.pipeline(products.str(), d_.barrier());
  body << "  #pragma unroll\n  for (int i = 0; i < " << tm << "; ++i) {\n";
  body << "    const int m = m0 + " << spread("i", "ty", bm, tm) << ";\n";
  body << "    #pragma unroll\n    for (int j = 0; j < " << tn << "; ++j) {\n";
  body << "      const int n = n0 + " << spread("j", "tx", bn, tn) << ";\n";
  body << "      if (m < " << M << " && n < " << N << ") {\n" << reindent(epilogue, "        ");
  body << "        " << k.output_buffer << "[" << out_idx << "] = " << result << ";\n      }\n    }\n  }\n";
  k.body = body.str();
  return k.render();
}

// ------------------------------------------------------------- tensor-core tiles

// C[b, m, n] = sum_k A[b, m, k] * B[b, k, n] on the tensor cores, in fp32 through 3xTF32: each
// operand value x is split into hi = x rounded to TF32 (10 mantissa bits) and lo = x - hi, and
// a * b is taken as a_lo * b_hi + a_hi * b_lo + a_hi * b_hi (the a_lo * b_lo term, about 2^-22
// of the product, is dropped), three WMMA m16n16k8 TF32 products with fp32 accumulation, as
// CUTLASS's fast-fp32 GEMMs and Triton's input_precision="tf32x3" do. The baselines run fp32
// with TF32 off; one TF32 product alone would not be fp32's accuracy. A block of warps computes
// a block_m x block_n tile, each warp warp_m x warp_n of it in 16 x 16 fragments, from
// block_k-deep slices of A and B double-buffered in shared memory, each laid out along the
// operand's contiguous dim (rows padded so a fragment's reads spread over the banks).
// The WMMA compiler builtins need no header (programs may not #include) and no inline assembly
// (the static rules forbid it); the TF32 rounding is integer arithmetic on the bits (round half
// away from zero, as cvt.rna). The builtins' loads take generic pointers, and compiled that way
// every fragment element was a generic 64-bit-addressed load (SASS LD.E, not LDS: on an H200 the
// 1024^3 product ran 93-103 us against the SIMT register tile's 90-105). So the builtins load
// fragments only once, from index tiles: each lane learns which (row, col) of a 16 x 8 A, 8 x 16
// B and 16 x 16 accumulator each of its fragment elements holds (the hardware's layout, which
// CUDA leaves unspecified), then reads its fragments from the shared slices itself and applies
// the epilogue to each accumulator at its own (m, n). Needs sm_80+.
std::string ProgramEmitter::matmul_tensor_cores(const Stage& stage, const std::string& name, std::string& err) {
  const int bm = s_.block_m, bn = s_.block_n, bk = s_.block_k, wm = s_.warp_m, wn = s_.warp_n;
  if (!d_.cuda()) {
    err = "tensor-core matmuls (warp_m > 0) are cuda only";
    return "";
  }
  if (s_.dot_x3 != 1) {
    err = "tensor-core matmuls need dot_x3 = 1 (3xTF32): the baselines are fp32 with TF32 off";
    return "";
  }
  if (wm % 16 != 0 || wn % 16 != 0 || bk % 8 != 0 || bm % wm != 0 || bn % wn != 0) {
    err = "a tensor-core tile needs warp_m, warp_n multiples of 16 dividing block_m, block_n, and block_k a multiple of 8";
    return "";
  }
  const int warps_n = bn / wn, warps = (bm / wm) * warps_n, threads = 32 * warps;
  if (threads > 1024 || (bm * bk) % threads != 0 || (bk * bn) % threads != 0) {
    err = "a tensor-core tile's block needs at most 1024 threads dividing its A and B slices";
    return "";
  }
  Kernel k;
  MatmulOperands ops;
  if (!block_tile_kernel(stage, name, bm, bn, threads, k, ops, err)) return "";
  // Shared tiles along each operand's contiguous dim: A [m][k] (row-major A) or [k][m]
  // (transposed), B [n][k] (transposed B, a linear's weight) or [k][n], rows padded by 4 or 8
  // floats (a fragment's 8 rows x 4 columns then fall in 32 different banks).
  const bool a_col = ops.trans_a, b_col = ops.trans_b;
  const int lda = a_col ? bm + 8 : bk + 4, ldb = b_col ? bk + 4 : bn + 8;
  const int a_rows = a_col ? bk : bm, b_rows = b_col ? bn : bk;
  const int shared_bytes = 2 * 4 * (a_rows * lda + b_rows * ldb);
  if (shared_bytes > 48 * 1024) {
    err = "a tensor-core tile's two buffers need " + std::to_string(shared_bytes) +
          " bytes of shared memory; 49152 is the static limit";
    return "";
  }
  if (a_rows * lda < 256) {
    err = "a tensor-core tile's A buffers are too small for the layout's index tiles";
    return "";
  }
  const std::string &M = ops.M, &N = ops.N;
  std::string out_idx, result;
  const std::string epilogue = tiled_epilogue(stage, k, M, N, out_idx, result, "acc[i][j][e]");
  const int mt = wm / 16, nt = wn / 16;
  // Strides of (m, k) in A's tile and of (n, k) in B's.
  const std::string a_sm = a_col ? "1" : std::to_string(lda), a_sk = a_col ? std::to_string(lda) : "1";
  const std::string b_sn = b_col ? std::to_string(ldb) : "1", b_sk = b_col ? "1" : std::to_string(ldb);

  std::ostringstream body;
  body << "  // " << bm << " x " << bn << " outputs per block of " << warps << " warps, " << wm << " x " << wn
       << " per warp in 16 x 16 WMMA fragments, fp32 as three TF32 products (3xTF32);\n"
       << "  // A and B " << bk << "-deep slices in shared memory along their contiguous dims, two buffers\n";
  body << "  __shared__ __align__(32) float As[2][" << a_rows << "][" << lda << "];\n";
  body << "  __shared__ __align__(32) float Bs[2][" << b_rows << "][" << ldb << "];\n";
  body << "  const int tid = " << d_.local_id(0) << ", warp = tid / 32;\n";
  body << "  const int wm0 = (warp / " << warps_n << ") * " << wm << ", wn0 = (warp % " << warps_n << ") * " << wn
       << ";\n";
  body << "  const int m0 = " << d_.group_id(1) << " * " << bm << ", n0 = " << d_.group_id(0) << " * " << bn << ";\n";
  if (ops.batched) body << "  const int bat = " << d_.group_id(2) << ";\n";
  // An index tile (value t at t) in A's first buffer, read through the builtins as a 16 x 8
  // row-major A, an 8 x 16 column-major B, or (after the loop) a 16 x 16 row-major accumulator.
  auto index_tile = [&](const std::string& indent) {
    return indent + "for (int t = tid; t < 256; t += " + std::to_string(threads) + ") (&As[0][0][0])[t] = (float)t;\n" +
           indent + d_.barrier() + ";\n";
  };
  body << "  // Which (row, col) each of this lane's fragment elements holds: A's element e is at a_at[e]\n"
       << "  // of a fragment's first element in As, B's at b_at[e] in Bs.\n";
  body << "  int a_at[4], b_at[4];\n  {\n" << index_tile("    ");
  body << "    float fa[4], fb[4];\n";
  body << "    __mma_tf32_m16n16k8_ld_a(reinterpret_cast<int*>(fa), reinterpret_cast<const int*>(&As[0][0][0]), 8, 0);\n";
  body << "    __mma_tf32_m16n16k8_ld_b(reinterpret_cast<int*>(fb), reinterpret_cast<const int*>(&As[0][0][0]), 8, 1);\n";
  body << "    #pragma unroll\n    for (int e = 0; e < 4; ++e) {\n";
  body << "      const int at = (int)fa[e], bt = (int)fb[e];  // A (m, k) = (at / 8, at % 8); B (k, n) = (bt % 8, bt / 8)\n";
  body << "      a_at[e] = (at / 8) * " << a_sm << " + (at % 8) * " << a_sk << ";\n";
  body << "      b_at[e] = (bt / 8) * " << b_sn << " + (bt % 8) * " << b_sk << ";\n";
  body << "    }\n    " << d_.barrier() << ";\n  }\n";
  body << "  float acc[" << mt << "][" << nt << "][8];  // the hardware's fragment layout\n";
  body << "  #pragma unroll\n  for (int i = 0; i < " << mt << "; ++i)\n    #pragma unroll\n    for (int j = 0; j < "
       << nt << "; ++j)\n      #pragma unroll\n      for (int e = 0; e < 8; ++e) acc[i][j][e] = 0.0f;\n";
  const StagedSlices slices(ops, bm, bn, bk, threads, a_col, !b_col, true);
  // Reads `count` fragments of 4 elements from the shared tile at `base` (fragment f at
  // f * step), splitting each value into hi (rounded to TF32) and lo = x - hi (exact in fp32).
  auto fragments = [&](const std::string& hi, const std::string& lo, const std::string& f, int count,
                       const std::string& base, const std::string& step, const std::string& at) {
    std::ostringstream out;
    out << "      #pragma unroll\n      for (int " << f << " = 0; " << f << " < " << count << "; ++" << f << ")\n";
    out << "        #pragma unroll\n        for (int e = 0; e < 4; ++e) {\n";
    out << "          const float xv = " << base << "[" << f << " * " << step << " + " << at << "[e]];\n";
    out << "          " << hi << "[" << f << "][e] = __uint_as_float((__float_as_uint(xv) + 0x1000u) & 0xffffe000u);\n";
    out << "          " << lo << "[" << f << "][e] = xv - " << hi << "[" << f << "][e];\n";
    out << "        }\n";
    return out.str();
  };
  std::ostringstream products;
  // The k8 steps of a slice unrolled `unroll` at a time (1: a loop): fully unrolled, the compiler
  // hoists every step's fragment loads and the registers limit the blocks per SM.
  products << "    #pragma unroll " << std::max(1, s_.unroll) << "\n    for (int ks = 0; ks < " << bk
           << "; ks += 8) {\n";
  products << "      const float* a_tile = &As[buf][0][0] + wm0 * " << a_sm << " + ks * " << a_sk << ";\n";
  products << "      const float* b_tile = &Bs[buf][0][0] + wn0 * " << b_sn << " + ks * " << b_sk << ";\n";
  products << "      float a_hi[" << mt << "][4], a_lo[" << mt << "][4], b_hi[" << nt << "][4], b_lo[" << nt
           << "][4];\n";
  products << fragments("a_hi", "a_lo", "i", mt, "a_tile", "16 * " + a_sm, "a_at");
  products << fragments("b_hi", "b_lo", "j", nt, "b_tile", "16 * " + b_sn, "b_at");
  products << "      #pragma unroll\n      for (int i = 0; i < " << mt << "; ++i)\n";
  products << "        #pragma unroll\n        for (int j = 0; j < " << nt << "; ++j) {\n";
  auto mma = [&](const std::string& a, const std::string& b) {
    products << "          __mma_tf32_m16n16k8_mma_f32(acc[i][j], reinterpret_cast<const int*>(" << a
             << "[i]), reinterpret_cast<const int*>(" << b << "[j]), acc[i][j], 1, 0);\n";
  };
  mma("a_lo", "b_hi");
  mma("a_hi", "b_lo");
  mma("a_hi", "b_hi");
  products << "        }\n    }\n";
  body << slices.pipeline(products.str(), d_.barrier());
  // The loop ended on a barrier: A's buffers are free for the accumulator's index tile.
  body << "  int c_at[8];  // accumulator element e is at row c_at[e] / 16, column c_at[e] % 16\n  {\n"
       << index_tile("    ");
  body << "    float fc[8];\n";
  body << "    __mma_tf32_m16n16k8_ld_c(fc, &As[0][0][0], 16, 0);\n";
  body << "    #pragma unroll\n    for (int e = 0; e < 8; ++e) c_at[e] = (int)fc[e];\n  }\n";
  body << "  #pragma unroll\n  for (int i = 0; i < " << mt << "; ++i)\n    #pragma unroll\n    for (int j = 0; j < " << nt
       << "; ++j)\n      #pragma unroll\n      for (int e = 0; e < 8; ++e) {\n";
  body << "        const int m = m0 + wm0 + i * 16 + c_at[e] / 16, n = n0 + wn0 + j * 16 + c_at[e] % 16;\n";
  body << "        if (m < " << M << " && n < " << N << ") {\n" << reindent(epilogue, "          ");
  body << "          " << k.output_buffer << "[" << out_idx << "] = " << result << ";\n        }\n      }\n";
  k.body = body.str();
  return k.render();
}

// ------------------------------------------------------------ matrix-vector rows

// C[m] = sum_k A[m, k] * B[k] (B one column: 1-D, [K, 1] or a view of [1, K]): one work-group
// per output row, its items reading the row's K elements in coalesced strides, a group
// reduction, then the epilogue and the store by item 0. The tiled form would compute one
// column of 16-64 and leave the rest of each tile idle (0.35x eager for 8192 x 2048 on the H100).
std::string ProgramEmitter::matvec_rows(const Stage& stage, const std::string& name, std::string& err) {
  Kernel k = kernel(name, buffer_of_.at(stage.root));
  const MatmulOperands ops = matmul_operands(g_.nodes[stage.anchor], k);
  const Shape& b_eff = *ops.b_eff;
  if (ops.batched || ops.b_batched || ops.trans_a || !(ops.mv || b_eff.back().value == 1)) {
    err = "line_group matmuls need a row-major A and one output column, unbatched";
    return "";
  }
  const int wg = s_.work_group;
  k.attributes = d_.work_group_attribute(wg, 1);
  k.grid = ops.a_eff->at(0).expr();
  k.block = std::to_string(wg);
  std::string out_idx, result;
  const std::string epilogue = tiled_epilogue(stage, k, ops.M, ops.N, out_idx, result, "acc");
  std::ostringstream body;
  body << "  // one work-group per output row: the row's " << ops.K << " elements read in coalesced strides\n";
  body << "  " << d_.shared() << " float red[" << wg << "];\n";
  body << "  const int m = " << d_.group_id(0) << ", lid = " << d_.local_id(0) << ";\n";
  if (g_.nodes[stage.root].shape.size() == 2) body << "  const int n = 0;  // [M, 1]: the epilogue's column\n";
  body << "  float acc = 0.0f;\n";
  body << unroll_pragma(s_.unroll, "  ");
  body << "  for (int kk = lid; kk < " << ops.K << "; kk += " << wg << ") acc += " << ops.a << "[m * " << ops.K
       << " + kk] * " << ops.b << "[kk];\n";
  body << group_reduce("acc", "sum", wg, "  ", d_);
  body << "  if (lid == 0) {\n" << reindent(epilogue, "    ") << "    " << k.output_buffer << "[" << out_idx
       << "] = " << result << ";\n  }\n";
  k.body = body.str();
  return k.render();
}

// -------------------------------------------------------- register-blocked matmul

// Register-blocked matmul for CPUs (tile 0): no local memory or barriers; each
// work-item keeps a block of outputs in registers and streams A and B through the
// caches with floatN loads. B as [K, N] (plain): floatN across n, work_per_item rows.
// B as [N, K] (a transposed view, e.g. linear's weight): floatN along k for
// work_per_item x per_item dot products, summed across lanes at the end.
std::string ProgramEmitter::matmul_registers(const Stage& stage, const std::string& name, std::string& err) {
  if (d_.cuda()) {
    err = "register-blocked matmul (tile 0) is opencl only; cuda uses shared-memory tiles";
    return "";
  }
  RegisterBlock blk;
  blk.rm = std::max(1, s_.work_per_item);
  blk.vec = s_.vector_width;
  blk.cn = std::max(1, s_.per_item);
  if (blk.vec != 4 && blk.vec != 8) {
    err = "register-blocked matmul needs vector_width 4 or 8";
    return "";
  }
  blk.vn = std::to_string(blk.vec);
  blk.fv = "float" + blk.vn;
  Kernel k = kernel(name, buffer_of_.at(stage.root));
  const MatmulOperands ops = matmul_operands(g_.nodes[stage.anchor], k);
  if (ops.trans_a || ops.mv) {
    err = "register-blocked matmul needs a plain A and a matrix B";
    return "";
  }
  const Shape &a_eff = *ops.a_eff, &b_eff = *ops.b_eff;
  blk.a_base = ops.batched ? "bat * " + ops.M + " * " + ops.K + " + " : "";
  blk.b_base = ops.b_batched ? "bat * " + ops.K + " * " + ops.N + " + " : "";
  const int cols = ops.trans_b ? blk.cn : blk.vec;  // outputs per work-item along n
  k.grid = "cdiv(" + b_eff.back().expr() + ", " + std::to_string(cols * 8) + "),cdiv(" +
           a_eff[a_eff.size() - 2].expr() + ", " + std::to_string(blk.rm * 8) + ")," +
           (ops.batched ? a_eff[0].expr() : "1");
  k.block = "8,8,1";
  const Shape& out_shape = g_.nodes[stage.root].shape;
  if (out_shape.size() == 3) blk.coords = {"bat", "m", "n"};
  else blk.coords = {"m", "n"};
  blk.out_row = out_shape.size() == 3 ? "(bat * " + ops.M + " + m) * " + ops.N : "m * " + ops.N;
  std::ostringstream body;
  body << "  const int n0 = " << d_.global_id(0) << (cols > 1 ? " * " + std::to_string(cols) : "") << ";\n";
  body << "  const int m0 = " << d_.global_id(1) << " * " << blk.rm << ";\n";
  if (ops.batched) body << "  const int bat = " << d_.global_id(2) << ";\n";
  body << "  if (n0 >= " << ops.N << " || m0 >= " << ops.M << ") return;\n";
  body << (ops.trans_b ? registers_transposed_b(stage, k, ops, blk, err) : registers_plain_b(stage, k, ops, blk, err));
  if (!err.empty()) return "";
  k.body = body.str();
  return k.render();
}

// Epilogue emitters of the register-blocked form: scalar at (m, n); floatN at
// (m, n..n+vec-1) for the plain form.
ExprEmitter ProgramEmitter::register_epilogue(int width, const Stage& stage, Kernel& k, int* counter,
                                              std::string& err) {
  ExprEmitter e = expr(width, counter);
  e.is_leaf = [this, &stage](int id) { return id != stage.anchor && is_buffer_leaf(id, stage.root); };
  e.load = [this, &k, &err, width](int id, const std::vector<std::string>& c) -> std::string {
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
}

// B as [K, N]: rm rows x vec columns per work-item in floatN accumulators, the last
// N % vec columns one output at a time.
std::string ProgramEmitter::registers_plain_b(const Stage& stage, Kernel& k, const MatmulOperands& ops,
                                              const RegisterBlock& blk, std::string& err) {
  const int rm = blk.rm, vec = blk.vec;
  const std::string &vn = blk.vn, &fv = blk.fv, &a = ops.a, &b = ops.b, &M = ops.M, &K = ops.K, &N = ops.N;
  int counter = 0;
  ExprEmitter ev = register_epilogue(vec, stage, k, &counter, err);
  ev.known[stage.anchor] = "acc[r]";
  std::string vres = ev.value(stage.root, blk.coords);
  std::string vlines = ev.take_lines("        ");
  ExprEmitter es = register_epilogue(1, stage, k, &counter, err);
  es.known[stage.anchor] = "sum";
  std::string sres = es.value(stage.root, blk.coords);
  std::string slines = es.take_lines("          ");
  if (!err.empty()) return "";
  std::ostringstream body;
  body << "  // " << rm << " rows x " << vec << " columns per work-item, " << fv << " accumulators\n";
  body << "  if (n0 + " << vec << " <= " << N << ") {\n";
  body << "    " << fv << " acc[" << rm << "];\n";
  body << "    for (int r = 0; r < " << rm << "; ++r) acc[r] = (" << fv << ")(0.0f);\n";
  body << unroll_pragma(s_.unroll, "    ");
  body << "    for (int kk = 0; kk < " << K << "; ++kk) {\n";
  body << "      const " << fv << " bv = vload" << vn << "(0, " << b << " + " << blk.b_base << "kk * " << N << " + n0);\n";
  body << "      for (int r = 0; r < " << rm << "; ++r)\n";
  body << "        if (m0 + r < " << M << ") acc[r] += " << a << "[" << blk.a_base << "(m0 + r) * " << K
       << " + kk] * bv;\n";
  body << "    }\n";
  body << "    for (int r = 0; r < " << rm << "; ++r) {\n      const int m = m0 + r;\n      const int n = n0;\n";
  body << "      if (m < " << M << ") {\n" << vlines << "        vstore" << vn << "(" << vres << ", 0, " << k.output_buffer
       << " + " << blk.out_row << " + n);\n      }\n    }\n";
  body << "  } else {  // the last N % " << vec << " columns, one output at a time\n";
  body << "    for (int r = 0; r < " << rm << "; ++r) {\n      const int m = m0 + r;\n      if (m >= " << M
       << ") break;\n";
  body << "      for (int n = n0; n < " << N << "; ++n) {\n        float sum = 0.0f;\n";
  body << "        for (int kk = 0; kk < " << K << "; ++kk) sum += " << a << "[" << blk.a_base << "m * " << K
       << " + kk] * " << b << "[" << blk.b_base << "kk * " << N << " + n];\n";
  body << slines << "          " << k.output_buffer << "[" << blk.out_row << " + n] = " << sres
       << ";\n      }\n    }\n  }\n";
  return body.str();
}

// B as [N, K] (a transposed view): rm x cn dot products per work-item along k in floatN
// partial sums, summed across lanes, then the scalar tail of K.
std::string ProgramEmitter::registers_transposed_b(const Stage& stage, Kernel& k, const MatmulOperands& ops,
                                                   const RegisterBlock& blk, std::string& err) {
  const int rm = blk.rm, vec = blk.vec, cn = blk.cn;
  const std::string &vn = blk.vn, &fv = blk.fv, &a = ops.a, &b = ops.b, &M = ops.M, &K = ops.K, &N = ops.N;
  const std::string &a_base = blk.a_base, &b_base = blk.b_base;
  int counter = 0;
  ExprEmitter es = register_epilogue(1, stage, k, &counter, err);
  es.known[stage.anchor] = "sum[r][c]";
  std::string sres = es.value(stage.root, blk.coords);
  std::string slines = es.take_lines("        ");
  if (!err.empty()) return "";
  std::ostringstream body;
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
  body << "        " << k.output_buffer << "[" << blk.out_row << " + n] = " << sres << ";\n      }\n    }\n";
  return body.str();
}

}  // namespace kforge::codegen::emit
