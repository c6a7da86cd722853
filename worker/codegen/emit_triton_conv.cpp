// Triton convolution as an implicit GEMM (emit_triton.h): a forward conv is a matrix
// product of [positions, C_in/groups * window] (x gathered through the window, never
// copied) and the weight as [C_in/groups * window, C_out/groups]; each program computes a
// BLOCK_M x BLOCK_N tile of outputs (positions x channels of one group) with tl.dot over
// BLOCK_K chunks of the reduction, then the stage's fused epilogue on the tile. A transposed
// conv is the same product in its gather form: output position o reads input i = (o + p -
// k*d) / s where that divides exactly, with the weight [C_in, C_out/groups, k...] first laid
// out as a forward conv's [C_out, C_in/groups * window] by a small kernel (`name`_wt), so
// both read it alike (the phased form below reads it in place). Along a dim with stride s > 1 (and no
// dilation) that would mask all but one tap in s: there the outputs are split by phase
// r = (o + p) mod s (a third grid axis), and a program's positions o = f + s*t share their
// phase, so only the taps k = r + s*j take part (input i = q + t - j, contiguous in t): a
// stride-1 conv per phase with about K/s taps. The tl.dot is fp32 ("ieee") or, in dot_x3
// schedules, tf32x3 on the tensor cores, as matmuls.
// Taps-outer (Schedule::conv_taps_outer; forward and unphased transposed convs of at most 49
// taps), as TorchInductor's conv template: a tl.static_range per window dim, and per tap a
// loop over BLOCK_K input channels. The flattened loop splits every [BLOCK_M, BLOCK_K]
// element of its reduction index into channel and taps, and computes its input coordinates
// and padding checks, each step; here those are [BLOCK_M] vectors once per tap, and the A tile
// is row offset + ci * (x's spatial size).
// Test: ctest -R 'codegen_(lower|window)'.
#include <algorithm>
#include <map>
#include <sstream>

#include "worker/codegen/emit_triton.h"

