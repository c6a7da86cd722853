// The `generate` job: for one op, propose candidate kernel programs (sampled from
// the requested model version, or from the teacher compiler when that version has
// no trained weights yet; on a GPU with the triton target also TorchInductor's kernels), check each with the harness in its sandbox, store every
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

namespace kforge::harness {
class Checker;
}

namespace kforge::jobs {

//! The job's arguments (spec/job_spec.h: the table POST /v1/generations reads too).
using GenerateArgs = spec::GenerateArgs;

//! Parses the job's args JSON with spec::read_generate; throws std::invalid_argument naming every bad field.
GenerateArgs parse_generate_args(const std::string& args_json);

//! One proposed program and where it came from.
struct CandidateProgram {
  std::string source;
  std::string generator;  //!< "policy", "teacher" or "inductor"
  std::string detail;     //!< schedule for the teacher, sampling seed for the policy, versions for inductor
  int64_t model_id = 0;   //!< for policy samples
  std::string provenance; //!< JSON object (inductor: torch / triton versions, Inductor config, kernel configs)
};

//! Worker-level settings of the generate job.
struct GenerateOptions {
  //! On a GPU with the triton target, TorchInductor's kernels for the op are one more
  //! candidate (generator "inductor"); KFORGE_INDUCTOR_CANDIDATES=off leaves them out.
  bool inductor_candidates = true;
  //! Children kept pre-started per kind by the worker's harness::ChildPool (child_pool.h);
  //! KFORGE_CHILD_POOL, default 2; 0: none, every child started per op.
  int child_pool = 2;
  //! GPU, triton: candidates compiled ahead (each in its own child, harness::Checker::prefetch)
  //! while the current one is checked; the pool keeps one more triton runner than this.
  //! KFORGE_PREFETCH_AHEAD, default 3 (a generation of 4 samples and Inductor's candidate has
  //! every later candidate compiling while the first is checked); 0: none.
  int prefetch_ahead = 3;
  //! GPU-timed checks: seconds per timed side (candidate, eager, torch.compile), warm-up
  //! at most half of it more (harness::CheckOptions::gpu_time_budget_s). CUDA events with an
  //! L2 flush per run reach a 1% spread in well under this, or never within 1 s for
  //! microsecond kernels; at 1 s, timing was 6.7 of a generation's 16.8 s on the H200.
  //! KFORGE_GPU_TIME_BUDGET_S, default 0.5 (what the KernelBench runs use), 0.05 to 10.
  double gpu_time_budget_s = 0.5;
  //! The worker's capabilities (target:triton, device:gpu...): the pool is warmed at start for
  //! the targets they claim (not from the environment: the worker's probe says).
  std::vector<std::string> capabilities;

  //! From the environment; throws std::invalid_argument on a value other than on/off, or a
  //! KFORGE_CHILD_POOL or KFORGE_PREFETCH_AHEAD that is not a count from 0 to 64, or a
  //! KFORGE_GPU_TIME_BUDGET_S that is not a number of seconds from 0.05 to 10.
  static GenerateOptions from_env();
};

//! TorchInductor's kernels for the op, harvested by `checker`'s reference runner
//! (harness::Checker::harvest_inductor), as a candidate; nullopt and `note` extended
//! with the reason when there is none (not triton on a GPU, or refused by the rewriter).
std::optional<CandidateProgram> inductor_candidate(harness::Checker& checker, std::string* note);

//! Up to `count` teacher-compiler programs, one per distinct schedule. `note` says
//! why there are none (an op the teacher does not support).
std::vector<CandidateProgram> teacher_candidates(const spec::OpSpec& spec, int count, std::string* note,
                                                 const std::string& target = "opencl");

//! `count` samples from the HF model directory `model_dir` with the kforge-tiny
//! prompt template for `target`. Throws std::runtime_error when the directory cannot be loaded.
std::vector<CandidateProgram> policy_candidates(const spec::OpSpec& spec, const std::string& model_dir,
                                                int64_t model_id, int count, uint64_t seed,
                                                const std::string& target = "opencl");

//! With a trained model, a generation also checks this many of the teacher's first
//! schedules (before the model's samples), so the answer is never worse than the teacher's.
inline constexpr int kTeacherBesideModel = 2;

//! Registers the `generate` kind; each run opens its own connection to `database_url`
//! and finds model files as `fetch` says (model_files.h). The worker's children come from one
//! harness::ChildPool (`options.child_pool` per kind), warmed at once for the targets
//! `options.capabilities` say this worker claims.
void register_generate_job(worker::HandlerRegistry& registry, const std::string& database_url,
                           const ModelFetchOptions& fetch = {}, const GenerateOptions& options = {});

}  // namespace kforge::jobs
