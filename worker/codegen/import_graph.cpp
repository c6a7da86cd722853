// TorchScript -> codegen IR: compiles the op's forward with libtorch, inlines it, and
// maps each aten node to IR nodes (composites such as softmax and layer_norm are
// decomposed here). The codegen library's only libtorch translation unit.
// Test: ctest -R codegen_lower.
#include "worker/codegen/import_graph.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/jit.h>

#include <map>
#include <set>
#include <stdexcept>

#include "worker/harness/reference.h"

namespace kforge::codegen {
namespace {

// Raised inside this file only; import_graph turns it into an `unsupported` reason.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a TorchScript value is at compile time: a tensor (IR node) or a constant.
struct Val {
  enum class Kind { tensor, number, boolean, none, text, ints, tensors } kind = Kind::none;
  int node = -1;
  double number = 0.0;
  bool is_int = false;
  bool from_size = false;  // an int read from a shape: fine for layer_norm's shape, not as data
  bool flag = false;
  std::string text;
  std::vector<int64_t> ints;
  std::vector<Dim> dims;  // ints: each as a size (x.size(i) keeps its launch expression), for view / reshape
  std::vector<int> tensors;
};

class Importer {
 public:
  explicit Importer(const spec::OpSpec& spec) : spec_(spec) {}

  Graph run(torch::jit::Graph& graph) {
    auto inputs = graph.inputs();
    if (inputs.size() != spec_.inputs.size())
      throw Unsupported("forward takes " + std::to_string(inputs.size()) + " inputs, the op declares " +
                        std::to_string(spec_.inputs.size()));
    for (size_t input_idx = 0; input_idx < inputs.size(); ++input_idx) {
      const auto& in = spec_.inputs[input_idx];
      const bool integer = in.dtype == spec::DType::int64 || in.dtype == spec::DType::int32;
      const bool boolean = in.dtype == spec::DType::boolean;
      if (in.dtype != spec::DType::float32 && !integer && !boolean)
        throw Unsupported("input '" + in.name + "' is " + spec::dtype_name(in.dtype) +
                          "; the teacher handles float32 and bool inputs (and int32/int64 gather indices) only");
      Node node;
      node.kind = NodeKind::input;
      if (integer) node.int_type = in.dtype == spec::DType::int64 ? "long" : "int";
      if (boolean) node.int_type = "unsigned char";  // torch's bool: one byte, 0 or 1
      node.input_index = static_cast<int>(input_idx);
      for (size_t axis = 0; axis < in.shape.size(); ++axis)
        node.shape.push_back(Dim{in.shape[axis], in.name, static_cast<int>(axis), "", ""});
      g_.input_names.push_back(in.name);
      g_.input_shapes.push_back(node.shape);
      Val v;
      v.kind = Val::Kind::tensor;
      v.node = g_.add(node);
      // A bool input (a mask) is data: every use reads it as 0.0 / 1.0 through one
      // conversion, a pointwise stage of its own (partition.cpp), so no other stage kind
      // ever reads a byte buffer.
      if (boolean) v.node = unary("bool_to_float", v.node);
      vals_[inputs[input_idx]] = v;
    }
    for (torch::jit::Node* node : graph.nodes()) visit(node);
    auto outputs = graph.outputs();
    if (outputs.size() != 1 || get(outputs[0]).kind != Val::Kind::tensor)
      throw Unsupported("forward must return exactly one tensor");
    g_.output = get(outputs[0]).node;
    return std::move(g_);
  }

 private:
  const spec::OpSpec& spec_;
  Graph g_;
  std::map<const torch::jit::Value*, Val> vals_;

  const Val& get(const torch::jit::Value* value) {
    auto it = vals_.find(value);
    if (it == vals_.end()) throw Unsupported("value %" + value->debugName() + " has no known definition");
    return it->second;
  }

  int constant(double value) {
    Node node;
    node.kind = NodeKind::constant;
    node.scalar = value;
    return g_.add(node);
  }

  // A tensor operand; numbers become scalar constants.
  int tensor(const torch::jit::Value* value) {
    const Val& v = get(value);
    if (v.kind == Val::Kind::tensor && !g_.nodes[v.node].int_type.empty()) {
      // An integer input, or an integer input unsqueezed for gather (its view's operand).
      const Node& n = g_.nodes[g_.nodes[v.node].kind == NodeKind::view ? g_.nodes[v.node].args[0] : v.node];
      if (n.kind != NodeKind::input)
        throw Unsupported("an argmax / argmin result used as data is not supported (the teacher computes floats)");
      throw Unsupported("input '" + g_.input_names[n.input_index] +
                        "' is an integer tensor; the teacher reads integer inputs only as gather / embedding / "
                        "index_select indices");
    }
    if (v.kind == Val::Kind::tensor) return v.node;
    if (v.kind == Val::Kind::number || v.kind == Val::Kind::boolean) {
      if (v.from_size) throw Unsupported("a tensor size used as data (x.size(i) in arithmetic) is not supported");
      return constant(v.kind == Val::Kind::boolean ? (v.flag ? 1.0 : 0.0) : v.number);
    }
    throw Unsupported("expected a tensor or number operand");
  }

  double number(const torch::jit::Value* value) {
    const Val& v = get(value);
    if (v.kind == Val::Kind::number) return v.number;
    if (v.kind == Val::Kind::boolean) return v.flag ? 1.0 : 0.0;
    throw Unsupported("expected a constant number");
  }

  bool is_none(const torch::jit::Value* value) { return get(value).kind == Val::Kind::none; }

  // An int read from a shape (x.size(1), x.size()[0], x.size(1) - 1): its value and launch expression.
  static Val size_value(const Dim& dim) {
    Val v;
    v.kind = Val::Kind::number;
    v.is_int = true;
    v.from_size = true;
    v.number = static_cast<double>(dim.value);
    v.dims = {dim};
    return v;
  }
  bool boolean(const torch::jit::Value* value) { return number(value) != 0.0; }

  const Shape& shape(int id) { return g_.nodes[id].shape; }

  int unary(const std::string& op, int a, double scalar = 0.0) {
    Node node;
    node.kind = NodeKind::unary;
    node.op = op;
    node.args = {a};
    node.scalar = scalar;
    node.shape = shape(a);
    return g_.add(node);
  }

  int binary(const std::string& op, int a, int b) {
    Node node;
    node.kind = NodeKind::binary;
    node.op = op;
    node.args = {a, b};
    if (!broadcast_shapes(shape(a), shape(b), node.shape)) throw Unsupported(op + ": shapes do not broadcast");
    return g_.add(node);
  }

  int where(int c, int a, int b) {
    Node node;
    node.kind = NodeKind::where;
    node.args = {c, a, b};
    Shape ab;
    if (!broadcast_shapes(shape(a), shape(b), ab) || !broadcast_shapes(shape(c), ab, node.shape))
      throw Unsupported("where: shapes do not broadcast");
    return g_.add(node);
  }

  // The number of elements reduction `r` combines (r: a reduce node, or a view of one).
  int red_len(int r) {
    while (g_.nodes[r].kind == NodeKind::view) r = g_.nodes[r].args[0];
    Node node;
    node.kind = NodeKind::red_len;
    node.args = {r};
    return g_.add(node);
  }

  std::vector<int> norm_axes(int a, const std::vector<int64_t>& dims) {
    int rank = static_cast<int>(shape(a).size());
    std::vector<int> axes;
    if (dims.empty()) {
      for (int axis = 0; axis < rank; ++axis) axes.push_back(axis);
      return axes;
    }
    for (auto d : dims) {
      int axis = static_cast<int>(d < 0 ? d + rank : d);
      if (axis < 0 || axis >= rank) throw Unsupported("reduction dim " + std::to_string(d) + " out of range");
      axes.push_back(axis);
    }
    std::sort(axes.begin(), axes.end());
    return axes;
  }

