// Triton convolution as an implicit GEMM (emit_triton.h): a forward conv is a matrix
// product of [positions, C_in/groups * window] (x gathered through the window, never
// copied) and the weight as [C_in/groups * window, C_out/groups]; each program computes a
// BLOCK_M x BLOCK_N tile of outputs (positions x channels of one group) with tl.dot over
// BLOCK_K chunks of the reduction, then the stage's fused epilogue on the tile. A transposed
// conv is the same product in its gather form: output position o reads input i = (o + p -
// k*d) / s where that divides exactly (the other taps are masked zeros), with the weight
// [C_in, C_out/groups, k...] read as [C_in/groups * window, C_out/groups] per group. The
// tl.dot is fp32 ("ieee") or, in dot_x3 schedules, tf32x3 on the tensor cores, as matmuls.
// Test: ctest -R 'codegen_(lower|window)'.
#include <sstream>

#include "worker/codegen/emit_triton.h"

namespace kforge::codegen::emit {

bool TritonEmitter::conv_as_gemm(const Node& node) const {
  // Grouped convs with few output channels per group (depthwise) would fill a tl.dot tile
  // with masked lanes: they keep the direct kernel.
  if (s_.window_gemm == 0 || !node.window.is_conv()) return false;
  return conv_out_channels_per_group(g_, node) >= 8;
}

void TritonEmitter::conv_gemm(const Stage& stage, const std::string& name, std::string& err) {
  const Node& node = g_.nodes[stage.anchor];
  const Window& win = node.window;
  if (s_.block_m < 16 || s_.block_n < 16 || s_.block_k < 16) {
    err = "tl.dot needs tiles of at least 16 in every dim";
    return;
  }
  TritonKernel k = kernel(name);
  const Shape& out_shape = g_.nodes[stage.root].shape;
  const Shape& ws = g_.nodes[node.args[1]].shape;
  const int spatial = win.spatial(), rank = static_cast<int>(out_shape.size());
  const std::string x = k.buffer(forward_buffer(node.args[0]));
  const std::string w = k.buffer(forward_buffer(node.args[1]));
  const std::string out = k.output(buffer_of_.at(stage.root));
  WindowNames names = window_names(
      g_, node, [&](const Dim& d) { return dim(k, d); },
      [&](const std::string& expr, const std::string& preferred) { return k.size(py(expr), preferred); });
  const bool grouped = win.groups > 1, transposed = win.op == "conv_transpose";
  const std::string cout_group = grouped || transposed ? names.cout_group : dim(k, ws[0]);
  // M: batch x output positions; K: the reduction, C_in/groups x the window.
  Shape positions = {out_shape[0]};
  positions.insert(positions.end(), out_shape.end() - spatial, out_shape.end());
  const std::string M = k.size(py(numel_expr(positions)), "M");
  const Shape window_dims(ws.begin() + 2, ws.end());
  const std::string K =
      transposed ? k.size(py("(" + (grouped ? ws[0].expr() + " / " + std::to_string(win.groups) : ws[0].expr()) +
                             ") * " + numel_expr(window_dims)),
                          "K")
                 : k.size(py(numel_expr(Shape(ws.begin() + 1, ws.end()))), "K");
  const std::string bm = k.constant("BLOCK_M", std::to_string(s_.block_m));
  const std::string bn = k.constant("BLOCK_N", std::to_string(s_.block_n));
  const std::string bk = k.constant("BLOCK_K", std::to_string(s_.block_k));
  k.stages = s_.stages;
  k.grid = "(triton.cdiv(" + py(numel_expr(positions)) + ", " + std::to_string(s_.block_m) + ") * triton.cdiv(" +
           py(transposed ? ws[1].expr() : grouped ? ws[0].expr() + " / " + std::to_string(win.groups) : ws[0].expr()) +
           ", " +
           std::to_string(s_.block_n) + ")" + (grouped ? ", " + std::to_string(win.groups) + ")" : ",)");

  std::ostringstream body;
  body << "    pid = tl.program_id(0)\n";
  body << "    num_n = tl.cdiv(" << cout_group << ", " << bn << ")\n";
  body << "    rm = (pid // num_n) * " << bm << " + tl.arange(0, " << bm << ")\n";
  body << "    rn = (pid % num_n) * " << bn << " + tl.arange(0, " << bn << ")\n";
  // Output positions: batch, then the spatial coordinates (innermost last).
  std::vector<std::string> pos(spatial);
  std::string rest = "rm";
  for (int sd = spatial - 1; sd >= 0; --sd) {
    pos[sd] = "o" + std::to_string(sd);
    const std::string size = dim(k, out_shape[rank - spatial + sd]);
    body << "    " << pos[sd] << " = " << rest << " % " << size << "\n";
    rest = "(" + rest + " // " + size + ")";
  }
  body << "    bat = " << rest << "\n";
  if (grouped) body << "    grp = tl.program_id(1)\n";
  const std::string channel_base = grouped ? "grp * " + names.cin_group + " + " : "";
  body << "    acc = tl.zeros((" << bm << ", " << bn << "), dtype=tl.float32)\n";
  body << "    for k0 in range(0, " << K << ", " << bk << "):\n";
  body << "        rk = k0 + tl.arange(0, " << bk << ")\n";
  // The reduction index as (input channel, window position), innermost last.
  std::string krest = "rk";
  std::vector<std::string> kd(spatial);
  for (int sd = spatial - 1; sd >= 0; --sd) {
    kd[sd] = "kd" + std::to_string(sd);
    body << "        " << kd[sd] << " = " << krest << " % " << names.kernel[sd] << "\n";
    krest = "(" + krest + " // " + names.kernel[sd] + ")";
  }
  body << "        ci = " << krest << "\n";
  std::string a_mask = "(rm[:, None] < " + M + ") & (rk[None, :] < " + K + ")";
  std::string x_at = "bat[:, None] * " + names.channels + " + " + channel_base + "ci[None, :]";
  for (int sd = 0; sd < spatial; ++sd) {
    const std::string ix = "ix" + std::to_string(sd);
    const int64_t s = win.stride[sd], p = win.padding[sd], d = win.dilation[sd];
    const std::string tap = kd[sd] + "[None, :]" + (d == 1 ? "" : " * " + std::to_string(d));
    if (!transposed) {
      std::string at = pos[sd] + "[:, None]" + (s == 1 ? "" : " * " + std::to_string(s)) +
                       (p == 0 ? "" : " - " + std::to_string(p)) + " + " + tap;
      body << "        " << ix << " = " << at << "\n";
      if (p > 0) a_mask += " & (" + ix + " >= 0) & (" + ix + " < " + names.in[sd] + ")";
    } else {
      const std::string t = "t" + std::to_string(sd);
      body << "        " << t << " = " << pos[sd] << "[:, None]" << (p == 0 ? "" : " + " + std::to_string(p)) << " - "
           << tap << "\n";
      if (s == 1) {
        body << "        " << ix << " = " << t << "\n";
      } else {
        body << "        " << ix << " = " << t << " // " << s << "\n";
        a_mask += " & (" + t + " % " + std::to_string(s) + " == 0)";
      }
      a_mask += " & (" + t + " >= 0) & (" + ix + " < " + names.in[sd] + ")";
    }
    x_at = "(" + x_at + ") * " + names.in[sd] + " + " + ix;
  }
  body << "        a_tile = tl.load(" << x << " + " << x_at << ", mask=" << a_mask << ", other=0.0)\n";
  const std::string co = grouped ? "grp * " + cout_group + " + rn" : "rn";
  const std::string b_mask = "(rk[:, None] < " + K + ") & (rn[None, :] < " + cout_group + ")";
  if (!transposed) {
    body << "        b_tile = tl.load(" << w << " + (" << co << ")[None, :] * " << K << " + rk[:, None], mask=" << b_mask
         << ", other=0.0)\n";
  } else {  // w[grp * C_in/groups + ci, rn, window position]
    const std::string taps = k.size(py(numel_expr(window_dims)), "taps");
    body << "        b_tile = tl.load(" << w << " + ((" << channel_base << "ci)[:, None] * " << cout_group
         << " + rn[None, :]) * " << taps << " + (rk % " << taps << ")[:, None], mask=" << b_mask
         << ", other=0.0)\n";
  }
  body << "        acc = tl.dot(a_tile, b_tile, acc, input_precision=\"" << (s_.dot_x3 ? "tf32x3" : "ieee") << "\")\n";

  // The epilogue on the tile: output coordinates as [BLOCK_M, BLOCK_N] broadcasts.
  std::vector<std::string> coords;
  for (int axis = 0; axis < rank; ++axis) coords.push_back("c" + std::to_string(axis));
  body << "    c0 = bat[:, None]\n";
  body << "    c1 = (" << co << ")[None, :]\n";
  for (int sd = 0; sd < spatial; ++sd) body << "    c" << 2 + sd << " = " << pos[sd] << "[:, None]\n";
  body << "    mask = (rm[:, None] < " << M << ") & (rn[None, :] < " << cout_group << ")\n";
  body << "    offs = " << offset_expr(out_shape, coords, [&](const Dim& d) { return dim(k, d); }) << "\n";
  std::string result;
  body << window_epilogue(stage, k, coords, result) << "    tl.store(" << out << " + offs, " << result
       << ", mask=mask)\n";
  k.body = body.str();
  kernels_.push_back(k);
}

}  // namespace kforge::codegen::emit
