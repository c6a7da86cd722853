// Payloads of the train_sft, train_grpo, train_rft and evaluate jobs, read by the one reader of
// spec/job_spec.h (the API reads POST bodies with the same tables), and the suite names
// they use. Test: ctest -R jobs_args_test.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "spec/job_spec.h"

namespace kforge::jobs {

// The structs and their one reader live in spec/job_spec.h; these names keep the runners'
// vocabulary (and the worker's error style: the first line of a failed job names the field).
using CheckSettings = spec::CheckSettings;
using SftJobArgs = spec::SftArgs;
using GrpoJobArgs = spec::GrpoArgs;
using RftJobArgs = spec::RftArgs;
using EvaluateJobArgs = spec::EvaluateArgs;

//! Parse a job's args JSON with the kind's reader (spec::Source::job); throws
//! std::invalid_argument listing every bad field ("hyperparameters.batch_size: ..."), so
//! the job fails without retry with a message a person can act on.
SftJobArgs parse_sft_job_args(const std::string& args_json);
//! See parse_sft_job_args.
GrpoJobArgs parse_grpo_job_args(const std::string& args_json);
//! See parse_sft_job_args.
RftJobArgs parse_rft_job_args(const std::string& args_json);
//! See parse_sft_job_args.
EvaluateJobArgs parse_evaluate_job_args(const std::string& args_json);
//! The args JSON text as a document for a reader; throws std::invalid_argument when it is not JSON.
nlohmann::json parse_job_args_json(const std::string& args_json, const char* kind);
//! The reader's struct, or std::invalid_argument naming every bad field.
template <typename T>
T args_or_throw(const spec::ReadResult<T>& read) {
  if (!read.ok()) throw std::invalid_argument(spec::describe_errors(read.errors));
  return read.args;
}

//! A suite name resolved to a directory and a split ("" = every op).
struct SuiteRef {
  std::string dir;
  std::string split;
};

//! Training suites: "builtin", "train" or "builtin:train" -> the built-in suite's train
//! split under `builtin_dir`; an existing directory -> its train split. Throws
//! std::invalid_argument naming `suite` otherwise (held-out ops are never trained on).
SuiteRef resolve_training_suite(const std::string& suite, const std::string& builtin_dir);
//! Evaluation suites: "builtin" and "heldout" -> held-out split; "train"; "all";
//! "builtin:<split>"; an existing directory -> its held-out split.
SuiteRef resolve_evaluation_suite(const std::string& suite, const std::string& builtin_dir);

}  // namespace kforge::jobs
