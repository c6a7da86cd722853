// TorchInductor's kernels as kforge candidates, without a GPU: the rewriter
// (worker/harness/runner/inductor_rewrite.py) turns fixtures of Inductor's CUDA output into
// triton modules, and the harness checks them in Triton's CPU interpreter against the
// reference on every trial (fresh seeds, secret seed, the op's extra and unpublished shapes);
// an extern mm is refused; harvesting itself says it needs a GPU. Test: ctest -R harness_inductor_candidates.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/worker/harness/harness_fixtures.h"

namespace kforge::harness::testing {
namespace {

using json = nlohmann::json;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const std::string kFixtures = std::string(KFORGE_SOURCE_DIR) + "/tests/worker/harness/inductor/";

// The rewriter's reply for one fixture case of cases.json, run as the runner's Python runs it.
json rewrite_case(const std::string& python, const std::string& name) {
  json cases = json::parse(read_text(kFixtures + "cases.json"));
  json request = cases.at(name);
  request["code"] = read_text(kFixtures + request.at("fixture").get<std::string>());
  request["header"] = "# " + name + ": Inductor's kernels, rewritten\n";
  std::string request_path = ::testing::TempDir() + "inductor_" + name + ".json";
  std::ofstream(request_path) << request.dump();
  std::string command = python + " " + KFORGE_SOURCE_DIR + "/worker/harness/runner/inductor_rewrite.py < " + request_path;
  std::string out;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    size_t got;
    while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, got);
    pclose(pipe);
  }
  return json::parse(out, nullptr, false);
}

TEST(InductorCandidates, RewrittenPointwiseKernelIsCorrectOnEveryShape) {
  REQUIRE_TRITON(python);
  json reply = rewrite_case(python, "silu_mul");
  ASSERT_TRUE(reply.is_object() && reply.value("ok", false)) << reply.dump();
  CheckOptions options = interpreter_options(python);
  auto result = check_candidate(silu_mul_op(), reply["source"].get<std::string>(), options);
  ASSERT_EQ(result.outcome, Outcome::correct) << result.message << "\n" << reply["source"].get<std::string>();
  EXPECT_EQ(result.trials_passed, 4) << "a seeded trial, the secret seed, the extra shapes [33, 7], unpublished shapes";
}

TEST(InductorCandidates, RewrittenLoopedSoftmaxIsCorrectOnEveryShape) {
  REQUIRE_TRITON(python);
  json reply = rewrite_case(python, "row_softmax");
  ASSERT_TRUE(reply.is_object() && reply.value("ok", false)) << reply.dump();
  CheckOptions options = interpreter_options(python);
  auto result = check_candidate(softmax_op(), reply["source"].get<std::string>(), options);
  ASSERT_EQ(result.outcome, Outcome::correct) << result.message << "\n" << reply["source"].get<std::string>();
  EXPECT_EQ(result.trials_passed, 4) << "rows of 100, then 333 (three R0_BLOCK loops of 128), then unpublished";
}

TEST(InductorCandidates, ExternMatmulIsRefusedNeverACandidate) {
  REQUIRE_TRITON(python);
  json reply = rewrite_case(python, "linear_gelu");
  ASSERT_TRUE(reply.is_object()) << "the rewriter's reply is not JSON";
  EXPECT_FALSE(reply.value("ok", true));
  EXPECT_NE(reply.value("reason", "").find("extern_kernels.mm"), std::string::npos) << reply.dump();
}

TEST(InductorCandidates, HarvestingSaysItNeedsAGpu) {
  REQUIRE_TRITON(python);
  std::string error;
  auto checker = Checker::create(silu_mul_op(), interpreter_options(python), error);
  ASSERT_TRUE(checker) << error;
  InductorHarvest harvest = checker->harvest_inductor();
  EXPECT_FALSE(harvest.ok());
  EXPECT_NE(harvest.reason.find("GPU"), std::string::npos) << harvest.reason;

  CheckOptions opencl = fast_options();
  auto cl_checker = Checker::create(silu_mul_op(), opencl, error);
  if (cl_checker) {
    InductorHarvest none = cl_checker->harvest_inductor();
    EXPECT_NE(none.reason.find("target opencl"), std::string::npos) << none.reason;
  }
}

}  // namespace
}  // namespace kforge::harness::testing