namespace kforge::codegen::emit {
namespace {

// A transposed conv's gather form along one dim: `var` = position + p - tap (a [BLOCK_M,
// BLOCK_K] tile), input index `ix` = var / s where that divides exactly (masked otherwise),
// inside the input (`in` long).
std::string gather_lines(const std::string& var, const std::string& pos, const std::string& tap, int64_t s, int64_t p,
                         const std::string& ix, const std::string& in, std::string& a_mask) {
  std::string lines = "        " + var + " = " + pos + "[:, None]" + (p == 0 ? "" : " + " + std::to_string(p)) + " - " +
                      tap + "\n";
  if (s == 1) {
    lines += "        " + ix + " = " + var + "\n";
  } else {
    lines += "        " + ix + " = " + var + " // " + std::to_string(s) + "\n";
    a_mask += " & (" + var + " % " + std::to_string(s) + " == 0)";
  }
  a_mask += " & (" + var + " >= 0) & (" + ix + " < " + in + ")";
  return lines;
}

}  // namespace

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
  const bool grouped = win.groups > 1, transposed = win.op == "conv_transpose";
  const std::vector<bool> phased_dim = conv_phased_dims(win);
  const bool phased = std::find(phased_dim.begin(), phased_dim.end(), true) != phased_dim.end();
  const Shape window_dims(ws.begin() + 2, ws.end());
  const bool taps_outer = s_.conv_taps_outer && conv_taps_outer_fits(g_, node);
  // Taps-outer unrolls the window with tl.static_range: its sizes are tl.constexpr parameters
  // (Triton compiles the kernel once per window size), the other sizes int parameters.
  std::map<std::string, std::string> window_constant;
  for (int sd = 0; sd < spatial && taps_outer; ++sd) {
    const Dim& d = window_dims[sd];
    window_constant[d.expr()] = d.is_literal() ? d.expr() : k.constant("KD" + std::to_string(sd), py(d.expr()));
  }
  const std::string x = k.buffer(forward_buffer(node.args[0]));
  const std::string out = k.output(buffer_of_.at(stage.root));
  WindowNames names = window_names(
      g_, node,
      [&](const Dim& d) {
        auto constant = window_constant.find(d.expr());
        return constant != window_constant.end() ? constant->second : dim(k, d);
      },
      [&](const std::string& expr, const std::string& preferred) { return k.size(py(expr), preferred); });
  const std::string cout_group = grouped || transposed ? names.cout_group : dim(k, ws[0]);
  if (phased) {
    conv_transpose_phased(stage, k, names, phased_dim, x, k.buffer(forward_buffer(node.args[1])), out);
    return;
  }
  // M: batch x output positions; K: the reduction, C_in/groups x the window.
  Shape positions = {out_shape[0]};
  positions.insert(positions.end(), out_shape.end() - spatial, out_shape.end());
  const std::string M = k.size(py(numel_expr(positions)), "M");
  const std::string K =
      taps_outer ? ""
      : transposed
          ? k.size(py("(" + (grouped ? ws[0].expr() + " / " + std::to_string(win.groups) : ws[0].expr()) + ") * " +
                      numel_expr(window_dims)),
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
  body << "    acc = tl.zeros((" << bm << ", " << bn << "), dtype=tl.float32)\n";
  const std::string co = grouped ? "grp * " + cout_group + " + rn" : "rn";
  if (taps_outer) {
    body << conv_taps_outer_loop(stage, k, names, pos, x, M, cout_group, name);
    body << conv_gemm_epilogue(stage, k, co, pos, "(rm[:, None] < " + M + ") & (rn[None, :] < " + cout_group + ")",
                               out);
    k.body = body.str();
    kernels_.push_back(k);
    return;
  }
  const std::string channel_base = grouped ? "grp * " + names.cin_group + " + " : "";
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
      body << gather_lines("t" + std::to_string(sd), pos[sd], tap, s, p, ix, names.in[sd], a_mask);
    }
    x_at = "(" + x_at + ") * " + names.in[sd] + " + " + ix;
  }
  body << "        a_tile = tl.load(" << x << " + " << x_at << ", mask=" << a_mask << ", other=0.0)\n";
  const std::string b_mask = "(rk[:, None] < " + K + ") & (rn[None, :] < " + cout_group + ")";
  // A transposed conv's weight [C_in, C_out/groups, window] is first laid out as a forward
  // conv's [C_out, C_in/groups * window] (transposed_weight_kernel), so both read their
  // [BLOCK_K, BLOCK_N] weight tile as `co * K + rk`, contiguous along rk. Read in place, as
  // `(ci * C_out/groups + rn) * taps + rk % taps`, the tile is contiguous along neither dim:
  // stride-1 transposed convs ran at 8-10 TFLOP/s on an H200, regular convs of the same tiles
  // at about 25 (KernelBench level 2, 2026-11-28; bench/kernelbench/README.md).
  const std::string weight = k.buffer(transposed ? transposed_weight_kernel(stage, node, name) : forward_buffer(node.args[1]));
  body << "        b_tile = tl.load(" << weight << " + (" << co << ")[None, :] * " << K << " + rk[:, None], mask=" << b_mask
       << ", other=0.0)\n";
  body << "        acc = tl.dot(a_tile, b_tile, acc, input_precision=\"" << (s_.dot_x3 ? "tf32x3" : "ieee") << "\")\n";

  body << conv_gemm_epilogue(stage, k, co, pos, "(rm[:, None] < " + M + ") & (rn[None, :] < " + cout_group + ")",
                             out);
  k.body = body.str();
  kernels_.push_back(k);
}

