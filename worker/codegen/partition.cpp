// Splits an op's IR into kernels (stages): matmuls, windows (conv, pooling) and the output
// are materialised, everything between is fused; a pointwise region that reads a matmul or
// a window becomes its epilogue. Reshapes read a buffer. A region's reductions must agree
// on one reduced shape: those that do not get stages of their own.
// Test: ctest -R codegen_lower.
#include <algorithm>
#include <set>

#include "worker/codegen/codegen.h"
#include "worker/codegen/emit_patterns.h"
#include "worker/codegen/import_graph.h"

namespace kforge::codegen {
namespace {

bool is_leaf_kind(NodeKind kind) { return kind == NodeKind::input || kind == NodeKind::constant; }

// Strips views whose only effect is swapping the last two dims; returns the base node
// and whether it was transposed. Any other view makes `ok` false.
int strip_transpose(const Graph& g, int id, bool& transposed, bool& ok) {
  transposed = false;
  ok = true;
  while (g.nodes[id].kind == NodeKind::view) {
    if (!swaps_last_two(g.nodes[id])) {
      ok = false;
      return id;
    }
    transposed = !transposed;
    id = g.nodes[id].args[0];
  }
  return id;
}

// Nodes computed inside the region that produces `root` (stopping at materialised nodes).
std::vector<int> region_nodes(const Graph& g, int root, const std::set<int>& materialized) {
  std::set<int> seen;
  std::vector<int> stack = {root};
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    if (id != root && (materialized.count(id) || is_leaf_kind(g.nodes[id].kind))) continue;
    const NodeKind kind = g.nodes[id].kind;
    if (id != root && (kind == NodeKind::matmul || kind == NodeKind::scan || kind == NodeKind::arg_reduce ||
                       kind == NodeKind::window || kind == NodeKind::reshape))
      continue;
    for (int a : g.nodes[id].args) stack.push_back(a);
  }
  std::vector<int> out(seen.begin(), seen.end());
  std::sort(out.begin(), out.end());
  return out;
}

// A view that reads only part of its operand: a narrowed dim, or a dim of size > 1 dropped
// (select); its reads are not the operand's flat order.
bool is_slice(const Graph& g, const Node& view) {
  const Shape& from = g.nodes[view.args[0]].shape;
  std::vector<bool> read(from.size(), false);
  for (size_t axis = 0; axis < view.src.size(); ++axis) {
    if (view.src[axis] < 0) continue;
    read[view.src[axis]] = true;
    if (view.shape[axis].value != from[view.src[axis]].value) return true;
  }
  for (size_t axis = 0; axis < from.size(); ++axis)
    if (!read[axis] && from[axis].value != 1) return true;
  return false;
}

// True when the region reads some tensor at remapped coordinates (flip, cat, gather) or
// computes from its output coordinates (tril, triu), which only the pointwise (and window)
// emitters resolve.
bool has_index_remap(const Graph& g, const std::vector<int>& nodes) {
  return std::any_of(nodes.begin(), nodes.end(), [&](int id) {
    const Node& node = g.nodes[id];
    return node.kind == NodeKind::concat || node.kind == NodeKind::gather ||
           (node.kind == NodeKind::view && (!node.flip.empty() || is_slice(g, node))) ||
           (node.kind == NodeKind::unary && (node.op == "tril" || node.op == "triu"));
  });
}

bool same_values(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k].value != b[k].value) return false;
  return true;
}

}  // namespace

std::string Analysis::describe() const {
  std::string out;
  for (const auto& stage : stages) {
    const char* name = stage.kind == StageKind::pointwise     ? "pointwise"
                       : stage.kind == StageKind::reduce_rows ? "reduce_rows"
                       : stage.kind == StageKind::reduce_full ? "reduce_full"
                       : stage.kind == StageKind::scan        ? "scan"
                       : stage.kind == StageKind::arg_reduce  ? "arg_reduce"
                       : stage.kind == StageKind::window      ? "window"
                                                              : "matmul";
    out += (out.empty() ? "" : "+") + std::string(name);
  }
  return out;
}

