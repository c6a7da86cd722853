// Test helper: loads suite ops (suite/level*/<name>.json) and the KernelBench-shaped test ops
// (tests/worker/codegen/kernelbench_ops/<name>.json) as spec::OpSpec.
// Used by the codegen tests (ctest -R codegen).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "spec/op_spec.h"

namespace kforge::testing {

//! Paths of every suite op file, sorted.
inline std::vector<std::filesystem::path> suite_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(KFORGE_SOURCE_DIR) + "/suite"))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

//! The op spec in `path` (test fails if it does not parse).
inline spec::OpSpec load_op_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = spec::parse_op_spec(text.str());
  EXPECT_TRUE(parsed.ok()) << path << ": " << spec::describe_errors(parsed.errors);
  return parsed.spec;
}

//! The suite op called `name` (level 1 or 2).
inline spec::OpSpec suite_op(const std::string& name) {
  for (const auto& path : suite_files())
    if (path.stem() == name) return load_op_file(path);
  ADD_FAILURE() << "no suite op " << name;
  return {};
}

//! The op with its first extra shape set as the main shapes and the rest as extra
//! shapes: the full Checker protocol on odd sizes, small enough for a suite-wide test.
inline spec::OpSpec on_odd_shapes(spec::OpSpec spec) {
  if (spec.extra_shapes.empty()) return spec;
  for (auto& input : spec.inputs) {
    auto found = spec.extra_shapes.front().find(input.name);
    if (found != spec.extra_shapes.front().end()) input.shape = found->second;
  }
  spec.extra_shapes.erase(spec.extra_shapes.begin());
  return spec;
}

//! Paths of the KernelBench-shaped op files (tests/worker/codegen/kernelbench_ops/*.json:
//! conv, conv_transpose, pooling, norms over several dims, level-2 chains), sorted.
inline std::vector<std::filesystem::path> kernelbench_op_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(KFORGE_SOURCE_DIR) + "/tests/worker/codegen/kernelbench_ops"))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

//! The KernelBench-shaped op file called `name`.
inline spec::OpSpec kernelbench_op(const std::string& name) {
  return load_op_file(std::string(KFORGE_SOURCE_DIR) + "/tests/worker/codegen/kernelbench_ops/" + name + ".json");
}

//! Suite level of an op file (from its folder name).
inline int suite_level(const std::filesystem::path& path) {
  return path.parent_path().filename() == "level1" ? 1 : 2;
}

}  // namespace kforge::testing
