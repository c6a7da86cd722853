// write_sft_pairs behind tests/support/sft_pairs.h (used by jobs_training_test and
// train_distributed_test).
#include "tests/support/sft_pairs.h"

#include <fstream>

#include <nlohmann/json.hpp>

namespace kforge::test {

std::string write_sft_pairs(const std::string& path, int count, int body_lines) {
  std::ofstream out(path);
  for (int pair_idx = 0; pair_idx < count; ++pair_idx) {
    std::string name = "op" + std::to_string(pair_idx % 12);
    std::string completion = "// kforge-launch: " + name + " grid=cdiv(numel(x),256) block=256 args=x,out,numel(x)\n"
                             "__kernel void " + name + "(__global const float* x, __global float* out, int n) {\n";
    for (int line_idx = 0; line_idx < body_lines; ++line_idx) {
      completion += "  int i" + std::to_string(line_idx) + " = get_global_id(0); if (i" + std::to_string(line_idx) +
                    " < n) out[i" + std::to_string(line_idx) + "] = x[i" + std::to_string(line_idx) + "] * " +
                    std::to_string(pair_idx + line_idx) + ".0f;\n";
    }
    completion += "}\n";
    std::string prompt = "### op " + name + "\n### target opencl\n### inputs\nx: float32[" +
                         std::to_string(64 + pair_idx) + "]\n### source\ndef forward(x: Tensor) -> Tensor:\n    return x * " +
                         std::to_string(pair_idx) + "\n### kernel\n";
    out << nlohmann::json{{"prompt", prompt}, {"completion", completion}, {"op", name}}.dump() << "\n";
  }
  return path;
}

}  // namespace kforge::test
