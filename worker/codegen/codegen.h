// Teacher compiler (TorchScript graph -> kernel programs): planned in the op
// suite and teacher compiler issue. Lists the targets it will emit.
#pragma once

#include <string>
#include <vector>

namespace kforge::codegen {

//! Kernel program targets the teacher can emit.
std::vector<std::string> supported_targets();

}  // namespace kforge::codegen
