// The built-in op suite (suite/level*/*.json): every file is a valid op, the split
// is stratified ~80/20, and every reference compiles and runs on its smallest shape.
// Run: ctest -R suite_reference (a few seconds; libtorch only, no database).
#include <gtest/gtest.h>
#include <ATen/ATen.h>
#include <torch/jit.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<json> load_suite() {
  std::vector<json> ops;
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(KFORGE_SOURCE_DIR) / "suite"))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    std::ifstream in(path);
    json op = json::parse(in);
    op["_path"] = path.string();
    ops.push_back(op);
  }
  return ops;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

// Inputs drawn from the op's declared distributions (same forms the harness reads).
at::Tensor make_input(const json& input, const std::vector<int64_t>& shape) {
  const json& dist = input["dist"];
  auto opts = at::TensorOptions().dtype(at::kFloat);
  if (dist.is_string() && dist == "normal") return at::randn(shape, opts);
  if (dist.is_string() && dist == "uniform") return at::rand(shape, opts);
  if (dist.contains("normal")) return at::randn(shape, opts) * dist["normal"][1].get<double>() +
                                       dist["normal"][0].get<double>();
  if (dist.contains("uniform")) {
    double lo = dist["uniform"][0], hi = dist["uniform"][1];
    return at::rand(shape, opts) * (hi - lo) + lo;
  }
  if (dist.contains("randint"))
    return at::randint(dist["randint"][0].get<int64_t>(), dist["randint"][1].get<int64_t>(), shape,
                          at::TensorOptions().dtype(at::kLong));
  ADD_FAILURE() << "unknown dist " << dist.dump();
  return {};
}

}  // namespace

TEST(Suite, HasEnoughOpsPerLevelWithStratifiedSplit) {
  auto ops = load_suite();
  std::map<int, int> total, heldout;
  std::set<std::string> names;
  for (const auto& op : ops) {
    std::string path = op["_path"];
    ASSERT_TRUE(op.contains("name") && op.contains("source") && op.contains("inputs") &&
                op.contains("extra_shapes") && op.contains("tolerance") && op.contains("split"))
        << path << " misses a field";
    EXPECT_TRUE(names.insert(op["name"].get<std::string>()).second) << "duplicate name in " << path;
    EXPECT_EQ(fs::path(path).stem().string(), op["name"].get<std::string>()) << path;
    int level = op["level"];
    EXPECT_NE(path.find("level" + std::to_string(level)), std::string::npos) << path;
    std::string split = op["split"];
    EXPECT_TRUE(split == "train" || split == "heldout") << path << ": split " << split;
    total[level]++;
    if (split == "heldout") heldout[level]++;
    EXPECT_GE(op["extra_shapes"].size(), 1u) << path;
    for (const auto& extra : op["extra_shapes"])
      for (const auto& input : op["inputs"])
        EXPECT_TRUE(extra.contains(input["name"].get<std::string>()))
            << path << ": extra shape lacks input " << input["name"];
    EXPECT_GT(op["tolerance"]["atol"].get<double>(), 0.0) << path;
  }
  EXPECT_GE(total[1] + total[2], 120);
  EXPECT_GE(total[1], 60);
  EXPECT_GE(total[2], 45);
  for (int level : {1, 2}) {
    double share = double(heldout[level]) / total[level];
    EXPECT_GT(share, 0.15) << "level " << level;
    EXPECT_LT(share, 0.25) << "level " << level;
  }
}

TEST(Suite, EveryReferenceCompilesAndRunsOnItsSmallestShape) {
  at::manual_seed(7);
  auto ops = load_suite();
  ASSERT_FALSE(ops.empty());
  for (const auto& op : ops) {
    std::string name = op["name"];
    SCOPED_TRACE(name);
    std::shared_ptr<torch::jit::CompilationUnit> unit;
    try {
      unit = torch::jit::compile(op["source"].get<std::string>());
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << " does not compile: " << e.what();
      continue;
    }
    // The smallest extra shape keeps the whole suite to a few seconds.
    const json* smallest = &op["extra_shapes"][0];
    auto size_of = [&](const json& shapes) {
      int64_t n = 0;
      for (const auto& input : op["inputs"])
        n += numel(shapes[input["name"].get<std::string>()].get<std::vector<int64_t>>());
      return n;
    };
    for (const auto& extra : op["extra_shapes"])
      if (size_of(extra) < size_of(*smallest)) smallest = &extra;
    std::vector<c10::IValue> args;
    for (const auto& input : op["inputs"])
      args.push_back(make_input(input, (*smallest)[input["name"].get<std::string>()]));
    try {
      auto result = (*unit).get_function("forward")(args);
      ASSERT_TRUE(result.isTensor()) << name << " must return one tensor";
      auto out = result.toTensor();
      EXPECT_GT(out.numel(), 0);
      if (out.is_floating_point()) {
        EXPECT_TRUE(at::isfinite(out).all().item<bool>()) << name << ": non-finite reference output";
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << " fails at run time: " << e.what();
    }
  }
}
