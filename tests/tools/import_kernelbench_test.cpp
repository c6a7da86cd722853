// tools/import_kernelbench.py on KernelBench-format fixtures (tests/tools/problems/):
// good problems become ops whose source libtorch's C++ frontend compiles and runs,
// bad ones exit 2 with a message naming the problem; bench/kernelbench/run.py tallies a
// level of them. Run: ctest -R tools_import.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/jit.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
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

// Inputs per the op's declared shapes (or one of its extra_shapes entries) and dists,
// as the harness would make them.
std::vector<c10::IValue> make_inputs(const json& op, const json& shapes = json()) {
  std::vector<c10::IValue> args;
  for (const auto& input : op["inputs"]) {
    auto shape = (shapes.is_object() ? shapes[input["name"].get<std::string>()] : input["shape"])
                     .get<std::vector<int64_t>>();
    const json& dist = input["dist"];
    if (input["dtype"] == "bool")
      args.emplace_back(at::randint(0, 2, shape, at::TensorOptions().dtype(at::kLong)).to(at::kBool));
    else if (dist.is_object() && dist.contains("randint"))
      args.emplace_back(at::randint(dist["randint"][0].get<int64_t>(), dist["randint"][1].get<int64_t>(), shape,
                                    at::TensorOptions().dtype(at::kLong)));
    else
      args.emplace_back(at::randn(shape));
  }
  return args;
}

// The op a fixture converts to; null (and a test failure naming why) when it does not.
json import_op(const std::string& name) {
  auto result = import(name);
  EXPECT_EQ(result.status, 0) << name << ": " << result.output;
  return result.status == 0 ? json::parse(result.output) : json();
}

at::Tensor run_op(const json& op, const json& shapes = json()) {
  auto unit = torch::jit::compile(op["source"].get<std::string>());
  return unit->get_function("forward")(make_inputs(op, shapes)).toTensor();
}

std::vector<std::string> input_names(const json& op) {
  std::vector<std::string> names;
  for (const auto& input : op["inputs"]) names.push_back(input["name"]);
  return names;
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
                 Case{"bad_list_input", "get_inputs()[1] is a list"}, Case{"bad_missing", "lacks get_init_inputs"}}) {
    auto result = import(c.name);
    EXPECT_EQ(result.status, 2) << c.name << ": " << result.output;
    EXPECT_NE(result.output.find(c.reason), std::string::npos) << c.name << ": " << result.output;
    EXPECT_EQ(result.output.find("Traceback"), std::string::npos) << c.name << " leaked a traceback";
  }
}

TEST_F(ImportKernelBench, ScalarInputsBecomeConstants) {
  json op = import_op("scalar_input");
  ASSERT_FALSE(op.is_null());
  std::string source = op["source"];
  EXPECT_EQ(input_names(op), std::vector<std::string>{"x"}) << "n and scale are not op inputs";
  EXPECT_NE(source.find("(x * 3)"), std::string::npos) << source;
  EXPECT_NE(source.find("0.5"), std::string::npos) << source;
  EXPECT_EQ(run_op(op).sizes().vec(), (std::vector<int64_t>{4, 4}));
}

// Two 1 GiB inputs and a 4 GiB result: traced on meta tensors, the op keeps the real
// shapes; the checkable small scale comes back as extra_shapes, where the op runs here.
TEST_F(ImportKernelBench, GpuSizedProblemKeepsRealShapesAndTransposeAttribute) {
  json op = import_op("gpu_sized_transpose_matmul");
  ASSERT_FALSE(op.is_null());
  EXPECT_NE(op["source"].get<std::string>().find("A.t()"), std::string::npos) << op["source"];
  EXPECT_EQ(op["inputs"][0]["shape"], json({16384, 16384}));
  EXPECT_EQ(op["inputs"][1]["shape"], json({16384, 16384}));
  ASSERT_FALSE(op["extra_shapes"].empty());
  const json& small = op["extra_shapes"][0];
  EXPECT_LT(small["A"][0].get<int64_t>() * small["A"][1].get<int64_t>(), int64_t{1} << 21);
  auto out = run_op(op, small);
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{small["A"][1].get<int64_t>(), small["B"][1].get<int64_t>()}));
  EXPECT_GE(out.min().item<float>(), 0.0f) << "relu output";
}

