// Job payload parsing behind worker/jobs/job_args.h. The API checks POST bodies with the
// same spec/ tables, but a job may be inserted by anything with database access, so the
// runner reads its args with the kind's reader too. Test: ctest -R jobs_args_test.
#include "worker/jobs/job_args.h"

#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace kforge::jobs {
namespace {

bool has_level_dirs(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return false;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("level", 0) == 0) return true;
  }
  return false;
}

}  // namespace

nlohmann::json parse_job_args_json(const std::string& args_json, const char* kind) {
  auto args = nlohmann::json::parse(args_json, nullptr, /*allow_exceptions=*/false);
  if (args.is_discarded()) throw std::invalid_argument(std::string(kind) + " args: not a JSON object (not valid JSON)");
  return args;
}

SftJobArgs parse_sft_job_args(const std::string& args_json) {
  return args_or_throw(spec::read_sft(parse_job_args_json(args_json, "train_sft"), spec::Source::job));
}

GrpoJobArgs parse_grpo_job_args(const std::string& args_json) {
  return args_or_throw(spec::read_grpo(parse_job_args_json(args_json, "train_grpo"), spec::Source::job));
}

RftJobArgs parse_rft_job_args(const std::string& args_json) {
  return args_or_throw(spec::read_rft(parse_job_args_json(args_json, "train_rft"), spec::Source::job));
}

EvaluateJobArgs parse_evaluate_job_args(const std::string& args_json) {
  return args_or_throw(spec::read_evaluate(parse_job_args_json(args_json, "evaluate"), spec::Source::job));
}

SuiteRef resolve_training_suite(const std::string& suite, const std::string& builtin_dir) {
  if (suite == "builtin" || suite == "train" || suite == "builtin:train") return {builtin_dir, "train"};
  if (suite == "heldout" || suite == "builtin:heldout") {
    throw std::invalid_argument("suite: training never uses the held-out split; give \"builtin\" (its train split)");
  }
  if (has_level_dirs(suite)) return {suite, "train"};
  throw std::invalid_argument("suite: unknown suite '" + suite + "' (this worker has \"builtin\", read from " +
                              builtin_dir + ", or a suite directory on the worker)");
}

SuiteRef resolve_evaluation_suite(const std::string& suite, const std::string& builtin_dir) {
  std::string split = suite;
  if (suite.rfind("builtin:", 0) == 0) split = suite.substr(8);
  if (suite == "builtin") split = "heldout";
  if (split == "heldout" || split == "train") return {builtin_dir, split};
  if (split == "all") return {builtin_dir, ""};
  if (has_level_dirs(suite)) return {suite, "heldout"};
  throw std::invalid_argument("suite: unknown suite '" + suite +
                              "' (use \"heldout\", \"train\", \"all\", \"builtin\" or \"builtin:<split>\")");
}

}  // namespace kforge::jobs
