// The built-in op suite (suite/level*/*.json): every file is a valid op, the split
// is stratified ~80/20, and every reference parses, compiles and runs through the
// harness's reference runner on its smallest shape.
// Run: ctest -R suite_reference (about a second; no database).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "spec/op_spec.h"
#include "worker/harness/reference.h"

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

TEST(Suite, EveryReferenceRunsThroughTheHarnessOnItsSmallestShape) {
  auto ops = load_suite();
  ASSERT_FALSE(ops.empty());
  for (const auto& op : ops) {
    std::string path = op["_path"];
    SCOPED_TRACE(path);
    json plain = op;
    plain.erase("_path");
    auto parsed = kforge::spec::parse_op_spec(plain.dump());
    ASSERT_TRUE(parsed.ok()) << path << ": " << kforge::spec::describe_errors(parsed.errors);
    const auto& spec = parsed.spec;
    std::string error;
    auto reference = kforge::harness::Reference::compile(spec, error);
    if (!reference) {
      ADD_FAILURE() << path << " does not compile: " << error;
      continue;
    }
    // The smallest extra shape keeps the whole suite to a few seconds.
    auto size_of = [](const kforge::spec::ShapeSet& shapes) {
      int64_t n = 0;
      for (const auto& [name, shape] : shapes) n += kforge::spec::shape_numel(shape);
      return n;
    };
    const kforge::spec::ShapeSet* smallest = &spec.extra_shapes.at(0);
    for (const auto& shapes : spec.extra_shapes)
      if (size_of(shapes) < size_of(*smallest)) smallest = &shapes;
    auto run = reference->run(kforge::harness::make_inputs(spec, *smallest, 7));
    ASSERT_TRUE(run.error.empty()) << path << " fails at run time: " << run.error;
    ASSERT_EQ(run.outputs.size(), 1u) << path << " must return one tensor";
    const auto& out = run.outputs[0];
    EXPECT_GT(out.numel(), 0);
    for (int64_t index = 0; index < out.numel(); ++index) {
      if (!std::isfinite(out.value_at(index))) {
        ADD_FAILURE() << path << ": non-finite reference output at " << index;
        break;
      }
    }
  }
}
