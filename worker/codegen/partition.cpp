// Splits an op's IR into kernels (stages): matmuls and the output are materialised,
// everything between is fused; a pointwise region that reads a matmul becomes that
// matmul's epilogue. Regions with reductions must agree on one reduced shape.
// Test: ctest -R codegen_lower.
#include <algorithm>
#include <set>

#include "worker/codegen/codegen.h"
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
    const Node& v = g.nodes[id];
    int rank = static_cast<int>(v.src.size());
    bool swap_last = rank >= 2 && v.src[rank - 1] == rank - 2 && v.src[rank - 2] == rank - 1;
    for (int axis = 0; axis + 2 < rank; ++axis) swap_last = swap_last && v.src[axis] == axis;
    if (!swap_last) {
      ok = false;
      return id;
    }
    transposed = !transposed;
    id = v.args[0];
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
    if (id != root && (kind == NodeKind::matmul || kind == NodeKind::scan || kind == NodeKind::arg_reduce)) continue;
    for (int a : g.nodes[id].args) stack.push_back(a);
  }
  std::vector<int> out(seen.begin(), seen.end());
  std::sort(out.begin(), out.end());
  return out;
}

// True when the region reads some tensor at remapped coordinates (flip, cat, gather), which
// only the pointwise emitter resolves.
bool has_index_remap(const Graph& g, const std::vector<int>& nodes) {
  return std::any_of(nodes.begin(), nodes.end(), [&](int id) {
    const Node& node = g.nodes[id];
    return node.kind == NodeKind::concat || node.kind == NodeKind::gather ||
           (node.kind == NodeKind::view && !node.flip.empty());
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
                                                              : "matmul";
    out += (out.empty() ? "" : "+") + std::string(name);
  }
  return out;
}

Analysis analyze(const spec::OpSpec& spec) {
  Analysis analysis;
  analysis.op_name = spec.name;
  auto imported = import_graph(spec);
  if (!imported.ok()) {
    analysis.unsupported = imported.unsupported;
    return analysis;
  }
  Graph& g = analysis.graph = std::move(imported.graph);
  const int output = g.output;
  if (g.nodes[output].kind == NodeKind::input || g.nodes[output].kind == NodeKind::constant) {
    analysis.unsupported = "the op returns an input or constant unchanged; nothing to compute";
    return analysis;
  }

  // 1. Materialise the output, every matmul and scan, and every computed operand of one.
  std::set<int> materialized = {output};
  for (int id = 0; id < static_cast<int>(g.nodes.size()); ++id) {
    const Node& node = g.nodes[id];
    if (node.kind == NodeKind::arg_reduce && id != output) {
      analysis.unsupported = "argmax / argmin feeding further ops is not supported (the teacher computes floats)";
      return analysis;
    }
    if (node.kind == NodeKind::scan || node.kind == NodeKind::arg_reduce) {
      // The scan kernel reads its operand contiguously: anything computed (views too) goes to scratch first.
      materialized.insert(id);
      if (g.nodes[node.args[0]].kind != NodeKind::input) materialized.insert(node.args[0]);
      continue;
    }
    if (node.kind != NodeKind::matmul) continue;
    materialized.insert(id);
    for (int operand : node.args) {
      bool transposed = false, ok = true;
      int base = strip_transpose(g, operand, transposed, ok);
      if (!ok) {
        analysis.unsupported = "matmul operand is a permuted view other than a transpose of the last two dims";
        return analysis;
      }
      if (g.nodes[base].kind != NodeKind::input) materialized.insert(base);
    }
  }

  // 2. One stage per materialised node, in topological order (node ids are topological).
  std::vector<int> roots(materialized.begin(), materialized.end());
  std::set<int> fused_away;
  for (int root : roots) {
    if (fused_away.count(root)) continue;
    Stage stage;
    stage.root = root;
    const Node& node = g.nodes[root];
    if (node.kind == NodeKind::matmul || node.kind == NodeKind::scan || node.kind == NodeKind::arg_reduce) {
      stage.kind = node.kind == NodeKind::matmul ? StageKind::matmul
                   : node.kind == NodeKind::scan ? StageKind::scan
                                                 : StageKind::arg_reduce;
      stage.anchor = root;
      analysis.stages.push_back(stage);
      continue;
    }
    auto nodes = region_nodes(g, root, materialized);
    std::vector<int> reduces, matmuls;
    for (int id : nodes) {
      if (g.nodes[id].kind == NodeKind::reduce) reduces.push_back(id);
      if (g.nodes[id].kind == NodeKind::matmul) matmuls.push_back(id);
    }
    if (reduces.empty()) {
      stage.kind = StageKind::pointwise;
      // Epilogue fusion: the latest matmul of the same shape, read only here, anchors this stage.
      for (auto it = matmuls.rbegin(); it != matmuls.rend(); ++it) {
        int mm = *it;
        auto users = g.users(mm);
        bool only_here = std::all_of(users.begin(), users.end(), [&](int u) {
          return std::binary_search(nodes.begin(), nodes.end(), u) && u != mm;
        });
        if (only_here && mm != output && same_values(g.nodes[mm].shape, node.shape)) {
          stage.kind = StageKind::matmul;
          stage.anchor = mm;
          fused_away.insert(mm);
          break;
        }
      }
      if (stage.kind != StageKind::pointwise && has_index_remap(g, nodes)) {
        analysis.unsupported = "flip, cat or gather in a matmul epilogue is not supported";
        return analysis;
      }
      analysis.stages.push_back(stage);
      continue;
    }
    if (has_index_remap(g, nodes)) {
      analysis.unsupported = "flip, cat or gather inside a reduction region is not supported";
      return analysis;
    }
    // Reductions: all over the same axes of equally shaped tensors.
    const Node& first = g.nodes[reduces[0]];
    stage.reduce_axes = first.axes;
    stage.reduce_shape = g.nodes[first.args[0]].shape;
    for (int id : reduces) {
      const Node& r = g.nodes[id];
      if (r.axes != stage.reduce_axes || !same_values(g.nodes[r.args[0]].shape, stage.reduce_shape)) {
        analysis.unsupported = "one fused region reduces over different dims or shapes";
        return analysis;
      }
    }
    int rank = static_cast<int>(stage.reduce_shape.size());
    if (static_cast<int>(stage.reduce_axes.size()) == rank && rank > 1) {
      stage.kind = StageKind::reduce_full;
      if (reduces.size() != 1) {
        analysis.unsupported = "a full reduction fused with further reductions is not supported";
        return analysis;
      }
    } else if (stage.reduce_axes.size() == 1 || rank == 1) {
      stage.kind = rank == 1 ? StageKind::reduce_full : StageKind::reduce_rows;
    } else {
      analysis.unsupported = "reduction over several (but not all) dims is not supported";
      return analysis;
    }
    analysis.stages.push_back(stage);
  }
  // Stages whose matmul anchor was fused into a later epilogue must not run alone.
  analysis.stages.erase(std::remove_if(analysis.stages.begin(), analysis.stages.end(),
                                       [&](const Stage& s) { return fused_away.count(s.root) > 0; }),
                        analysis.stages.end());
  return analysis;
}

}  // namespace kforge::codegen
