// Triton matmul stages (emit_triton.h), in the style of Triton's matmul tutorial and
// Inductor's templates: BLOCK_M x BLOCK_N output tiles, a BLOCK_K loop of tl.dot, program
// ids swizzled in groups of GROUP_M rows of tiles (neighbouring programs share A and B
// tiles in L2), num_warps / num_stages from the schedule, and the stage's fused epilogue
// (bias, activation, scale, residual) applied to the accumulator before the one store.
// Operands read through transposing views (linear's weight, k.transpose(1, 2)) use swapped
// strides, never a copy. fp32 inputs go through tl.dot with input_precision="ieee" (TF32
// off): the harness's reference and baselines run with TF32 off, so a TF32 kernel would be
// judged against a more precise baseline. Schedules with dot_x3 use "tf32x3" instead: three
// TF32 products per fp32 product on the tensor cores, with an error close to fp32's (checked
// at the op's tolerance like every candidate). Test: ctest -R 'codegen_(lower|triton)'.
#include <sstream>

#include "worker/codegen/emit_triton.h"

namespace kforge::codegen::emit {

void TritonEmitter::matmul(const Stage& stage, const std::string& name, std::string& err) {
  const Node& mm = g_.nodes[stage.anchor];
  if (s_.block_m < 16 || s_.block_n < 16 || s_.block_k < 16) {
    err = "tl.dot needs tiles of at least 16 in every dim";
    return;
  }
  TritonKernel k = kernel(name);
  k.stages = s_.stages;
  bool trans_a = false, trans_b = false;
  const int a_id = strip_views(g_, mm.args[0], trans_a), b_id = strip_views(g_, mm.args[1], trans_b);
  const Shape& a_eff = g_.nodes[mm.args[0]].shape;
  const Shape& b_eff = g_.nodes[mm.args[1]].shape;
  const std::string a = k.buffer(forward_buffer(a_id)), b = k.buffer(forward_buffer(b_id));
  const std::string out = k.output(buffer_of_.at(stage.root));
  const bool batched = a_eff.size() == 3, b_batched = b_eff.size() == 3, mv = b_eff.size() == 1;
  const Dim &m_dim = a_eff[a_eff.size() - 2], &k_dim = a_eff.back();
  const std::string M = k.size(py(m_dim.expr()), "M"), K = k.size(py(k_dim.expr()), "K");
  const std::string N = mv ? "1" : k.size(py(b_eff.back().expr()), "N");
  // Element strides of A [M, K] and B [K, N] as stored (a transposing view swaps them).
  const std::string am = trans_a ? "1" : K, ak = trans_a ? M : "1";
  const std::string bk = mv ? "1" : trans_b ? "1" : N, bn = mv ? "0" : trans_b ? K : "1";
  const std::string bm_c = k.constant("BLOCK_M", std::to_string(s_.block_m));
  const std::string bn_c = k.constant("BLOCK_N", std::to_string(s_.block_n));
  const std::string bk_c = k.constant("BLOCK_K", std::to_string(s_.block_k));
  const std::string gm_c = k.constant("GROUP_M", std::to_string(s_.group_m));
  k.grid = "(triton.cdiv(" + py(m_dim.expr()) + ", " + std::to_string(s_.block_m) + ") * triton.cdiv(" +
           (mv ? std::string("1") : py(b_eff.back().expr())) + ", " + std::to_string(s_.block_n) + ")" +
           (batched ? ", " + py(a_eff[0].expr()) : "") + ")";
  if (!batched) k.grid = k.grid.substr(0, k.grid.size() - 1) + ",)";

  // The epilogue: the stage root as a function of acc at (bat, m, n).
  const Shape& out_shape = g_.nodes[stage.root].shape;
  std::vector<std::string> coords = out_shape.size() == 3 ? std::vector<std::string>{"bat", "m", "n"}
                                    : out_shape.size() == 2 ? std::vector<std::string>{"m", "n"}
                                                            : std::vector<std::string>{"m"};
  const std::string out_idx = out_shape.size() == 3 ? "(bat * " + M + " + m) * " + N + " + n"
                              : out_shape.size() == 2 ? "m * " + N + " + n"
                                                      : "m + n * 0";
  int counter = 0;
  ExprEmitter e = expr(&counter, stage.root);
  e.is_leaf = [&](int id) { return id != stage.anchor && is_buffer_leaf(id, stage.root); };
  e.known[stage.anchor] = "acc";
  e.load = [&](int id, const std::vector<std::string>& c) -> std::string {
    const Shape& shape = g_.nodes[id].shape;
    bool linear = c == coords && shape.size() == out_shape.size();
    for (size_t axis = 0; linear && axis < shape.size(); ++axis) linear = shape[axis].value == out_shape[axis].value;
    std::string idx = linear ? out_idx : offset_expr(shape, c, [&](const Dim& d) { return dim(k, d); });
    return load(k, id, "(" + idx + ")", "mask");
  };
  const std::string result = e.value(stage.root, coords);
  const std::string epilogue = e.take_outer("    ") + e.take_lines("    ");

  std::ostringstream body;
  body << "    pid = tl.program_id(0)\n";
  if (batched) body << "    bat = tl.program_id(1)\n";
  body << "    num_m = tl.cdiv(" << M << ", " << bm_c << ")\n";
  body << "    num_n = tl.cdiv(" << N << ", " << bn_c << ")\n";
  body << "    per_group = " << gm_c << " * num_n\n";
  body << "    first_m = (pid // per_group) * " << gm_c << "\n";
  body << "    group_rows = tl.minimum(num_m - first_m, " << gm_c << ")\n";
  body << "    pid_m = first_m + (pid % per_group) % group_rows\n";
  body << "    pid_n = (pid % per_group) // group_rows\n";
  // Rows and columns past the edge wrap around (in bounds, never stored): no mask on M, N.
  body << "    rm = (pid_m * " << bm_c << " + tl.arange(0, " << bm_c << ")) % " << M << "\n";
  body << "    rn = (pid_n * " << bn_c << " + tl.arange(0, " << bn_c << ")) % " << N << "\n";
  body << "    rk = tl.arange(0, " << bk_c << ")\n";
  body << "    a_ptrs = " << a << (batched ? " + bat * " + M + " * " + K : "") << " + rm[:, None] * " << am
       << " + rk[None, :] * " << ak << "\n";
  body << "    b_ptrs = " << b << (b_batched ? " + bat * " + K + " * " + N : "") << " + rk[:, None] * " << bk
       << " + rn[None, :] * " << bn << "\n";
  body << "    acc = tl.zeros((" << bm_c << ", " << bn_c << "), dtype=tl.float32)\n";
  body << "    for k0 in range(0, " << K << ", " << bk_c << "):\n";
  body << "        a_tile = tl.load(a_ptrs, mask=rk[None, :] < " << K << " - k0, other=0.0)\n";
  body << "        b_tile = tl.load(b_ptrs, mask=rk[:, None] < " << K << " - k0, other=0.0)\n";
  body << "        acc = tl.dot(a_tile, b_tile, acc, input_precision=\"" << (s_.dot_x3 ? "tf32x3" : "ieee") << "\")\n";
  body << "        a_ptrs += " << bk_c << " * " << ak << "\n";
  body << "        b_ptrs += " << bk_c << " * " << bk << "\n";
  body << "    m = (pid_m * " << bm_c << " + tl.arange(0, " << bm_c << "))[:, None]\n";
  body << "    n = (pid_n * " << bn_c << " + tl.arange(0, " << bn_c << "))[None, :]\n";
  body << "    mask = (m < " << M << ") & (n < " << N << ")\n";
  body << epilogue << "    tl.store(" << out << " + " << out_idx << ", " << result << ", mask=mask)\n";
  k.body = body.str();
  kernels_.push_back(k);
}

}  // namespace kforge::codegen::emit
