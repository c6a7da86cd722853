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
// at the op's tolerance like every candidate). Split-K schedules (split_k > 1, for few tiles
// over a long K) cut K into slices: one kernel per (tile, slice) writes a partial tile to a
// scratch, a second sums the slices and applies the epilogue.
// Test: ctest -R 'codegen_(lower|triton|window)'.
#include <sstream>

#include "worker/codegen/emit_triton.h"

namespace kforge::codegen::emit {

void TritonEmitter::matmul(const Stage& stage, const std::string& name, std::string& err) {
  const Node& mm = g_.nodes[stage.anchor];
  if (!s_.line_group && (s_.block_m < 16 || s_.block_n < 16 || s_.block_k < 16)) {
    err = "tl.dot needs tiles of at least 16 in every dim";
    return;
  }
  const bool split = s_.split_k > 1;
  // Without split-K one kernel computes the tile and applies the epilogue. With it, the
  // first kernel (`name`_partial) computes slice `sk` of K for its tile and stores the
  // partial tile to a scratch; the second (`name`) sums the slices and applies the epilogue.
  TritonKernel k = kernel(name);
  TritonKernel kp = kernel(name + "_partial");
  TritonKernel& dot = split ? kp : k;  // the kernel with the K loop
  dot.stages = s_.stages;
  bool trans_a = false, trans_b = false;
  const int a_id = strip_views(g_, mm.args[0], trans_a), b_id = strip_views(g_, mm.args[1], trans_b);
  const Shape& a_eff = g_.nodes[mm.args[0]].shape;
  const Shape& b_eff = g_.nodes[mm.args[1]].shape;
  const std::string a = dot.buffer(forward_buffer(a_id)), b = dot.buffer(forward_buffer(b_id));
  const bool batched = a_eff.size() == 3, b_batched = b_eff.size() == 3, mv = b_eff.size() == 1;
  const Dim &m_dim = a_eff[a_eff.size() - 2], &k_dim = a_eff.back();
  const std::string out = k.output(buffer_of_.at(stage.root));
  // Sizes, tiles and the grid of either kernel (both walk the same output tiles).
  struct Names {
    std::string M, K, N, bm, bn, bk, gm;
  };
  auto names_in = [&](TritonKernel& kk) {
    Names nm;
    nm.M = kk.size(py(m_dim.expr()), "M");
    if (&kk == &dot) nm.K = kk.size(py(k_dim.expr()), "K");  // the summing kernel has no K loop
    nm.N = mv ? "1" : kk.size(py(b_eff.back().expr()), "N");
    nm.bm = kk.constant("BLOCK_M", std::to_string(s_.block_m));
    nm.bn = kk.constant("BLOCK_N", std::to_string(s_.block_n));
    if (&kk == &dot) nm.bk = kk.constant("BLOCK_K", std::to_string(s_.block_k));
    nm.gm = kk.constant("GROUP_M", std::to_string(s_.group_m));
    kk.grid = "(triton.cdiv(" + py(m_dim.expr()) + ", " + std::to_string(s_.block_m) + ") * triton.cdiv(" +
              (mv ? std::string("1") : py(b_eff.back().expr())) + ", " + std::to_string(s_.block_n) + ")" +
              (batched ? ", " + py(a_eff[0].expr()) : "") + ")";
    if (!batched) kk.grid = kk.grid.substr(0, kk.grid.size() - 1) + ",)";
    return nm;
  };
  if (s_.line_group && (split || batched || b_batched || trans_a || !(mv || b_eff.back().value == 1))) {
    err = "line_group matmuls need a row-major A and one output column, unbatched, without split-K";
    return;
  }
  const Names n_dot = names_in(dot);
  const Names n_out = split ? names_in(k) : n_dot;
  const std::string& M = n_out.M;
  const std::string& N = n_out.N;
  // Element strides of A [M, K] and B [K, N] as stored (a transposing view swaps them).
  const std::string am = trans_a ? "1" : n_dot.K, ak = trans_a ? n_dot.M : "1";
  const std::string bk = mv ? "1" : trans_b ? "1" : n_dot.N, bn = mv ? "0" : trans_b ? n_dot.K : "1";

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
    std::string idx = reads_in_order(shape, c, coords, out_shape)
                          ? out_idx
                          : offset_expr(shape, c, [&](const Dim& d) { return dim(k, d); });
    return load(k, id, "(" + idx + ")", "mask");
  };
  const std::string result = e.value(stage.root, coords);
  const std::string epilogue = e.take_outer("    ") + e.take_lines("    ");
  if (s_.line_group) {
    // C[m] = sum_k A[m, k] * B[k] (B one column: 1-D, [K, 1] or a view of [1, K]): BLOCK_M
    // rows per program, each read in BLOCK_K chunks along its contiguous K into a
    // [BLOCK_M, BLOCK_K] accumulator of products, summed once after the loop; the epilogue on
    // the [BLOCK_M, 1] sums. The tiled form computes one useful column of its 64 (torch.mv of
    // 8192 x 2048: 0.38x eager on an H200, bench/results/gpu_2026_11_29b); this one reads A
    // once, as the OpenCL and CUDA work-group-per-row form (emit_matmul.cpp's matvec_rows).
    const Names& nm = n_dot;
    k.grid = "(triton.cdiv(" + py(m_dim.expr()) + ", " + std::to_string(s_.block_m) + "),)";
    std::ostringstream body;
    body << "    rows = tl.program_id(0) * " << nm.bm << " + tl.arange(0, " << nm.bm << ")\n";
    body << "    rm = rows % " << nm.M << "  # rows past the edge wrap around (in bounds, never stored)\n";
    body << "    rk = tl.arange(0, " << nm.bk << ")\n";
    body << "    a_ptrs = " << a << " + rm[:, None] * " << nm.K << " + rk[None, :]\n";
    body << "    b_ptrs = " << b << " + rk * " << bk << "\n";
    body << "    prod = tl.zeros((" << nm.bm << ", " << nm.bk << "), dtype=tl.float32)\n";
    body << "    for k0 in range(0, " << nm.K << ", " << nm.bk << "):\n";
    body << "        kmask = rk < " << nm.K << " - k0\n";
    body << "        a_tile = tl.load(a_ptrs, mask=kmask[None, :], other=0.0)\n";
    body << "        b_vec = tl.load(b_ptrs, mask=kmask, other=0.0)\n";
    body << "        prod += a_tile * b_vec[None, :]\n";
    body << "        a_ptrs += " << nm.bk << "\n";
    body << "        b_ptrs += " << nm.bk << " * " << bk << "\n";
    body << "    acc = tl.sum(prod, axis=1, keep_dims=True)\n";
    body << "    m = rows[:, None]\n    n = 0  # the one output column\n";
    body << "    mask = (m < " << nm.M << ") & (n < " << nm.N << ")\n";
    body << epilogue << "    tl.store(" << out << " + " << out_idx << ", " << result << ", mask=mask)\n";
    k.body = body.str();
    kernels_.push_back(k);
    return;
  }

