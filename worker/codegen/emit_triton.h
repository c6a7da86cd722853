// Internal to the teacher's emission: TritonEmitter turns an Analysis (the same IR and
// stages as the C targets) into a kforge `triton` program, a Python module whose
// forward(*inputs) allocates the output and scratch and launches one @triton.jit kernel
// per stage. Pointwise, scan, arg_reduce and window (conv, pooling): emit_triton.cpp; row and full reductions:
// emit_triton_reduce.cpp; matmul with its fused epilogue: emit_triton_matmul.cpp; convs as
// an implicit GEMM: emit_triton_conv.cpp.
// Test: ctest -R 'codegen_(lower|triton)'.
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "worker/codegen/emit_program.h"

namespace kforge::codegen::emit {

//! A @triton.jit kernel under construction and its launch in forward().
struct TritonKernel {
  std::string name;
  std::vector<std::string> params;  //!< parameter names, in order: buffers read, buffers written, sizes
  std::vector<std::string> args;    //!< forward's argument for each parameter
  size_t buffers_read = 0;          //!< how many params are buffers read (they come first)
  size_t buffers = 0;               //!< how many params are buffers (read, then written)
  std::map<std::string, std::string> buffer_param, size_param;  //!< forward name / size expression -> parameter
  std::vector<std::pair<std::string, std::string>> constexprs;  //!< NAME and its value in forward
  std::string grid;   //!< the launch grid, a Python tuple ("(triton.cdiv(n, 1024),)")
  int warps = 4;      //!< num_warps
  int stages = 0;     //!< num_stages (0: Triton's default)
  std::string body;   //!< the kernel's lines, indented by 4

  //! The parameter for a buffer of forward that the kernel reads (its name there: an input, tmpN).
  std::string buffer(const std::string& forward_name);
  //! The parameter for a buffer the kernel writes (out, tmpN, a partial), after those it reads.
  std::string output(const std::string& forward_name);
  //! An int parameter carrying a launch expression (in forward's names); literals stay literals.
  std::string size(const std::string& expr, const std::string& preferred);
  //! A tl.constexpr parameter NAME with its value in forward; returns NAME.
  std::string constant(const std::string& name, const std::string& value);
  //! The decorated function.
  std::string render() const;
  //! Its launch line in forward (indented by 4).
  std::string launch() const;
};

//! Emits every stage of one Analysis for one Schedule as a Triton module.
class TritonEmitter : public StageBuffers {
 public:
  TritonEmitter(const Analysis& a, const Schedule& s);
  //! The whole module, or `unsupported` naming why a stage cannot use the schedule.
  Generated run();

 private:
  const Schedule& s_;
  std::map<std::string, std::string> py_name_;  // op input name -> forward's parameter name
  std::vector<std::string> allocations_;        // forward lines allocating scratch
  std::vector<TritonKernel> kernels_;           // in launch order

  //! A kernel named `name` with the schedule's num_warps.
  TritonKernel kernel(const std::string& name) const;
  //! A size expression of the IR ("x.size(1)", a cat formula) in forward's parameter names.
  std::string py(const std::string& size_expr) const;
  //! The kernel's name for a dimension (a literal or a size parameter).
  std::string dim(TritonKernel& k, const Dim& d) const;
  //! forward's name for the buffer holding node `id`.
  std::string forward_buffer(int id) const;
  //! An expression emitter for Triton blocks that reads leaves from buffers.
  ExprEmitter expr(int* counter, int root) const;
  //! `tl.load(buf + idx, mask=mask, other=...)` for node `id` (a scalar load when it has one element),
  //! with `eviction_policy=evict` when given ("evict_first": a stream read once; "evict_last": a
  //! row a later pass of the same program reads again), as Inductor's reductions load.
  std::string load(TritonKernel& k, int id, const std::string& idx, const std::string& mask,
                   const std::string& evict = "");

  //! An emitter for an element-per-lane kernel (pointwise, window epilogues): operands read at
  //! `offs` when they have the output's shape, else at `coords` (setting `need_coords`).
  ExprEmitter element_expr(const Stage& stage, TritonKernel& k, const std::vector<std::string>& coords, int* counter,
                           bool& need_coords);
  //! BLOCK outputs per program of an element-per-lane kernel: sets the grid, returns the
  //! `offs` / `mask` lines (n: the kernel's element count).
  std::string element_head(TritonKernel& k, const Shape& out_shape, const std::string& n) const;
  //! Lines computing c0..cR from `offs` (indent 4).
  std::string coordinate_lines(TritonKernel& k, const Shape& out_shape) const;

