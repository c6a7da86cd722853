// AdamW + warm-up/cosine schedule + clipping + accumulation; see optim.h.
// The only translation unit of kforge_train that includes torch::optim.
// Tested by tests/worker/train/optim_test.cpp (ctest -R train_test).
#include "worker/train/optim.h"

#include <torch/optim/adamw.h>
#include <torch/serialize/archive.h>

#include <cmath>
#include <stdexcept>

namespace kforge::train {

std::string OptimConfig::validate() const {
  if (!(lr > 0)) return "optim.lr must be > 0";
  if (!(min_lr_ratio >= 0 && min_lr_ratio <= 1)) return "optim.min_lr_ratio must be in [0, 1]";
  if (warmup_steps < 0) return "optim.warmup_steps must be >= 0";
  if (total_steps < 1) return "optim.total_steps must be >= 1";
  if (!(weight_decay >= 0)) return "optim.weight_decay must be >= 0";
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1)) return "optim.beta1/beta2 must be in [0, 1)";
  if (accumulation < 1) return "optim.accumulation must be >= 1";
  return "";
}

double lr_at(const OptimConfig& config, int step) {
  if (step < config.warmup_steps) return config.lr * (step + 1) / config.warmup_steps;
  int decay_steps = std::max(1, config.total_steps - config.warmup_steps);
  double progress = std::min(1.0, static_cast<double>(step - config.warmup_steps) / decay_steps);
  double floor = config.lr * config.min_lr_ratio;
  return floor + (config.lr - floor) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

double grad_global_norm(const std::vector<at::Tensor>& parameters) {
  double sq = 0.0;
  for (const auto& param : parameters)
    if (param.grad().defined()) sq += param.grad().detach().to(at::kDouble).pow(2).sum().item<double>();
  return std::sqrt(sq);
}

struct Optimizer::Impl {
  OptimConfig config;
  std::vector<at::Tensor> parameters;
  std::unique_ptr<torch::optim::AdamW> adamw;
  int step = 0;
  int pending_micro = 0;
};

Optimizer::Optimizer(const std::vector<at::Tensor>& parameters, const OptimConfig& config)
    : impl_(std::make_unique<Impl>()) {
  if (auto error = config.validate(); !error.empty()) throw std::invalid_argument(error);
  impl_->config = config;
  impl_->parameters = parameters;
  std::vector<at::Tensor> decay, no_decay;
  for (const auto& param : parameters) {
    if (!param.requires_grad()) throw std::invalid_argument("Optimizer: a parameter does not require grad");
    // Norm gains and biases are vectors; decaying them only hurts (GPT-2/LLaMA practice).
    (param.dim() >= 2 ? decay : no_decay).push_back(param);
  }
  auto options = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(config.lr)
                                                           .betas({config.beta1, config.beta2})
                                                           .eps(config.adam_eps)
                                                           .weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decay.empty()) groups.emplace_back(decay, options(config.weight_decay));
  if (!no_decay.empty()) groups.emplace_back(no_decay, options(0.0));
  impl_->adamw = std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(config.lr));
}

Optimizer::~Optimizer() = default;

double Optimizer::loss_scale() const { return 1.0 / impl_->config.accumulation; }

int Optimizer::step() const { return impl_->step; }

std::optional<StepInfo> Optimizer::micro_step() {
  if (++impl_->pending_micro < impl_->config.accumulation) return std::nullopt;
  impl_->pending_micro = 0;
  StepInfo info;
  info.grad_norm = grad_global_norm(impl_->parameters);
  // Same rule as torch.nn.utils.clip_grad_norm_: scale by clip / (norm + 1e-6) when above.
  if (impl_->config.grad_clip > 0 && info.grad_norm > impl_->config.grad_clip) {
    c10::NoGradGuard no_grad;
    double scale = impl_->config.grad_clip / (info.grad_norm + 1e-6);
    for (auto& param : impl_->parameters)
      if (param.grad().defined()) param.mutable_grad().mul_(scale);
  }
  info.lr = lr_at(impl_->config, impl_->step);
  for (auto& group : impl_->adamw->param_groups())
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(info.lr);
  impl_->adamw->step();
  impl_->adamw->zero_grad();
  info.step = ++impl_->step;
  return info;
}

void Optimizer::save(const std::string& path) const {
  torch::serialize::OutputArchive archive;
  impl_->adamw->save(archive);
  archive.write("kforge_step", at::tensor(static_cast<int64_t>(impl_->step)));
  archive.save_to(path);
}

void Optimizer::load(const std::string& path) {
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    impl_->adamw->load(archive);
    at::Tensor step;
    archive.read("kforge_step", step);
    impl_->step = static_cast<int>(step.item<int64_t>());
    impl_->pending_micro = 0;
  } catch (const c10::Error& e) {
    throw std::runtime_error("cannot load optimizer state from " + path + ": " + e.what_without_backtrace());
  }
}

}  // namespace kforge::train
