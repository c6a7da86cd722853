// Autotune through the harness Checker: on a small op every tried schedule is
// checked in the sandbox (trials, extra shapes, timing) and the fastest correct
// one wins; an op the teacher cannot lower says why. Run: ctest -R codegen_autotune.
#include <gtest/gtest.h>

#include "worker/codegen/autotune.h"
#include "worker/harness/devices.h"

using namespace kforge;

namespace {

spec::OpSpec small_op(const std::string& source, const std::vector<int64_t>& shape) {
  spec::OpSpec spec;
  spec.name = "small";
  spec.source = source;
  for (const char* name : {"x", "y"}) {
    spec::InputSpec in;
    in.name = name;
    in.shape = shape;
    spec.inputs.push_back(in);
    if (source.find("y: Tensor") == std::string::npos) break;
  }
  spec::ShapeSet odd;
  for (const auto& in : spec.inputs) odd[in.name] = {7, 33};
  spec.extra_shapes.push_back(odd);
  return spec;
}

harness::CheckOptions quick_options() {
  harness::CheckOptions options;
  options.trials = 2;
  options.time_budget_s = 0.05;
  return options;
}

}  // namespace

TEST(CodegenAutotune, KeepsTheFastestCorrectVariant) {
  if (harness::list_devices().empty()) GTEST_SKIP() << "no OpenCL device";
  auto spec = small_op("def forward(x: Tensor, y: Tensor) -> Tensor:\n    return torch.silu(x) * y\n", {256, 96});
  auto result = codegen::autotune(spec, quick_options(), 4);
  ASSERT_TRUE(result.ok()) << result.unsupported;
  ASSERT_EQ(result.variants.size(), 4u);
  double fastest = 1e30;
  for (const auto& v : result.variants) {
    EXPECT_EQ(v.outcome, "correct") << v.schedule.label() << ": " << v.message;
    if (v.outcome == "correct") fastest = std::min(fastest, v.kernel_ms);
  }
  EXPECT_DOUBLE_EQ(result.kernel_ms, fastest);
  EXPECT_GT(result.speedup, 0.0);
  EXPECT_NE(result.program.find("kforge-launch"), std::string::npos);
}

TEST(CodegenAutotune, RowReductionVariantsPassTheChecker) {
  if (harness::list_devices().empty()) GTEST_SKIP() << "no OpenCL device";
  auto spec = small_op("def forward(x: Tensor) -> Tensor:\n    return torch.softmax(x, -1)\n", {64, 200});
  auto result = codegen::autotune(spec, quick_options(), 0);
  ASSERT_TRUE(result.ok()) << result.unsupported;
  for (const auto& v : result.variants) EXPECT_EQ(v.outcome, "correct") << v.schedule.label() << ": " << v.message;
}

TEST(CodegenAutotune, ScanAndArgReduceVariantsPassTheChecker) {
  if (harness::list_devices().empty()) GTEST_SKIP() << "no OpenCL device";
  for (const char* source : {"def forward(x: Tensor) -> Tensor:\n    return torch.relu(torch.cumsum(x * 2.0, 1))\n",
                             "def forward(x: Tensor) -> Tensor:\n    return torch.cumsum(x, 0)\n",
                             "def forward(x: Tensor) -> Tensor:\n    return torch.argmin(x, 0, True)\n"}) {
    auto spec = small_op(source, {64, 200});
    auto result = codegen::autotune(spec, quick_options(), 3);
    ASSERT_TRUE(result.ok()) << source << result.unsupported;
    for (const auto& v : result.variants) EXPECT_EQ(v.outcome, "correct") << v.schedule.label() << ": " << v.message;
  }
}

TEST(CodegenAutotune, UnsupportedOpSaysWhy) {
  auto spec = small_op("def forward(x: Tensor) -> Tensor:\n    return torch.logcumsumexp(x, 1)\n", {8, 8});
  auto result = codegen::autotune(spec, quick_options(), 2);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.status, codegen::AutotuneStatus::unsupported);
  EXPECT_NE(result.unsupported.find("aten::logcumsumexp"), std::string::npos) << result.unsupported;
}
