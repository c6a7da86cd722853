// The schedule space of an op per target: the variants autotune tries, generations
// propose (first ones first) and the SFT corpus draws from. Built from the stage kinds; a
// variant is kept only if it emits a program that differs from every variant before it.
// OpenCL's space is tuned for PoCL on CPUs, CUDA's and Triton's for GPUs. Test: ctest -R codegen.
#include <algorithm>
#include <set>
#include <tuple>

#include "worker/codegen/codegen.h"

namespace kforge::codegen {
namespace {

// Which stage kinds an op has.
struct StageKinds {
  bool pointwise = false, rows = false, full = false, matmul = false, scan = false, window = false;
  bool conv_gemm = false;  // a conv (or transposed) with enough output channels per group for tl.dot tiles (triton)
  int64_t conv_channels = 0;  // the most output channels per group among those convs
  int64_t taps_outer_cin = 0;  // the fewest input channels per group among those that fit taps-outer (0: none)
  // The conv tile as wide as those channels (16 or 32) when they are at most 32; 0: none.
  int narrow_conv_n() const { return !conv_gemm || conv_channels > 32 ? 0 : conv_channels <= 16 ? 16 : 32; }
  // The channel block of taps-outer conv schedules (Schedule::conv_taps_outer), where a tl.dot
  // spans block_k input channels of one tap: 16 for at most 16 channels per group (tl.dot's
  // least), else 32; 0 (no taps-outer schedules) under 8, where most of every block would be
  // masked lanes (a 3-channel conv's 27 taps would do 4.5x the flattened form's products).
  int taps_outer_k() const { return taps_outer_cin < 8 ? 0 : taps_outer_cin <= 16 ? 16 : 32; }
  bool last_dim = false, other_dim = false;  // row reductions, scans, arg reductions: along the last dim / another
  int64_t max_row = 0;  // longest reduced dim of a row reduction at the main shape
  int64_t max_last_line = 0;  // longest line of a scan or arg reduction along the last dim
  bool matvec = false;        // an unbatched matmul with one output column (torch.mv, A @ [K, 1])
  // Triton split-K for the matmul stage with the fewest 64x16-or-larger output tiles, when
  // its K is long: slices of K (a power of two) enough for about two programs per SM of a
  // 132-SM GPU, each slice at least 2048 long. 1: none.
  int split_k = 1;
  int split_block_n = 64;  // 16 when the matmul's N is under 16 (a matrix-vector product)
  // Triton split reduction for an op whose one row reduction is over a dim other than the
  // last with few outputs (64 per program) over a long reduced dim: slices (a power of two,
  // each at least 256 long, up to 64) enough for about two programs per SM. 1: none.
  int split_r = 1;
  // The same aimed at about eight programs per SM (slices at least 128 long): more loads in
  // flight than two programs an SM can keep (the H200's 4096 x 2048 column mean, 2026-11-29:
  // sr8 read at 640 GB/s). Tried before split_r; equal to it when the dim is too short.
  int split_r_wide = 1;
  // The same for CUDA's one thread per output: slices (a power of two, each at least 32 long,
  // up to 128) enough for about 128K threads (a 132-SM GPU's 2048 resident threads per SM,
  // half). 1: none.
  int split_items = 1;
  explicit StageKinds(const Analysis& analysis) {
    const Graph& g = analysis.graph;
    int row_stages = 0;
    for (const auto& stage : analysis.stages) {
      if (stage.kind == StageKind::matmul) {
        const Node& mm = g.nodes[stage.anchor];
        const Shape& a = g.nodes[mm.args[0]].shape;
        const Shape& b = g.nodes[mm.args[1]].shape;
        const int64_t m = a[a.size() - 2].value, k = a.back().value, n = b.size() == 1 ? 1 : b.back().value;
        const int64_t batch = a.size() == 3 ? a[0].value : 1;
        matvec |= n == 1 && batch == 1 && a.size() == 2;
        const int bn = n < 16 ? 16 : 64;
        const int64_t tiles = batch * ((m + 63) / 64) * ((n + bn - 1) / bn);
        int split = 1;
        while (split < 64 && tiles * split < 264 && k / (split * 2) >= 2048) split *= 2;
        if (split > split_k) {
          split_k = split;
          split_block_n = bn;
        }
      }
      pointwise |= stage.kind == StageKind::pointwise;
      rows |= stage.kind == StageKind::reduce_rows;
      full |= stage.kind == StageKind::reduce_full;
      matmul |= stage.kind == StageKind::matmul;
      window |= stage.kind == StageKind::window;
      if (stage.kind == StageKind::window) {
        const Node& node = g.nodes[stage.anchor];
        const int64_t channels = conv_out_channels_per_group(g, node);
        if (channels >= 8) {
          const int64_t cin = conv_in_channels_per_group(g, node);
          if (conv_taps_outer_fits(g, node)) taps_outer_cin = taps_outer_cin ? std::min(taps_outer_cin, cin) : cin;
          conv_gemm = true;
          conv_channels = std::max(conv_channels, channels);
        }
      }
      const bool line = stage.kind == StageKind::scan || stage.kind == StageKind::arg_reduce;
      scan |= line;
      if (stage.kind == StageKind::reduce_rows) {
        const int axis = stage.reduce_axes.at(0);
        const int64_t len = stage.reduce_shape.at(axis).value;
        max_row = std::max(max_row, len);
        bool last = numel_value(Shape(stage.reduce_shape.begin() + axis + 1, stage.reduce_shape.end())) == 1;
        (last ? last_dim : other_dim) = true;
        if (++row_stages == 1 && !last) {
          const int64_t outputs = numel_value(stage.reduce_shape) / std::max<int64_t>(1, len);
          const int64_t programs = outputs / 64 + 1;
          while (split_r < 64 && programs * split_r < 264 && len / (split_r * 2) >= 256) split_r *= 2;
          while (split_r_wide < 64 && programs * split_r_wide < 1056 && len / (split_r_wide * 2) >= 128)
            split_r_wide *= 2;
          while (split_items < 128 && outputs * split_items < 131072 && len / (split_items * 2) >= 32)
            split_items *= 2;
        }
      } else if (line) {
        const Node& node = g.nodes[stage.anchor];
        const Shape& shape = g.nodes[node.args[0]].shape;
        const int axis = node.axes.at(0);
        bool last = numel_value(Shape(shape.begin() + axis + 1, shape.end())) == 1;
        (last ? last_dim : other_dim) = true;
        if (last) max_last_line = std::max(max_last_line, shape[axis].value);
      }
    }
    if (row_stages > 1) split_r = split_r_wide = split_items = 1;  // split schedules are for an op's one row reduction
  }
};

// Keeps the schedules whose program differs from every earlier one (the header, which
// names the schedule, is not compared).
std::vector<Schedule> distinct(const Analysis& analysis, const std::vector<Schedule>& candidates, Target target) {
  std::vector<Schedule> out;
  std::set<std::string> programs;
  for (const auto& s : candidates) {
    auto gen = emit_program(analysis, s, target);
    if (!gen.ok()) continue;
    std::string code = gen.program.substr(gen.program.find('\n') + 1);
    if (programs.insert(code).second) out.push_back(s);
  }
  return out;
}

// `base` with a work-group per line (Schedule::line_group), in work-groups of 256 and 1024.
std::vector<Schedule> line_group_variants(Schedule base) {
  base.line_group = 1;
  std::vector<Schedule> variants;
  for (int wg : {256, 1024}) {
    base.work_group = wg;
    variants.push_back(base);
  }
  return variants;
}

// CUDA: float4 pointwise, warp-shuffle row reductions (a block per row) or a thread per
// output for other dims, shared-memory matmul tiles.
std::vector<Schedule> cuda_space(const StageKinds& kinds) {
  std::vector<Schedule> candidates;
  // Matmul forms: tensor-core tiles (block_m x block_n x block_k, warp_m x warp_n per warp, fp32
  // as 3xTF32; unroll: the k8 steps of a slice unrolled that many at a time), 2-D register
  // tiles (reg_m x reg_n per thread, CUDA cores), then the 1-D tiles (tile, work_per_item,
  // unroll), ordered so `bench --max-schedules 3` (picks 0, n/3, 2n/3) tries one of each. On an
  // H200 (2026-11-29, bench/results/gpu_2026_11_29d) the 64 x 64 x 32 tensor-core tile with its
  // k8 steps unrolled ran 1024^3 fp32 in 53 us, cuBLAS 64 us, the register tiles 85-100 us;
  // 128 x 128 tensor-core tiles (64 blocks for 132 SMs) ran 100-130 us and are gone, as are
  // 16-wide 1-D tiles (never the fastest on a GPU).
  struct Tile {
    int tile, wpt, unroll;
    int bm = 0, bn = 0, bk = 0, rm = 0, rn = 0, wm = 0, wn = 0;
  };
  std::vector<Tile> tiles = {{16, 1, 1}};
  if (kinds.matmul)
    tiles = {{16, 1, 4, 64, 64, 32, 0, 0, 32, 32},  {16, 1, 1, 64, 64, 32, 0, 0, 32, 32},
             {16, 1, 1, 64, 64, 16, 0, 0, 32, 32},  {16, 1, 1, 64, 64, 32, 0, 0, 32, 16},
             {16, 1, 1, 64, 64, 8, 4, 4},           {16, 1, 1, 128, 64, 16, 0, 0, 32, 32},
             {16, 1, 1, 128, 64, 8, 8, 4},          {16, 1, 1, 128, 128, 8, 8, 8},
             {32, 8, 4}, {32, 4, 4}, {32, 8, 1}, {64, 16, 1}, {64, 16, 4}, {32, 4, 1}};
  for (const Tile& tile : tiles) {
    Schedule base;
    base.tile = tile.tile;
    base.work_per_item = tile.wpt;
    base.unroll = tile.unroll;
    base.vector_width = 1;
    if (tile.bm > 0) {
      base.block_m = tile.bm;
      base.block_n = tile.bn;
      base.block_k = tile.bk;
      base.reg_m = tile.rm;
      base.reg_n = tile.rn;
      base.warp_m = tile.wm;
      base.warp_n = tile.wn;
      base.dot_x3 = tile.wm > 0 ? 1 : 0;
    }
    std::vector<Schedule> variants;
    if (kinds.rows) {
      // Few outputs over a long reduced dim (another than the last): a thread per output and
      // slice first, then a kernel combining the slices (the emitter refuses other regions).
      // Twice the slices first (about 256K threads, all a 132-SM GPU keeps resident; each slice
      // still at least 32 long): a thread per output and slice is bound by the loads it keeps
      // in flight (mean_gelu_dim0's 128K threads read 32 MB at 0.8 TB/s on the H200,
      // 2026-11-29; unrolling the loop 4 did not help: f22d9b9, reverted).
      if (kinds.split_items > 1 && !kinds.last_dim)
        for (auto [wg, twice] : std::vector<std::pair<int, bool>>{{256, true}, {256, false}, {128, true}, {128, false}}) {
          Schedule s = base;
          s.reduce = ReduceStrategy::item;
          s.work_group = wg;
          s.split_r = kinds.split_items * (twice ? 2 : 1);
          variants.push_back(s);
        }
      // A block per row along the last dim holding the row in registers (row_regs, the
      // fewest a thread that hold the longest row, up to 16), read once; then the same blocks
      // passing over the row in memory (rows too long for registers).
      if (kinds.last_dim)
        for (int wg : {256, 128, 512}) {
          int regs = 1;
          while (int64_t{regs} * wg < kinds.max_row) regs *= 2;
          if (regs > 16) continue;
          Schedule s = base;
          s.reduce = ReduceStrategy::group;
          s.work_group = wg;
          s.row_regs = regs;
          variants.push_back(s);
        }
      for (int wg : {256, 512, 128, 1024}) {
        Schedule s = base;
        s.reduce = ReduceStrategy::group;
        s.work_group = wg;
        variants.push_back(s);
      }
      for (auto [wg, u] : std::vector<std::pair<int, int>>{{128, 4}, {256, 1}, {64, 1}}) {
        Schedule s = base;
        s.reduce = ReduceStrategy::item;
        s.work_group = wg;
        s.unroll = std::max(u, base.unroll);
        variants.push_back(s);
      }
    } else if (kinds.full) {
      // float4 loads where every operand is read in order (the emitter refuses others), with
      // as many threads as the scalar 512 x 512: on the H200 (gpu_2026_11_29e call 1) mse_loss
      // over 2 x 32 MB took 27.9 us so, 34.6 us scalar, 35.6 us as 256 x 256 float4s unrolled 4
      // (a quarter of the threads). Placed so `--max-schedules 3` (0, n/3, 2n/3) tries both
      // float4 forms and the scalar 512 x 512.
      for (auto [wg, parts, vec, u] : std::vector<std::tuple<int, int, int, int>>{
               {512, 512, 4, 1}, {256, 256, 1, 1}, {512, 512, 1, 1}, {256, 64, 1, 1}, {256, 1024, 4, 1},
               {1024, 132, 1, 1}}) {
        Schedule s = base;
        s.work_group = wg;
        s.partials = parts;
        s.vector_width = vec;
        s.unroll = u;
        variants.push_back(s);
      }
    } else if (kinds.pointwise) {
      for (auto [wg, per_item, vec] : std::vector<std::tuple<int, int, int>>{
               {256, 1, 4}, {256, 1, 1}, {128, 1, 4}, {256, 4, 4}, {512, 1, 8}, {128, 4, 1}}) {
        Schedule s = base;
        s.work_group = wg;
        s.per_item = per_item;
        s.vector_width = vec;
        variants.push_back(s);
      }
    } else if (kinds.window) {
      // A thread per output of a conv / pool (and its epilogue).
      for (int wg : {256, 128, 512}) {
        Schedule s = base;
        s.work_group = wg;
        variants.push_back(s);
      }
    } else if (kinds.scan) {
      for (auto [wg, u] : std::vector<std::pair<int, int>>{{128, 4}, {256, 1}, {64, 1}}) {
        Schedule s = base;
        s.work_group = wg;
        s.unroll = u;
        variants.push_back(s);
      }
    } else {
      variants.push_back(base);
    }
    // Scans and arg reductions along the last dim (alone, or after pointwise stages: a
    // masked cumsum): a work-group per line reads it coalesced, where a thread per line
    // strides across the lines (argmax over the last dim of 4096 x 2048 ran 0.12x eager on
    // the H100 that way, cumsum 0.46x). First for long lines; after the thread per line for
    // short ones, where the per-line combine would dominate.
    if (kinds.scan && kinds.max_last_line > 0) {
      const std::vector<Schedule> group = line_group_variants(base);
      variants.insert(kinds.max_last_line >= 512 ? variants.begin() : variants.end(), group.begin(), group.end());
    }
    candidates.insert(candidates.end(), variants.begin(), variants.end());
  }
  // A matrix-vector product: a work-group per output row first (emit_matmul.cpp's
  // matvec_rows), where a tile computes one useful column of 16-64.
  if (kinds.matvec && !candidates.empty()) {
    Schedule rows = candidates.front();
    rows.unroll = 4;
    const std::vector<Schedule> group = line_group_variants(rows);
    candidates.insert(candidates.begin(), group.begin(), group.end());
  }
  return candidates;
}

// Triton: BLOCK / num_warps for pointwise; rows held in registers (whole-row) or chunked
// for reductions; tutorial-style matmul tiles with GROUP_M swizzling and pipelining.
std::vector<Schedule> triton_space(const StageKinds& kinds) {
  std::vector<Schedule> candidates;
  struct Mm {
    int bm, bn, bk, gm, warps, stages;
  };
  std::vector<Mm> mms = {{64, 64, 32, 8, 4, 3},  {128, 64, 32, 8, 4, 3}, {128, 128, 32, 8, 8, 3},
                         {64, 128, 32, 8, 4, 4}, {32, 32, 32, 4, 2, 2}};
  if (!kinds.matmul) mms = {{64, 64, 32, 8, 4, 3}};
  // Whole-row schedules keep next_power_of_2(len) values per row in registers: for rows up to 8192.
  const bool whole_fits = kinds.max_row > 0 && kinds.max_row <= 8192;
  // One warp per 512 values of the row, rounded down to a power of two (Triton accepts no other
  // num_warps: a 6727-long row once asked for 13).
  int whole_warps = 1;
  while (whole_warps < 16 && whole_warps * 2 * 512 <= std::min<int64_t>(kinds.max_row, 8192)) whole_warps *= 2;
  for (auto mm : mms) {
    Schedule base;
    base.block_m = mm.bm;
    base.block_n = mm.bn;
    base.block_k = mm.bk;
    base.group_m = mm.gm;
    base.warps = mm.warps;
    base.stages = mm.stages;
    std::vector<Schedule> variants;
    // Taps-outer conv forms (see the window branch): the pipelined loop's first, the static
    // loops' last.
    std::vector<Schedule> taps_loop, taps_static;
    auto add_taps_forms = [&](Schedule s, int block_k) {
      s.block_k = block_k;
      for (auto [form, list] : {std::pair{2, &taps_loop}, std::pair{1, &taps_static}}) {
        s.conv_taps_outer = form;
        list->push_back(s);
      }
    };
    auto add = [&](int block, int rows, int warps) {
      Schedule s = base;
      s.block = block;
      s.rows = rows;
      if (!kinds.matmul) s.warps = warps;
      variants.push_back(s);
    };
    if (kinds.rows) {
      // Last dim: (block = chunk along the row, 0 = the whole row in registers; rows per
      // program). Other dims: (block = adjacent outputs per program; rows = reduced
      // elements per step, 0 = all of them at once).
      if (kinds.last_dim) {
        if (whole_fits) {
          add(0, 1, whole_warps);
          // Twice the warps (half the values per thread), one row and two rows a program.
          if (whole_warps < 16) {
            add(0, 1, whole_warps * 2);
            if (kinds.max_row <= 4096) add(0, 2, whole_warps * 2);
          }
          if (kinds.max_row <= 1024) add(0, 4, 4);
        }
        add(1024, 1, 4);
        add(4096, 1, 8);
        add(256, 4, 4);
      }
      if (kinds.other_dim) {
        // Few outputs over a long reduced dim: the slices side by side first (a single
        // reduction storing one value per output; the emitter refuses any other).
        if (kinds.split_r > 1 && !kinds.last_dim) {
          if (kinds.split_r_wide > kinds.split_r) {
            add(64, 32, 4);
            variants.back().split_r = kinds.split_r_wide;
          }
          for (auto [block, rows] : {std::pair{64, 32}, std::pair{32, 64}}) {
            add(block, rows, 4);
            variants.back().split_r = kinds.split_r;
          }
        }
        add(64, 32, 4);
        if (kinds.max_row > 0 && kinds.max_row <= 256) add(64, 0, 4);
        add(128, 16, 8);
        add(32, 64, 4);
        add(256, 8, 8);
      }
    } else if (kinds.full) {
      // 1024 first-pass programs first (about eight per SM), then 256 and 128: 256 read the
      // H200's 2 x 32 MB mse_loss at 2.25 TB/s, torch.compile's at 2.7 (2026-11-29).
      for (auto [block, warps, partials] :
           {std::tuple{2048, 8, 1024}, {1024, 4, 1024}, {1024, 4, 256}, {2048, 8, 256}, {4096, 8, 128}}) {
        add(block, 1, warps);
        variants.back().partials = partials;
      }
    } else if (kinds.pointwise) {
      add(1024, 1, 4);
      add(2048, 1, 8);
      add(4096, 1, 8);
      add(512, 1, 4);
      add(256, 1, 2);
    } else if (kinds.window) {
      // Convs: implicit-GEMM tiles (block_m positions x block_n channels, block_k of the
      // reduction per tl.dot) first; then BLOCK outputs per program, each walking its window.
      // The two larger tiles come first also as tf32x3 (three TF32 products per fp32 one, on
      // the tensor cores; cuDNN's fp32 conv, the baseline with TF32 off, has none to use).
      // With at most 32 output channels per group (most of KernelBench level 2's convs have
      // 16-32), a tile as wide as the channels (16 or 32) comes before them, x3 then fp32: a
      // program then computes every channel of its positions, and no lanes of a 64-wide tile
      // are masked.
      std::vector<std::tuple<int, int, int, int, int>> conv_tiles = {
          {128, 64, 32, 8, 1}, {64, 64, 32, 4, 1}, {64, 64, 32, 4, 0}, {128, 64, 32, 8, 0}, {32, 32, 32, 4, 0}};
      if (const int narrow = kinds.narrow_conv_n()) {
        conv_tiles.insert(conv_tiles.begin(), {128, narrow, 32, 4, 1});
        conv_tiles.insert(conv_tiles.begin() + 3, {128, narrow, 32, 4, 0});
      }
      if (kinds.conv_gemm)
        for (auto [bm, bn, bk, warps, x3] : conv_tiles) {
          Schedule s = base;
          s.block_m = bm;
          s.block_n = bn;
          s.block_k = bk;
          s.warps = warps;
          s.block = 256;
          s.dot_x3 = x3;
          variants.push_back(s);
        }
      // Taps-outer copies of the first two tiles (both tf32x3): the flattened reduction
      // decomposes every [block_m, block_k] element of A into channel and taps, input
      // coordinates and padding checks per step, integer work beside each tl.dot; taps-outer
      // does it once per tap on [block_m] vectors (TorchInductor's conv template). In one
      // pipelined loop over (tap, channel block) (conv_taps_outer 2) they come first: on an
      // H200 that form was the fastest checked on each of the 32 KernelBench level-2 convs it
      // fits (3x3, 5x5 and 3x3x3; bench/results/gpu_2026_11_29).
      // The static loops (1) come last: slower than the one loop wherever both ran, and their
      // unrolled 25- and 27-tap kernels timed out compiling on 3 of 8 ops.
      if (const int taps_k = kinds.taps_outer_k())
        for (size_t idx = 0; idx < std::min<size_t>(2, variants.size()); ++idx) add_taps_forms(variants[idx], taps_k);
      const size_t direct = variants.size();
      add(256, 1, 4);
      add(1024, 1, 8);
      add(128, 1, 4);
      if (kinds.conv_gemm)
        for (size_t idx = direct; idx < variants.size(); ++idx) variants[idx].window_gemm = 0;
    } else if (kinds.scan) {
      // Last dim: (chunk, lines per program); other dims: (adjacent lines per program, steps per chunk).
      if (kinds.last_dim) {
        add(1024, 1, 4);
        add(256, 4, 4);
        add(4096, 1, 8);
      }
      if (kinds.other_dim) {
        add(64, 32, 4);
        add(32, 64, 4);
        add(128, 16, 8);
      }
    } else {
      variants.push_back(base);
    }
    // A conv GEMM in an op whose other stages chose the variants above (a softmax, a group
    // norm or a mean after the conv: most of KernelBench level 2's convs) runs on the default
    // 64x64x32 fp32 tile: the first two variants come first also with the conv on tf32x3, as
    // wide as its channels when they are at most 32.
    const bool conv_tiles_chosen = kinds.window && !kinds.rows && !kinds.full && !kinds.pointwise;
    if (kinds.conv_gemm && !conv_tiles_chosen) {
      std::vector<Schedule> x3;
      for (size_t idx = 0; idx < std::min<size_t>(2, variants.size()); ++idx) {
        Schedule s = variants[idx];
        s.dot_x3 = 1;
        if (kinds.narrow_conv_n()) {
          s.block_m = 128;
          s.block_n = kinds.narrow_conv_n();
        }
        x3.push_back(s);
      }
      // Their taps-outer forms, as in the conv-only branch above; block_k is the conv's
      // channel block, left as it was where a matmul stage shares it.
      if (const int taps_k = kinds.taps_outer_k())
        for (const Schedule& s : x3) add_taps_forms(s, kinds.matmul ? s.block_k : taps_k);
      variants.insert(variants.begin(), x3.begin(), x3.end());
    }
    variants.insert(variants.begin(), taps_loop.begin(), taps_loop.end());
    variants.insert(variants.end(), taps_static.begin(), taps_static.end());
    candidates.insert(candidates.end(), variants.begin(), variants.end());
  }
  if (kinds.matmul) {
    // tf32x3 on the two largest tiles first: on tensor-core GPUs three TF32 products beat one
    // fp32 FMA product (each is checked at the op's tolerance like any other).
    std::vector<Schedule> x3;
    for (const Schedule& s : candidates)
      if (s.block_m == 128 && (s.block_n == 128 || s.block_n == 64)) {
        x3.push_back(s);
        x3.back().dot_x3 = 1;
      }
    // Few output tiles over a long K: split-K before everything (64 x 64-or-16 tiles, tf32x3
    // then fp32), as the tiles alone would occupy a few SMs.
    if (kinds.split_k > 1)
      for (int dot_x3 : {1, 0}) {
        Schedule s = candidates.front();
        s.block_m = 64;
        s.block_n = kinds.split_block_n;
        s.block_k = 32;
        s.group_m = 8;
        s.warps = 4;
        s.stages = 3;
        s.dot_x3 = dot_x3;
        s.split_k = kinds.split_k;
        x3.insert(x3.begin() + (dot_x3 ? 0 : 1), s);
      }
    candidates.insert(candidates.begin(), x3.begin(), x3.end());
    // A matrix-vector product: BLOCK_M rows a program, each read along K in BLOCK_K chunks
    // (emit_triton_matmul.cpp's line_group form), where a tile computes one useful column of
    // 64; first, or after split-K's pair when K is long and the rows few.
    if (kinds.matvec) {
      std::vector<Schedule> rows;
      for (auto [bm, bk] : {std::pair{8, 512}, std::pair{16, 256}}) {
        Schedule s = candidates.back();
        s.line_group = 1;
        s.block_m = bm;
        s.block_k = bk;
        s.warps = 4;
        s.stages = 3;
        s.dot_x3 = 0;
        s.split_k = 1;
        rows.push_back(s);
      }
      candidates.insert(candidates.begin() + (kinds.split_k > 1 ? 2 : 0), rows.begin(), rows.end());
    }
  }
  return candidates;
}

}  // namespace

std::vector<Schedule> schedule_space(const Analysis& analysis, Target target) {
  if (!analysis.ok()) return {};
  const StageKinds kinds(analysis);
  if (target == Target::cuda) return distinct(analysis, cuda_space(kinds), target);
  if (target == Target::triton) return distinct(analysis, triton_space(kinds), target);
  const bool pointwise = kinds.pointwise, rows = kinds.rows, full = kinds.full, matmul = kinds.matmul,
             scan = kinds.scan;
  std::vector<Schedule> candidates;
  // Matmul tiles x outputs per work-item; the other knobs stay at defaults unless
  // another stage kind needs them too.
  // Tiles in local memory (tile > 0) or register blocks (tile 0: work_per_item rows,
  // vector_width lanes, per_item columns for transposed B).
  struct MatmulKnobs {
    int tile, wpt, vec, per_item;
  };
  std::vector<MatmulKnobs> tiles = {{0, 4, 8, 1}, {0, 4, 8, 4}, {0, 2, 4, 4}, {0, 8, 8, 2},
                                    {16, 4, 1, 1}, {32, 8, 1, 1}, {16, 1, 1, 1}, {8, 2, 1, 1}};
  if (!matmul) tiles = {{16, 1, 1, 1}};
  for (auto knobs : tiles) {
    for (int unroll : matmul ? std::vector<int>{1, 4} : std::vector<int>{1}) {
      Schedule base;
      base.tile = knobs.tile;
      base.work_per_item = knobs.wpt;
      base.vector_width = knobs.vec;
      base.per_item = knobs.per_item;
      base.unroll = unroll;
      if (rows) {
        // item: (work_group, vector_width, unroll); floatN along the row (last dim) or
        // across adjacent outputs (other dims). Fastest on CPUs, so first.
        for (auto [wg, vec, u] : std::vector<std::tuple<int, int, int>>{
                 {16, 8, 1}, {16, 8, 4}, {64, 4, 1}, {16, 1, 1}, {64, 1, 4}}) {
          Schedule s = base;
          s.reduce = ReduceStrategy::item;
          s.work_group = wg;
          s.vector_width = vec;
          s.unroll = std::max(u, unroll);
          candidates.push_back(s);
        }
        // group: a work-group per row with a local-memory tree (GPU-style).
        for (int wg : {64, 128, 256}) {
          Schedule s = base;
          s.reduce = ReduceStrategy::group;
          s.work_group = wg;
          s.vector_width = 1;
          candidates.push_back(s);
        }
      } else if (full) {
        for (int wg : {128, 256})
          for (int parts : {16, 64, 256}) {
            Schedule s = base;
            s.work_group = wg;
            s.partials = parts;
            candidates.push_back(s);
          }
      } else if (pointwise) {
        for (int wg : {64, 256})
          for (int per_item : {1, 4})
            for (int vec : {1, 4, 8}) {
              Schedule s = base;
              s.work_group = wg;
              s.per_item = per_item;
              s.vector_width = vec;
              candidates.push_back(s);
            }
      } else if (kinds.window) {
        // A work-item per output of a conv / pool (and its epilogue).
        for (int wg : {64, 256, 16}) {
          Schedule s = base;
          s.work_group = wg;
          candidates.push_back(s);
        }
      } else if (scan) {
        for (int wg : {16, 64, 256})
          for (int u : {1, 4}) {
            Schedule s = base;
            s.work_group = wg;
            s.unroll = u;
            candidates.push_back(s);
          }
      } else {
        candidates.push_back(base);
      }
    }
  }
  return distinct(analysis, candidates, Target::opencl);
}

}  // namespace kforge::codegen
