// Internal to the teacher's emission (emit*.cpp): Kernel, the kernel under construction
// (parameters, launch line, body), the text helpers the stage emitters share, and
// ProgramEmitter, which turns an Analysis into one kernel per stage in OpenCL C or CUDA
// C++ (a Dialect). Each stage kind is emitted in its own file: emit_pointwise.cpp
// (pointwise, scan, arg_reduce), emit_reduce.cpp (row and full reductions),
// emit_matmul.cpp, emit_window.cpp (conv, pooling); Triton programs come from
// TritonEmitter (emit_triton.h).
// Test: ctest -R codegen.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "worker/codegen/codegen.h"
#include "worker/codegen/emit_expr.h"

namespace kforge::codegen::emit {

//! A kernel under construction: parameters with their launch arguments, then the body.
struct Kernel {
  Target target = Target::opencl;  //!< opencl or cuda (parameter and head spelling)
  std::string name;
  std::vector<std::string> params, args;            //!< parallel
  std::map<std::string, std::string> buffer_param;  //!< buffer name -> parameter name
  std::map<std::string, std::string> size_param;    //!< launch expression -> parameter name
  std::vector<std::string> size_params, size_args;
  std::string grid, block, attributes, body, scratch;
  std::string output_buffer;
  std::string output_type = "float";  //!< "long" for argmax / argmin

  //! The parameter name of an input buffer, declared on first use (reserved names renamed).
  std::string buffer(const std::string& name, const std::string& type = "float");
  //! An int parameter carrying a launch expression; literals stay literals.
  std::string size(const std::string& expr, const std::string& preferred);
  //! The kernel's name for a dimension (a literal, or a size parameter).
  std::string dim(const Dim& d);
  //! The launch line and the kernel text.
  std::string render() const;
};

//! `parts` joined with `sep`.
std::string join(const std::vector<std::string>& parts, const std::string& sep);
//! Re-indents emitted lines (each already ends in a newline) to `to`.
std::string reindent(const std::string& text, const std::string& to);
//! Adds `extra` in front of every line.
std::string indent_more(const std::string& text, const std::string& extra);
//! Lines of a work-group reduction of `var` over `wg` items: a local-memory tree (OpenCL),
//! warp shuffles and one shared slot per warp (CUDA).
std::string group_reduce(const std::string& var, const std::string& op, int wg, const std::string& indent,
                         const Dialect& d);
//! Offset of a coordinate tuple in a contiguous tensor of `shape`, e.g. "c1 + c0*x_size1";
//! `dim` names a dimension in the kernel (a literal or a size parameter).
std::string offset_expr(const Shape& shape, const std::vector<std::string>& coords,
                        const std::function<std::string(const Dim&)>& dim);
//! True when a leaf of `shape` read at coordinates `c` is read in the flat order of the
//! kernel's `of` shape walked by `coords` (the same coordinates, the same sizes): the kernel's
//! flat index then serves as the leaf's offset.
bool reads_in_order(const Shape& shape, const std::vector<std::string>& c, const std::vector<std::string>& coords,
                    const Shape& of);
//! The op's name as the start of a kernel name (an identifier in C and Python).
std::string kernel_prefix(const std::string& op_name);
//! The name of stage `stage_idx`'s kernel: "<op>_<role>[idx]" ("gelu_mul_pointwise"), or
//! "<role>[idx]_kernel" ("rows1_kernel") when the analysis asks for role names.
std::string kernel_name(const Analysis& analysis, size_t stage_idx);
//! "#pragma unroll N" for N > 1, else nothing.
std::string unroll_pragma(int unroll, const std::string& indent);
//! The node under a chain of views (a matmul operand), flipping `transposed` per view.
int strip_views(const Graph& graph, int id, bool& transposed);
//! Lines computing output coordinates c0..cR from the flat index `i` (indent 4).
std::string coordinate_lines(Kernel& k, const Shape& out_shape, const std::vector<std::string>& coords);

//! What a window kernel's loops call things: buffers, output coordinates, and sizes as
//! kernel parameters or literals (window_names fills it for one target).
struct WindowNames {
  std::string x, w;                     //!< buffer parameters (w empty for pooling)
  std::vector<std::string> coords;      //!< output coordinates c0..cR
  std::string channels;                 //!< x's channel count (convolutions)
  std::string cin_group, cout_group;    //!< convolutions: input / output channels per group
  std::vector<std::string> lead;        //!< pooling: sizes of x's dims before the spatial ones
  std::vector<std::string> in, kernel;  //!< x's spatial sizes, the window's sizes
};
//! The names of window node `win`'s sizes: `dim` names a Dim, `size` registers a launch expression.
WindowNames window_names(const Graph& g, const Node& win, const std::function<std::string(const Dim&)>& dim,
                         const std::function<std::string(const std::string&, const std::string&)>& size);
//! The lines that leave the window's value at the output coordinates in `acc`: loops over
//! the group's input channels and the window, in OpenCL C / CUDA C++ (skipping positions
//! outside x) or Triton (masking them; `mask` selects the program's valid outputs).
std::string window_loops(const Window& win, const WindowNames& names, Target target, const std::string& indent);

struct PatternMap;      // emit_reduce.cpp
struct RowLayout;       // emit_reduce.cpp
struct MatmulOperands;  // emit_matmul.cpp
struct RegisterBlock;   // emit_matmul.cpp

//! Where each stage's result lives (the output or a scratch buffer): shared by the C
//! and Triton emitters.
class StageBuffers {
 public:
  explicit StageBuffers(const Analysis& a);