std::string TritonEmitter::conv_taps_outer_loop(const Stage& stage, TritonKernel& k, const WindowNames& names,
                                                const std::vector<std::string>& pos, const std::string& x,
                                                const std::string& M, const std::string& cout_group,
                                                const std::string& name) {
  const Node& node = g_.nodes[stage.anchor];
  const Window& win = node.window;
  const Shape& xs = g_.nodes[node.args[0]].shape;
  const Shape& ws = g_.nodes[node.args[1]].shape;
  const int spatial = win.spatial();
  const bool grouped = win.groups > 1, transposed = win.op == "conv_transpose";
  const std::string x_spatial = k.size(py(numel_expr(Shape(xs.end() - spatial, xs.end()))), "x_spatial");
  const std::string cout =
      win.groups == 1 ? cout_group
      : transposed    ? k.size(py(ws[1].expr() + " * " + std::to_string(win.groups)), "cout")
                      : dim(k, ws[0]);
  const std::string wt = k.buffer(tap_major_weight_kernel(stage, node, name));
  std::ostringstream body;
  // Per program: its rows' offset into x at channel 0 of its group (x_row + ci * x_spatial +
  // the tap's spatial offset is x[bat, grp * C_in/groups + ci, ix...]) and its columns' offset
  // into the weight's row of a tap and channel.
  body << "    rmask = rm < " << M << "\n";
  body << "    nmask = rn < " << cout_group << "\n";
  const std::string x_channel = grouped ? "(bat * " + names.channels + " + grp * " + names.cin_group + ")"
                                        : "bat * " + names.channels;
  body << "    x_row = " << x_channel << " * " << x_spatial << "\n";
  if (grouped) body << "    w_col = grp * " << cout_group << " + rn\n";
  body << "    ck = tl.arange(0, BLOCK_K)\n";
  // conv_taps_outer 2: one loop over (tap, channel block) pairs instead of the static loops
  // below, the tap's window coordinates taken apart from the loop index (scalar work), so that
  // Triton's pipelining (num_stages) overlaps the next taps' loads with this tap's tl.dot; a
  // static loop's taps are unrolled, and with at most BLOCK_K input channels the channel loop
  // inside has one step, nothing to pipeline.
  const bool one_loop = s_.conv_taps_outer == 2;
  std::string indent = "    ", mask = "rmask", spatial_at, tap;
  if (one_loop) {
    std::string taps;
    for (int sd = 0; sd < spatial; ++sd) taps += names.kernel[sd] + " * ";
    body << "    cblocks = tl.cdiv(" << names.cin_group << ", BLOCK_K)\n";
    body << "    for step in range(0, " << taps << "cblocks):\n";
    indent = "        ";
    body << indent << "tap = step // cblocks\n";
    body << indent << "c0 = (step - tap * cblocks) * BLOCK_K\n";
    std::string rest = "tap";
    for (int sd = spatial - 1; sd >= 0; --sd) {
      const std::string kd = "kd" + std::to_string(sd);
      if (sd == 0) {
        body << indent << kd << " = " << rest << "\n";
      } else {
        body << indent << kd << " = " << rest << " % " << names.kernel[sd] << "\n";
        rest = "(" + rest + " // " + names.kernel[sd] + ")";
      }
    }
    tap = "tap";
  }
  // One static loop per window dim (outermost first): the tap's input index along it, its
  // bounds in the position mask, and the spatial offset in Horner form, all [BLOCK_M].
  for (int sd = 0; sd < spatial; ++sd) {
    const std::string n = std::to_string(sd), kd = "kd" + n, ix = "ix" + n;
    const int64_t s = win.stride[sd], p = win.padding[sd], d = win.dilation[sd];
    const std::string tap_at = kd + (d == 1 ? "" : " * " + std::to_string(d));
    if (!one_loop) {
      body << indent << "for " << kd << " in tl.static_range(" << names.kernel[sd] << "):\n";
      indent += "    ";
    }
    std::string bounds;
    if (!transposed) {
      body << indent << ix << " = " << pos[sd] << (s == 1 ? "" : " * " + std::to_string(s))
           << (p == 0 ? "" : " - " + std::to_string(p)) << " + " << tap_at << "\n";
      // Without padding a forward window never leaves x (the output size formula).
      if (p > 0) bounds = "(" + ix + " >= 0) & (" + ix + " < " + names.in[sd] + ")";
    } else if (s == 1) {  // the gather form: input o + p - k*d
      body << indent << ix << " = " << pos[sd] << (p == 0 ? "" : " + " + std::to_string(p)) << " - " << tap_at << "\n";
      bounds = "(" + ix + " >= 0) & (" + ix + " < " + names.in[sd] + ")";
    } else {  // a dilated strided dim: (o + p - k*d) / s where that divides exactly
      const std::string t = "t" + n;
      body << indent << t << " = " << pos[sd] << (p == 0 ? "" : " + " + std::to_string(p)) << " - " << tap_at << "\n";
      body << indent << ix << " = " << t << " // " << s << "\n";
      bounds = "(" + t + " % " + std::to_string(s) + " == 0) & (" + t + " >= 0) & (" + ix + " < " + names.in[sd] + ")";
    }
    if (!bounds.empty()) {
      body << indent << "m" << n << " = " << mask << " & " << bounds << "\n";
      mask = "m" + n;
    }
    if (sd == 0) {
      spatial_at = ix;
    } else {
      body << indent << "sp" << n << " = " << spatial_at << " * " << names.in[sd] << " + " << ix << "\n";
      spatial_at = "sp" + n;
    }
    if (!one_loop) tap = sd == 0 ? kd : (sd == 1 ? tap : "(" + tap + ")") + " * " + names.kernel[sd] + " + " + kd;
  }
  // The tap's channel blocks: A [BLOCK_M, BLOCK_K] strided by x_spatial along the channels,
  // contiguous along positions where the stride is 1; B [BLOCK_K, BLOCK_N] contiguous along
  // the output channels, as a matmul's row-major B. Read in place, a tap's weight tile w[co,
  // ci, tap] strides by the taps along ci and by C_in/groups * taps along co: contiguous along
  // neither dim, like the transposed convs' in-place weight that ran at 8-10 TFLOP/s where
  // contiguous tiles ran at about 25 (transposed_weight_kernel). Hence the relayout, one small
  // kernel per call.
  body << indent << "a_row = x_row + " << spatial_at << "\n";
  body << indent << "w_row = " << (spatial == 1 ? tap : "(" + tap + ")") << " * " << names.cin_group << " * " << cout
       << " + " << (grouped ? "w_col" : "rn") << "\n";
  if (!one_loop) {
    body << indent << "for c0 in range(0, " << names.cin_group << ", BLOCK_K):\n";
    indent += "    ";
  }
  body << indent << "ci = c0 + ck\n";
  body << indent << "cmask = ci < " << names.cin_group << "\n";
  body << indent << "a_tile = tl.load(" << x << " + a_row[:, None] + ci[None, :] * " << x_spatial << ", mask=" << mask
       << "[:, None] & cmask[None, :], other=0.0)\n";
  body << indent << "b_tile = tl.load(" << wt << " + w_row[None, :] + ci[:, None] * " << cout
       << ", mask=cmask[:, None] & nmask[None, :], other=0.0)\n";
  body << indent << "acc = tl.dot(a_tile, b_tile, acc, input_precision=\"" << (s_.dot_x3 ? "tf32x3" : "ieee")
       << "\")\n";
  return body.str();
}

