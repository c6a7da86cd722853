// Policy model library (transformer, tokenizer, safetensors, sampler): planned in
// the policy-model issue. For now it reports the libtorch it was built against.
#pragma once

#include <string>

namespace kforge::policy {

//! The libtorch version this library was compiled against, e.g. "1.13.1".
std::string torch_version();

}  // namespace kforge::policy