TEST_F(ImportKernelBench, ConvBatchNormPoolingAndDropoutConvert) {
  json op = import_op("conv_bn_pool");
  ASSERT_FALSE(op.is_null());
  std::string source = op["source"];
  for (const char* call : {"torch.conv2d(x, conv_weight, conv_bias, [1, 1], [1, 1], [1, 1], 1)",
                           "torch.batch_norm(conv, bn_weight, bn_bias, None, None, True", "torch.hardswish(",
                           "torch.max_pool2d(", "torch.adaptive_avg_pool2d(pool, [1, 1])"})
    EXPECT_NE(source.find(call), std::string::npos) << call << " in " << source;
  EXPECT_EQ(source.find("dropout"), std::string::npos) << "dropout is the identity: " << source;
  EXPECT_EQ(input_names(op), (std::vector<std::string>{"x", "conv_weight", "conv_bias", "bn_weight", "bn_bias"}));
  // Conv2d init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = 3 * 3 * 3.
  EXPECT_NEAR(op["inputs"][1]["dist"]["uniform"][1].get<double>(), 1.0 / std::sqrt(27.0), 1e-5);
  auto out = run_op(op);
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{128, 16}));
}

TEST_F(ImportKernelBench, TransposedConvInstanceAndGroupNormAvgPoolConvert) {
  json op = import_op("norms_transposed_conv");
  ASSERT_FALSE(op.is_null());
  std::string source = op["source"];
  for (const char* call : {"torch.conv_transpose3d(x, up_weight, up_bias, [2, 2, 2], [1, 1, 1], [1, 1, 1], 1",
                           "torch.instance_norm(up, inorm_weight, inorm_bias", "torch.group_norm(inorm, 4,",
                           "torch.avg_pool3d(gnorm, [2, 2, 2]"})
    EXPECT_NE(source.find(call), std::string::npos) << call << " in " << source;
  // Transposed conv: fan_in = weight.shape[1] * 27 = 16 * 27 (torch.nn.init's rule).
  EXPECT_NEAR(op["inputs"][1]["dist"]["uniform"][1].get<double>(), 1.0 / std::sqrt(16.0 * 27.0), 1e-5);
  auto out = run_op(op);
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{4, 16, 6, 10, 10}));
}

// KernelBench's losses become the builtins they are made of; libtorch's own loss functions,
// run here on the same inputs, give the same number (the importer checked against Python's).
TEST_F(ImportKernelBench, LossesBecomeTheBuiltinsTheyAreMadeOf) {
  json op = import_op("losses");
  ASSERT_FALSE(op.is_null());
  const std::string source = op["source"];
  for (const char* call : {"torch.gather(torch.log_softmax(predictions, 1), 1, labels.unsqueeze(1))", "torch.where(",
                           "torch.norm(predictions - negative + 1e-06, 2.0, [-1], False)", "torch.clamp_min("})
    EXPECT_NE(source.find(call), std::string::npos) << call << " in " << source;
  for (const char* builtin : {"torch.smooth_l1_loss", "torch.kl_div", "torch.cross_entropy", "torch.triplet_margin"})
    EXPECT_EQ(source.find(builtin), std::string::npos) << builtin << " is decomposed: " << source;
  EXPECT_EQ(op["inputs"][2]["dtype"], "int64");
  for (const json& shapes : {json(), op["extra_shapes"].at(0)}) {
    auto inputs = make_inputs(op, shapes);
    auto unit = torch::jit::compile(source);
    at::Tensor got = unit->get_function("forward")(inputs).toTensor();
    at::Tensor p = inputs[0].toTensor(), t = inputs[1].toTensor(), labels = inputs[2].toTensor(),
               negative = inputs[3].toTensor();
    at::Tensor expected = at::smooth_l1_loss(p, t, at::Reduction::Mean, 0.5) +
                          at::kl_div(at::log(at::softmax(p, 1)), at::softmax(t, 1), at::Reduction::Sum) / p.size(0) +
                          at::cross_entropy_loss(p, labels) +
                          at::triplet_margin_loss(p, t, negative, 0.75, 2, 1e-6, false, at::Reduction::Mean);
    EXPECT_NEAR(got.item<double>(), expected.item<double>(), 1e-4 * (1 + std::abs(expected.item<double>())))
        << shapes.dump();
  }
}

