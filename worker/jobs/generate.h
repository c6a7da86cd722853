// The `generate` job: for one op, propose candidate kernel programs (sampled from
// the requested model version, or from the teacher compiler when that version has
// no trained weights yet), check each with the harness in its sandbox, store every
// candidate and progress as it goes, and complete with the fastest correct one.
// Test: ctest -R jobs_generate_test.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spec/job_spec.h"
#include "spec/op_spec.h"
#include "worker/jobs/model_files.h"
#include "worker/worker.h"

namespace kforge::jobs {

//! The job's arguments (spec/job_spec.h: the table POST /v1/generations reads too).
using GenerateArgs = spec::GenerateArgs;

//! Parses the job's args JSON with spec::read_generate; throws std::invalid_argument naming every bad field.
GenerateArgs parse_generate_args(const std::string& args_json);

//! One proposed program and where it came from.
struct CandidateProgram {
  std::string source;
  std::string generator;  //!< "policy" or "teacher"
  std::string detail;     //!< schedule for the teacher, sampling seed for the policy
  int64_t model_id = 0;   //!< for policy samples
};

//! Up to `count` teacher-compiler programs, one per distinct schedule. `note` says
//! why there are none (an op the teacher does not support).
std::vector<CandidateProgram> teacher_candidates(const spec::OpSpec& spec, int count, std::string* note,
                                                 const std::string& target = "opencl");

//! `count` samples from the HF model directory `model_dir` with the kforge-tiny
//! prompt template. Throws std::runtime_error when the directory cannot be loaded.
std::vector<CandidateProgram> policy_candidates(const spec::OpSpec& spec, const std::string& model_dir,
                                                int64_t model_id, int count, uint64_t seed);

//! Registers the `generate` kind; each run opens its own connection to `database_url`
//! and finds model files as `fetch` says (model_files.h). The worker's children come from one
//! harness::ChildPool ($KFORGE_CHILD_POOL per kind, default 2; 0: none), warmed at once for
//! the targets `capabilities` (target:triton, device:gpu...) say this worker claims.
void register_generate_job(worker::HandlerRegistry& registry, const std::string& database_url,
                           const ModelFetchOptions& fetch = {}, const std::vector<std::string>& capabilities = {});

}  // namespace kforge::jobs
