// tools/import_kernelbench.py on KernelBench-format fixtures (tests/tools/problems/):
// good problems become ops whose source libtorch's C++ frontend compiles and runs,
// bad ones exit 2 with a message naming the problem. Run: ctest -R tools_import.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/jit.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/subprocess.h"

using nlohmann::json;

namespace {

const std::string kScript = std::string(KFORGE_SOURCE_DIR) + "/tools/import_kernelbench.py";

std::string problem(const std::string& name) {
  return std::string(KFORGE_SOURCE_DIR) + "/tests/tools/problems/" + name + ".py";
}

// Debian's python3-torch lives under /usr/bin/python3; a pyenv python3 earlier in
// PATH may lack torch, so try that one first.
const std::string& python_with_torch() {
  static std::string found = [] {
    for (std::string candidate : {"/usr/bin/python3", "python3"}) {
      auto [status, out] = kforge::run_command({candidate, "-c", "import torch, torch.fx"});
      if (status == 0) return candidate;
    }
    return std::string();
  }();
  return found;
}

struct Imported {
  int status = -1;
  std::string output;
};

Imported import(const std::string& name) {
  auto [status, out] = kforge::run_command({python_with_torch(), kScript, problem(name)});
  return {status, out};
}

// Inputs per the op's declared shapes and dists, as the harness would make them.
std::vector<c10::IValue> make_inputs(const json& op) {
  std::vector<c10::IValue> args;
  for (const auto& input : op["inputs"]) {
    auto shape = input["shape"].get<std::vector<int64_t>>();
    const json& dist = input["dist"];
    if (dist.is_object() && dist.contains("randint"))
      args.emplace_back(at::randint(dist["randint"][0].get<int64_t>(), dist["randint"][1].get<int64_t>(), shape,
                                    at::TensorOptions().dtype(at::kLong)));
    else
      args.emplace_back(at::randn(shape));
  }
  return args;
}

at::Tensor run_op(const json& op) {
  auto unit = torch::jit::compile(op["source"].get<std::string>());
  return unit->get_function("forward")(make_inputs(op)).toTensor();
}

class ImportKernelBench : public ::testing::Test {
 protected:
  void SetUp() override {
    if (python_with_torch().empty()) GTEST_SKIP() << "no python3 with torch (apt-get install python3-torch)";
  }
};

}  // namespace

TEST_F(ImportKernelBench, LinearReluBecomesLinearBuiltinWithInitDistributions) {
  auto result = import("linear_relu");
  ASSERT_EQ(result.status, 0) << result.output;
  json op = json::parse(result.output);
  EXPECT_EQ(op["name"], "linear_relu");
  std::string source = op["source"];
  EXPECT_NE(source.find("torch.linear(x, fc_weight, fc_bias)"), std::string::npos) << source;
  EXPECT_NE(source.find("torch.relu("), std::string::npos) << source;
  ASSERT_EQ(op["inputs"].size(), 3u);
  EXPECT_EQ(op["inputs"][0]["dist"], "normal");
  EXPECT_EQ(op["inputs"][1]["name"], "fc_weight");
  EXPECT_EQ(op["inputs"][1]["shape"], json({96, 128}));
  // nn.Linear init: U(-1/sqrt(128), 1/sqrt(128)).
  EXPECT_NEAR(op["inputs"][1]["dist"]["uniform"][1].get<double>(), 0.0883883, 1e-5);
  ASSERT_FALSE(op["extra_shapes"].empty());
  EXPECT_EQ(op["extra_shapes"][0]["x"][0].get<int>() % 2, 1) << "extra batch sizes are odd";
  auto out = run_op(op);
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{64, 96}));
  EXPECT_GE(out.min().item<float>(), 0.0f) << "relu output";
}

TEST_F(ImportKernelBench, FunctionalGeluAndLayerNormCompileInCpp) {
  auto result = import("layernorm_gelu_residual");
  ASSERT_EQ(result.status, 0) << result.output;
  json op = json::parse(result.output);
  std::string source = op["source"];
  EXPECT_EQ(source.find("F."), std::string::npos) << "F. spellings must be rewritten: " << source;
  EXPECT_NE(source.find("torch.layer_norm("), std::string::npos) << source;
  EXPECT_NE(source.find("torch.gelu("), std::string::npos) << source;
  EXPECT_EQ(op["inputs"][1]["dist"], "uniform") << "r is drawn with torch.rand";
  // LayerNorm weight starts at exactly 1: spread so a kernel ignoring it fails.
  auto weight_dist = op["inputs"][2]["dist"]["uniform"];
  EXPECT_LT(weight_dist[0].get<double>(), 1.0);
  EXPECT_GT(weight_dist[1].get<double>(), 1.0);
  EXPECT_EQ(run_op(op).sizes().vec(), (std::vector<int64_t>{32, 256}));
}

TEST_F(ImportKernelBench, InitInputsBecomeConstantsAndIntInputsRandint) {
  auto softmax = import("scaled_softmax");
  ASSERT_EQ(softmax.status, 0) << softmax.output;
  json op = json::parse(softmax.output);
  EXPECT_NE(op["source"].get<std::string>().find("0.125"), std::string::npos);
  auto out = run_op(op);
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{4, 64, 48}));
  EXPECT_NEAR(out.sum(-1).mean().item<float>(), 1.0f, 1e-5) << "rows of a softmax sum to 1";

  auto emb = import("embedding_sum");
  ASSERT_EQ(emb.status, 0) << emb.output;
  json emb_op = json::parse(emb.output);
  EXPECT_EQ(emb_op["inputs"][0]["dtype"], "int64");
  auto range = emb_op["inputs"][0]["dist"]["randint"];
  EXPECT_GE(range[0].get<int>(), 0);
  EXPECT_LE(range[1].get<int>(), 1000);
  EXPECT_EQ(run_op(emb_op).sizes().vec(), (std::vector<int64_t>{8, 64}));
}

TEST_F(ImportKernelBench, RefusesWhatItCannotConvertWithAReason) {
  struct Case {
    const char* name;
    const char* reason;
  };
  for (auto c : {Case{"bad_control_flow", "control flow"}, Case{"bad_module", "LSTM"},
                 Case{"bad_scalar_input", "get_inputs()[1] is a int"}, Case{"bad_missing", "lacks get_init_inputs"}}) {
    auto result = import(c.name);
    EXPECT_EQ(result.status, 2) << c.name << ": " << result.output;
    EXPECT_NE(result.output.find(c.reason), std::string::npos) << c.name << ": " << result.output;
    EXPECT_EQ(result.output.find("Traceback"), std::string::npos) << c.name << " leaked a traceback";
  }
}