TritonEmitter::WeightRelayout TritonEmitter::begin_weight_relayout(const Stage& stage, const Node& node,
                                                                   const std::string& name) {
  const Shape& ws = g_.nodes[node.args[1]].shape;
  WeightRelayout r{kernel(name + "_wt"), stage_scratch(stage, "wt"), py(numel_expr(ws))};
  allocations_.push_back("    " + r.scratch + " = torch.empty((" + r.numel + ",), device=" +
                         py_name_.at(g_.input_names.at(0)) + ".device, dtype=torch.float32)\n");
  r.w = r.k.buffer(forward_buffer(node.args[1]));
  r.wt = r.k.output(r.scratch);
  r.n = r.k.size(r.numel, "n");
  r.taps = r.k.size(py(numel_expr(Shape(ws.begin() + 2, ws.end()))), "taps");
  return r;
}

std::string TritonEmitter::end_weight_relayout(WeightRelayout& r, const std::string& index_lines) {
  const std::string block_size = "1024";
  const std::string block = r.k.constant("BLOCK", block_size);
  r.k.grid = "(triton.cdiv(" + r.numel + ", " + block_size + "),)";
  r.k.body = "    offs = tl.program_id(0) * " + block + " + tl.arange(0, " + block + ")\n" +
             "    mask = offs < " + r.n + "\n" + index_lines + "    tl.store(" + r.wt + " + offs, v, mask=mask)\n";
  kernels_.push_back(r.k);
  return r.scratch;
}

