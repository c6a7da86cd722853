// Only the small version header: the heavy torch headers stay out of this TU.
#include "worker/policy/policy.h"

#include <torch/version.h>

namespace kforge::policy {

std::string torch_version() { return TORCH_VERSION; }

}  // namespace kforge::policy
