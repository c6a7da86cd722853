// Supervised fine-tuning: prompt/completion pairs, loss on completion tokens only,
// AdamW + warm-up/cosine + clipping, micro-batches, periodic validation loss,
// checkpoints (policy files + optimizer + state) and resume. Tested by sft_trainer_test.cpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "worker/train/checkpoint.h"
#include "worker/train/distributed.h"
#include "worker/train/optim.h"
#include "worker/train/trainable_policy.h"

namespace kforge::train {

//! One training pair (text; the prompt template is already applied).
struct SftExample {
  std::string prompt;      //!< what the model sees
  std::string completion;  //!< what it learns to write (EOS is appended when tokenized)
};

//! Reads a JSONL file of {"prompt": ..., "completion": ...} lines; blank lines skipped.
//! Throws std::runtime_error naming the file and line of the first bad record.
std::vector<SftExample> read_sft_jsonl(const std::string& path);
//! Writes examples as JSONL (the format read_sft_jsonl reads).
void write_sft_jsonl(const std::string& path, const std::vector<SftExample>& examples);

//! Settings of an SFT run. Jobs and kforge-train build it from the job spec with
//! train_config.h's sft_config; the member defaults serve hand-built runs (tests).
struct SftConfig {
  int epochs = 1;              //!< passes over the training set (ignored when max_steps > 0)
  int max_steps = 0;           //!< optimizer steps; 0 = epochs * ceil(train / batch_size)
  int batch_size = 8;          //!< sequences per optimizer step
  int micro_batch = 8;         //!< sequences per forward/backward
  int64_t max_tokens = 1024;   //!< longer prompt + completion pairs are skipped (and counted)
  int eval_every = 50;         //!< validation loss every N steps (and at the end); 0 = only at the end
  int checkpoint_every = 0;    //!< checkpoint every N steps (and at the end); 0 = only at the end
  int keep_checkpoints = 2;    //!< older step checkpoints are removed
  std::string out_dir;         //!< checkpoints go to out_dir/checkpoint-<step>; empty = none
  uint64_t seed = 0;           //!< data order
  OptimConfig optim;           //!< optimizer and schedule (total_steps is set from the run length)
  //! Data parallel (not owned; null = one process): each process takes its contiguous
  //! batch_size / world_size of every step's batch, gradients and losses are summed over
  //! the processes, and only rank 0 writes checkpoints. Same losses as one process whose
  //! micro_batch is that share.
  DataParallel* data_parallel = nullptr;

  //! Empty when valid, else a message naming the bad field.
  std::string validate() const;
};

//! What one optimizer step did.
struct SftStepMetrics {
  int step = 0;                     //!< 1-based
  int total_steps = 0;              //!< steps of the run
  int epoch = 0;                    //!< 0-based epoch of this step's batch
  double loss = 0;                  //!< mean NLL per completion token of the batch
  double lr = 0, grad_norm = 0;     //!< optimizer step
  int64_t tokens = 0;               //!< completion tokens in the batch
  double seconds = 0;               //!< wall time of the step
  std::optional<double> val_loss;   //!< set on validation steps
  std::string checkpoint;           //!< set when a checkpoint was written

  //! JSON object text (training_metrics row).
  std::string to_json() const;
};

//! Outcome of a run.
struct SftResult {
  int steps = 0;                  //!< optimizer steps done (including resumed ones)
  int resumed_from = 0;           //!< step a resume started from (0 = fresh)
  double final_loss = 0;          //!< loss of the last step
  std::optional<double> val_loss; //!< last validation loss
  int skipped_long = 0;           //!< pairs skipped for exceeding max_tokens
  std::string checkpoint;         //!< last checkpoint directory ("" without out_dir)
  bool stopped = false;           //!< stopped early by the stop flag
};

//! Trains a policy on pairs; checkpoints and resume go through TrainablePolicy::save/load.
class SftTrainer {
 public:
  //! Tokenizes the pairs. Throws std::invalid_argument on an invalid config or no usable pair.
  SftTrainer(TrainablePolicy& policy, const std::vector<SftExample>& train, const std::vector<SftExample>& validation,
             const SftConfig& config);
  ~SftTrainer();

  //! Loads the newest complete checkpoint under out_dir, if any; returns its step (0 if none).
  int resume();
  //! Trains to the end (or until *stop), calling on_step after each optimizer step.
  SftResult run(const std::function<void(const SftStepMetrics&)>& on_step = {},
                const std::atomic<bool>* stop = nullptr);
  //! Mean completion-token NLL over the validation pairs (no grad); nullopt without any.
  std::optional<double> validation_loss();
  //! Steps of the whole run.
  int total_steps() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge::train
