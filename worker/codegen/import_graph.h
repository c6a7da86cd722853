// TorchScript op -> codegen IR (see ir.h). The only part of the teacher compiler
// that includes libtorch. Test: ctest -R codegen_lower.
#pragma once

#include <string>

#include "worker/codegen/ir.h"
#include "spec/op_spec.h"

namespace kforge::codegen {

//! The op's graph as IR, or why the teacher cannot express it.
struct ImportResult {
  Graph graph;
  std::string unsupported;  //!< empty on success, else e.g. "aten::cumsum has no lowering in the teacher compiler"
  //! True when `graph` is valid.
  bool ok() const { return unsupported.empty(); }
};

//! Compiles spec.source with libtorch, inlines it and maps every aten node to IR.
ImportResult import_graph(const spec::OpSpec& spec);

}  // namespace kforge::codegen