  // A contiguous reinterpretation of `a` (its elements in row-major order) with `to`.
  int reshape(int a, const Shape& to) {
    if (numel_value(to) != numel_value(shape(a))) throw Unsupported("reshape changes the number of elements");
    Node node;
    node.kind = NodeKind::reshape;
    node.args = {a};
    node.shape = to;
    return g_.add(node);
  }

  // view / reshape to a size list: its sizes are literals or sizes of tensors (x.size(0)),
  // and at most one -1, inferred from the element count.
  int reshape_to(int x, const Val& sizes) {
    if (sizes.kind != Val::Kind::ints || sizes.dims.size() != sizes.ints.size())
      throw Unsupported("view / reshape needs a list of sizes");
    Shape to = sizes.dims;
    int inferred = -1;
    int64_t known = 1;
    std::string known_expr;
    for (int axis = 0; axis < static_cast<int>(to.size()); ++axis) {
      if (sizes.ints[axis] == -1) {
        if (inferred >= 0) throw Unsupported("view / reshape with two -1 sizes");
        inferred = axis;
        continue;
      }
      known *= to[axis].value;
      if (!(to[axis].is_literal() && to[axis].value == 1))
        known_expr += (known_expr.empty() ? "" : " * ") + to[axis].expr();
    }
    const Shape from = shape(x);
    if (inferred >= 0) {
      if (known == 0 || numel_value(from) % known != 0) throw Unsupported("view / reshape: sizes do not divide");
      to[inferred] = known_expr.empty() ? product_dim(from, "view_size")
                                        : Dim::computed(numel_value(from) / known,
                                                        numel_expr(from) + " / (" + known_expr + ")", "view_size");
    }
    return reshape(x, to);
  }

  // The emitters reduce one dim or every dim. Several axes (not all) are regrouped: adjacent
  // ones become one merged dim of a reshape ([N, C, H, W] over {2, 3}: [N, C, H*W] over
  // {2}); scattered ones first move the kept dims to the front (a permuted view, copied
  // once), so that the reduced ones are adjacent at the end (batch_norm's {0, 2, 3}).
  bool regrouped(int a, const std::vector<int>& axes) {
    return axes.size() > 1 && axes.size() < shape(a).size();
  }

  static bool adjacent(const std::vector<int>& axes) {
    for (size_t idx = 1; idx < axes.size(); ++idx)
      if (axes[idx] != axes[idx - 1] + 1) return false;
    return true;
  }

  // `a` with the adjacent `axes` merged into one dim.
  int merge_run(int a, const std::vector<int>& axes) {
    const Shape s = shape(a);
    Shape merged(s.begin(), s.begin() + axes.front());
    merged.push_back(product_dim(Shape(s.begin() + axes.front(), s.begin() + axes.back() + 1), "merged_size"));
    merged.insert(merged.end(), s.begin() + axes.back() + 1, s.end());
    return reshape(a, merged);
  }

  // The dims of `a` not in `axes`, then `axes` (a permutation).
  std::vector<int> kept_first(int a, const std::vector<int>& axes) {
    std::vector<int> order;
    for (int axis = 0; axis < static_cast<int>(shape(a).size()); ++axis)
      if (std::find(axes.begin(), axes.end(), axis) == axes.end()) order.push_back(axis);
    order.insert(order.end(), axes.begin(), axes.end());
    return order;
  }

  // f(a, axes, keepdim) for a reduction whose result has the reduced shape, over regrouped
  // axes; a keepdim result gets its size-1 dims back where the reduced axes were.
  template <typename F>
  int over_axes(int a, const std::vector<int>& axes, bool keepdim, F f) {
    if (!regrouped(a, axes)) return f(a, axes, keepdim);
    const int rank = static_cast<int>(shape(a).size());
    int r = -1;
    if (adjacent(axes)) {
      r = f(merge_run(a, axes), std::vector<int>{axes.front()}, false);
    } else {
      std::vector<int> trailing;
      for (int axis = rank - static_cast<int>(axes.size()); axis < rank; ++axis) trailing.push_back(axis);
      r = over_axes(view(a, kept_first(a, axes)), trailing, false, f);
    }
    if (!keepdim) return r;  // the kept dims, in order
    std::vector<int> src;
    int kept = 0;
    for (int axis = 0; axis < rank; ++axis)
      src.push_back(std::find(axes.begin(), axes.end(), axis) != axes.end() ? -1 : kept++);
    return view(r, src);
  }

  int reduce(const std::string& op, int a, const std::vector<int>& axes, bool keepdim) {
    if (regrouped(a, axes))
      return over_axes(a, axes, keepdim,
                       [&](int v, const std::vector<int>& one, bool keep) { return reduce(op, v, one, keep); });
    Node node;
    node.kind = NodeKind::reduce;
    node.op = op;
    node.args = {a};
    node.axes = axes;
    const Shape in = shape(a);
    for (int axis = 0; axis < static_cast<int>(in.size()); ++axis) {
      bool reduced = std::find(axes.begin(), axes.end(), axis) != axes.end();
      if (!reduced) node.shape.push_back(in[axis]);
      else if (keepdim) node.shape.push_back(Dim::literal(1));
    }
    return g_.add(node);
  }

  int view(int a, const std::vector<int>& src) {
    Node node;
    node.kind = NodeKind::view;
    node.args = {a};
    node.src = src;
    for (int s : src) node.shape.push_back(s < 0 ? Dim::literal(1) : shape(a)[s]);
    return g_.add(node);
  }

  // torch.flip: an identity view that reads `axes` backwards.
  int flip(int a, const std::vector<int>& axes) {
    std::vector<int> src;
    for (int axis = 0; axis < static_cast<int>(shape(a).size()); ++axis) src.push_back(axis);
    int id = view(a, src);
    g_.nodes[id].flip = axes;
    return id;
  }

  // torch.cat along `dim`: the joined size is a formula over the parts' sizes.
  int concat(const std::vector<int>& parts, int64_t dim) {
    if (parts.empty()) throw Unsupported("cat of an empty list");
    const Shape first = shape(parts[0]);
    int rank = static_cast<int>(first.size());
    int axis = static_cast<int>(dim < 0 ? dim + rank : dim);
    if (axis < 0 || axis >= rank) throw Unsupported("cat dim " + std::to_string(dim) + " out of range");
    Node node;
    node.kind = NodeKind::concat;
    node.args = parts;
    node.axes = {axis};
    node.shape = first;
    Dim joined = first[axis];
    std::string formula = first[axis].expr();
    for (size_t part = 1; part < parts.size(); ++part) {
      const Shape s = shape(parts[part]);
      if (static_cast<int>(s.size()) != rank) throw Unsupported("cat of tensors of different ranks");
      for (int other = 0; other < rank; ++other)
        if (other != axis && s[other].value != first[other].value)
          throw Unsupported("cat: sizes differ outside the cat dim (no broadcasting)");
      joined.value += s[axis].value;
      formula += " + " + s[axis].expr();
    }
    if (parts.size() > 1) joined = Dim{joined.value, "", -1, "(" + formula + ")", ""};
    node.shape[axis] = joined;
    return g_.add(node);
  }

  // An integer input used as indices (computed indices are not supported).
  bool is_int_input(const torch::jit::Value* value) {
    const Val& v = get(value);
    return v.kind == Val::Kind::tensor && g_.nodes[v.node].kind == NodeKind::input &&
           !g_.nodes[v.node].int_type.empty();
  }

