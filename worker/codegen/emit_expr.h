// Expression emission for the teacher compiler: turns a fused region of IR nodes into
// `const float vN = ...;` lines (scalar or floatN; OpenCL C or CUDA C++) or Triton block
// expressions `vN = ...`, one line per node, shared subexpressions computed once. Used by
// the stage emitters (emit_*.cpp, emit_triton*.cpp). Test: ctest -R codegen.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "worker/codegen/codegen.h"
#include "worker/codegen/ir.h"

namespace kforge::codegen {

//! How a C-like target spells what the stage emitters write: work-item ids, barriers,
//! shared memory, math functions (OpenCL C overloads `exp`; CUDA C++ has `expf`).
struct Dialect {
  Target target = Target::opencl;
  //! True for CUDA C++.
  bool cuda() const { return target == Target::cuda; }
  //! get_global_id(d) / (blockIdx.x * blockDim.x + threadIdx.x).
  std::string global_id(int dim) const;
  //! get_local_id(d) / threadIdx.x.
  std::string local_id(int dim) const;
  //! get_group_id(d) / blockIdx.x.
  std::string group_id(int dim) const;
  //! get_global_size(d) / (gridDim.x * blockDim.x).
  std::string global_size(int dim) const;
  //! A work-group barrier for local / shared memory.
  std::string barrier() const;
  //! "__local" / "__shared__".
  std::string shared() const;
  //! The kernel attribute fixing the work-group size (x * y work-items).
  std::string work_group_attribute(int x, int y) const;
  //! A float math function's name: "exp" stays "exp" in OpenCL and becomes "expf" in CUDA.
  std::string fn(const std::string& name) const;
  //! Positive or negative infinity as a float expression.
  std::string infinity(bool negative) const;
  //! An int clamped to [lo, hi].
  std::string clamp_int(const std::string& value, const std::string& lo, const std::string& hi) const;
};

//! "1.5f", "1e-06f": a float literal OpenCL C and CUDA accept ("1.5", "float('inf')" for triton).
std::string float_literal(double value, Target target = Target::opencl);

//! `a op b` for a reduction combiner ("sum" -> "a + b", "max" -> "fmax(a, b)").
std::string combine_code(const std::string& op, const std::string& a, const std::string& b,
                         Target target = Target::opencl);

//! Identity element of a reduction combiner ("0.0f", "-INFINITY", "INFINITY").
std::string reduce_init(const std::string& op, Target target = Target::opencl);

//! Emits the lines computing one node's value for given coordinates.
class ExprEmitter {
 public:
  //! `vec` 1 emits float code; 4 or 8 emits floatN code (OpenCL only). `target` picks the
  //! language: OpenCL C, CUDA C++ (scalar), or Triton block expressions.
  ExprEmitter(const Graph& graph, int vec, int* counter, Target target = Target::opencl);

  //! Read of a buffer-backed node at coordinates (one per dim of the node).
  std::function<std::string(int id, const std::vector<std::string>& coords)> load;
  //! True for nodes read from a buffer (inputs, scratch) rather than computed.
  std::function<bool(int id)> is_leaf;
  //! True for nodes that go to the outer (per-row) scope instead of the loop body.
  std::function<bool(int id)> hoist;
  //! Called when a view or a concat is crossed (pointwise stages track contiguity).
  std::function<void()> on_view;
  //! Called when a node's value depends on its own output coordinates (tril / triu): the
  //! stage must compute them. Unset outside stages that have them (pointwise, window).
  std::function<void()> on_coords;
  //! The kernel's name for a size (flip and cat coordinates need it); unset outside pointwise stages.
  std::function<std::string(const Dim& dim)> dim;
  //! Nodes whose value already sits in a variable (reduction results, matmul accumulators).
  std::map<int, std::string> known;
  //! C expression for the number of elements this stage's reductions combine (red_len nodes
  //! of a reduction in the stage; those of an earlier stage's are computed with `dim`).
  std::string red_len = "len";

  //! The variable (or literal) holding node `id` at `coords`; emits lines as needed.
  std::string value(int id, const std::vector<std::string>& coords);
  //! The loop-body lines emitted so far, indented, and clears them (and the loop memo unless
  //! `keep_memo`: a Triton row held in registers is read once for every pass over it).
  std::string take_lines(const std::string& indent, bool keep_memo = false);
  //! The outer-scope lines emitted so far, indented, and clears them.
  std::string take_outer(const std::string& indent);

 private:
  const Graph& g_;
  int vec_;
  int* counter_;
  Target target_;
  Dialect d_;
  std::vector<std::string> lines_, outer_;
  std::map<std::string, std::string> memo_, outer_memo_;
  std::map<std::string, bool> is_bool_;

  std::string type(bool boolean) const;
  std::string as_float(const std::string& var) const;
  std::string as_cond(const std::string& var) const;
  std::string broadcast(const std::string& scalar) const;
  bool current_outer_ = false;
  std::string compute(int id, const std::vector<std::string>& coords, bool& boolean);
  std::string remap(const Node& node, const std::vector<std::string>& coords);
  std::string unary_c(const Node& node, const std::string& a);
  std::string binary_c(const Node& node, const std::string& a, const std::string& b, bool& boolean);
  // emit_expr_triton.cpp
  std::string unary_triton(const Node& node, const std::string& a);
  std::string binary_triton(const Node& node, const std::string& a, const std::string& b, bool& boolean);
  std::string helper_value(const std::string& expr, const std::string& c_type = "");
  std::string outer_reciprocal(const std::string& b);
  std::string fast_erf(const std::string& a);
  std::string fast_tanh(const std::string& a);
};

}  // namespace kforge::codegen
