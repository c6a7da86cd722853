// Expression emission for the teacher compiler: turns a fused region of IR nodes into
// `const float vN = ...;` lines (scalar or floatN), one line per node, shared
// subexpressions computed once. Used by emit.cpp. Test: ctest -R codegen.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "worker/codegen/ir.h"

namespace kforge::codegen {

//! "1.5f", "1e-06f": a float literal OpenCL C accepts.
std::string float_literal(double value);

//! `a op b` for a reduction combiner ("sum" -> "a + b", "max" -> "fmax(a, b)").
std::string combine_code(const std::string& op, const std::string& a, const std::string& b);

//! Identity element of a reduction combiner ("0.0f", "-INFINITY", "INFINITY").
std::string reduce_init(const std::string& op);

//! Emits the lines computing one node's value for given coordinates.
class ExprEmitter {
 public:
  //! `vec` 1 emits float code; 4 or 8 emits floatN code.
  ExprEmitter(const Graph& graph, int vec, int* counter);

  //! Read of a buffer-backed node at coordinates (one per dim of the node).
  std::function<std::string(int id, const std::vector<std::string>& coords)> load;
  //! True for nodes read from a buffer (inputs, scratch) rather than computed.
  std::function<bool(int id)> is_leaf;
  //! True for nodes that go to the outer (per-row) scope instead of the loop body.
  std::function<bool(int id)> hoist;
  //! Called when a view or a concat is crossed (pointwise stages track contiguity).
  std::function<void()> on_view;
  //! The kernel's name for a size (flip and cat coordinates need it); unset outside pointwise stages.
  std::function<std::string(const Dim& dim)> dim;
  //! Nodes whose value already sits in a variable (reduction results, matmul accumulators).
  std::map<int, std::string> known;
  //! C expression for the number of elements each reduction combines (red_len nodes).
  std::string red_len = "len";

  //! The variable (or literal) holding node `id` at `coords`; emits lines as needed.
  std::string value(int id, const std::vector<std::string>& coords);
  //! The loop-body lines emitted so far, indented, and clears them (and the loop memo).
  std::string take_lines(const std::string& indent);
  //! The outer-scope lines emitted so far, indented, and clears them.
  std::string take_outer(const std::string& indent);

 private:
  const Graph& g_;
  int vec_;
  int* counter_;
  std::vector<std::string> lines_, outer_;
  std::map<std::string, std::string> memo_, outer_memo_;
  std::map<std::string, bool> is_bool_;

  std::string type(bool boolean) const;
  std::string as_float(const std::string& var) const;
  std::string as_cond(const std::string& var) const;
  std::string broadcast(const std::string& scalar) const;
  bool current_outer_ = false;
  std::string compute(int id, const std::vector<std::string>& coords, bool& boolean);
  std::string helper(const std::string& pattern);
  std::string fast_erf(const std::string& a);
  std::string fast_tanh(const std::string& a);
};

}  // namespace kforge::codegen