// scaled_dot_product_attention as softmax(q k^T / sqrt(d)) v, `b, h, s, d = x.shape` as
// sizes, and torch.min against torch.tensor(0.25, device=x.device) as clamp_max.
TEST_F(ImportKernelBench, AttentionShapeUnpackingAndDeviceConstantsConvert) {
  json op = import_op("attention_unpack");
  ASSERT_FALSE(op.is_null());
  const std::string source = op["source"];
  EXPECT_NE(source.find("torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * 0.3535"), std::string::npos) << source;
  EXPECT_NE(source.find("torch.clamp_max("), std::string::npos) << source;
  auto inputs = make_inputs(op);
  auto unit = torch::jit::compile(source);
  at::Tensor got = unit->get_function("forward")(inputs).toTensor();
  at::Tensor q = inputs[0].toTensor(), k = inputs[1].toTensor(), v = inputs[2].toTensor();
  at::Tensor attention = at::matmul(at::softmax(at::matmul(q, k.transpose(-2, -1)) / std::sqrt(8.0), -1), v);
  at::Tensor expected = attention.transpose(1, 2).reshape({2, 16, 32}).clamp_max(0.25);
  EXPECT_TRUE(at::allclose(got, expected, 1e-5, 1e-5)) << (got - expected).abs().max().item<double>();
}

// A bool mask is an input drawn as 0 / 1; a 32768 x 32768 problem whose broadcast needs
// batch_size == input_shape[0] scales down with the two halved together.
TEST_F(ImportKernelBench, BoolMaskAndSizesThatHalveTogether) {
  json op = import_op("masked_hinge");
  ASSERT_FALSE(op.is_null());
  EXPECT_EQ(op["inputs"][0]["shape"], json({16384, 16384})) << "at the op format's 2^28-element limit";
  EXPECT_EQ(op["inputs"][1]["shape"], json({16384}));
  EXPECT_EQ(op["inputs"][2]["dtype"], "bool");
  EXPECT_EQ(op["inputs"][2]["dist"], json({{"randint", {0, 2}}}));
  ASSERT_FALSE(op["extra_shapes"].empty());
  at::Tensor out = run_op(op, op["extra_shapes"][0]);
  EXPECT_EQ(out.dim(), 0);
  EXPECT_GT(out.item<float>(), 0.0f);
}

TEST_F(ImportKernelBench, FunctionalAdaptivePoolGetsASizePerSpatialDim) {
  json op = import_op("functional_pool");
  ASSERT_FALSE(op.is_null());
  EXPECT_NE(op["source"].get<std::string>().find("torch.adaptive_avg_pool2d(relu, [1, 1])"), std::string::npos)
      << op["source"];
  EXPECT_EQ(run_op(op).sizes().vec(), (std::vector<int64_t>{4, 8}));
}

TEST_F(ImportKernelBench, EinsumsThatAreOneMatmulBecomeMatmul) {
  json op = import_op("einsum_matmul");
  ASSERT_FALSE(op.is_null());
  const std::string source = op["source"];
  EXPECT_NE(source.find("torch.matmul(a, b.transpose(-2, -1))"), std::string::npos) << source;
  EXPECT_NE(source.find("torch.matmul(a, c)"), std::string::npos) << source;
  auto inputs = make_inputs(op);
  at::Tensor got = torch::jit::compile(source)->get_function("forward")(inputs).toTensor();
  at::Tensor a = inputs[0].toTensor(), b = inputs[1].toTensor(), c = inputs[2].toTensor();
  at::Tensor expected = at::einsum("bij,bkj->bik", {a, b}) + at::einsum("bik,kj->bij", {a, c});
  EXPECT_TRUE(at::allclose(got, expected, 1e-5, 1e-5));
}

