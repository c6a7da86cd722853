// kforge-train's command line: per command its own flags plus the job kind's table flags
// (defaults, ranges and help from spec/job_spec.h; values through the kind's reader).
// Test: ctest -R spec_agreement_test.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/config.h"
#include "spec/job_spec.h"

namespace kforge::train {

//! The commands: dataset, sft, grpo, rft, eval.
const std::vector<std::string>& train_commands();

//! The job kind a command takes its table flags from (dataset and sft: train_sft); nullopt if unknown.
std::optional<spec::JobKind> command_kind(const std::string& command);

//! Every flag of `command`: its own, then the kind's table flags.
std::vector<FlagSpec> command_flags(const std::string& command);

//! The table flags of a parsed command line through the kind's reader (spec::Source::flags).
//! Throws std::invalid_argument naming each bad flag ("--lr: must be in 1e-09..1.0, got 5.0").
spec::SftArgs sft_args(const Flags& flags);
//! See sft_args.
spec::GrpoArgs grpo_args(const Flags& flags);
//! See sft_args.
spec::RftArgs rft_args(const Flags& flags);
//! See sft_args.
spec::EvaluateArgs evaluate_args(const Flags& flags);

}  // namespace kforge::train
