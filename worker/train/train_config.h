// Trainer settings from a job kind's arguments (spec/job_spec.h): the one place that turns
// SftArgs / GrpoArgs / RftArgs / EvaluateArgs into trainer configs and harness options, for the job
// runners and kforge-train alike. Test: ctest -R spec_agreement_test.
#pragma once

#include "spec/job_spec.h"
#include "worker/harness/checker.h"
#include "worker/train/dataset.h"
#include "worker/train/evaluate.h"
#include "worker/train/grpo_trainer.h"
#include "worker/train/prompt_template.h"
#include "worker/train/rft.h"
#include "worker/train/sft_trainer.h"

namespace kforge::train {

//! Harness options for a job's check settings; `time_budget_s` per timed side.
harness::CheckOptions check_options(const spec::CheckSettings& check, double time_budget_s);

//! Dataset building from an SFT job's suite fields (variants, checks).
DatasetOptions dataset_options(const spec::SftArgs& args, PromptStyle style, double time_budget_s);

//! The SFT run; out_dir is left for the caller. Checkpoints keep the newest two.
SftConfig sft_config(const spec::SftArgs& args);

//! The GRPO run: sampling, reward, loss, optimiser (AdamW without weight decay: the
//! policy starts from a trained model and GRPO steps are few).
GrpoConfig grpo_config(const spec::GrpoArgs& args, PromptStyle style);

//! Expert iteration: rounds, samples, what is kept, and each round's fine-tune (max_steps =
//! steps_per_round, no validation, AdamW without weight decay as GRPO).
RftConfig rft_config(const spec::RftArgs& args, PromptStyle style);

//! An evaluation: samples, pass@k, sampling, check threads and seed.
EvalConfig eval_config(const spec::EvaluateArgs& args, PromptStyle style);

}  // namespace kforge::train