  // An integer input read as indices, or that input unsqueezed (`inserted`: the new size-1
  // dims of the index, whose coordinate the input does not read).
  int index_tensor(const torch::jit::Value* value, std::vector<int>* inserted = nullptr) {
    const Val& v = get(value);
    if (v.kind == Val::Kind::tensor && inserted && g_.nodes[v.node].kind == NodeKind::view &&
        !g_.nodes[v.node].int_type.empty()) {
      const Node& view_node = g_.nodes[v.node];
      for (size_t axis = 0; axis < view_node.src.size(); ++axis)
        if (view_node.src[axis] < 0) inserted->push_back(static_cast<int>(axis));
      return view_node.args[0];
    }
    if (v.kind != Val::Kind::tensor || g_.nodes[v.node].kind != NodeKind::input || g_.nodes[v.node].int_type.empty())
      throw Unsupported("indices must be an int32/int64 input of the op (computed indices are not supported)");
    return v.node;
  }

  // out[c] = data[c with dim `axis` replaced by index[c restricted to index_src]].
  int gather(int data, int index, const std::vector<int>& data_src, const std::vector<int>& index_src,
             const Shape& out_shape) {
    Node node;
    node.kind = NodeKind::gather;
    node.args = {data, index};
    node.src = data_src;
    node.index_src = index_src;
    node.shape = out_shape;
    return g_.add(node);
  }

  int axis_of(int a, int64_t dim) {
    int rank = static_cast<int>(shape(a).size());
    int axis = static_cast<int>(dim < 0 ? dim + rank : dim);
    if (axis < 0 || axis >= rank) throw Unsupported("dim " + std::to_string(dim) + " out of range");
    return axis;
  }

  int transpose(int a, int64_t d0, int64_t d1) {
    int rank = static_cast<int>(shape(a).size());
    if (d0 < 0) d0 += rank;
    if (d1 < 0) d1 += rank;
    std::vector<int> src;
    for (int axis = 0; axis < rank; ++axis) src.push_back(axis);
    std::swap(src.at(d0), src.at(d1));
    return view(a, src);
  }

  // A matmul over several batch dims (attention's [B, H, S, D]) as a 3-d one over their
  // product: each operand reshaped to [batch, rows, cols] (a swap of the last two dims is
  // kept as a transposed read of the reshaped base, not a copy), the result reshaped back.
  int batched_matmul(int a, int b) {
    const Shape sa = shape(a), sb = shape(b);
    const size_t rank = sa.size();
    for (size_t axis = 0; axis + 2 < rank; ++axis)
      if (sa[axis].value != sb[axis].value)
        throw Unsupported("matmul with broadcast batch dims (rank " + std::to_string(rank) + ") is not supported");
    const Dim batch = product_dim(Shape(sa.begin(), sa.end() - 2), "batch");
    auto flat = [&](int x) {
      if (!swaps_last_two(g_.nodes[x])) {
        const Shape& sx = shape(x);
        return reshape(x, {batch, sx[rank - 2], sx[rank - 1]});
      }
      const int base = g_.nodes[x].args[0];
      const Shape& sbase = shape(base);
      return transpose(reshape(base, {batch, sbase[rank - 2], sbase[rank - 1]}), 1, 2);
    };
    int product = matmul(flat(a), flat(b));
    Shape to(sa.begin(), sa.end() - 2);
    to.push_back(sa[rank - 2]);
    to.push_back(sb[rank - 1]);
    return reshape(product, to);
  }

  int matmul(int a, int b) {
    const Shape &sa = shape(a), &sb = shape(b);
    if (sa.size() > 3 && sa.size() == sb.size()) return batched_matmul(a, b);
    if (sa.size() > 3 && sb.size() == 2) {
      // [..., M, K] @ [K, N] ("bijl,lk->bijk"): one 2-d matmul over the leading dims' rows.
      // Copies of the shapes: adding nodes may move the node vector they live in.
      const Shape a_shape = sa, b_shape = sb;
      const Dim rows = product_dim(Shape(a_shape.begin(), a_shape.end() - 1), "rows");
      Shape to(a_shape.begin(), a_shape.end() - 1);
      to.push_back(b_shape[1]);
      return reshape(matmul(reshape(a, {rows, a_shape.back()}), b), to);
    }
    Node node;
    node.kind = NodeKind::matmul;
    node.args = {a, b};
    if (sa.size() == 2 && sb.size() == 2) {
      node.shape = {sa[0], sb[1]};
    } else if (sa.size() == 2 && sb.size() == 1) {
      node.shape = {sa[0]};
    } else if (sa.size() == 3 && sb.size() == 3) {
      node.shape = {sa[0], sa[1], sb[2]};
    } else if (sa.size() == 3 && sb.size() == 2) {
      node.shape = {sa[0], sa[1], sb[1]};
    } else {
      throw Unsupported("matmul of rank " + std::to_string(sa.size()) + " by rank " + std::to_string(sb.size()));
    }
    return g_.add(node);
  }

  // mean over axes: sum / number of elements combined.
  int mean(int a, const std::vector<int>& axes, bool keepdim) {
    int s = reduce("sum", a, axes, keepdim);
    return binary("div", s, red_len(s));
  }

  int variance(int a, const std::vector<int>& axes, bool unbiased, bool keepdim) {
    if (regrouped(a, axes))
      return over_axes(a, axes, keepdim,
                       [&](int v, const std::vector<int>& one, bool keep) { return variance(v, one, unbiased, keep); });
    int m = mean(a, axes, true);
    int d = binary("sub", a, m);
    int s = reduce("sum", binary("mul", d, d), axes, keepdim);
    int n = red_len(s);
    return binary("div", s, unbiased ? binary("sub", n, constant(1.0)) : n);
  }

  void set(const torch::jit::Value* out, int node) {
    Val v;
    v.kind = Val::Kind::tensor;
    v.node = node;
    vals_[out] = v;
  }

  std::vector<int64_t> int_list(const torch::jit::Value* value) {
    const Val& v = get(value);
    if (v.kind == Val::Kind::ints) return v.ints;
    if (v.kind == Val::Kind::number && v.is_int) return {static_cast<int64_t>(v.number)};
    if (v.kind == Val::Kind::none) return {};
    throw Unsupported("expected a list of ints");
  }

  int clamp(int x, bool has_lo, double lo, bool has_hi, double hi) {
    Node node;
    node.kind = NodeKind::unary;
    node.op = "clamp";
    node.args = {x};
    node.shape = shape(x);
    node.has_lo = has_lo;
    node.lo = lo;
    node.has_hi = has_hi;
    node.hi = hi;
    return g_.add(node);
  }

  // A scalar argument with its TorchScript default when absent.
  double number_or(const torch::jit::Node* node, size_t idx, double fallback) {
    auto in = node->inputs();
    return idx < in.size() && !is_none(in[idx]) ? number(in[idx]) : fallback;
  }

  // x > 0 ? scale * x : alpha * scale * expm1(input_scale * x) (elu, selu, celu).
  int elu(int x, double alpha, double scale, double input_scale) {
    int positive = scale == 1.0 ? x : binary("mul", x, constant(scale));
    int negative = binary("mul", unary("expm1", binary("mul", x, constant(input_scale))), constant(alpha * scale));
    return where(binary("gt", x, constant(0.0)), positive, negative);
  }

  // softplus(x) = log1p(exp(beta x)) / beta, and x itself past the threshold (torch's rule).
  int softplus(int x, double beta, double threshold) {
    int bx = beta == 1.0 ? x : binary("mul", x, constant(beta));
    int soft = unary("log1p", unary("exp", bx));
    if (beta != 1.0) soft = binary("div", soft, constant(beta));
    return where(binary("gt", bx, constant(threshold)), x, soft);
  }

  // Per-channel weight/bias [C] of a [N, C, ...] input as [C, 1, ...] so that it broadcasts.
  int per_channel(int v, int rank) {
    if (shape(v).size() != 1) throw Unsupported("a per-channel weight / bias must be 1-d");
    std::vector<int> src = {0};
    src.resize(rank - 1, -1);
    return view(v, src);
  }

