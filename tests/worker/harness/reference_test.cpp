// The reference runner on real libtorch: F.x rewriting, compile errors naming the
// line, seeded inputs, multi-output ops. Run: ctest -R harness_reference.
#include <gtest/gtest.h>

#include <cmath>

#include "worker/harness/reference.h"

using namespace kforge::harness;
using namespace kforge::spec;

namespace {

OpSpec make_spec(const std::string& source, std::vector<int64_t> shape = {4, 8}) {
  OpSpec spec;
  spec.name = "t";
  spec.source = source;
  spec.inputs.push_back({"x", shape, DType::float32, {DistKind::normal, 0, 1}});
  return spec;
}

}  // namespace

TEST(NormalizeSource, RewritesFunctionalSpellingsAndKeepsLineNumbers) {
  auto n = normalize_source(
      "import torch\nimport torch.nn.functional as F\ndef forward(x):\n"
      "    return F.gelu(x) + torch.nn.functional.relu(x) + nn.functional.silu(x) + G.F.tanh(x)\n");
  EXPECT_TRUE(n.error.empty()) << n.error;
  EXPECT_NE(n.source.find("torch.gelu(x) + torch.relu(x) + torch.silu(x)"), std::string::npos) << n.source;
  EXPECT_NE(n.source.find("G.F.tanh(x)"), std::string::npos) << "only a bare F. prefix is rewritten";
  EXPECT_EQ(n.source.substr(0, 2), "\n\n") << "import lines become blank lines";
}

TEST(NormalizeSource, SaysWhichSpellingWorksForNamesWithoutBuiltin) {
  auto n = normalize_source("def forward(x):\n    return F.normalize(x, dim=1)\n");
  EXPECT_NE(n.error.find("line 2"), std::string::npos) << n.error;
  EXPECT_NE(n.error.find("torch.norm"), std::string::npos) << n.error;
}

TEST(Reference, RunsRewrittenSourceAndMatchesHandComputedGelu) {
  std::string error;
  auto ref = Reference::compile(make_spec("import torch.nn.functional as F\ndef forward(x):\n    return F.relu(x) * 2\n"),
                                error);
  ASSERT_TRUE(ref) << error;
  auto inputs = make_inputs(make_spec(""), {}, 7);
  auto run = ref->run(inputs);
  ASSERT_TRUE(run.error.empty()) << run.error;
  ASSERT_EQ(run.outputs.size(), 1u);
  EXPECT_EQ(run.outputs[0].shape, (std::vector<int64_t>{4, 8}));
  for (int64_t idx = 0; idx < 32; ++idx) {
    double x = inputs[0].value_at(idx);
    EXPECT_FLOAT_EQ(run.outputs[0].value_at(idx), x > 0 ? 2 * x : 0.0);
  }
}

TEST(Reference, CompileErrorNamesTheLine) {
  std::string error;
  auto ref = Reference::compile(make_spec("def forward(x):\n    y = x + 1\n    return undefined_thing(y)\n"), error);
  EXPECT_FALSE(ref);
  EXPECT_NE(error.find("line 3"), std::string::npos) << error;
  EXPECT_NE(error.find("undefined_thing"), std::string::npos) << error;
}

TEST(Reference, UnknownFunctionalNameSaysWhatWorks) {
  std::string error;
  auto ref = Reference::compile(make_spec("def forward(x):\n    return F.no_such_op(x)\n"), error);
  EXPECT_FALSE(ref);
  EXPECT_NE(error.find("F.no_such_op"), std::string::npos) << error;
  EXPECT_NE(error.find("torch."), std::string::npos) << error;
}

TEST(Reference, ArityMismatchAndMissingForwardAreClear) {
  std::string error;
  EXPECT_FALSE(Reference::compile(make_spec("def forward(x, y):\n    return x + y\n"), error));
  EXPECT_NE(error.find("takes 2 arguments but the op declares 1"), std::string::npos) << error;
  EXPECT_FALSE(Reference::compile(make_spec("def fwd(x):\n    return x\n"), error));
  EXPECT_NE(error.find("forward"), std::string::npos) << error;
}

TEST(Reference, RuntimeErrorIsAValue) {
  std::string error;
  auto spec = make_spec("def forward(x):\n    return x @ x\n");  // 4x8 @ 4x8 cannot multiply
  auto ref = Reference::compile(spec, error);
  ASSERT_TRUE(ref) << error;
  auto run = ref->run(make_inputs(spec, {}, 1));
  EXPECT_FALSE(run.error.empty());
  EXPECT_TRUE(run.outputs.empty());
}

TEST(Reference, TupleOutputsAndSeededInputs) {
  auto spec = make_spec("def forward(x):\n    return torch.softmax(x, -1), x.sum(-1)\n", {3, 5});
  std::string error;
  auto ref = Reference::compile(spec, error);
  ASSERT_TRUE(ref) << error;
  auto a = make_inputs(spec, {}, 42), b = make_inputs(spec, {}, 42), c = make_inputs(spec, {}, 43);
  EXPECT_EQ(a[0].data, b[0].data) << "same seed, same inputs";
  EXPECT_NE(a[0].data, c[0].data) << "new seed, new inputs";
  auto run = ref->run(a);
  ASSERT_TRUE(run.error.empty()) << run.error;
  ASSERT_EQ(run.outputs.size(), 2u);
  EXPECT_EQ(run.outputs[1].shape, (std::vector<int64_t>{3}));
  double row_sum = 0;
  for (int64_t col = 0; col < 5; ++col) row_sum += run.outputs[0].value_at(col);
  EXPECT_NEAR(row_sum, 1.0, 1e-6);
}

TEST(Reference, DistributionsAndDtypes) {
  OpSpec spec = make_spec("def forward(x, i):\n    return x\n", {1000});
  spec.inputs[0].dist = {DistKind::uniform, 2.0, 3.0};
  spec.inputs.push_back({"i", {1000}, DType::int64, {DistKind::randint, -3, 4}});
  auto inputs = make_inputs(spec, {{"x", {10, 10}}}, 5);
  EXPECT_EQ(inputs[0].shape, (std::vector<int64_t>{10, 10})) << "shape set overrides the main shape";
  for (int64_t idx = 0; idx < 100; ++idx) {
    EXPECT_GE(inputs[0].value_at(idx), 2.0);
    EXPECT_LT(inputs[0].value_at(idx), 3.0);
  }
  EXPECT_EQ(inputs[1].data.size(), 8000u);
  bool saw_negative = false;
  for (int64_t idx = 0; idx < 1000; ++idx) {
    double v = inputs[1].value_at(idx);
    EXPECT_GE(v, -3);
    EXPECT_LT(v, 4);
    saw_negative |= v < 0;
  }
  EXPECT_TRUE(saw_negative);
}

TEST(NormalizeSource, DtypeConstantsBecomeScalarTypeCodes) {
  auto n = normalize_source("def forward(x):\n    return x.to(torch.float16) + torch.zeros([2], dtype=torch.int64)\n");
  EXPECT_NE(n.source.find("x.to(5) + torch.zeros([2], dtype=4)"), std::string::npos) << n.source;
  auto spec = make_spec("def forward(x):\n    return x.to(torch.float16)\n");
  std::string error;
  auto ref = Reference::compile(spec, error);
  ASSERT_TRUE(ref) << error;
  auto run = ref->run(make_inputs(spec, {}, 3));
  ASSERT_TRUE(run.error.empty()) << run.error;
  EXPECT_EQ(run.outputs[0].dtype, DType::float16);
}