// bench/kernelbench/run.py over a level made of this folder's fixtures: counts, the tallied
// refusal and lowering reasons, and the per-problem import cache on a second run.
TEST_F(ImportKernelBench, BenchRunnerTalliesALevel) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("kforge-kb-run-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "KernelBench" / "level1");
  int number = 1;
  for (const char* name :
       {"linear_relu", "conv_bn_pool", "bad_module", "bad_list_input", "tril_matmul", "logcumsumexp"})
    fs::copy_file(problem(name), root / "KernelBench" / "level1" / (std::to_string(number++) + "_" + name + ".py"));
  std::vector<std::string> cmd = {python_with_torch(),
                                  std::string(KFORGE_SOURCE_DIR) + "/bench/kernelbench/run.py",
                                  "--kernelbench",
                                  root.string(),
                                  "--levels",
                                  "1",
                                  "--lower",
                                  "--bin",
                                  KFORGE_BIN_DIR,
                                  "--work",
                                  (root / "work").string(),
                                  "--out",
                                  (root / "out.json").string()};
  auto [status, out] = kforge::run_command(cmd);
  ASSERT_EQ(status, 0) << out;
  std::ifstream in(root / "out.json");
  json result = json::parse(in);
  const json& level = result["level1"];
  EXPECT_EQ(level["problems"], 6);
  EXPECT_EQ(level["imported"], 4) << level.dump(1);
  // linear_relu, conv_bn_pool (conv2d, batch norm, max and global average pooling) and
  // tril(a @ b) lower; logcumsumexp has no teacher lowering.
  EXPECT_EQ(level["lowered"], 3) << level.dump(1);
  EXPECT_EQ(level["refusal_reasons"]["module LSTM"], 1) << level.dump(1);
  EXPECT_EQ(level["refusal_reasons"]["input of type list"], 1) << level.dump(1);
  ASSERT_EQ(level["lowering_failures"].size(), 1u) << level.dump(1);
  EXPECT_NE(level["lowering_failures"].begin().key().find("aten::logcumsumexp"), std::string::npos) << level.dump(1);
  EXPECT_TRUE(level["verified_share"].is_null()) << "nothing was checked";
  EXPECT_TRUE(result["complete"].get<bool>());

  // A second run reuses every import (the cache is keyed by the importer and the problem).
  auto [status2, out2] = kforge::run_command(cmd);
  ASSERT_EQ(status2, 0) << out2;
  std::ifstream again(root / "out.json");
  json second = json::parse(again);
  EXPECT_EQ(second["level1"]["imported"], 4);
  for (size_t idx = 0; idx < second["rows"].size(); ++idx)
    EXPECT_EQ(second["rows"][idx]["import_s"], result["rows"][idx]["import_s"]) << "import redone: " << idx;

  // --shard K/N splits the level between runs (one per GPU); --combine makes one file of
  // theirs with the unsharded run's rows and tallies.
  std::string shard_files;
  for (int shard = 0; shard < 2; ++shard) {
    std::vector<std::string> sharded = cmd;
    fs::path out = root / ("shard" + std::to_string(shard) + ".json");
    sharded.back() = out.string();
    sharded.insert(sharded.end(), {"--shard", std::to_string(shard) + "/2"});
    auto [shard_status, shard_out] = kforge::run_command(sharded);
    ASSERT_EQ(shard_status, 0) << shard_out;
    std::ifstream shard_in(out);
    EXPECT_EQ(json::parse(shard_in)["rows"].size(), 3u) << "every second problem";
    shard_files += (shard ? "," : "") + out.string();
  }
  auto [combine_status, combine_out] = kforge::run_command(
      {python_with_torch(), std::string(KFORGE_SOURCE_DIR) + "/bench/kernelbench/run.py", "--kernelbench",
       root.string(), "--combine", shard_files, "--out", (root / "combined.json").string()});
  ASSERT_EQ(combine_status, 0) << combine_out;
  std::ifstream combined_in(root / "combined.json");
  json combined = json::parse(combined_in);
  EXPECT_EQ(combined["level1"], second["level1"]) << combined["level1"].dump(1);
  ASSERT_EQ(combined["rows"].size(), second["rows"].size());
  for (size_t idx = 0; idx < second["rows"].size(); ++idx)
    EXPECT_EQ(combined["rows"][idx]["problem"], second["rows"][idx]["problem"]) << "in problem order: " << idx;
  auto [bad_status, bad_out] = kforge::run_command(
      {python_with_torch(), std::string(KFORGE_SOURCE_DIR) + "/bench/kernelbench/run.py", "--kernelbench",
       root.string(), "--levels", "1", "--shard", "2/2", "--out", (root / "bad.json").string()});
  EXPECT_NE(bad_status, 0);
  EXPECT_NE(bad_out.find("--shard must be K/N with 0 <= K < N, not '2/2'"), std::string::npos) << bad_out;
  fs::remove_all(root);
}