  // (x - mean) / sqrt(biased var + eps) over `axes` (layer, batch, instance and group
  // norms); a run of axes is normalised over one merged dim and reshaped back.
  int normalized(int x, const std::vector<int>& axes, double eps) {
    if (regrouped(x, axes)) {
      if (adjacent(axes)) {
        const Shape back = shape(x);  // a copy: the nodes added below may move the node vector
        return reshape(normalized(merge_run(x, axes), {axes.front()}, eps), back);
      }
      // Normalised in the permuted order, then read back through the inverse permutation.
      const std::vector<int> order = kept_first(x, axes);
      const int rank = static_cast<int>(order.size());
      std::vector<int> trailing, inverse(rank);
      for (int axis = rank - static_cast<int>(axes.size()); axis < rank; ++axis) trailing.push_back(axis);
      for (int pos = 0; pos < rank; ++pos) inverse[order[pos]] = pos;
      return view(normalized(view(x, order), trailing, eps), inverse);
    }
    int d = binary("sub", x, mean(x, axes, true));
    int s = reduce("sum", binary("mul", d, d), axes, true);
    int v = binary("div", s, red_len(s));
    return binary("mul", d, unary("rsqrt", binary("add", v, constant(eps))));
  }

  // normalized() over `axes`, then weight and bias per channel (batch_norm with batch
  // statistics, instance_norm, group_norm).
  int channel_norm(int x, const std::vector<int>& axes, const torch::jit::Value* weight,
                   const torch::jit::Value* bias, double eps) {
    int rank = static_cast<int>(shape(x).size());
    if (rank < 2) throw Unsupported("a batch / instance / group norm needs an [N, C, ...] input");
    return affine(normalized(x, axes, eps), weight, bias, rank);
  }

  int affine(int y, const torch::jit::Value* weight, const torch::jit::Value* bias, int rank) {
    if (!is_none(weight)) y = binary("mul", y, per_channel(tensor(weight), rank));
    if (!is_none(bias)) y = binary("add", y, per_channel(tensor(bias), rank));
    return y;
  }

  // group_norm: [N, C, ...] as [N, G, C / G * spatial] (a contiguous reshape: each group's
  // elements are adjacent), normalised along the last dim, reshaped back, then the
  // per-channel affine.
  int group_norm(int x, int64_t groups, const torch::jit::Value* weight, const torch::jit::Value* bias, double eps) {
    const Shape s = shape(x);
    if (s.size() < 2) throw Unsupported("group_norm needs an [N, C, ...] input");
    if (groups < 1 || s[1].value % groups != 0) throw Unsupported("group_norm: channels not divisible by groups");
    Shape spatial(s.begin() + 2, s.end());
    Dim len;
    if (groups == s[1].value) {
      len = product_dim(spatial, "group_len");
    } else {
      std::string channels = groups == 1 ? s[1].expr() : s[1].expr() + " / " + std::to_string(groups);
      std::string rest = numel_expr(spatial);
      len = Dim::computed(s[1].value / groups * numel_value(spatial), rest == "1" ? channels : channels + " * " + rest,
                          "group_len");
    }
    int grouped = reshape(x, {s[0], Dim::literal(groups), len});
    int y = reshape(normalized(grouped, {2}, eps), s);
    return affine(y, weight, bias, static_cast<int>(s.size()));
  }

  // An int-list argument with one value per spatial dim (one value repeats; none or an
  // empty list: `fallback`).
  std::vector<int64_t> per_dim(const torch::jit::Value* value, int spatial, const std::vector<int64_t>& fallback) {
    auto list = get(value).kind == Val::Kind::none ? std::vector<int64_t>{} : int_list(value);
    if (list.empty()) return fallback;
    if (list.size() == 1) return std::vector<int64_t>(spatial, list[0]);
    if (static_cast<int>(list.size()) != spatial)
      throw Unsupported("a window argument has " + std::to_string(list.size()) + " values for " +
                        std::to_string(spatial) + " spatial dims");
    return list;
  }

  int window(const Window& win, int x, int weight) {
    Node node;
    node.kind = NodeKind::window;
    node.args = weight < 0 ? std::vector<int>{x} : std::vector<int>{x, weight};
    node.window = win;
    std::string why = window_shape(win, shape(x), weight < 0 ? nullptr : &shape(weight), node.shape);
    if (!why.empty()) throw Unsupported(win.op + ": " + why);
    return g_.add(node);
  }

