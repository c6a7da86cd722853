// SFT dataset builder: for each training-split op, teacher-compiler variants
// (different schedules) that the harness verifies correct, with their timings,
// as prompt/completion JSONL; on a GPU host also TorchInductor's kernels (triton target). Tested by tests/worker/train/harness_training_test.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "worker/harness/checker.h"
#include "worker/train/prompt_template.h"
#include "worker/train/sft_trainer.h"
#include "worker/train/suite_tasks.h"

namespace kforge::train {

//! One verified kernel (the teacher's, or TorchInductor's).
struct DatasetRecord {
  std::string op;          //!< op name
  std::string schedule;    //!< schedule label ("inductor" for Inductor's kernels)
  std::string target = "opencl";  //!< kernel language of the completion (the prompt's `### target`)
  std::string prompt;      //!< rendered prompt
  std::string completion;  //!< the kernel program
  double speedup = 0;      //!< harness speedup (0 when timing is off)
  std::string generator = "teacher";  //!< "teacher" or "inductor"
  std::string provenance;  //!< JSON object for inductor records: torch / triton versions, Inductor config, kernel configs
};

//! How many variants, which template, how to check.
struct DatasetOptions {
  int max_variants_per_op = 4;      //!< schedules tried per op, spread over the schedule space
  PromptStyle style = PromptStyle::kforge_tiny;  //!< prompt template
  harness::CheckOptions check;      //!< harness settings (time=false skips timing)
  int64_t max_check_elements = 0;   //!< > 0: verify on shrunk main shapes (extra shapes kept)
  //! Kernel languages to emit, each verified by the harness for that target ("opencl",
  //! "triton", "cuda"); a target this host cannot check (triton without a GPU) is skipped
  //! and counted in DatasetStats::targets_unavailable, never written unverified.
  std::vector<std::string> targets = {"opencl"};
  //! Kernels named by role ("pointwise_kernel") rather than after the op, so the model
  //! never has to copy the op's name into two places (codegen::Analysis::role_kernel_names).
  //! kforge-train dataset turns it on (--kernel-names role); the train_sft job's built-in
  //! data keeps the teacher's op names, as generation writes them.
  bool role_kernel_names = false;
  //! With the triton target on a GPU host: also TorchInductor's kernels for each op
  //! (harness::Checker::harvest_inductor), verified like the teacher's and written with their
  //! provenance; an op the teacher cannot lower may still get one. Held-out ops stay out.
  bool inductor = false;
};

//! Counts of one build.
struct DatasetStats {
  int ops = 0, ops_unsupported = 0, ops_with_examples = 0;  //!< ops seen / teacher cannot lower / got >= 1 pair
  int variants_checked = 0, variants_correct = 0;           //!< teacher programs checked / verified correct
  std::vector<std::string> targets_unavailable;             //!< targets skipped: no checker on this host
  int inductor_harvested = 0, inductor_correct = 0;         //!< Inductor candidates harvested / verified correct
  std::vector<std::string> inductor_refused;                //!< "op: reason" for each op Inductor gave no candidate
  std::vector<std::string> ops_failed;  //!< "op: reason" for each op whose own reference failed (skipped, not fatal)
};

//! Builds records for `ops` (the caller passes the train split only; a held-out op is a
//! bug and throws std::invalid_argument). `on_op` (optional) reports progress after each op.
std::vector<DatasetRecord> build_sft_dataset(const std::vector<SuiteOp>& ops, const DatasetOptions& options,
                                             DatasetStats* stats = nullptr,
                                             const std::function<void(int done, int total)>& on_op = {});

//! The held-out ops that a pair's prompt poses: the same inputs (names, dtypes, shapes)
//! and source, whatever the op is called, in either prompt style, whitespace ignored
//! (prompts without `### inputs` / `### source` are not judged). A data file given to SFT
//! must hold none, whoever built it. Returns op names, each once, in `heldout` order.
std::vector<std::string> heldout_leaks(const std::vector<SftExample>& pairs, const std::vector<SuiteOp>& heldout);

//! Writes records as JSONL ({"prompt","completion","op","schedule","target","speedup"}); read_sft_jsonl reads it.
void write_dataset_jsonl(const std::string& path, const std::vector<DatasetRecord>& records);

}  // namespace kforge::train
