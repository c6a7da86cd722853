// kforge-train's flag tables behind worker/train/train_cli.h. Only the flags that are
// not job fields are written here; the rest come from spec/job_spec.cpp.
// Test: ctest -R spec_agreement_test.
#include "worker/train/train_cli.h"

#include <stdexcept>

namespace kforge::train {
namespace {

// Flags every command takes.
std::vector<FlagSpec> shared_flags() {
  return {
      {"suite", "KFORGE_SUITE_DIR", "suite", "op suite directory"},
      {"template", "", "kforge-tiny", "prompt template: kforge-tiny or chatml"},
      {"device", "KFORGE_TRAIN_DEVICE", "cpu", "cpu or cuda"},
      {"precision", "KFORGE_TRAIN_PRECISION", "float32",
       "float32, or bf16: sampling and scoring under bf16 autocast, float32 master weights (kforge-small on a GPU)"},
      {"time-budget-s", "", "0.3", "harness timing budget per side"},
      {"log-level", "KFORGE_LOG_LEVEL", "warn", "debug, info, warn or error"},
  };
}

// Flags of one command that are not job fields.
std::vector<FlagSpec> own_flags(const std::string& command) {
  if (command == "dataset") {
    return {{"out", "", "", "JSONL path of the dataset"},
            {"shard", "", "", "K/N: only ops K, K+N, ... (run N processes, concatenate)"},
            {"targets", "", "opencl", "kernel languages, comma-separated: opencl, triton, cuda (each verified by its own "
                                      "harness; one this host cannot check is skipped and reported)"},
            {"kernel-names", "", "role", "role: kernels named pointwise_kernel, rows1_kernel...; op: <op>_pointwise"},
            {"inductor", "", "false", "with --targets triton on a GPU host: also TorchInductor's kernels, verified, "
                                      "with their provenance", true}};
  }
  if (command == "sft") {
    return {{"data", "", "", "JSONL of prompt/completion pairs"},
            {"init", "", "", "start from this HF directory instead of bootstrapping a preset"},
            {"preset", "", "kforge-tiny", "bootstrap preset (kforge-tiny, kforge-micro, kforge-small, kforge-20m...)"},
            {"out-dir", "", "var/train", "checkpoints and metrics.jsonl"}};
  }
  if (command == "grpo" || command == "rft") {
    std::vector<FlagSpec> flags = {{"model", "", "", "HF model directory to start from"},
                                   {"out-dir", "", "var/train", "checkpoints, final/ and metrics.jsonl"}};
    if (command == "grpo")
      flags.push_back({"max-seconds", "", "0",
                       "wall-clock budget: no step starts after this many seconds, and final/ holds the last "
                       "step's policy (0 = none)"});
    return flags;
  }
  if (command == "eval") {
    return {{"model", "", "", "HF model directory"},
            {"split", "", "heldout", "suite split (train, heldout)"},
            {"out", "", "", "JSON path of the full result"},
            {"samples-out", "", "", "JSONL of every sample (op, outcome, harness message, completion)"},
            {"serial-timing", "", "false", "verify in parallel, then time correct kernels one at a time", true}};
  }
  return {};
}

template <typename T>
T checked(const spec::ReadResult<T>& read, spec::JobKind kind) {
  if (!read.ok()) throw std::invalid_argument(spec::describe_flag_errors(read.errors, kind));
  return read.args;
}

}  // namespace

const std::vector<std::string>& train_commands() {
  static const std::vector<std::string> commands = {"dataset", "sft", "grpo", "rft", "eval"};
  return commands;
}

std::optional<spec::JobKind> command_kind(const std::string& command) {
  if (command == "dataset" || command == "sft") return spec::JobKind::train_sft;
  if (command == "grpo") return spec::JobKind::train_grpo;
  if (command == "rft") return spec::JobKind::train_rft;
  if (command == "eval") return spec::JobKind::evaluate;
  return std::nullopt;
}

std::vector<FlagSpec> command_flags(const std::string& command) {
  std::vector<FlagSpec> flags = shared_flags();
  for (auto& flag : own_flags(command)) flags.push_back(std::move(flag));
  if (auto kind = command_kind(command)) {
    for (auto& flag : spec::job_flags(*kind)) flags.push_back(std::move(flag));
  }
  return flags;
}

spec::SftArgs sft_args(const Flags& flags) {
  auto kind = spec::JobKind::train_sft;
  return checked(spec::read_sft(spec::flags_document(flags, kind), spec::Source::flags), kind);
}

spec::GrpoArgs grpo_args(const Flags& flags) {
  auto kind = spec::JobKind::train_grpo;
  return checked(spec::read_grpo(spec::flags_document(flags, kind), spec::Source::flags), kind);
}

spec::RftArgs rft_args(const Flags& flags) {
  auto kind = spec::JobKind::train_rft;
  return checked(spec::read_rft(spec::flags_document(flags, kind), spec::Source::flags), kind);
}

spec::EvaluateArgs evaluate_args(const Flags& flags) {
  auto kind = spec::JobKind::evaluate;
  return checked(spec::read_evaluate(spec::flags_document(flags, kind), spec::Source::flags), kind);
}

}  // namespace kforge::train