// run.py --check --samples K checks the teacher's first K schedules with one Checker and
// answers, as a generation with K samples does, the fastest correct one, naming its schedule.
TEST_F(ImportKernelBench, BenchRunnerAnswersTheFastestOfSeveralTeacherSchedules) {
  namespace fs = std::filesystem;
  auto [devices_status, devices] = kforge::run_command({std::string(KFORGE_BIN_DIR) + "/kforge-worker", "devices"});
  if (devices.find("target:opencl device:cpu") == std::string::npos)
    GTEST_SKIP() << "no OpenCL CPU device (install pocl-opencl-icd): " << devices;
  fs::path root = fs::temp_directory_path() / ("kforge-kb-samples-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "KernelBench" / "level1");
  fs::copy_file(problem("linear_relu"), root / "KernelBench" / "level1" / "1_linear_relu.py");
  auto [status, out] = kforge::run_command(
      {python_with_torch(), std::string(KFORGE_SOURCE_DIR) + "/bench/kernelbench/run.py", "--kernelbench",
       root.string(), "--levels", "1", "--check", "--odd-shapes", "--samples", "3", "--check-flags",
       "--trials 2 --time-budget 0.2", "--bin", KFORGE_BIN_DIR, "--work", (root / "work").string(), "--out",
       (root / "out.json").string()});
  ASSERT_EQ(status, 0) << out;
  std::ifstream in(root / "out.json");
  const json row = json::parse(in)["rows"].at(0);
  ASSERT_EQ(row.value("outcome", ""), "correct") << row.dump(1);
  EXPECT_EQ(row["samples_checked"], 3) << row.dump(1);
  ASSERT_EQ(row["sample_outcomes"].size(), 3u) << row.dump(1);
  std::set<std::string> schedules;
  double fastest = 1e30;
  std::string fastest_schedule;
  for (const json& sample : row["sample_outcomes"]) {
    ASSERT_TRUE(sample["schedule"].is_string()) << "read from the program's header: " << row.dump(1);
    schedules.insert(sample["schedule"].get<std::string>());
    const bool counts = sample["outcome"] == "correct" && !sample["suspicious"].get<bool>();
    if (counts && sample["kernel_ms"].get<double>() < fastest) {
      fastest = sample["kernel_ms"].get<double>();
      fastest_schedule = sample["schedule"].get<std::string>();
    }
  }
  EXPECT_EQ(schedules.size(), 3u) << "three different schedules: " << row.dump(1);
  EXPECT_EQ(row["schedule"], fastest_schedule) << row.dump(1);
  EXPECT_DOUBLE_EQ(row["kernel_ms"].get<double>(), fastest) << row.dump(1);

  // --also-schedules REGEX: the first schedule, then the space's last one (its label as the
  // regex), checked side by side.
  auto [space_status, space] =
      kforge::run_command({std::string(KFORGE_BIN_DIR) + "/kforge-codegen", "schedules",
                           (root / "work" / "ops" / "level1" / "1_linear_relu.json").string()});
  ASSERT_EQ(space_status, 0) << space;
  std::istringstream lines(space);
  std::string line, last_label;
  size_t listed = 0;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    size_t index = 0;
    std::string label;
    if (fields >> index >> label) last_label = label, ++listed;
  }
  ASSERT_GE(listed, 3u) << space;
  std::string pattern = "^";
  for (char c : last_label) pattern += c == '.' ? std::string("\\.") : std::string(1, c);
  pattern += "$";
  auto [also_status, also_out] = kforge::run_command(
      {python_with_torch(), std::string(KFORGE_SOURCE_DIR) + "/bench/kernelbench/run.py", "--kernelbench",
       root.string(), "--levels", "1", "--check", "--odd-shapes", "--samples", "1", "--also-schedules", pattern,
       "--check-flags", "--trials 2 --time-budget 0.2", "--bin", KFORGE_BIN_DIR, "--work",
       (root / "work").string(), "--out", (root / "also.json").string()});
  ASSERT_EQ(also_status, 0) << also_out;
  std::ifstream also_in(root / "also.json");
  const json also = json::parse(also_in)["rows"].at(0);
  ASSERT_EQ(also["samples_checked"], 2) << also.dump(1);
  EXPECT_EQ(also["sample_outcomes"][0]["schedule"], row["sample_outcomes"][0]["schedule"]) << also.dump(1);
  EXPECT_EQ(also["sample_outcomes"][1]["schedule"], last_label) << also.dump(1);

  auto [bad_status, bad_out] = kforge::run_command({python_with_torch(),
                                                    std::string(KFORGE_SOURCE_DIR) + "/bench/kernelbench/run.py",
                                                    "--kernelbench", root.string(), "--samples", "0"});
  EXPECT_EQ(bad_status, 2) << bad_out;
  EXPECT_NE(bad_out.find("--samples must be at least 1, not 0"), std::string::npos) << bad_out;
  fs::remove_all(root);
}