  //! The kernel names of a last-dim line layout (scan, arg_reduce).
  struct LastDimLines {
    std::string rows, block;
  };
  //! ROWS lines per program in BLOCK chunks: the grid and the `rows` / `rmask` lines.
  LastDimLines last_dim_lines(TritonKernel& k, const Shape& outer, std::ostringstream& body) const;

  // emit_triton.cpp; each stage appends its kernels to kernels_ or sets `err`
  void pointwise(const Stage& stage, const std::string& name, std::string& err);
  void scan(const Stage& stage, const std::string& name, std::string& err);
  void arg_reduce(const Stage& stage, const std::string& name, std::string& err);
  void window(const Stage& stage, const std::string& name, std::string& err);
  std::string window_epilogue(const Stage& stage, TritonKernel& k, const std::vector<std::string>& coords,
                              std::string& result);
  // emit_triton_conv.cpp
  bool conv_as_gemm(const Node& node) const;
  void conv_gemm(const Stage& stage, const std::string& name, std::string& err);
  //! reduce_rows' split form: stores kernel `k`'s partial (red0 of one slice) and adds the
  //! final kernel `name`, which reduces the slices and applies the epilogue.
  void reduce_rows_split_final(const Stage& stage, const std::string& name, TritonKernel& k, std::ostringstream& body,
                               ExprEmitter& e, int reduce, const std::string& group_idx);
  //! A kernel (`name`_wt, launched before the conv) laying a transposed conv's weight
  //! [C_in, C_out/groups, window] out as a forward conv's [C_out, C_in/groups * window] in a
  //! scratch; returns the scratch's name in forward.
  std::string transposed_weight_kernel(const Stage& stage, const Node& node, const std::string& name);
  //! conv_gemm's reduction in the taps-outer form (Schedule::conv_taps_outer): a static loop
  //! per window dim, then per tap a loop over BLOCK_K input channels reading the weight laid
  //! out by tap_major_weight_kernel; the lines after `acc = tl.zeros(...)` up to the epilogue.
  std::string conv_taps_outer_loop(const Stage& stage, TritonKernel& k, const WindowNames& names,
                                   const std::vector<std::string>& pos, const std::string& x, const std::string& M,
                                   const std::string& cout_group, const std::string& name);
  //! A kernel (`name`_wt, launched before the conv) laying a conv's weight [C_out, C_in/groups,
  //! window] or a transposed conv's [C_in, C_out/groups, window] out as [window, C_in/groups,
  //! C_out] in a scratch; returns the scratch's name in forward.
  std::string tap_major_weight_kernel(const Stage& stage, const Node& node, const std::string& name);
  //! What both weight layouts share: kernel `name`_wt writing a per-call scratch of the
  //! weight's size, one BLOCK of elements per program. begin binds w, wt, n and taps (in that
  //! order: the kernel's parameters); the caller binds its own sizes, then end adds BLOCK, the
  //! grid and the body (offs, mask, the caller's `index_lines` loading `v`, the store) and
  //! returns the scratch's name in forward.
  struct WeightRelayout {
    TritonKernel k;
    std::string scratch, numel, w, wt, n, taps;
  };
  WeightRelayout begin_weight_relayout(const Stage& stage, const Node& node, const std::string& name);
  std::string end_weight_relayout(WeightRelayout& r, const std::string& index_lines);
  //! conv_gemm for a transposed conv with a stride > 1 (undilated) along some dim: one phase
  //! of the outputs per program along such dims (grid axis 2), so no tap is masked by stride.
  void conv_transpose_phased(const Stage& stage, TritonKernel& k, const WindowNames& names,
                             const std::vector<bool>& phased_dim, const std::string& x, const std::string& w,
                             const std::string& out);
  //! The conv tile's output coordinates, `mask` and offsets, the stage's epilogue and the store.
  std::string conv_gemm_epilogue(const Stage& stage, TritonKernel& k, const std::string& co,
                                 const std::vector<std::string>& pos, const std::string& mask,
                                 const std::string& out);
  // emit_triton_reduce.cpp
  void reduce_rows(const Stage& stage, const std::string& name, std::string& err);
  void reduce_full(const Stage& stage, const std::string& name, std::string& err);
  // emit_triton_matmul.cpp
  void matmul(const Stage& stage, const std::string& name, std::string& err);
};

}  // namespace kforge::codegen::emit
