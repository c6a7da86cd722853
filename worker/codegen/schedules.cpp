// The schedule space of an op: the variants autotune tries and the SFT corpus draws
// from. Built from the stage kinds; a variant is kept only if it emits a program
// that differs from every variant before it. Test: ctest -R codegen.
#include <set>
#include <tuple>

#include "worker/codegen/codegen.h"

namespace kforge::codegen {

std::vector<Schedule> schedule_space(const Analysis& analysis) {
  std::vector<Schedule> out;
  if (!analysis.ok()) return out;
  bool pointwise = false, rows = false, full = false, matmul = false, scan = false;
  for (const auto& stage : analysis.stages) {
    pointwise |= stage.kind == StageKind::pointwise;
    rows |= stage.kind == StageKind::reduce_rows;
    full |= stage.kind == StageKind::reduce_full;
    matmul |= stage.kind == StageKind::matmul;
    scan |= stage.kind == StageKind::scan || stage.kind == StageKind::arg_reduce;
  }
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
  std::set<std::string> programs;
  for (const auto& s : candidates) {
    auto gen = emit_program(analysis, s);
    if (!gen.ok()) continue;
    // The header names the schedule; compare the code below it.
    std::string code = gen.program.substr(gen.program.find('\n') + 1);
    if (programs.insert(code).second) out.push_back(s);
  }
  return out;
}

}  // namespace kforge::codegen
