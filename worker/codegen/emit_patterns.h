// Internal to the teacher's emission: how each value of a reduction region varies over
// the reduced tensor [outer, len, inner] (full, along the row only, per row, scalar). The
// C and Triton reduction emitters read operands where their pattern says.
// Test: ctest -R codegen.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>

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

  Pattern leaf(const Shape& shape) {
    const Shape& ref = stage.reduce_shape;
    if (numel_value(shape) == 1) return Pattern::scalar;
    auto reduced = [&](size_t axis) {
      return std::find(stage.reduce_axes.begin(), stage.reduce_axes.end(), static_cast<int>(axis)) !=
             stage.reduce_axes.end();
    };
    if (shape.size() <= ref.size()) {
      size_t offset = ref.size() - shape.size();
      bool full = true, lane = true, group = true;
      for (size_t axis = 0; axis < ref.size(); ++axis) {
        int64_t v = axis < offset ? 1 : shape[axis - offset].value;
        full = full && v == ref[axis].value;
        lane = lane && (reduced(axis) ? v == ref[axis].value : v == 1);
        group = group && (reduced(axis) ? v == 1 : v == ref[axis].value);
      }
      if (full) return Pattern::full;
      if (lane) return Pattern::lane;
      if (group) return Pattern::group;
      // A tensor without the reduced dims (keepdim=False result) is per-row too.
      if (shape.size() == ref.size() - stage.reduce_axes.size()) {
        bool kept = true;
        size_t pos = 0;
        for (size_t axis = 0; axis < ref.size(); ++axis)
          if (!reduced(axis)) kept = kept && shape[pos++].value == ref[axis].value;
        if (kept) return Pattern::group;
      }
    }
    error = "an operand of shape " + std::to_string(shape.size()) + "-d does not line up with the reduced tensor";
    return Pattern::full;
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
      p = of(node.args[0]);
      bool size_one_only = true;  // squeeze/unsqueeze only: any other view would reorder data
      int kept = 0;
      for (int s : node.src)
        if (s >= 0) size_one_only = size_one_only && s == kept++;
      if (!size_one_only || !node.flip.empty()) error = "a permuting view inside a reduction region is not supported";
    } else {
      for (int a : node.args) p = join(p, of(a));
    }
    return memo[id] = p;
  }
};

}  // namespace kforge::codegen::emit