namespace {

// Step 1: the output, every matmul, window and scan, every computed operand of one, and
// what every reshape reads (a reshape is a buffer read with other sizes). "" or why not.
std::string materialize_boundaries(const Graph& g, int output, std::set<int>& materialized) {
  materialized = {output};
  auto materialize_operand = [&](int id) {
    int stored = g.storage(id);
    if (g.nodes[stored].kind != NodeKind::input && g.nodes[stored].kind != NodeKind::constant)
      materialized.insert(stored);
  };
  for (int id = 0; id < static_cast<int>(g.nodes.size()); ++id) {
    const Node& node = g.nodes[id];
    // A bool input's conversion writes a float buffer that every other stage reads.
    if (node.kind == NodeKind::unary && node.op == "bool_to_float") materialized.insert(id);
    if (node.kind == NodeKind::arg_reduce && id != output)
      return "argmax / argmin feeding further ops is not supported (the teacher computes floats)";
    if (node.kind == NodeKind::reshape) {
      materialize_operand(node.args[0]);
      continue;
    }
    if (node.kind == NodeKind::scan || node.kind == NodeKind::arg_reduce || node.kind == NodeKind::window) {
      // The scan and window kernels read their operands from buffers: anything computed
      // (views too) goes to scratch first.
      materialized.insert(id);
      for (int operand : node.args) materialize_operand(operand);
      continue;
    }
    if (node.kind != NodeKind::matmul) continue;
    materialized.insert(id);
    for (int operand : node.args) {
      bool transposed = false, ok = true;
      int base = strip_transpose(g, operand, transposed, ok);
      if (!ok) return "matmul operand is a permuted view other than a transpose of the last two dims";
      materialize_operand(base);
    }
  }
  // A window keeps its elementwise tail (the conv's bias, an activation: the nodes of its
  // shape computed from it) in its own kernel: the end of the tail is materialised, and the
  // window becomes the epilogue's anchor. The tail is every node reachable from the window
  // through elementwise nodes of its shape when all of them lead to one node (the output, or
  // the one a reduction, reshape or other window reads): a DAG too, as hardswish reads the
  // conv twice. Otherwise the single-user chain from the window.
  auto elementwise = [&](int id, int window) {
    const Node& node = g.nodes[id];
    return (node.kind == NodeKind::unary || node.kind == NodeKind::binary || node.kind == NodeKind::where) &&
           same_values(node.shape, g.nodes[window].shape);
  };
  auto closed_tail = [&](int window) {  // the one node the window's elementwise cone ends at, or -1
    std::vector<int> stack = {window};
    std::set<int> cone;
    int exit = -1;
    while (!stack.empty()) {
      const int id = stack.back();
      stack.pop_back();
      if (!cone.insert(id).second) continue;
      auto users = g.users(id);
      const bool leaves = id == output || std::any_of(users.begin(), users.end(), [&](int u) {
        return !elementwise(u, window);
      });
      if (leaves) {
        if (exit >= 0) return -1;
        exit = id;
      }
      for (int u : users)
        if (elementwise(u, window)) stack.push_back(u);
    }
    // The exit's own elementwise users would be cone nodes after it: it must have none.
    if (exit < 0) return -1;
    for (int u : g.users(exit))
      if (elementwise(u, window)) return -1;
    return exit;
  };
  for (int id = 0; id < static_cast<int>(g.nodes.size()); ++id) {
    if (g.nodes[id].kind != NodeKind::window) continue;
    if (const int tail = closed_tail(id); tail >= 0) {
      materialized.insert(tail);
      continue;
    }
    int tail = id;
    for (;;) {
      if (tail != id && materialized.count(tail)) break;
      auto users = g.users(tail);
      if (users.size() != 1 || !elementwise(users[0], id)) break;
      tail = users[0];
    }
    materialized.insert(tail);
  }
  return "";
}

// The stage kind of a region whose reductions agree on one reduced shape, or "" and the
// reductions to give their own stages (`split`) first: those over other dims or shapes
// than the region's last reduction, all but the last of a full reduction (and that one
// too when the epilogue outputs more than one value), and all of them when an operand
// does not line up with the reduced tensor (an epilogue broadcast to other dims, a
// per-channel weight). `why` says what stays unsupported.
bool reduce_stage(const Graph& g, const std::set<int>& materialized, const std::vector<int>& reduces, Stage& stage,
                  std::set<int>& split, std::string& why) {
  const Node& last = g.nodes[reduces.back()];
  const size_t before = split.size();
  int reference = -1;  // the first reduction that agrees with the last names the reduced sizes
  for (int id : reduces) {
    const Node& r = g.nodes[id];
    if (r.axes != last.axes || !same_values(g.nodes[r.args[0]].shape, g.nodes[last.args[0]].shape)) split.insert(id);
    else if (reference < 0) reference = id;
  }
  if (split.size() > before) return false;
  stage.reduce_axes = last.axes;
  stage.reduce_shape = g.nodes[g.nodes[reference].args[0]].shape;
  const int rank = static_cast<int>(stage.reduce_shape.size());
  if (static_cast<int>(stage.reduce_axes.size()) == rank || rank == 1) {
    // The final kernel writes one value: an epilogue over more (x / norm(x)) runs apart.
    stage.kind = StageKind::reduce_full;
    split.insert(reduces.begin(), reduces.end() - 1);
    if (numel_value(g.nodes[stage.root].shape) != 1) split.insert(reduces.back());
    return split.size() == before;
  }
  if (stage.reduce_axes.size() != 1) {
    why = "reduction over several (but not all) dims is not supported";
    return false;
  }
  stage.kind = StageKind::reduce_rows;
  emit::PatternMap patterns{g, stage, [&](int id) {
    const NodeKind kind = g.nodes[id].kind;
    return id != stage.root && (kind == NodeKind::input || kind == NodeKind::reshape || materialized.count(id) > 0);
  }, {}, ""};
  patterns.check_output(stage.root);
  for (int id : reduces) patterns.of(g.nodes[id].args[0]);
  if (patterns.error.empty()) return true;
  for (int id : reduces)
    if (id != stage.root) split.insert(id);
  if (split.size() == before) why = patterns.error;
  return false;
}

// Step 2: one stage per materialised node, in topological order (node ids are
// topological). Reductions that must run apart go to `split` (the caller materialises
// them and tries again); "" or why the op cannot be lowered.
std::string build_stages(Analysis& analysis, const std::set<int>& materialized, std::set<int>& split) {
  const Graph& g = analysis.graph;
  const int output = analysis.output_root;
  analysis.stages.clear();
  std::set<int> fused_away;
  for (int root : materialized) {
    if (fused_away.count(root)) continue;
    Stage stage;
    stage.root = root;
    const Node& node = g.nodes[root];
    if (node.kind == NodeKind::matmul || node.kind == NodeKind::scan || node.kind == NodeKind::arg_reduce ||
        node.kind == NodeKind::window) {
      stage.kind = node.kind == NodeKind::matmul   ? StageKind::matmul
                   : node.kind == NodeKind::scan   ? StageKind::scan
                   : node.kind == NodeKind::window ? StageKind::window
                                                   : StageKind::arg_reduce;
      stage.anchor = root;
      analysis.stages.push_back(stage);
      continue;
    }
    auto nodes = region_nodes(g, root, materialized);
    // The nodes this stage computes (region_nodes also lists the materialised ones it reads).
    std::vector<int> computed;
    for (int id : nodes)
      if (id == root || !materialized.count(id)) computed.push_back(id);
    std::vector<int> reduces, anchors;
    for (int id : computed)
      if (g.nodes[id].kind == NodeKind::reduce) reduces.push_back(id);
    for (int id : nodes)
      if (g.nodes[id].kind == NodeKind::matmul || g.nodes[id].kind == NodeKind::window) anchors.push_back(id);
    if (reduces.empty()) {
      stage.kind = StageKind::pointwise;
      // Epilogue fusion: the latest matmul or window of the same shape, read only here, anchors
      // this stage. A matmul's epilogue has no output coordinates: with a remap (tril(a @ b))
      // the matmul runs alone and this stage reads its result.
      const bool remap = has_index_remap(g, computed);
      for (auto it = anchors.rbegin(); it != anchors.rend(); ++it) {
        int anchor = *it;
        if (remap && g.nodes[anchor].kind == NodeKind::matmul) continue;
        auto users = g.users(anchor);
        bool only_here = std::all_of(users.begin(), users.end(), [&](int u) {
          return std::binary_search(nodes.begin(), nodes.end(), u) && u != anchor;
        });
        if (only_here && anchor != output && same_values(g.nodes[anchor].shape, node.shape)) {
          stage.kind = g.nodes[anchor].kind == NodeKind::matmul ? StageKind::matmul : StageKind::window;
          stage.anchor = anchor;
          fused_away.insert(anchor);
          break;
        }
      }
      // The window emitter reads its epilogue through output coordinates, as pointwise stages do.
      analysis.stages.push_back(stage);
      continue;
    }
    if (has_index_remap(g, computed)) {
      // The reduction emitters read operands at flat offsets. In a cross-entropy's
      // mean(-gather(log_softmax(x), 1, t)), first what the remap reads (the log_softmax)
      // gets stages of its own, then what the reductions reduce (the gathered values, now a
      // pointwise stage), trying the region again after each. A remap after the reductions
      // stays unsupported.
      const size_t before = split.size();
      auto stage_apart = [&](int operand) {
        if (!materialized.count(operand) && !is_leaf_kind(g.nodes[operand].kind)) split.insert(operand);
      };
      for (int id : computed)
        if (id != root && has_index_remap(g, {id}))
          for (int operand : g.nodes[id].args) stage_apart(operand);
      if (split.size() == before)
        for (int id : reduces) stage_apart(g.nodes[id].args[0]);
      if (split.size() == before) return "flip, cat, gather, tril or triu inside a reduction region is not supported";
      continue;
    }
    std::string why;
    const bool agreed = reduce_stage(g, materialized, reduces, stage, split, why);
    if (!why.empty()) return why;
    if (agreed) analysis.stages.push_back(stage);
  }
  // Stages whose anchor was fused into a later epilogue must not run alone.
  analysis.stages.erase(std::remove_if(analysis.stages.begin(), analysis.stages.end(),
                                       [&](const Stage& s) { return fused_away.count(s.root) > 0; }),
                        analysis.stages.end());
  return "";
}

}  // namespace

