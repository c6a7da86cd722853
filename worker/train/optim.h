// Optimisation for SFT and GRPO: AdamW (decay on matrices only), linear warm-up
// then cosine decay, global grad-norm clipping, gradient accumulation, state
// save/load for resuming. Tested by tests/worker/train/optim_test.cpp.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kforge::train {

//! Optimiser and schedule settings. Jobs and kforge-train fill lr, warmup_steps,
//! weight_decay, grad_clip and total_steps from their spec (train_config.h); the
//! member defaults below serve hand-built configs, and lr has none: it must be set.
struct OptimConfig {
  double lr = 0;               //!< peak learning rate (required: > 0)
  double min_lr_ratio = 0.1;   //!< cosine floor as a fraction of lr
  int warmup_steps = 0;        //!< linear warm-up steps (optimizer steps, not micro-batches)
  int total_steps = 1000;      //!< steps of the whole schedule; after it lr stays at the floor
  double weight_decay = 0.01;  //!< AdamW decay, applied to tensors with 2+ dims only
  double beta1 = 0.9;          //!< Adam beta1
  double beta2 = 0.95;         //!< Adam beta2
  double adam_eps = 1e-8;      //!< Adam epsilon
  double grad_clip = 1.0;      //!< max global grad L2 norm; <= 0 disables clipping
  int accumulation = 1;        //!< micro-batches per optimizer step

  //! Empty when valid, else a message naming the bad field.
  std::string validate() const;
};

//! Learning rate at optimizer step `step` (0-based): (step+1)/warmup * lr during warm-up,
//! then cosine from lr to lr * min_lr_ratio over the remaining steps.
double lr_at(const OptimConfig& config, int step);

//! What one optimizer step did.
struct StepInfo {
  int step = 0;            //!< optimizer steps taken so far (1 after the first)
  double lr = 0.0;         //!< learning rate used
  double grad_norm = 0.0;  //!< global grad norm before clipping
};

//! AdamW with schedule, clipping and accumulation over a fixed set of parameters.
class Optimizer {
 public:
  //! Parameters must require grad. Throws std::invalid_argument on an invalid config.
  Optimizer(const std::vector<at::Tensor>& parameters, const OptimConfig& config);
  ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  //! Multiply each micro-batch loss by this before backward: 1 / accumulation.
  double loss_scale() const;
  //! Call after each micro-batch's backward; every `accumulation`-th call clips,
  //! sets the scheduled lr, steps, zeroes grads and returns what it did.
  std::optional<StepInfo> micro_step();
  //! Optimizer steps taken (restored by load).
  int step() const;
  //! Saves Adam moments and the step counter to `path` (torch archive).
  void save(const std::string& path) const;
  //! Loads what save wrote; throws std::runtime_error naming the file on failure.
  void load(const std::string& path);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

//! Global L2 norm of the gradients of `parameters` (tensors without grad skipped).
double grad_global_norm(const std::vector<at::Tensor>& parameters);

}  // namespace kforge::train