  // Program ids to tiles, GROUP_M rows of tiles per group (L2 reuse).
  auto tile_lines = [&](const Names& nm) {
    std::ostringstream lines;
    lines << "    pid = tl.program_id(0)\n";
    if (batched) lines << "    bat = tl.program_id(1)\n";
    lines << "    num_m = tl.cdiv(" << nm.M << ", " << nm.bm << ")\n";
    lines << "    num_n = tl.cdiv(" << nm.N << ", " << nm.bn << ")\n";
    lines << "    per_group = " << nm.gm << " * num_n\n";
    lines << "    first_m = (pid // per_group) * " << nm.gm << "\n";
    lines << "    group_rows = tl.minimum(num_m - first_m, " << nm.gm << ")\n";
    lines << "    pid_m = first_m + (pid % per_group) % group_rows\n";
    lines << "    pid_n = (pid % per_group) // group_rows\n";
    return lines.str();
  };
  auto output_lines = [&](const Names& nm) {
    return "    m = (pid_m * " + nm.bm + " + tl.arange(0, " + nm.bm + "))[:, None]\n    n = (pid_n * " + nm.bn +
           " + tl.arange(0, " + nm.bn + "))[None, :]\n    mask = (m < " + nm.M + ") & (n < " + nm.N + ")\n";
  };
  // The scratch of partial tiles: slice-major, then the output's (bat, m, n).
  const std::string scratch = stage_scratch(stage, "splitk");
  const std::string batch = batched ? py(a_eff[0].expr()) : "1";
  if (split)
    allocations_.push_back("    " + scratch + " = torch.empty((" + std::to_string(s_.split_k) + " * " + batch + " * " +
                           py(m_dim.expr()) + " * " + (mv ? std::string("1") : py(b_eff.back().expr())) +
                           ",), device=" + py_name_.at(g_.input_names.at(0)) + ".device, dtype=torch.float32)\n");