std::string TritonEmitter::tap_major_weight_kernel(const Stage& stage, const Node& node, const std::string& name) {
  const Window& win = node.window;
  const Shape& ws = g_.nodes[node.args[1]].shape;
  const bool transposed = win.op == "conv_transpose";
  WeightRelayout r = begin_weight_relayout(stage, node, name);
  const std::string groups = std::to_string(win.groups);
  const std::string cin_group =
      r.k.size(py(!transposed ? ws[1].expr() : win.groups > 1 ? ws[0].expr() + " / " + groups : ws[0].expr()),
               "cin_group");
  const std::string cout_group = transposed ? r.k.size(py(ws[1].expr()), "cout_group") : "";
  const std::string cout =
      r.k.size(py(!transposed ? ws[0].expr() : win.groups > 1 ? ws[1].expr() + " * " + groups : ws[1].expr()), "cout");
  std::ostringstream body;
  // Element (tap, ci, co) of the tap-major layout, from w[co, ci, tap] (a conv) or
  // w[grp * C_in/groups + ci, co % C_out/groups, tap] with grp = co // (C_out/groups) (a
  // transposed conv). Written contiguously; the strided reads touch a weight of kilobytes to
  // a few megabytes once per call.
  body << "    co = offs % " << cout << "\n";
  body << "    ci = (offs // " << cout << ") % " << cin_group << "\n";
  body << "    tap = offs // (" << cout << " * " << cin_group << ")\n";
  if (!transposed)
    body << "    v = tl.load(" << r.w << " + (co * " << cin_group << " + ci) * " << r.taps
         << " + tap, mask=mask, other=0.0)\n";
  else
    body << "    v = tl.load(" << r.w << " + ((co // " << cout_group << " * " << cin_group << " + ci) * " << cout_group
         << " + co % " << cout_group << ") * " << r.taps << " + tap, mask=mask, other=0.0)\n";
  return end_weight_relayout(r, body.str());
}

std::string TritonEmitter::transposed_weight_kernel(const Stage& stage, const Node& node, const std::string& name) {
  const Window& win = node.window;
  const Shape& ws = g_.nodes[node.args[1]].shape;
  WeightRelayout r = begin_weight_relayout(stage, node, name);
  const std::string cin_group =
      r.k.size(py(win.groups > 1 ? ws[0].expr() + " / " + std::to_string(win.groups) : ws[0].expr()), "cin_group");
  const std::string cout_group = r.k.size(py(ws[1].expr()), "cout_group");
  std::ostringstream body;
  // Element (co, ci, tap) of the forward layout, co = grp * C_out/groups + col, from
  // w[grp * C_in/groups + ci, col, tap].
  body << "    tap = offs % " << r.taps << "\n";
  body << "    ci = (offs // " << r.taps << ") % " << cin_group << "\n";
  body << "    co = offs // (" << r.taps << " * " << cin_group << ")\n";
  body << "    grp = co // " << cout_group << "\n";
  body << "    v = tl.load(" << r.w << " + ((grp * " << cin_group << " + ci) * " << cout_group << " + co % " << cout_group
       << ") * " << r.taps << " + tap, mask=mask, other=0.0)\n";
  return end_weight_relayout(r, body.str());
}

std::string TritonEmitter::conv_gemm_epilogue(const Stage& stage, TritonKernel& k, const std::string& co,
                                              const std::vector<std::string>& pos, const std::string& mask,
                                              const std::string& out) {
  // The epilogue on the tile: output coordinates as [BLOCK_M, BLOCK_N] broadcasts.
  const Shape& out_shape = g_.nodes[stage.root].shape;
  std::ostringstream body;
  std::vector<std::string> coords;
  for (size_t axis = 0; axis < out_shape.size(); ++axis) coords.push_back("c" + std::to_string(axis));
  body << "    c0 = bat[:, None]\n";
  body << "    c1 = (" << co << ")[None, :]\n";
  for (size_t sd = 0; sd < pos.size(); ++sd) body << "    c" << 2 + sd << " = " << pos[sd] << "[:, None]\n";
  body << "    mask = " << mask << "\n";
  body << "    offs = " << offset_expr(out_shape, coords, [&](const Dim& d) { return dim(k, d); }) << "\n";
  std::string result;
  body << window_epilogue(stage, k, coords, result) << "    tl.store(" << out << " + offs, " << result
       << ", mask=mask)\n";
  return body.str();
}

