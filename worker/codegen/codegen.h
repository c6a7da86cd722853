// Teacher compiler: lowers an op's TorchScript graph (aten ops) to a kernel program
// in the kforge format (docs/kernel-format.md) for explicit schedule parameters, in
// each target (opencl, cuda, triton) from the same IR and stages.
// Test: ctest -R codegen. Docs: docs/codegen.md.
#pragma once

#include <string>
#include <vector>

#include "worker/codegen/ir.h"
#include "spec/op_spec.h"

namespace kforge::codegen {

//! Kernel program targets the teacher can emit.
std::vector<std::string> supported_targets();

//! The kernel language of an emitted program (docs/kernel-format.md).
enum class Target {
  opencl,  //!< OpenCL C kernels + launch lines (PoCL, NVIDIA's OpenCL)
  cuda,    //!< CUDA C++ `__global__` kernels + the same launch lines (NVRTC)
  triton,  //!< a Python module: forward(*inputs) launching @triton.jit kernels
};

//! "opencl", "cuda", "triton".
std::string target_name(Target target);
//! Parses a target name; false when unknown.
bool parse_target(const std::string& name, Target& out);

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
  // Triton knobs (the C targets ignore them).
  int block = 1024;   //!< triton: elements per program (pointwise), chunk along a row (0: the whole row at once),
                      //!< inner outputs per program (reductions over another dim), elements per step (full reductions)
  int rows = 1;       //!< triton: rows per program (last-dim reductions, scans), reduced elements per step (other dims)
  int warps = 4;      //!< triton: num_warps
  int stages = 3;     //!< triton: num_stages (software pipelining of matmul loads)
  int block_m = 64, block_n = 64, block_k = 32;  //!< triton matmul tile
  int group_m = 8;    //!< triton matmul: rows of tiles per program group (L2 reuse swizzle)
  int window_gemm = 1;  //!< triton convs: 1 = implicit GEMM on block_m x block_n x block_k tl.dot tiles
                        //!< (when C_out / groups >= 8), 0 = BLOCK outputs per program, one window walk each
  //! triton matmuls: 1 = tl.dot with input_precision "tf32x3" (each fp32 product as three TF32
  //! products on tensor cores, a_hi*b_hi + a_hi*b_lo + a_lo*b_hi: close to fp32's error), 0 = "ieee"
  int dot_x3 = 0;
  //! triton matmuls: > 1 = split-K, the reduction cut into this many slices, each program's
  //! partial tile written to a scratch, then summed (and the epilogue applied) by a second
  //! kernel: for few output tiles over a long K (a matrix-vector product, 256x256 by K = 524288),
  //! where one program per tile would leave most of the GPU idle
  int split_k = 1;
  //! triton reductions over a dim other than the last: > 1 = that dim cut into this many
  //! slices (grid axis 1), partials to a scratch, a second kernel reducing them and applying
  //! the epilogue: for few outputs over a long reduction (amax over dim 0 of 4096 x 2048)
  int split_r = 1;
  //! opencl / cuda line kernels (scan, argmax / argmin) along the last dim: 1 = a work-group
  //! of work_group items per line, reading it in coalesced chunks and combining in local
  //! memory; 0 = a work-item per line (whose reads of a contiguous line are strided across
  //! the work-items)
  int line_group = 0;
  //! triton conv GEMMs (forward, and transposed ones not split by phase) with at most 49 window
  //! taps: 1 = taps-outer, a tl.static_range over the window and per tap a loop over blocks of
  //! block_k input channels (the tap's input positions and mask computed once per tap, not per
  //! reduction element), the weight first laid out [taps, C_in/groups, C_out]; 2 = the same
  //! but one pipelined loop over (tap, channel block) pairs, the tap's window coordinates
  //! taken apart from the loop index; 0 = one loop over the flattened C_in/groups x window
  //! reduction
  int conv_taps_outer = 0;
  //! opencl / cuda matmuls: > 0 = a 2-D register tile, each thread accumulating reg_m x reg_n
  //! outputs (multiples of 4) of a block_m x block_n block tile from block_k-deep slices of A and
  //! B staged k-major in shared memory (the SIMT SGEMM layout: float4 reads of both slices, an
  //! outer product per k); 0 = the tile / work_per_item form
  int reg_m = 0, reg_n = 0;
  //! cuda matmuls: > 0 = tensor-core tiles, each warp computing warp_m x warp_n (multiples of 16)
  //! of the block_m x block_n block tile with WMMA m16n16k8 TF32 products, three per fp32
  //! product (dot_x3 must be 1: the baselines run fp32 with TF32 off); 0 = CUDA cores
  int warp_m = 0, warp_n = 0;
  //! cuda row reductions along the last dim by a block (reduce group): > 0 = each thread keeps up
  //! to this many elements of its row in registers, read once from memory, and every pass over
  //! the row (softmax's max, sum and store) reads them there; rows longer than work_group x
  //! row_regs take the passes over memory (a runtime check in the kernel). 0 = every pass reads
  //! the row from memory
  int row_regs = 0;

  //! Short stable label, e.g. "wg256.ept1.vec4" or "ts16.wpt4.u4"; Triton knobs appended when not default.
  std::string label() const;
};

//! What kind of kernel one stage becomes.
enum class StageKind { pointwise, reduce_rows, reduce_full, matmul, scan, arg_reduce, window };

//! One kernel of the program: the node it produces and the nodes fused into it.
struct Stage {
  StageKind kind = StageKind::pointwise;
  int root = -1;       //!< node whose value the stage writes (to `out` or a scratch buffer)
  int anchor = -1;     //!< matmul / window stages: that node (root is its fused epilogue); scan / arg_reduce stages: that node
  std::vector<int> reduce_axes;  //!< reduce stages: axes reduced (of the reduce input)
  Shape reduce_shape;            //!< reduce stages: shape of the reduced tensor
};

//! An op analysed once: its IR and how it splits into kernels; reused for every schedule.
struct Analysis {
  std::string op_name;
  Graph graph;
  std::vector<Stage> stages;   //!< in launch order; the last one writes `out`
  //! The node whose stage writes `out`: the graph's output, or what a reshaped output reinterprets.
  int output_root = -1;
  std::string unsupported;     //!< non-empty when the teacher cannot lower the op (says why)
  //! Kernels named by role ("pointwise_kernel", "rows1_kernel") instead of after the op
  //! ("softmax_rows1"): the SFT data sets it, so a model never has to copy the op's name.
  bool role_kernel_names = false;
  //! True when stages are valid.
  bool ok() const { return unsupported.empty(); }
  //! The stage kinds, e.g. "matmul+reduce_rows".
  std::string describe() const;
};

//! Imports and partitions the op; never throws.
Analysis analyze(const spec::OpSpec& spec);

//! A generated kernel program or why none could be generated.
struct Generated {
  std::string program;      //!< kforge kernel program text in the requested target
  std::string unsupported;  //!< non-empty when no program was generated
  //! True when `program` is valid.
  bool ok() const { return unsupported.empty(); }
};

//! Emits the program for one schedule in `target`; schedules a stage cannot use are reported as unsupported.
Generated emit_program(const Analysis& analysis, const Schedule& schedule, Target target = Target::opencl);

//! A set of distinct valid schedules for this op and target (the autotune and SFT variant
//! space), the one expected fastest on the target's usual device first.
std::vector<Schedule> schedule_space(const Analysis& analysis, Target target = Target::opencl);

//! analyze + emit_program.
Generated compile_op(const spec::OpSpec& spec, const Schedule& schedule, Target target = Target::opencl);

}  // namespace kforge::codegen