  std::ostringstream body;
  body << tile_lines(n_dot);
  // Rows and columns past the edge wrap around (in bounds, never stored): no mask on M, N.
  body << "    rm = (pid_m * " << n_dot.bm << " + tl.arange(0, " << n_dot.bm << ")) % " << n_dot.M << "\n";
  body << "    rn = (pid_n * " << n_dot.bn << " + tl.arange(0, " << n_dot.bn << ")) % " << n_dot.N << "\n";
  std::string k_begin = "0", k_end = n_dot.K;
  if (split) {
    // Slice sk of K: whole BLOCK_K steps, the last slice shorter (or empty).
    const std::string split_c = dot.constant("SPLIT_K", std::to_string(s_.split_k));
    dot.grid = dot.grid.substr(0, dot.grid.size() - (batched ? 1 : 2)) + ", " + std::to_string(s_.split_k) + ")";
    body << "    sk = tl.program_id(" << (batched ? 2 : 1) << ")\n";
    body << "    k_slice = tl.cdiv(tl.cdiv(" << n_dot.K << ", " << split_c << "), " << n_dot.bk << ") * " << n_dot.bk
         << "\n";
    body << "    k_first = sk * k_slice\n";
    k_begin = "k_first";
    k_end = "tl.minimum(k_first + k_slice, " + n_dot.K + ")";
  }
  body << "    rk = tl.arange(0, " << n_dot.bk << ")\n";
  const std::string k_a = split ? "(rk[None, :] + k_first)" : "rk[None, :]";
  const std::string k_b = split ? "(rk[:, None] + k_first)" : "rk[:, None]";
  body << "    a_ptrs = " << a << (batched ? " + bat * " + n_dot.M + " * " + n_dot.K : "") << " + rm[:, None] * " << am
       << " + " << k_a << " * " << ak << "\n";
  body << "    b_ptrs = " << b << (b_batched ? " + bat * " + n_dot.K + " * " + n_dot.N : "") << " + " << k_b << " * "
       << bk << " + rn[None, :] * " << bn << "\n";
  body << "    acc = tl.zeros((" << n_dot.bm << ", " << n_dot.bn << "), dtype=tl.float32)\n";
  body << "    for k0 in range(" << k_begin << ", " << k_end << ", " << n_dot.bk << "):\n";
  body << "        a_tile = tl.load(a_ptrs, mask=rk[None, :] < " << n_dot.K << " - k0, other=0.0)\n";
  body << "        b_tile = tl.load(b_ptrs, mask=rk[:, None] < " << n_dot.K << " - k0, other=0.0)\n";
  body << "        acc = tl.dot(a_tile, b_tile, acc, input_precision=\"" << (s_.dot_x3 ? "tf32x3" : "ieee") << "\")\n";
  body << "        a_ptrs += " << n_dot.bk << " * " << ak << "\n";
  body << "        b_ptrs += " << n_dot.bk << " * " << bk << "\n";
  body << output_lines(n_dot);
  if (split) {
    // Element (sk, bat, m, n) of the scratch, in either kernel's names.
    auto scratch_at = [&](TritonKernel& kk, const Names& nm) {
      const std::string slice = (batched ? kk.size(batch, "batch") + " * " : std::string()) + nm.M + " * " + nm.N;
      return "sk * " + slice + " + " +
             (batched ? "(bat * " + nm.M + " + m) * " + nm.N + " + n" : "m * " + nm.N + " + n");
    };
    const std::string ws = kp.output(scratch);
    body << "    tl.store(" << ws << " + " << scratch_at(kp, n_dot) << ", acc, mask=mask)\n";
    kp.body = body.str();
    kernels_.push_back(kp);
    // The sum of the slices, in slice order, then the epilogue.
    std::ostringstream final_body;
    final_body << tile_lines(n_out) << output_lines(n_out);
    const std::string ws_in = k.buffer(scratch);
    final_body << "    acc = tl.zeros((" << n_out.bm << ", " << n_out.bn << "), dtype=tl.float32)\n";
    final_body << "    for sk in range(" << s_.split_k << "):\n";
    final_body << "        acc += tl.load(" << ws_in << " + " << scratch_at(k, n_out) << ", mask=mask, other=0.0)\n";
    final_body << epilogue << "    tl.store(" << out << " + " << out_idx << ", " << result << ", mask=mask)\n";
    k.body = final_body.str();
    kernels_.push_back(k);
    return;
  }
  body << epilogue << "    tl.store(" << out << " + " << out_idx << ", " << result << ", mask=mask)\n";
  k.body = body.str();
  kernels_.push_back(k);
}

}  // namespace kforge::codegen::emit
