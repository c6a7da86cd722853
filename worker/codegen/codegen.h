// Teacher compiler: lowers an op's TorchScript graph (aten ops) to a kernel program
// in the kforge format (docs/kernel-format.md) for explicit schedule parameters.
// Test: ctest -R codegen. Docs: docs/codegen.md.
#pragma once

#include <string>
#include <vector>

#include "worker/codegen/ir.h"
#include "spec/op_spec.h"

namespace kforge::codegen {

//! Kernel program targets the teacher can emit.
std::vector<std::string> supported_targets();

//! How row reductions are spread over work-items.
enum class ReduceStrategy {
  group,  //!< one work-group per row, a tree reduction in local memory (last-dim reductions)
  item,   //!< one work-item per row or column, a sequential loop (any dim)
};

//! The knobs of one kernel variant. Every field is an explicit input; unused ones are ignored.
struct Schedule {
  int work_group = 256;     //!< work-items per work-group for 1-D kernels (pointwise, reductions)
  int per_item = 1;         //!< pointwise: elements per work-item (grid-stride)
  int vector_width = 1;     //!< pointwise: 1, 4 or 8 (vloadN/vstoreN when every input is contiguous)
  int tile = 16;            //!< matmul: TS x TS tiles of A and B in local memory
  int work_per_item = 1;    //!< matmul: outputs per work-item along M (divides tile)
  int unroll = 1;           //!< unroll factor for the inner k loop of matmul and for reduction loops
  ReduceStrategy reduce = ReduceStrategy::group;  //!< row-reduction layout
  int partials = 64;        //!< full reductions: work-groups in the first pass (= scratch entries)

  //! Short stable label, e.g. "wg256.ept1.vec4" or "ts16.wpt4.u4".
  std::string label() const;
};

//! What kind of kernel one stage becomes.
enum class StageKind { pointwise, reduce_rows, reduce_full, matmul, scan, arg_reduce };

//! One kernel of the program: the node it produces and the nodes fused into it.
struct Stage {
  StageKind kind = StageKind::pointwise;
  int root = -1;       //!< node whose value the stage writes (to `out` or a scratch buffer)
  int anchor = -1;     //!< matmul stages: the matmul node (root is its fused epilogue); scan / arg_reduce stages: that node
  std::vector<int> reduce_axes;  //!< reduce stages: axes reduced (of the reduce input)
  Shape reduce_shape;            //!< reduce stages: shape of the reduced tensor
};

//! An op analysed once: its IR and how it splits into kernels; reused for every schedule.
struct Analysis {
  std::string op_name;
  Graph graph;
  std::vector<Stage> stages;   //!< in launch order; the last one writes `out`
  std::string unsupported;     //!< non-empty when the teacher cannot lower the op (says why)
  //! True when stages are valid.
  bool ok() const { return unsupported.empty(); }
  //! The stage kinds, e.g. "matmul+reduce_rows".
  std::string describe() const;
};

//! Imports and partitions the op; never throws.
Analysis analyze(const spec::OpSpec& spec);

//! A generated kernel program or why none could be generated.
struct Generated {
  std::string program;      //!< kforge kernel program text (target opencl)
  std::string unsupported;  //!< non-empty when no program was generated
  //! True when `program` is valid.
  bool ok() const { return unsupported.empty(); }
};

//! Emits the program for one schedule; schedules a stage cannot use are reported as unsupported.
Generated emit_program(const Analysis& analysis, const Schedule& schedule);

//! A set of distinct valid schedules for this op (the autotune and SFT variant space).
std::vector<Schedule> schedule_space(const Analysis& analysis);

//! analyze + emit_program.
Generated compile_op(const spec::OpSpec& spec, const Schedule& schedule);

}  // namespace kforge::codegen