void TritonEmitter::conv_transpose_phased(const Stage& stage, TritonKernel& k, const WindowNames& names,
                                          const std::vector<bool>& phased_dim, const std::string& x,
                                          const std::string& w, const std::string& out) {
  const Node& node = g_.nodes[stage.anchor];
  const Window& win = node.window;
  const Shape& out_shape = g_.nodes[stage.root].shape;
  const Shape& ws = g_.nodes[node.args[1]].shape;
  const int spatial = win.spatial(), rank = static_cast<int>(out_shape.size());
  const bool grouped = win.groups > 1;
  const std::string bm = k.constant("BLOCK_M", std::to_string(s_.block_m));
  const std::string bn = k.constant("BLOCK_N", std::to_string(s_.block_n));
  const std::string bk = k.constant("BLOCK_K", std::to_string(s_.block_k));
  const std::string taps = k.size(py(numel_expr(Shape(ws.begin() + 2, ws.end()))), "taps");
  k.stages = s_.stages;
  // Grid: (position tiles x channel tiles, groups, phases); a phase's positions along a
  // phased dim are at most ceil(out / s).
  std::string tiles = py(out_shape[0].expr());
  int64_t phases = 1;
  for (int sd = 0; sd < spatial; ++sd) {
    const std::string size = py(out_shape[rank - spatial + sd].expr());
    tiles += phased_dim[sd] ? " * triton.cdiv(" + size + ", " + std::to_string(win.stride[sd]) + ")" : " * " + size;
    if (phased_dim[sd]) phases *= win.stride[sd];
  }
  k.grid = "(triton.cdiv(" + tiles + ", " + std::to_string(s_.block_m) + ") * triton.cdiv(" + py(ws[1].expr()) +
           ", " + std::to_string(s_.block_n) + "), " + std::to_string(win.groups) + ", " + std::to_string(phases) +
           ")";

  std::ostringstream body;
  body << "    pid = tl.program_id(0)\n";
  body << "    num_n = tl.cdiv(" << names.cout_group << ", " << bn << ")\n";
  body << "    rm = (pid // num_n) * " << bm << " + tl.arange(0, " << bm << ")\n";
  body << "    rn = (pid % num_n) * " << bn << " + tl.arange(0, " << bn << ")\n";
  if (grouped) body << "    grp = tl.program_id(1)\n";
  body << "    phase = tl.program_id(2)\n";
  // Per phased dim: its residue r, the phase's first output f = (r - p) mod s, its count of
  // positions n, the most any phase has (m), the input index q of its first position at tap 0,
  // and its taps T = ceil(k / s). Other dims: every position, every tap.
  std::vector<std::string> extent(spatial), tap_count(spatial);
  std::string prest = "phase";
  for (int sd = spatial - 1; sd >= 0; --sd) {
    if (!phased_dim[sd]) continue;
    const std::string r = "r" + std::to_string(sd), s = std::to_string(win.stride[sd]);
    body << "    " << r << " = " << prest << " % " << s << "\n";
    prest = "(" + prest + " // " + s + ")";
  }
  std::string row_mask = "(rm < Mp)";
  std::string count = dim(k, out_shape[0]);
  for (int sd = 0; sd < spatial; ++sd) {
    const std::string n = std::to_string(sd), size = dim(k, out_shape[rank - spatial + sd]);
    if (!phased_dim[sd]) {
      extent[sd] = size;
      tap_count[sd] = names.kernel[sd];
    } else {
      const int64_t s = win.stride[sd], p = win.padding[sd];
      const std::string ss = std::to_string(s);
      body << "    f" << n << " = (r" << n << " + " << s - p % s << ") % " << ss << "\n";
      body << "    n" << n << " = (" << size << " - f" << n << " + " << s - 1 << ") // " << ss << "\n";
      body << "    m" << n << " = (" << size << " + " << s - 1 << ") // " << ss << "\n";
      body << "    q" << n << " = (f" << n << " + " << p << ") // " << ss << "\n";
      body << "    T" << n << " = (" << names.kernel[sd] << " + " << s - 1 << ") // " << ss << "\n";
      extent[sd] = "m" + n;
      tap_count[sd] = "T" + n;
    }
    count += " * " + extent[sd];
  }
  body << "    Mp = " << count << "\n";
  // Positions: batch, then t per spatial dim (innermost last); o = f + s*t along phased dims.
  std::vector<std::string> pos(spatial), t(spatial);
  std::string rest = "rm";
  for (int sd = spatial - 1; sd >= 0; --sd) {
    t[sd] = "t" + std::to_string(sd);
    body << "    " << t[sd] << " = " << rest << " % " << extent[sd] << "\n";
    rest = "(" + rest + " // " + extent[sd] + ")";
  }
  body << "    bat = " << rest << "\n";
  for (int sd = 0; sd < spatial; ++sd) {
    const std::string n = std::to_string(sd);
    if (!phased_dim[sd]) {
      pos[sd] = t[sd];
      continue;
    }
    pos[sd] = "o" + n;
    body << "    " << pos[sd] << " = f" << n << " + " << win.stride[sd] << " * " << t[sd] << "\n";
    row_mask += " & (" + t[sd] + " < n" + n + ")";
  }
  body << "    rmask = " << row_mask << "\n";
  std::string kp = names.cin_group;
  for (int sd = 0; sd < spatial; ++sd) kp += " * " + tap_count[sd];
  body << "    Kp = " << kp << "\n";
  const std::string channel_base = grouped ? "grp * " + names.cin_group + " + " : "";
  body << "    acc = tl.zeros((" << bm << ", " << bn << "), dtype=tl.float32)\n";
  body << "    for k0 in range(0, Kp, " << bk << "):\n";
  body << "        rk = k0 + tl.arange(0, " << bk << ")\n";
  // The reduction index as (input channel, the phase's taps), innermost last.
  std::string krest = "rk";
  std::vector<std::string> j(spatial);
  for (int sd = spatial - 1; sd >= 0; --sd) {
    j[sd] = "j" + std::to_string(sd);
    body << "        " << j[sd] << " = " << krest << " % " << tap_count[sd] << "\n";
    krest = "(" + krest + " // " + tap_count[sd] + ")";
  }
  body << "        ci = " << krest << "\n";
  std::string a_mask = "rmask[:, None] & (rk[None, :] < Kp)";
  std::string b_mask = "(rk[:, None] < Kp) & (rn[None, :] < " + names.cout_group + ")";
  std::string x_at = "bat[:, None] * " + names.channels + " + " + channel_base + "ci[None, :]";
  std::string tap_at;
  for (int sd = 0; sd < spatial; ++sd) {
    const std::string n = std::to_string(sd), ix = "ix" + n;
    const int64_t s = win.stride[sd], p = win.padding[sd], d = win.dilation[sd];
    std::string kw = j[sd];
    if (phased_dim[sd]) {
      kw = "kw" + n;
      body << "        " << kw << " = r" << n << " + " << s << " * " << j[sd] << "\n";
      body << "        " << ix << " = q" << n << " + " << t[sd] << "[:, None] - " << j[sd] << "[None, :]\n";
      a_mask += " & (" + kw + " < " + names.kernel[sd] + ")[None, :]";
      b_mask += " & (" + kw + " < " + names.kernel[sd] + ")[:, None]";
      a_mask += " & (" + ix + " >= 0) & (" + ix + " < " + names.in[sd] + ")";
    } else {  // the gather form along this dim (stride 1, or a dilated stride)
      body << gather_lines("u" + n, t[sd], j[sd] + "[None, :]" + (d == 1 ? "" : " * " + std::to_string(d)), s, p, ix,
                           names.in[sd], a_mask);
    }
    x_at = "(" + x_at + ") * " + names.in[sd] + " + " + ix;
    tap_at = tap_at.empty() ? kw : "(" + tap_at + ") * " + names.kernel[sd] + " + " + kw;
  }
  body << "        a_tile = tl.load(" << x << " + " << x_at << ", mask=" << a_mask << ", other=0.0)\n";
  // w[grp * C_in/groups + ci, rn, the tap]
  body << "        b_tile = tl.load(" << w << " + ((" << channel_base << "ci)[:, None] * " << names.cout_group
       << " + rn[None, :]) * " << taps << " + (" << tap_at << ")[:, None], mask=" << b_mask << ", other=0.0)\n";
  body << "        acc = tl.dot(a_tile, b_tile, acc, input_precision=\"" << (s_.dot_x3 ? "tf32x3" : "ieee") << "\")\n";
  const std::string co = grouped ? "grp * " + names.cout_group + " + rn" : "rn";
  body << conv_gemm_epilogue(stage, k, co, pos, "rmask[:, None] & (rn[None, :] < " + names.cout_group + ")", out);
  k.body = body.str();
  kernels_.push_back(k);
}

}  // namespace kforge::codegen::emit