  bool visit_window(const std::string& kind, torch::jit::Node* node);
  bool visit_composite(const std::string& kind, torch::jit::Node* node);
  void visit(torch::jit::Node* node);
  void visit_constant(torch::jit::Node* node);
};

// Activations, norms and fills that KernelBench problems use, as compositions of the IR's
// pointwise and reduce nodes (no new node kinds, so every target emits them). False when
// `kind` is not one of them.
bool Importer::visit_composite(const std::string& kind, torch::jit::Node* node) {
  auto in = node->inputs();
  auto out = node->outputs().size() == 1 ? node->output() : nullptr;
  auto x = [&] { return tensor(in.at(0)); };
  auto done = [&](int id) {
    set(out, id);
    return true;
  };
  if (kind == "aten::elu") return done(elu(x(), number_or(node, 1, 1.0), number_or(node, 2, 1.0),
                                               number_or(node, 3, 1.0)));
  if (kind == "aten::selu") return done(elu(x(), 1.6732632423543772848170429916717,
                                                1.0507009873554804934193349852946, 1.0));
  if (kind == "aten::celu") {
    double alpha = number_or(node, 1, 1.0);
    return done(elu(x(), alpha, 1.0, 1.0 / alpha));
  }
  if (kind == "aten::hardtanh") return done(clamp(x(), true, number_or(node, 1, -1.0), true,
                                                      number_or(node, 2, 1.0)));
  if (kind == "aten::relu6") return done(clamp(x(), true, 0.0, true, 6.0));
  if (kind == "aten::hardsigmoid" || kind == "aten::hardswish") {
    int v = x();
    // relu6(x + 3) / 6
    int hs = binary("div", clamp(binary("add", v, constant(3.0)), true, 0.0, true, 6.0), constant(6.0));
    return done(kind == "aten::hardsigmoid" ? hs : binary("mul", v, hs));
  }
  if (kind == "aten::softplus") return done(softplus(x(), number_or(node, 1, 1.0), number_or(node, 2, 20.0)));
  if (kind == "aten::mish") {
    int v = x();
    return done(binary("mul", v, unary("tanh", softplus(v, 1.0, 20.0))));
  }
  if (kind == "aten::log_sigmoid") {
    int v = x();  // -softplus(-x)
    return done(unary("neg", softplus(unary("neg", v), 1.0, 20.0)));
  }
  if (kind == "aten::hardshrink" || kind == "aten::softshrink") {
    int v = x();
    double lambd = number_or(node, 1, 0.5);
    int zero = constant(0.0);
    if (kind == "aten::hardshrink") return done(where(binary("gt", unary("abs", v), constant(lambd)), v, zero));
    int below = where(binary("lt", v, constant(-lambd)), binary("add", v, constant(lambd)), zero);
    return done(where(binary("gt", v, constant(lambd)), binary("sub", v, constant(lambd)), below));
  }
  if (kind == "aten::zeros_like" || kind == "aten::ones_like" || kind == "aten::full_like") {
    // The value at every element of x's shape: where(x == x, c, c) (NaN-safe: both arms are c).
    for (size_t idx = kind == "aten::full_like" ? 2 : 1; idx < in.size(); ++idx)
      if (!is_none(in[idx]) && get(in[idx]).kind != Val::Kind::boolean)
        throw Unsupported(kind.substr(6) + " with a dtype, layout, device or memory format is not supported");
    double value = kind == "aten::zeros_like" ? 0.0 : kind == "aten::ones_like" ? 1.0 : number(in.at(1));
    int v = x();
    int c = constant(value);
    return done(where(binary("eq", v, v), c, c));
  }
  if (kind == "aten::batch_norm" || kind == "aten::instance_norm") {
    // batch_norm(x, w, b, running_mean, running_var, training, momentum, eps, cudnn);
    // instance_norm(x, w, b, running_mean, running_var, use_input_stats, momentum, eps, cudnn).
    bool batch = kind == "aten::batch_norm";
    if (!boolean(in.at(5)))
      throw Unsupported(kind.substr(6) + " with running statistics (eval mode) is not supported");
    int v = x();
    std::vector<int> axes;
    for (int axis = batch ? 0 : 2; axis < static_cast<int>(shape(v).size()); ++axis)
      if (axis != 1) axes.push_back(axis);
    return done(channel_norm(v, axes, in.at(1), in.at(2), number(in.at(7))));
  }
  if (kind == "aten::max" || kind == "aten::min") {
    std::string op = kind.substr(6);
    int v = x();
    if (in.size() == 1) return done(reduce(op, v, norm_axes(v, {}), false));
    if (in.size() == 2) return done(binary(op == "max" ? "maximum" : "minimum", v, tensor(in.at(1))));
    // max.dim -> (values, indices)
    int axis = axis_of(v, static_cast<int64_t>(number(in.at(1))));
    bool keepdim = in.size() > 2 && boolean(in.at(2));
    set(node->outputs()[0], reduce(op, v, {axis}, keepdim));
    if (!node->outputs()[1]->hasUses()) return true;  // an unread arg_reduce would be a stage of its own
    Node indices;
    indices.kind = NodeKind::arg_reduce;
    indices.op = "arg" + op;
    indices.args = {v};
    indices.axes = {axis};
    indices.shape = shape(vals_[node->outputs()[0]].node);
    indices.int_type = "long";
    set(node->outputs()[1], g_.add(indices));
    return true;
  }
  return false;
}

// Convolutions, pooling and group_norm (window nodes and contiguous reshapes). False when
// `kind` is not one of them.
bool Importer::visit_window(const std::string& kind, torch::jit::Node* node) {
  auto in = node->inputs();
  const std::string name = kind.substr(kind.find("::") + 2);
  auto done = [&](int id) {
    set(node->output(), id);
    return true;
  };
  if (kind == "aten::group_norm")  // (x, num_groups, weight, bias, eps, cudnn_enabled)
    return done(group_norm(tensor(in.at(0)), static_cast<int64_t>(number(in.at(1))), in.at(2), in.at(3),
                           number(in.at(4))));
  static const std::set<std::string> kConvs = {"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                                               "conv_transpose3d", "convolution", "_convolution"};
  if (kind.rfind("aten::", 0) == 0 && kConvs.count(name)) {
    // conv{1,2,3}d(x, w, b, stride, padding, dilation, groups); conv_transpose{1,2,3}d(x, w, b,
    // stride, padding, output_padding, groups, dilation); [_]convolution(x, w, b, stride,
    // padding, dilation, transposed, output_padding, groups, ...).
    int x = tensor(in.at(0)), w = tensor(in.at(1));
    const int spatial = static_cast<int>(shape(w).size()) - 2;
    if (spatial < 1 || spatial > 3) throw Unsupported(name + " with a weight of rank " + std::to_string(spatial + 2));
    const bool general = name.find("convolution") != std::string::npos;
    Window win;
    win.op = (general ? boolean(in.at(6)) : name.find("transpose") != std::string::npos) ? "conv_transpose" : "conv";
    const std::vector<int64_t> zeros(spatial, 0), ones(spatial, 1);
    win.stride = per_dim(in.at(3), spatial, ones);
    const size_t dilation_at = general ? 5 : win.op == "conv" ? 5 : 7;
    win.dilation = per_dim(in.at(dilation_at), spatial, ones);
    if (get(in.at(4)).kind == Val::Kind::text) {
      // padding="valid" is none; "same" keeps the size (stride 1), symmetric only.
      win.padding = zeros;
      if (get(in.at(4)).text == "same")
        for (int sd = 0; sd < spatial; ++sd) {
          int64_t total = win.dilation[sd] * (shape(w)[2 + sd].value - 1);
          if (total % 2 != 0) throw Unsupported(name + " with padding='same' and asymmetric padding is not supported");
          win.padding[sd] = total / 2;
        }
    } else {
      win.padding = per_dim(in.at(4), spatial, zeros);
    }
    if (win.op == "conv_transpose") win.output_padding = per_dim(in.at(general ? 7 : 5), spatial, zeros);
    win.groups = static_cast<int64_t>(number(in.at(general ? 8 : 6)));
    int y = window(win, x, w);
    if (!is_none(in.at(2))) y = binary("add", y, per_channel(tensor(in.at(2)), spatial + 2));
    return done(y);
  }
  static const std::set<std::string> kPools = {"max_pool1d", "max_pool2d", "max_pool3d",
                                               "avg_pool1d", "avg_pool2d", "avg_pool3d"};
  if (kind.rfind("aten::", 0) == 0 && kPools.count(name)) {
    // max_poolNd(x, kernel, stride, padding, dilation, ceil_mode); avg_poolNd(x, kernel,
    // stride, padding, ceil_mode, count_include_pad[, divisor_override]).
    const int spatial = name[name.size() - 2] - '0';
    const bool max = name.rfind("max", 0) == 0;
    Window win;
    win.op = max ? "max_pool" : "avg_pool";
    win.kernel = per_dim(in.at(1), spatial, {});
    if (win.kernel.empty()) throw Unsupported(name + " without a kernel size");
    win.stride = per_dim(in.at(2), spatial, win.kernel);
    win.padding = per_dim(in.at(3), spatial, std::vector<int64_t>(spatial, 0));
    win.dilation = max ? per_dim(in.at(4), spatial, std::vector<int64_t>(spatial, 1)) : std::vector<int64_t>(spatial, 1);
    if (boolean(in.at(max ? 5 : 4))) throw Unsupported(name + " with ceil_mode=True is not supported");
    if (!max) {
      win.count_include_pad = in.size() <= 5 || boolean(in.at(5));
      if (in.size() > 6 && !is_none(in.at(6))) win.divisor = static_cast<int64_t>(number(in.at(6)));
    }
    return done(window(win, tensor(in.at(0)), -1));
  }
  if (name == "adaptive_avg_pool1d" || name == "adaptive_avg_pool2d" || name == "adaptive_avg_pool3d") {
    // Global average pooling (every output size 1): a mean over the spatial dims.
    const int spatial = name[name.size() - 2] - '0';
    for (int64_t size : per_dim(in.at(1), spatial, {}))
      if (size != 1) throw Unsupported(name + " to an output size other than 1 is not supported");
    int x = tensor(in.at(0));
    const int rank = static_cast<int>(shape(x).size());
    std::vector<int> axes;
    for (int axis = rank - spatial; axis < rank; ++axis) axes.push_back(axis);
    return done(mean(x, axes, true));
  }
  return false;
}

void Importer::visit_constant(torch::jit::Node* node) {
  auto ivalue = torch::jit::toIValue(node->output());
  Val v;
  if (!ivalue || ivalue->isNone()) {
    v.kind = Val::Kind::none;
  } else if (ivalue->isInt()) {
    v.kind = Val::Kind::number;
    v.number = static_cast<double>(ivalue->toInt());
    v.is_int = true;
  } else if (ivalue->isDouble()) {
    v.kind = Val::Kind::number;
    v.number = ivalue->toDouble();
  } else if (ivalue->isBool()) {
    v.kind = Val::Kind::boolean;
    v.flag = ivalue->toBool();
  } else if (ivalue->isString()) {
    v.kind = Val::Kind::text;
    v.text = ivalue->toStringRef();
  } else if (ivalue->isIntList()) {
    v.kind = Val::Kind::ints;
    v.ints = ivalue->toIntVector();
  } else if (ivalue->isDevice() || ivalue->isTensor()) {
    throw Unsupported("tensor constants in the source are not supported");
  } else {
    v.kind = Val::Kind::none;  // dtypes, layouts, devices: only default (None-like) uses are accepted
  }
  vals_[node->output()] = v;
}

void Importer::visit(torch::jit::Node* node) {
  using torch::jit::Value;
  const std::string kind = node->kind().toQualString();
  auto in = node->inputs();
  auto arg = [&](size_t idx) -> const Value* { return in.at(idx); };
  auto out = node->outputs().size() == 1 ? node->output() : nullptr;

  if (kind == "prim::Constant") return visit_constant(node);
  if (kind == "prim::ListConstruct") {
    Val v;
    bool all_tensors = !in.empty();
    for (const Value* item : in) all_tensors = all_tensors && get(item).kind == Val::Kind::tensor;
    if (all_tensors) {
      v.kind = Val::Kind::tensors;
      for (const Value* item : in) v.tensors.push_back(get(item).node);
    } else {
      v.kind = Val::Kind::ints;
      for (const Value* item : in) {
        v.ints.push_back(static_cast<int64_t>(number(item)));
        const Val& size = get(item);
        v.dims.push_back(size.from_size ? size.dims.at(0) : Dim::literal(v.ints.back()));
      }
    }
    vals_[out] = v;
    return;
  }
  if (kind == "prim::TupleConstruct") {
    Val v;
    v.kind = Val::Kind::tensors;
    for (const Value* item : in) v.tensors.push_back(tensor(item));
    vals_[out] = v;
    return;
  }
  if (kind == "aten::__getitem__" && get(arg(0)).kind == Val::Kind::ints) {
    // x.size()[i] (`b, c, d, h, w = x.shape`): a size, with its launch expression.
    const Val& sizes = get(arg(0));
    auto idx = static_cast<int64_t>(number(arg(1)));
    if (idx < 0) idx += static_cast<int64_t>(sizes.ints.size());
    if (idx < 0 || idx >= static_cast<int64_t>(sizes.ints.size())) throw Unsupported("size index out of range");
    if (sizes.dims.size() == sizes.ints.size()) {
      vals_[out] = size_value(sizes.dims[idx]);
    } else {  // a literal list: a plain int
      Val v;
      v.kind = Val::Kind::number;
      v.is_int = true;
      v.number = static_cast<double>(sizes.ints[idx]);
      vals_[out] = v;
    }
    return;
  }
  if (kind == "prim::TupleIndex" || kind == "aten::__getitem__") {
    const Val& tuple = get(arg(0));
    if (tuple.kind == Val::Kind::tensors) {
      auto idx = static_cast<int64_t>(number(arg(1)));
      if (idx < 0) idx += static_cast<int64_t>(tuple.tensors.size());
      if (idx < 0 || idx >= static_cast<int64_t>(tuple.tensors.size())) throw Unsupported("tuple index out of range");
      return set(out, tuple.tensors[idx]);
    }
  }
  if (kind == "prim::TupleUnpack") {
    const Val& tuple = get(arg(0));
    if (tuple.kind != Val::Kind::tensors || tuple.tensors.size() != node->outputs().size())
      throw Unsupported("tuple unpack of a non-tuple");
    for (size_t idx = 0; idx < tuple.tensors.size(); ++idx) set(node->outputs()[idx], tuple.tensors[idx]);
    return;
  }
  if (visit_composite(kind, node) || visit_window(kind, node)) return;
  if (kind == "aten::size" && in.size() == 1) {
    // x.size(): every size, each keeping its launch expression.
    Val v;
    v.kind = Val::Kind::ints;
    v.dims = shape(tensor(arg(0)));
    for (const Dim& d : v.dims) v.ints.push_back(d.value);
    vals_[out] = v;
    return;
  }
  if (kind == "aten::size" && in.size() == 2) {
    const Shape s = shape(tensor(arg(0)));
    auto axis = static_cast<int64_t>(number(arg(1)));
    if (axis < 0) axis += static_cast<int64_t>(s.size());
    vals_[out] = size_value(s.at(axis));
    return;
  }
  if (kind == "aten::view" || kind == "aten::reshape") return set(out, reshape_to(tensor(arg(0)), get(arg(1))));
  if (kind == "aten::flatten") {
    // flatten(x, start_dim, end_dim): one reshape merging the dims between.
    int x = tensor(arg(0));
    const Shape sx = shape(x);
    if (sx.empty()) return set(out, x);
    const int first = axis_of(x, static_cast<int64_t>(number(arg(1)))), last = axis_of(x, static_cast<int64_t>(number(arg(2))));
    if (first >= last) return set(out, x);
    Shape to(sx.begin(), sx.begin() + first);
    to.push_back(product_dim(Shape(sx.begin() + first, sx.begin() + last + 1), "flat_size"));
    to.insert(to.end(), sx.begin() + last + 1, sx.end());
    return set(out, reshape(x, to));
  }

  static const std::vector<std::string> kUnary = {"relu", "silu", "tanh", "sigmoid", "exp", "log", "log1p",
                                                  "abs", "sqrt", "rsqrt", "neg", "sin", "cos", "erf",
                                                  "reciprocal", "square", "sign", "expm1", "floor", "ceil"};
  const std::string name = kind.substr(kind.find("::") + 2);
  if (kind.rfind("aten::", 0) == 0 && std::find(kUnary.begin(), kUnary.end(), name) != kUnary.end()) {
    return set(out, unary(name, tensor(arg(0))));
  }
  if (kind == "aten::gelu") {
    bool tanh_approx = in.size() > 1 && get(arg(1)).kind == Val::Kind::text && get(arg(1)).text == "tanh";
    return set(out, unary(tanh_approx ? "gelu_tanh" : "gelu", tensor(arg(0))));
  }
  if (kind == "aten::leaky_relu") return set(out, unary("leaky_relu", tensor(arg(0)), number(arg(1))));
  if (kind == "aten::clamp" || kind == "aten::clamp_min" || kind == "aten::clamp_max") {
    int x = tensor(arg(0));
    Node n;
    n.kind = NodeKind::unary;
    n.op = "clamp";
    n.args = {x};
    n.shape = shape(x);
    if (kind == "aten::clamp_max") {
      n.has_hi = true;
      n.hi = number(arg(1));
    } else {
      n.has_lo = !is_none(arg(1));
      if (n.has_lo) n.lo = number(arg(1));
      if (kind == "aten::clamp" && in.size() > 2 && !is_none(arg(2))) {
        n.has_hi = true;
        n.hi = number(arg(2));
      }
    }
    if (get(arg(0)).kind != Val::Kind::tensor) throw Unsupported("clamp of a non-tensor");
    return set(out, g_.add(n));
  }
  if (kind == "aten::pow") {
    if (get(arg(1)).kind == Val::Kind::number) return set(out, unary("pow_scalar", tensor(arg(0)), number(arg(1))));
    return set(out, binary("pow", tensor(arg(0)), tensor(arg(1))));
  }
  if ((kind == "aten::add" || kind == "aten::sub" || kind == "aten::mul" || kind == "aten::floordiv") &&
      in.size() == 2 && get(arg(0)).kind == Val::Kind::number && get(arg(1)).kind == Val::Kind::number &&
      (get(arg(0)).from_size || get(arg(1)).from_size)) {
    // Integer arithmetic on sizes (x.size(1) - 1, h * w): a size with its launch expression.
    const Val a = get(arg(0)), b = get(arg(1));
    if (!a.is_int || !b.is_int) throw Unsupported("a size in float arithmetic is not supported");
    auto expr = [](const Val& v) { return v.from_size ? v.dims.at(0).expr() : std::to_string(int64_t(v.number)); };
    const auto x = static_cast<int64_t>(a.number), y = static_cast<int64_t>(b.number);
    if (kind == "aten::floordiv" && (y <= 0 || x < 0)) throw Unsupported("a size divided by a non-positive number");
    const int64_t value = kind == "aten::add" ? x + y : kind == "aten::sub" ? x - y : kind == "aten::mul" ? x * y : x / y;
    const char* op = kind == "aten::add" ? " + " : kind == "aten::sub" ? " - " : kind == "aten::mul" ? " * " : " / ";
    vals_[out] = size_value(Dim::computed(value, expr(a) + op + expr(b), "size_expr"));
    return;
  }
  if (kind == "aten::add" || kind == "aten::sub") {
    int b = tensor(arg(1));
    if (in.size() > 2 && number(arg(2)) != 1.0) b = binary("mul", b, constant(number(arg(2))));
    return set(out, binary(name, tensor(arg(0)), b));
  }
  if (kind == "aten::rsub") {
    int x = tensor(arg(0));
    if (in.size() > 2 && number(arg(2)) != 1.0) x = binary("mul", x, constant(number(arg(2))));
    return set(out, binary("sub", tensor(arg(1)), x));
  }
  static const std::vector<std::string> kBinary = {"mul", "div", "maximum", "minimum", "gt", "lt", "ge", "le",
                                                   "eq", "ne", "fmod"};
  if (kind.rfind("aten::", 0) == 0 && std::find(kBinary.begin(), kBinary.end(), name) != kBinary.end()) {
    if (kind == "aten::div" && in.size() > 2 && !is_none(arg(2)))
      throw Unsupported("div with rounding_mode is not supported");
    return set(out, binary(name, tensor(arg(0)), tensor(arg(1))));
  }
  if (kind == "aten::where" && in.size() == 3) return set(out, where(tensor(arg(0)), tensor(arg(1)), tensor(arg(2))));
  if (kind == "aten::contiguous" || kind == "aten::clone" || kind == "aten::detach" ||
      (kind == "aten::dropout" && in.size() == 3 && !boolean(arg(2)))) {
    return set(out, tensor(arg(0)));
  }

  // Reductions and row ops.
  if (kind == "aten::sum" || kind == "aten::mean" || kind == "aten::amax" || kind == "aten::amin") {
    int x = tensor(arg(0));
    std::vector<int64_t> dims;
    bool keepdim = false;
    if (in.size() >= 3) {
      dims = int_list(arg(1));
      keepdim = boolean(arg(2));
    } else if (in.size() == 2 && (kind == "aten::amax" || kind == "aten::amin")) {
      dims = int_list(arg(1));
    }
    auto axes = norm_axes(x, dims);
    if (kind == "aten::mean") return set(out, mean(x, axes, keepdim));
    return set(out, reduce(kind == "aten::sum" ? "sum" : kind == "aten::amax" ? "max" : "min", x, axes, keepdim));
  }
  if (kind == "aten::var" || kind == "aten::std") {
    int x = tensor(arg(0));
    std::vector<int64_t> dims;
    bool unbiased = true, keepdim = false;
    if (in.size() == 2) {
      unbiased = boolean(arg(1));
    } else if (in.size() >= 4) {
      dims = int_list(arg(1));
      const Val& u = get(arg(2));
      if (u.kind == Val::Kind::boolean) unbiased = u.flag;
      else if (u.kind == Val::Kind::number) unbiased = u.number != 0.0;  // correction=1 or 0
      keepdim = boolean(arg(3));
    }
    int v = variance(x, norm_axes(x, dims), unbiased, keepdim);
    return set(out, kind == "aten::std" ? unary("sqrt", v) : v);
  }
  if (kind == "aten::norm" && in.size() >= 3) {
    int x = tensor(arg(0));
    if (!is_none(arg(1)) && number(arg(1)) != 2.0) throw Unsupported("norm with p != 2 is not supported");
    bool keepdim = in.size() > 3 && get(arg(3)).kind == Val::Kind::boolean && boolean(arg(3));
    return set(out, over_axes(x, norm_axes(x, int_list(arg(2))), keepdim,
                              [&](int v, const std::vector<int>& axes, bool keep) {
                                return unary("sqrt", reduce("sum", binary("mul", v, v), axes, keep));
                              }));
  }
  if (kind == "aten::logsumexp") {
    int x = tensor(arg(0));
    bool keepdim = boolean(arg(2));
    return set(out, over_axes(x, norm_axes(x, int_list(arg(1))), keepdim,
                              [&](int v, const std::vector<int>& axes, bool keep) {
                 int m = reduce("max", v, axes, true);
                 int lse = binary("add", unary("log", reduce("sum", unary("exp", binary("sub", v, m)), axes, true)), m);
                 if (keep) return lse;
                 std::vector<int> src;
                 for (int axis = 0; axis < static_cast<int>(shape(v).size()); ++axis)
                   if (std::find(axes.begin(), axes.end(), axis) == axes.end()) src.push_back(axis);
                 return view(lse, src);
               }));
  }
  if (kind == "aten::softmax" || kind == "aten::log_softmax") {
    int x = tensor(arg(0));
    auto axes = norm_axes(x, {static_cast<int64_t>(number(arg(1)))});
    int m = reduce("max", x, axes, true);
    int shifted = binary("sub", x, m);
    int s = reduce("sum", unary("exp", shifted), axes, true);
    if (kind == "aten::softmax") return set(out, binary("div", unary("exp", shifted), s));
    return set(out, binary("sub", shifted, unary("log", s)));
  }
  if (kind == "aten::layer_norm") {
    int x = tensor(arg(0));
    const int rank = static_cast<int>(shape(x).size());
    const int normalized_dims = static_cast<int>(int_list(arg(1)).size());
    if (normalized_dims < 1 || normalized_dims > rank) throw Unsupported("layer_norm's normalized_shape does not fit the input");
    std::vector<int> axes;
    for (int axis = rank - normalized_dims; axis < rank; ++axis) axes.push_back(axis);
    int y = normalized(x, axes, number(arg(4)));
    if (!is_none(arg(2))) y = binary("mul", y, tensor(arg(2)));
    if (!is_none(arg(3))) y = binary("add", y, tensor(arg(3)));
    return set(out, y);
  }

  // Views.
  if (kind == "aten::t") {
    int x = tensor(arg(0));
    return set(out, shape(x).size() < 2 ? x : transpose(x, 0, 1));
  }
  if (kind == "aten::transpose") {
    return set(out, transpose(tensor(arg(0)), static_cast<int64_t>(number(arg(1))),
                              static_cast<int64_t>(number(arg(2)))));
  }
  if (kind == "aten::permute") {
    int x = tensor(arg(0));
    std::vector<int> src;
    for (auto d : int_list(arg(1))) src.push_back(static_cast<int>(d < 0 ? d + shape(x).size() : d));
    return set(out, view(x, src));
  }
  if (kind == "aten::narrow" || kind == "aten::select") {
    // narrow(x, dim, 0, length): x's first `length` entries along dim; select(x, dim, 0): its
    // first entry, the dim dropped. Views that read x at the output's coordinates (the
    // dropped dim at 0): partition keeps them in pointwise stages (has_index_remap).
    int x = tensor(arg(0));
    const Shape sx = shape(x);
    const int axis = axis_of(x, static_cast<int64_t>(number(arg(1))));
    if (number(arg(2)) != 0.0) throw Unsupported(name + " from an index other than 0 is not supported");
    std::vector<int> src;
    for (int d = 0; d < static_cast<int>(sx.size()); ++d)
      if (kind == "aten::narrow" || d != axis) src.push_back(d);
    int v = view(x, src);
    if (kind == "aten::narrow") {
      const Val& length = get(arg(3));
      if (length.kind != Val::Kind::number || length.number < 1 || length.number > sx[axis].value)
        throw Unsupported("narrow needs a length between 1 and the dim's size");
      g_.nodes[v].shape[axis] = length.from_size ? length.dims.at(0) : Dim::literal(int64_t(length.number));
    }
    return set(out, v);
  }
  if (kind == "aten::squeeze" || kind == "aten::unsqueeze") {
    // An integer input may be unsqueezed as gather's index (a cross-entropy's labels.unsqueeze(1)):
    // the view keeps its type, and only index_tensor reads it.
    const bool index = kind == "aten::unsqueeze" && is_int_input(arg(0));
    int x = index ? get(arg(0)).node : tensor(arg(0));
    int rank = static_cast<int>(shape(x).size());
    if (in.size() < 2) throw Unsupported("squeeze without a dim is not supported");
    auto d = static_cast<int>(number(arg(1)));
    std::vector<int> src;
    if (kind == "aten::squeeze") {
      if (d < 0) d += rank;
      if (shape(x)[d].value != 1) return set(out, x);
      for (int axis = 0; axis < rank; ++axis)
        if (axis != d) src.push_back(axis);
    } else {
      if (d < 0) d += rank + 1;
      for (int axis = 0; axis < rank; ++axis) src.push_back(axis);
      src.insert(src.begin() + d, -1);
    }
    int v = view(x, src);
    if (index) g_.nodes[v].int_type = g_.nodes[x].int_type;
    return set(out, v);
  }

  // Indexing by an integer input: one gathered dim, every other dim follows the output.
  if (kind == "aten::embedding") {
    int w = tensor(arg(0)), idx = index_tensor(arg(1));
    if (shape(w).size() != 2) throw Unsupported("embedding weight must be 2-d");
    Shape out_shape = shape(idx);
    out_shape.push_back(shape(w)[1]);
    int rank = static_cast<int>(shape(idx).size());
    std::vector<int> index_src;
    for (int axis = 0; axis < rank; ++axis) index_src.push_back(axis);
    return set(out, gather(w, idx, {-1, rank}, index_src, out_shape));
  }
  if (kind == "aten::index_select") {
    int x = tensor(arg(0)), idx = index_tensor(arg(2));
    int axis = axis_of(x, static_cast<int64_t>(number(arg(1))));
    if (shape(idx).size() != 1) throw Unsupported("index_select indices must be 1-d");
    Shape out_shape = shape(x);
    out_shape[axis] = shape(idx)[0];
    std::vector<int> data_src;
    for (int d = 0; d < static_cast<int>(out_shape.size()); ++d) data_src.push_back(d == axis ? -1 : d);
    return set(out, gather(x, idx, data_src, {axis}, out_shape));
  }
  if (kind == "aten::gather") {
    std::vector<int> inserted;  // size-1 dims the index gained by unsqueeze (it does not read them)
    int x = tensor(arg(0)), idx = index_tensor(arg(2), &inserted);
    int axis = axis_of(x, static_cast<int64_t>(number(arg(1))));
    if (in.size() > 3 && get(arg(3)).kind == Val::Kind::boolean && boolean(arg(3)))
      throw Unsupported("gather with sparse_grad is not supported");
    const Shape xs = shape(x), is = inserted.empty() ? shape(idx) : shape(get(arg(2)).node);
    if (xs.size() != is.size()) throw Unsupported("gather indices must have the rank of the input");
    for (size_t d = 0; d < xs.size(); ++d)
      if (static_cast<int>(d) != axis && is[d].value > xs[d].value)
        throw Unsupported("gather indices larger than the input outside the gather dim");
    std::vector<int> data_src, index_src;
    for (int d = 0; d < static_cast<int>(xs.size()); ++d) {
      data_src.push_back(d == axis ? -1 : d);
      if (std::find(inserted.begin(), inserted.end(), d) == inserted.end()) index_src.push_back(d);
    }
    return set(out, gather(x, idx, data_src, index_src, is));
  }
  if (kind == "aten::tril" || kind == "aten::triu") {
    // A unary node on the last two output coordinates (emit_expr.cpp); diagonal an int.
    int x = tensor(arg(0));
    if (shape(x).size() < 2) throw Unsupported(name + " needs a tensor of at least 2 dims");
    return set(out, unary(name, x, in.size() > 1 ? number(arg(1)) : 0.0));
  }
  if (kind == "aten::cumsum" || kind == "aten::cumprod") {
    int x = tensor(arg(0));
    if (in.size() > 2 && !is_none(arg(2))) throw Unsupported(name + " with a dtype is not supported");
    Node node;
    node.kind = NodeKind::scan;
    node.op = kind == "aten::cumsum" ? "sum" : "prod";
    node.args = {x};
    node.axes = {axis_of(x, static_cast<int64_t>(number(arg(1))))};
    node.shape = shape(x);
    return set(out, g_.add(node));
  }
  if (kind == "aten::argmax" || kind == "aten::argmin") {
    int x = tensor(arg(0));
    if (is_none(arg(1))) throw Unsupported(name + " over all elements (no dim) is not supported");
    int axis = axis_of(x, static_cast<int64_t>(number(arg(1))));
    bool keepdim = in.size() > 2 && boolean(arg(2));
    Node node;
    node.kind = NodeKind::arg_reduce;
    node.op = name;
    node.args = {x};
    node.axes = {axis};
    for (int d = 0; d < static_cast<int>(shape(x).size()); ++d) {
      if (d != axis) node.shape.push_back(shape(x)[d]);
      else if (keepdim) node.shape.push_back(Dim::literal(1));
    }
    node.int_type = "long";
    return set(out, g_.add(node));
  }
  if (kind == "aten::flip") {
    int x = tensor(arg(0));
    return set(out, flip(x, norm_axes(x, int_list(arg(1)))));
  }
  if (kind == "aten::cat") {
    const Val& list = get(arg(0));
    if (list.kind != Val::Kind::tensors) throw Unsupported("cat needs a list of tensors");
    return set(out, concat(list.tensors, static_cast<int64_t>(number(arg(1)))));
  }

  // Matrix products.
  if (kind == "aten::matmul" || kind == "aten::mm" || kind == "aten::bmm" || kind == "aten::mv") {
    return set(out, matmul(tensor(arg(0)), tensor(arg(1))));
  }
  if (kind == "aten::linear") {
    int w = tensor(arg(1));
    if (shape(w).size() != 2) throw Unsupported("linear weight must be 2-d");
    int y = matmul(tensor(arg(0)), transpose(w, 0, 1));
    if (in.size() > 2 && !is_none(arg(2))) y = binary("add", y, tensor(arg(2)));
    return set(out, y);
  }
  if (kind == "aten::addmm") {
    return set(out, binary("add", tensor(arg(0)), matmul(tensor(arg(1)), tensor(arg(2)))));
  }
  throw Unsupported(kind + " has no lowering in the teacher compiler");
}

}  // namespace

ImportResult import_graph(const spec::OpSpec& spec) {
  ImportResult result;
  auto normalized = harness::normalize_source(spec.source);
  if (!normalized.error.empty()) {
    result.unsupported = "source: " + normalized.error;
    return result;
  }
  try {
    auto unit = torch::jit::compile(normalized.source);
    auto graph = torch::jit::toGraphFunction(unit->get_function("forward")).graph()->copy();
    torch::jit::Inline(*graph);
    result.graph = Importer(spec).run(*graph);
  } catch (const Unsupported& e) {
    result.unsupported = e.what();
  } catch (const std::exception& e) {
    std::string what = e.what();
    // libtorch's messages often open with an empty line: keep the first line that says something.
    size_t start = what.find_first_not_of(" \n");
    start = start == std::string::npos ? 0 : start;
    result.unsupported = "TorchScript: " + what.substr(start, what.find('\n', start) - start);
  }
  return result;
}

}  // namespace kforge::codegen
