// kforge_codegen without libtorch (KFORGE_WITH_TORCH=OFF): nothing to lower, so the
// library only names its targets. The real compiler is in emit.cpp and friends.
// Built with -DKFORGE_WITH_TORCH=OFF only; the real compiler's tests: ctest -R codegen.
#include <string>
#include <vector>

namespace kforge::codegen {

std::vector<std::string> supported_targets() { return {"opencl"}; }

}  // namespace kforge::codegen