Analysis analyze(const spec::OpSpec& spec) {
  Analysis analysis;
  analysis.op_name = spec.name;
  auto imported = import_graph(spec);
  if (!imported.ok()) {
    analysis.unsupported = imported.unsupported;
    return analysis;
  }
  Graph& g = analysis.graph = std::move(imported.graph);
  // A reshaped output is the same elements in the same order: the stage of what it
  // reinterprets writes `out` directly.
  const int output = analysis.output_root = g.storage(g.output);
  if (g.nodes[output].kind == NodeKind::input || g.nodes[output].kind == NodeKind::constant) {
    analysis.unsupported = "the op returns an input or constant unchanged; nothing to compute";
    return analysis;
  }
  std::set<int> materialized;
  analysis.unsupported = materialize_boundaries(g, output, materialized);
  // Regions whose reductions cannot share a kernel hand some to stages of their own,
  // until every region agrees (each round materialises at least one more node).
  while (analysis.ok()) {
    std::set<int> split;
    analysis.unsupported = build_stages(analysis, materialized, split);
    if (split.empty() || !analysis.ok()) break;
    const size_t before = materialized.size();
    materialized.insert(split.begin(), split.end());
    if (materialized.size() == before) analysis.unsupported = "internal: a region's reductions could not be split";
  }
  if (!analysis.ok()) analysis.stages.clear();
  return analysis;
}

}  // namespace kforge::codegen
