// Evaluation of a policy on a task list: n samples per task, each checked, then
// pass@1 / pass@k / best speedup per op and the suite metrics (eval_metrics.h).
// Tested by tests/worker/train/evaluate_test.cpp.
#pragma once

#include <string>
#include <vector>

#include "worker/train/eval_metrics.h"
#include "worker/train/trainable_policy.h"

namespace kforge::train {

//! Settings of one evaluation. Jobs and kforge-train build it from the job spec with
//! train_config.h's eval_config; the member defaults serve hand-built runs (tests).
struct EvalConfig {
  int samples_per_op = 4;   //!< n
  int k = 4;                //!< pass@k (clamped to n per op)
  int check_threads = 4;    //!< checks at once
  uint64_t seed = 1234;     //!< sampling seed base (op index mixed in)
  SamplingConfig sampling;  //!< temperature etc.
  //! When set, `checker` only verifies (in parallel, untimed) and every correct sample is
  //! then re-checked by this timed checker one at a time, after all verification is done,
  //! so no timed run shares the CPU with another check.
  Checker* timing_checker = nullptr;

  //! Empty when valid, else a message naming the bad field.
  std::string validate() const;
};

//! Samples and checks every task; `raw` (optional) receives every sample's outcome.
//! Throws std::invalid_argument on an invalid config.
EvalSummary evaluate_policy(TrainablePolicy& policy, const std::vector<Task>& tasks, Checker& checker,
                            const EvalConfig& config, std::vector<OpSamples>* raw = nullptr);

//! JSON object text: overall metrics plus "per_op" rows (the evaluations table's metrics and tasks).
std::string eval_summary_to_json(const EvalSummary& summary);

}  // namespace kforge::train
