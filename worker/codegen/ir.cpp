// Shape helpers for the codegen IR (ir.h): numel and launch expressions of shapes.
// Test: ctest -R codegen_lower.
#include "worker/codegen/ir.h"

namespace kforge::codegen {

std::string numel_expr(const Shape& shape) {
  std::string out;
  for (const auto& dim : shape) {
    if (dim.is_literal() && dim.value == 1) continue;
    out += (out.empty() ? "" : "*") + dim.expr();
  }
  return out.empty() ? "1" : out;
}

int64_t numel_value(const Shape& shape) {
  int64_t n = 1;
  for (const auto& dim : shape) n *= dim.value;
  return n;
}

std::vector<int> Graph::users(int id) const {
  std::vector<int> out;
  for (int node_id = 0; node_id < static_cast<int>(nodes.size()); ++node_id)
    for (int a : nodes[node_id].args)
      if (a == id) {
        out.push_back(node_id);
        break;
      }
  return out;
}

bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out) {
  size_t rank = std::max(a.size(), b.size());
  out.assign(rank, Dim::literal(1));
  for (size_t k = 0; k < rank; ++k) {
    const Dim* da = k < rank - a.size() ? nullptr : &a[k - (rank - a.size())];
    const Dim* db = k < rank - b.size() ? nullptr : &b[k - (rank - b.size())];
    if (da && db && da->value != db->value && da->value != 1 && db->value != 1) return false;
    // Prefer the side whose size is not 1; between two equal sizes prefer an input's dim.
    if (!da) out[k] = *db;
    else if (!db) out[k] = *da;
    else if (da->value == 1 && db->value != 1) out[k] = *db;
    else if (db->value == 1 && da->value != 1) out[k] = *da;
    else out[k] = da->axis >= 0 ? *da : *db;
  }
  return true;
}

}  // namespace kforge::codegen
