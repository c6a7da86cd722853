// The teacher compiler's tensor IR: an op's TorchScript graph reduced to a few node
// kinds (pointwise, reduce, matmul, view) with main-shape sizes and their launch
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
  std::string formula;  //!< launch expression of a size computed from others ("(x.size(1) + y.size(1))" for cat)

  //! "x.size(1)", the formula, or the literal value.
  std::string expr() const {
    if (!formula.empty()) return formula;
    return axis < 0 ? std::to_string(value) : input + ".size(" + std::to_string(axis) + ")";
  }
  //! True for a size known when the program is written (neither an input's size nor a formula).
  bool is_literal() const { return axis < 0 && formula.empty(); }
  //! A literal dimension of size `v`.
  static Dim literal(int64_t v) { return Dim{v, "", -1, ""}; }
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
  red_len,   //!< the number of elements each reduction of the enclosing region combines
  matmul,    //!< args[0] @ args[1] (rank 1, 2 or 3); bias added as a separate binary node
  view,      //!< args[0] with dimensions rearranged: out dim k is in dim src[k] (-1: new size-1 dim); `flip` dims reversed
  concat,    //!< args joined along axes[0] (cat); every arg has the shape of the result except along that axis
  scan,      //!< inclusive prefix `op` (sum) of args[0] along axes[0] (cumsum)
  arg_reduce,  //!< index (int64) of the first `op` ("argmax"/"argmin") of args[0] along axes[0]
  gather,    //!< args[0] (data) read where data dim d is out dim src[d], or the index args[1] (src[d] == -1)
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
};

//! The broadcast of two shapes (right-aligned); false if incompatible.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out);

}  // namespace kforge::codegen
