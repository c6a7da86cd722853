// The teacher compiler's tensor IR: an op's TorchScript graph reduced to a few node
// kinds (pointwise, reduce, matmul, window, view) with main-shape sizes and their launch
// expressions. Built by import_graph.cpp, split into stages by partition.cpp, emitted by
// emit*.cpp. Test: ctest -R codegen.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kforge::codegen {

//! One dimension: its size at the op's main shape and how a launch line spells it.
struct Dim {
  int64_t value = 1;  //!< size at the main shape
  std::string input;  //!< input it comes from ("" for a literal)
  int axis = -1;      //!< axis of that input; -1 for a literal or a formula
  std::string formula;  //!< launch expression of a size computed from others ("(x.size(1) + y.size(1))" for cat), parenthesised
  std::string name;     //!< kernel parameter name for a formula ("conv_size2"); "" names it size_sum

  //! "x.size(1)", the formula, or the literal value.
  std::string expr() const {
    if (!formula.empty()) return formula;
    return axis < 0 ? std::to_string(value) : input + ".size(" + std::to_string(axis) + ")";
  }
  //! True for a size known when the program is written (neither an input's size nor a formula).
  bool is_literal() const { return axis < 0 && formula.empty(); }
  //! A literal dimension of size `v`.
  static Dim literal(int64_t v) { return Dim{v, "", -1, "", ""}; }
  //! A size computed from others: `formula` (a launch expression, parenthesised here), `name` in kernels.
  static Dim computed(int64_t v, const std::string& formula, const std::string& name) {
    return Dim{v, "", -1, "(" + formula + ")", name};
  }
};

//! A shape with launch expressions per dimension.
using Shape = std::vector<Dim>;

//! "a.size(0)*a.size(1)" (the product; "1" for a scalar).
std::string numel_expr(const Shape& shape);
//! Product of the main-shape sizes.
int64_t numel_value(const Shape& shape);

//! Kinds of IR nodes.
enum class NodeKind {
  input,     //!< op input `input_index`
  constant,  //!< float scalar `scalar`
  unary,     //!< op(args[0]); clamp uses lo/hi
  binary,    //!< op(args[0], args[1]) with broadcasting
  where,     //!< args[0] ? args[1] : args[2]
  reduce,    //!< op in {sum, max, min} over `axes` of args[0]
  red_len,   //!< the number of elements reduction args[0] combines (a scalar; args[0] is not its operand)
  matmul,    //!< args[0] @ args[1] (rank 1, 2 or 3); bias added as a separate binary node
  view,      //!< args[0] with dimensions rearranged: out dim k is in dim src[k] (-1: new size-1 dim); `flip` dims reversed
  concat,    //!< args joined along axes[0] (cat); every arg has the shape of the result except along that axis
  scan,      //!< inclusive prefix `op` (sum, prod) of args[0] along axes[0] (cumsum, cumprod)
  arg_reduce,  //!< index (int64) of the first `op` ("argmax"/"argmin") of args[0] along axes[0]
  gather,    //!< args[0] (data) read where data dim d is out dim src[d], or the index args[1] (src[d] == -1)
  reshape,   //!< args[0]'s elements in row-major order with `shape` (same count); always read from args[0]'s buffer
  window,    //!< a sliding window over the trailing spatial dims of args[0]: convolution (weight args[1]) or pooling
};

//! A window node's parameters (docs/codegen.md "Window stages"), one entry per spatial dim.
struct Window {
  std::string op;  //!< "conv", "conv_transpose", "max_pool", "avg_pool"
  std::vector<int64_t> kernel;  //!< pooling window (convolutions read it from the weight's trailing dims)
  std::vector<int64_t> stride, padding, dilation;
  std::vector<int64_t> output_padding;  //!< conv_transpose only
  int64_t groups = 1;                   //!< convolutions: channel groups (depthwise: groups = channels)
  bool count_include_pad = true;        //!< avg_pool: padded zeros count in the divisor (torch's default)
  int64_t divisor = 0;                  //!< avg_pool: divisor_override, 0 for none
  //! Number of spatial dims (1, 2 or 3).
  int spatial() const { return static_cast<int>(stride.size()); }
  //! True for conv and conv_transpose (a weight operand).
  bool is_conv() const { return op == "conv" || op == "conv_transpose"; }
};

//! One IR node; its value is a float tensor of `shape`.
struct Node {
  NodeKind kind = NodeKind::constant;
  std::string op;          //!< unary/binary/reduce operator name ("relu", "add", "sum")
  std::vector<int> args;   //!< operand node ids
  double scalar = 0.0;     //!< constant value
  double lo = 0.0, hi = 0.0;  //!< clamp bounds (lo > hi means unbounded on that side, see has_lo/has_hi)
  bool has_lo = false, has_hi = false;
  int input_index = -1;    //!< input nodes
  std::vector<int> axes;   //!< reduce axes of args[0]
  std::vector<int> src;    //!< view mapping
  std::vector<int> flip;   //!< view: output dims read in reverse (torch.flip)
  std::vector<int> index_src;  //!< gather: index dim j is out dim index_src[j]
  std::string int_type;    //!< "int" / "long": an integer input (only gather indices read it) or an arg_reduce; "" for float
  Window window;           //!< window nodes
  Shape shape;             //!< result shape
};

//! A whole op as IR: nodes in topological order, inputs by index, one output.
struct Graph {
  std::vector<Node> nodes;
  std::vector<std::string> input_names;
  std::vector<Shape> input_shapes;
  int output = -1;

  //! Appends a node and returns its id.
  int add(Node node) {
    nodes.push_back(std::move(node));
    return static_cast<int>(nodes.size()) - 1;
  }
  //! Node ids that read `id`.
  std::vector<int> users(int id) const;
  //! The node whose buffer holds `id`'s elements: `id` itself, or what a reshape (chain) reinterprets.
  int storage(int id) const {
    while (nodes[id].kind == NodeKind::reshape) id = nodes[id].args[0];
    return id;
  }
};

//! The broadcast of two shapes (right-aligned); false if incompatible.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out);

//! The result shape of a window node over `x` (with `weight` for convolutions, else null):
//! its spatial sizes are formulas over x's and the weight's sizes. "" or why it cannot be.
std::string window_shape(const Window& win, const Shape& x, const Shape* weight, Shape& out);

//! The product of `dims` as one dim (the dim itself when only one is not 1), named `name`.
Dim product_dim(const Shape& dims, const std::string& name);

//! True for a view whose only effect is swapping its last two dims (x.transpose(-2, -1)).
bool swaps_last_two(const Node& node);

//! Output channels per group of a conv or conv_transpose window node at the main shapes
//! (weight [C_out, C_in/g, k...] or [C_in, C_out/g, k...]); 0 for pooling. The Triton
//! implicit GEMM tiles them (N), so few of them (depthwise) keep the direct kernel.
int64_t conv_out_channels_per_group(const Graph& g, const Node& node);
//! Input channels per group of the same (the reduction's channel count); 0 for pooling.
int64_t conv_in_channels_per_group(const Graph& g, const Node& node);
//! A transposed conv's dims whose outputs the Triton GEMM splits by phase: a stride > 1 and
//! no dilation (all false for a forward conv).
std::vector<bool> conv_phased_dims(const Window& win);
//! True when a Triton conv GEMM of conv or conv_transpose node `node` takes the taps-outer
//! form under Schedule::conv_taps_outer: no dim split by phase, at most 49 window taps at the
//! main shapes (a static loop over each).
bool conv_taps_outer_fits(const Graph& g, const Node& node);

}  // namespace kforge::codegen
