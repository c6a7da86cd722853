// The sandboxed probe: output shapes from a real child running libtorch; infinite
// loops, 100 GB allocations and bad source come back as errors while this test
// process keeps going. Run: ctest -R harness_probe.
#include <gtest/gtest.h>

#include "worker/harness/probe.h"

using namespace kforge::harness;
using namespace kforge::spec;

namespace {

OpSpec make_spec(const std::string& source, std::vector<int64_t> shape = {64, 32}) {
  OpSpec spec;
  spec.name = "p";
  spec.source = source;
  spec.inputs.push_back({"x", shape, DType::float32, {DistKind::normal, 0, 1}});
  return spec;
}

}  // namespace

TEST(Probe, ReportsOutputShapesAndDtypes) {
  auto result = probe_op(make_spec("def forward(x):\n    return x.sum(0).to(torch.int64), torch.gelu(x)\n"));
  ASSERT_TRUE(result.ok()) << probe_status_name(result.status) << ": " << result.message;
  ASSERT_EQ(result.outputs.size(), 2u);
  EXPECT_EQ(result.outputs[0].shape, (std::vector<int64_t>{32}));
  EXPECT_EQ(result.outputs[0].dtype, DType::int64);
  EXPECT_EQ(result.outputs[1].shape, (std::vector<int64_t>{64, 32}));
  EXPECT_FALSE(result.scaled);
}

TEST(Probe, ScalesLargeShapesConsistently) {
  OpSpec spec = make_spec("def forward(x, w):\n    return x @ w\n", {8192, 4096});
  spec.inputs.push_back({"w", {4096, 8192}, DType::float32, {DistKind::normal, 0, 1}});
  bool scaled = false;
  auto shapes = probe_shapes(spec, 1 << 20, scaled);
  EXPECT_TRUE(scaled);
  EXPECT_EQ(shapes["x"][1], shapes["w"][0]) << "equal sizes stay equal";
  auto result = probe_op(spec);
  ASSERT_TRUE(result.ok()) << result.message;
  EXPECT_TRUE(result.scaled);
  EXPECT_EQ(result.outputs[0].shape, (std::vector<int64_t>{result.shapes["x"][0], result.shapes["w"][1]}));
  EXPECT_LT(result.shapes["x"][0], 8192);
}

TEST(Probe, CompileErrorNamesTheLine) {
  auto result = probe_op(make_spec("def forward(x):\n    return x + nothing\n"));
  EXPECT_EQ(result.status, ProbeStatus::compile_error) << result.message;
  EXPECT_NE(result.message.find("line 2"), std::string::npos) << result.message;
}

TEST(Probe, InfiniteLoopIsATimeoutAndTheCallerSurvives) {
  ProbeOptions options;
  options.cpu_seconds = 2;
  options.wall_seconds = 10;
  auto result = probe_op(make_spec("def forward(x):\n    while True:\n        x = x + 1\n    return x\n"), options);
  EXPECT_EQ(result.status, ProbeStatus::timeout) << result.message;
  EXPECT_LT(result.wall_ms, 15000) << "stopped at the 10 s wall limit (or sooner, at the 2 s CPU limit)";
}

TEST(Probe, HugeAllocationIsOutOfMemory) {
  auto result = probe_op(make_spec("def forward(x):\n    return torch.zeros([25000000000], dtype=torch.float32) \n"));
  EXPECT_EQ(result.status, ProbeStatus::out_of_memory) << probe_status_name(result.status) << ": " << result.message;
}

TEST(Probe, RuntimeErrorCarriesTheExceptionText) {
  auto result = probe_op(make_spec("def forward(x):\n    return x @ x\n"));
  EXPECT_EQ(result.status, ProbeStatus::runtime_error);
  EXPECT_NE(result.message.find("line 2: RuntimeError: mat1 and mat2 shapes cannot be multiplied"), std::string::npos)
      << result.message;
}
