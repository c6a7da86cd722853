// Internal to the teacher's emission: how each value of a reduction region varies over
// the reduced tensor [outer, len, inner] (full, along the row only, per row, scalar). The
// C and Triton reduction emitters read operands where their pattern says.
// Test: ctest -R codegen.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "worker/codegen/codegen.h"

namespace kforge::codegen::emit {

// Patterns of a value relative to the reduced tensor [outer, len, inner]:
// full (varies along everything), lane (only along the reduced dim), group (constant
// along the reduced dim), scalar.
enum class Pattern { scalar, lane, group, full };

inline Pattern join(Pattern a, Pattern b) {
  if (a == b) return a;
  if (a == Pattern::scalar) return b;
  if (b == Pattern::scalar) return a;
  return Pattern::full;
}

// The pattern of every node of a reduction region, memoised; `error` says why a region
// cannot be emitted.
struct PatternMap {
  const Graph& g;
  const Stage& stage;
  std::function<bool(int)> is_leaf;
  std::map<int, Pattern> memo;
  std::string error;

  // A buffer of `shape` read in place: right-aligned against the reduced tensor, or else
  // with the size-1 dims of both left out (squeeze and unsqueeze keep flat offsets, so a
  // [N, C] mean reads as the [N, C, 1, 1] it was viewed as).
  Pattern leaf(const Shape& shape) {
    if (numel_value(shape) == 1) return Pattern::scalar;
    const Shape& ref = stage.reduce_shape;
    std::vector<bool> reduced;
    for (size_t axis = 0; axis < ref.size(); ++axis)
      reduced.push_back(std::find(stage.reduce_axes.begin(), stage.reduce_axes.end(), static_cast<int>(axis)) !=
                        stage.reduce_axes.end());
    Pattern p = Pattern::full;
    if (classify(shape, ref, reduced, p)) return p;
    Shape squeezed_shape, squeezed_ref;
    std::vector<bool> squeezed_reduced;
    for (const Dim& d : shape)
      if (d.value != 1) squeezed_shape.push_back(d);
    for (size_t axis = 0; axis < ref.size(); ++axis)
      if (ref[axis].value != 1) {
        squeezed_ref.push_back(ref[axis]);
        squeezed_reduced.push_back(reduced[axis]);
      }
    if (classify(squeezed_shape, squeezed_ref, squeezed_reduced, p)) return p;
    error = "an operand of shape " + std::to_string(shape.size()) + "-d does not line up with the reduced tensor";
    return Pattern::full;
  }

  static bool classify(const Shape& shape, const Shape& ref, const std::vector<bool>& reduced, Pattern& out) {
    if (shape.size() > ref.size()) return false;
    size_t offset = ref.size() - shape.size();
    bool full = true, lane = true, group = true;
    for (size_t axis = 0; axis < ref.size(); ++axis) {
      int64_t v = axis < offset ? 1 : shape[axis - offset].value;
      full = full && v == ref[axis].value;
      lane = lane && (reduced[axis] ? v == ref[axis].value : v == 1);
      group = group && (reduced[axis] ? v == 1 : v == ref[axis].value);
    }
    out = full ? Pattern::full : lane ? Pattern::lane : Pattern::group;
    if (full || lane || group) return true;
    // A tensor without the reduced dims (keepdim=False result) is per-row too.
    size_t reduced_count = std::count(reduced.begin(), reduced.end(), true);
    if (shape.size() != ref.size() - reduced_count) return false;
    size_t pos = 0;
    for (size_t axis = 0; axis < ref.size(); ++axis)
      if (!reduced[axis] && shape[pos++].value != ref[axis].value) return false;
    out = Pattern::group;
    return true;
  }

  // The stage's output is stored where its pattern says (full: at the reduced tensor's
  // offsets, group: one value per row, in row order): its own shape must lay out the same
  // way (not, say, [1, C, N, 1] from a per-row [N, 1] plus a [1, C, 1, 1] bias).
  void check_output(int root) {
    const Pattern p = of(root);
    const Shape& shape = g.nodes[root].shape;
    const Pattern layout = leaf(shape);
    int64_t reduced = 1;
    for (int axis : stage.reduce_axes) reduced *= stage.reduce_shape[axis].value;
    const int64_t count = p == Pattern::full    ? numel_value(stage.reduce_shape)
                          : p == Pattern::group ? numel_value(stage.reduce_shape) / reduced
                          : p == Pattern::lane  ? reduced
                                                : 1;
    // Over reduced dims of size 1, full and per-row offsets coincide. A per-row result
    // shaped as the rows (a keepdim=False sum) is stored in row order even where `leaf`
    // reads it otherwise: [N] against a reduced [N, N] right-aligns with the reduced dim.
    const bool same = layout == p || (numel_value(shape) == count && (reduced == 1 || layout == Pattern::scalar)) ||
                      (p == Pattern::group && shape_of_rows(shape));
    if (!same && error.empty()) error = "the output's shape does not line up with the reduced tensor";
  }

  // True when `shape` is the reduced tensor's kept dims, in order (size-1 dims aside).
  bool shape_of_rows(const Shape& shape) const {
    std::vector<int64_t> rows, sizes;
    for (size_t axis = 0; axis < stage.reduce_shape.size(); ++axis) {
      const bool is_reduced = std::find(stage.reduce_axes.begin(), stage.reduce_axes.end(), static_cast<int>(axis)) !=
                              stage.reduce_axes.end();
      if (!is_reduced && stage.reduce_shape[axis].value != 1) rows.push_back(stage.reduce_shape[axis].value);
    }
    for (const Dim& d : shape)
      if (d.value != 1) sizes.push_back(d.value);
    return sizes == rows;
  }

  Pattern of(int id) {
    auto it = memo.find(id);
    if (it != memo.end()) return it->second;
    const Node& node = g.nodes[id];
    Pattern p = Pattern::scalar;
    if (is_leaf(id)) {
      p = leaf(node.shape);
    } else if (node.kind == NodeKind::reduce) {
      p = Pattern::group;
    } else if (node.kind == NodeKind::constant || node.kind == NodeKind::red_len) {
      p = Pattern::scalar;
    } else if (node.kind == NodeKind::view) {
      // squeeze/unsqueeze only (the dims kept in order, the dropped ones of size 1): any
      // other view would reorder data.
      const Shape& from = g.nodes[node.args[0]].shape;
      bool size_one_only = true;
      int next = 0;
      for (int s : node.src) {
        if (s < 0) continue;
        for (; next < s; ++next) size_one_only = size_one_only && from[next].value == 1;
        size_one_only = size_one_only && s == next++;
      }
      for (; next < static_cast<int>(from.size()); ++next) size_one_only = size_one_only && from[next].value == 1;
      if (!size_one_only || !node.flip.empty()) {
        error = "a permuting view inside a reduction region is not supported";
      } else if (is_leaf(node.args[0])) {
        // Loads go by the buffer: it is read with the view's shape (a per-channel weight
        // [C] as [C, 1, 1]).
        p = leaf(node.shape);
        auto seen = memo.find(node.args[0]);
        if (seen != memo.end() && seen->second != p) error = "a buffer read in two layouts inside a reduction region";
        memo[node.args[0]] = p;
      } else {
        p = of(node.args[0]);
      }
    } else {
      for (int a : node.args) p = join(p, of(a));
    }
    return memo[id] = p;
  }
};

}  // namespace kforge::codegen::emit
