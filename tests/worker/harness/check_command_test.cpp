// `kforge-worker check` as a user runs it: the real binary, an op file and a kernel
// file, JSON on stdout and the exit status. Run: ctest -R harness_check_command.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/subprocess.h"
#include "tests/support/processes.h"
#include "tests/worker/harness/harness_fixtures.h"

using namespace kforge::harness::testing;

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

const char* kOp = R"({"name": "silu_mul",
  "source": "import torch.nn.functional as F\ndef forward(x, y):\n    return F.silu(x) * y\n",
  "inputs": [{"name": "x", "shape": [128, 64]}, {"name": "y", "shape": [128, 64], "dist": {"uniform": [-1, 1]}}],
  "extra_shapes": [{"x": [7, 5], "y": [7, 5]}], "tolerance": {"atol": 1e-5, "rtol": 1e-5}})";

}  // namespace

TEST(CheckCommand, PrintsCorrectResultJsonAndExitsZero) {
  REQUIRE_OPENCL();
  auto [status, output] = kforge::run_command({kforge::test::bin_path("kforge-worker"), "check",
                                               write_temp("op.json", kOp), write_temp("k.cl", kSiluMulKernel),
                                               "--trials", "2", "--time-budget", "0.1"});
  ASSERT_EQ(status, 0) << output;
  auto result = nlohmann::json::parse(output.substr(output.find('{')));
  EXPECT_EQ(result["outcome"], "correct");
  EXPECT_EQ(result["trials_passed"], 2 + 1 + 1 + 1);  // + the unpublished-shapes trial (issue 14)
  EXPECT_GT(result["kernel"]["median_ms"].get<double>(), 0);
  EXPECT_GT(result["baseline"]["median_ms"].get<double>(), 0);
  EXPECT_NE(result["environment"]["baseline"].get<std::string>().find("caching allocator"), std::string::npos)
      << "eager's outputs come from the caching allocator unless --baseline-allocator default";
}

TEST(CheckCommand, WrongKernelExitsOneWithMismatch) {
  REQUIRE_OPENCL();
  std::string zeros =
      "// kforge-launch: zeros grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x)\n"
      "__kernel void zeros(__global const float* x, __global const float* y, __global float* out, int n) {\n"
      "  int i = get_global_id(0);\n  if (i < n) out[i] = 0.0f;\n}\n";
  auto [status, output] = kforge::run_command({kforge::test::bin_path("kforge-worker"), "check",
                                               write_temp("op2.json", kOp), write_temp("zeros.cl", zeros), "--no-time"});
  EXPECT_EQ(status, 1) << output;
  auto result = nlohmann::json::parse(output.substr(output.find('{')));
  EXPECT_EQ(result["outcome"], "wrong_output") << output;
  EXPECT_EQ(result["mismatch"]["actual"], 0.0);
}

TEST(CheckCommand, BadOpAndUsageExitTwoWithAClearMessage) {
  auto [status, output] = kforge::run_command({kforge::test::bin_path("kforge-worker"), "check",
                                               write_temp("bad.json", R"({"name": "x", "inputs": []})"),
                                               write_temp("k2.cl", kSiluMulKernel)});
  EXPECT_EQ(status, 2);
  EXPECT_NE(output.find("source"), std::string::npos) << output;
  auto [usage_status, usage] = kforge::run_command({kforge::test::bin_path("kforge-worker"), "check"});
  EXPECT_EQ(usage_status, 2);
  EXPECT_NE(usage.find("usage: kforge-worker check"), std::string::npos) << usage;
}

TEST(CheckCommand, UnknownSparePolicyExitsTwoNamingIt) {
  auto [status, output] = kforge::run_command({kforge::test::bin_path("kforge-worker"), "check",
                                               write_temp("op3.json", kOp), write_temp("k3.cl", kSiluMulKernel),
                                               "--spare-policy", "eager"});
  EXPECT_EQ(status, 2) << output;
  EXPECT_NE(output.find("unknown spare policy 'eager' (settle, gate or overlap)"), std::string::npos) << output;
}

TEST(CheckCommand, UnknownBaselineAllocatorExitsTwoNamingIt) {
  auto [status, output] = kforge::run_command({kforge::test::bin_path("kforge-worker"), "check",
                                               write_temp("op4.json", kOp), write_temp("k4.cl", kSiluMulKernel),
                                               "--baseline-allocator", "jemalloc"});
  EXPECT_EQ(status, 2) << output;
  EXPECT_NE(output.find("--baseline-allocator: is 'jemalloc'; use caching or default"), std::string::npos) << output;
}