 protected:
  const Analysis& a_;
  const Graph& g_;
  std::map<int, std::string> buffer_of_;  //!< stage root -> "out" or a scratch buffer "tmpN"
  std::vector<int> scratch_roots_;         //!< the roots kept in scratch, in tmp0, tmp1... order

  //! True for a node the stage producing `root` reads from a buffer (an input or an earlier stage).
  bool is_buffer_leaf(int id, int root) const;
  //! The buffer holding node `id`: the input's name or the stage's buffer.
  std::string buffer_name(int id) const;
  //! The reductions of this stage's region: those feeding its root without crossing a buffer.
  std::vector<int> region_reductions(const Stage& stage) const;
  //! The name of a scratch a stage's kernels share (`prefix`, or prefix_tmpN for a stage that
  //! writes scratch tmpN), so two stages' scratches never meet.
  std::string stage_scratch(const Stage& stage, const std::string& prefix) const;
};

//! Emits every stage of one Analysis for one Schedule in OpenCL C or CUDA C++.
class ProgramEmitter : public StageBuffers {
 public:
  ProgramEmitter(const Analysis& a, const Schedule& s, Target target);
  //! The whole program, or `unsupported` naming why a stage cannot use the schedule.
  Generated run();

 private:
  const Schedule& s_;
  Dialect d_;
  std::vector<std::string> scratch_;       // kforge-scratch lines
  bool stream_loads_ = false;              // row emitters: full-pattern loads as __ldcs (cuda)

  std::string offset(Kernel& k, const Shape& shape, const std::vector<std::string>& coords);
  Kernel kernel(const std::string& name, const std::string& output) const;
  ExprEmitter expr(int vec, int* counter) const { return ExprEmitter(g_, vec, counter, d_.target); }

  // emit_pointwise.cpp
  std::string pointwise(const Stage& stage, const std::string& name, std::string& err);
  std::string cuda_vector_body(const Stage& stage, Kernel& k, const std::string& n, const std::string& ind,
                               const std::vector<std::string>& coords, const std::string& element,
                               std::string& err);
  std::string scan(const Stage& stage, const std::string& name, std::string& err);
  std::string arg_reduce(const Stage& stage, const std::string& name, std::string& err);
  ExprEmitter element_emitter(const Stage& stage, Kernel& k, const std::vector<std::string>& coords, int vec,
                              int* counter, bool& need_coords, bool& contiguous);

  // emit_window.cpp
  std::string window(const Stage& stage, const std::string& name, std::string& err);

  // emit_reduce.cpp
  std::string reduce_rows(const Stage& stage, const std::string& name, std::string& err);
  std::string reduce_rows_split(const Stage& stage, const std::string& name, RowLayout& layout, Kernel& k,
                                PatternMap& patterns, ExprEmitter& e, const std::vector<int>& reduces,
                                std::string& err);
  bool row_layout(const Stage& stage, Kernel& k, RowLayout& layout, std::string& err);
  ExprEmitter row_emitter(int width, const Stage& stage, const RowLayout& layout, Kernel& k, PatternMap& patterns,
                          int* counter);
  std::string row_header(const RowLayout& layout, Kernel& k);
  std::string row_accumulators(const RowLayout& layout, const std::vector<int>& reduces, ExprEmitter& e,
                               ExprEmitter& ev, bool stream_last = false);
  std::string row_store(const Stage& stage, const RowLayout& layout, Kernel& k, PatternMap& patterns, ExprEmitter& e,
                        ExprEmitter& ev);
  std::string rows_in_registers(const Stage& stage, RowLayout layout, Kernel& k, PatternMap& patterns,
                                const std::vector<int>& reduces);
  std::string column_vectors(const Stage& stage, Kernel& k, PatternMap& patterns, const std::vector<int>& reduces,
                             const std::string& len, const std::string& inner, const std::string& groups,
                             std::string& err);
  std::string reduce_full(const Stage& stage, const std::string& name, std::string& err);
  Kernel full_partial_kernel(const Stage& stage, int reduce_id, const std::string& name, const std::string& partial,
                             int* counter, std::string& err);
  std::string full_partial_float4(const Stage& stage, const Node& red, Kernel& k1, const std::string& n,
                                  const std::vector<std::string>& coords, int* counter, std::string& err);
  Kernel full_final_kernel(const Stage& stage, int reduce_id, const std::string& name, const std::string& partial,
                           const std::string& attributes, int* counter);

  // emit_matmul.cpp
  std::string matmul(const Stage& stage, const std::string& name, std::string& err);
  MatmulOperands matmul_operands(const Node& mm, Kernel& k);
  std::string tiled_epilogue(const Stage& stage, Kernel& k, const std::string& M, const std::string& N,
                             std::string& out_idx, std::string& result, const std::string& acc = "acc[wr]");
  std::string matvec_rows(const Stage& stage, const std::string& name, std::string& err);
  std::string matmul_register_tiles(const Stage& stage, const std::string& name, std::string& err);
  std::string matmul_tensor_cores(const Stage& stage, const std::string& name, std::string& err);
  bool block_tile_kernel(const Stage& stage, const std::string& name, int bm, int bn, int threads, Kernel& k,
                         MatmulOperands& ops, std::string& err);
  std::string matmul_registers(const Stage& stage, const std::string& name, std::string& err);
  ExprEmitter register_epilogue(int width, const Stage& stage, Kernel& k, int* counter, std::string& err);
  std::string registers_plain_b(const Stage& stage, Kernel& k, const MatmulOperands& ops, const RegisterBlock& blk,
                                std::string& err);
  std::string registers_transposed_b(const Stage& stage, Kernel& k, const MatmulOperands& ops,
                                     const RegisterBlock& blk, std::string& err);
};

}  // namespace kforge::codegen::emit
