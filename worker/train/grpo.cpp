// GRPO advantages, overlong penalty and clipped loss; see grpo.h.
// Tested by tests/worker/train/grpo_test.cpp (fast, CPU).
#include "worker/train/grpo.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <stdexcept>

namespace kforge::train {

GroupAdvantages group_advantages(const std::vector<double>& rewards, int group_size, bool scale_by_std,
                                 double std_eps, double zero_variance_tol, Baseline baseline) {
  if (group_size < 1) throw std::invalid_argument("group_size must be >= 1 (got " + std::to_string(group_size) + ")");
  if (baseline == Baseline::leave_one_out && group_size < 2)
    throw std::invalid_argument("leave-one-out advantages need group_size >= 2");
  if (rewards.size() % group_size != 0)
    throw std::invalid_argument("rewards (" + std::to_string(rewards.size()) + ") are not a multiple of group_size (" +
                                std::to_string(group_size) + ")");
  GroupAdvantages out;
  out.advantages.assign(rewards.size(), 0.0);
  out.keep.assign(rewards.size(), false);
  for (size_t group_start = 0; group_start < rewards.size(); group_start += group_size) {
    double sum = 0.0, lo = rewards[group_start], hi = rewards[group_start];
    for (int member = 0; member < group_size; ++member) {
      double r = rewards[group_start + member];
      sum += r;
      lo = std::min(lo, r);
      hi = std::max(hi, r);
    }
    if (hi - lo <= zero_variance_tol) {
      ++out.groups_dropped;
      continue;
    }
    ++out.groups_kept;
    double mean = sum / group_size;
    double sq = 0.0;
    for (int member = 0; member < group_size; ++member) sq += std::pow(rewards[group_start + member] - mean, 2);
    double scale = scale_by_std ? 1.0 / (std::sqrt(sq / group_size) + std_eps) : 1.0;
    // r_i - (sum - r_i)/(G-1) = (G r_i - sum)/(G-1) = G/(G-1) * (r_i - mean).
    if (baseline == Baseline::leave_one_out) scale *= static_cast<double>(group_size) / (group_size - 1);
    for (int member = 0; member < group_size; ++member) {
      out.advantages[group_start + member] = (rewards[group_start + member] - mean) * scale;
      out.keep[group_start + member] = true;
    }
  }
  return out;
}

double overlong_penalty(int completion_tokens, int max_tokens, int buffer_tokens, double factor) {
  int soft_start = max_tokens - buffer_tokens;
  if (completion_tokens <= soft_start) return 0.0;
  if (completion_tokens >= max_tokens || buffer_tokens <= 0) return -factor;
  return -factor * static_cast<double>(completion_tokens - soft_start) / buffer_tokens;
}

std::string GrpoLossConfig::validate() const {
  if (!(eps_low >= 0 && eps_low < 1)) return "grpo.eps_low must be in [0, 1)";
  if (!(eps_high >= 0)) return "grpo.eps_high must be >= 0";
  if (!(kl_beta >= 0)) return "grpo.kl_beta must be >= 0";
  if (!(log_ratio_clamp > 0)) return "grpo.log_ratio_clamp must be > 0";
  return "";
}

namespace {

void require_shape(const at::Tensor& t, const at::Tensor& like, const char* name) {
  if (!t.defined()) throw std::invalid_argument(std::string("grpo_loss: ") + name + " is missing");
  if (t.sizes() != like.sizes())
    throw std::invalid_argument(std::string("grpo_loss: ") + name + " has shape " + c10::str(t.sizes()) +
                                ", expected " + c10::str(like.sizes()));
}

double mean_over(const at::Tensor& values, const at::Tensor& mask, int64_t active) {
  if (active == 0) return 0.0;
  return (values.detach() * mask).sum().item<double>() / active;
}

}  // namespace

GrpoLossResult grpo_loss(const GrpoLossInputs& in, const GrpoLossConfig& config) {
  if (auto error = config.validate(); !error.empty()) throw std::invalid_argument(error);
  if (!in.logp.defined() || in.logp.dim() != 2)
    throw std::invalid_argument("grpo_loss: logp must be [B,T] (got " +
                                (in.logp.defined() ? c10::str(in.logp.sizes()) : std::string("undefined")) + ")");
  require_shape(in.old_logp, in.logp, "old_logp");
  require_shape(in.mask, in.logp, "mask");
  if (!in.advantages.defined() || in.advantages.dim() != 1 || in.advantages.size(0) != in.logp.size(0))
    throw std::invalid_argument("grpo_loss: advantages must be [B] with B = " + std::to_string(in.logp.size(0)));
  if (config.kl_beta > 0) require_shape(in.ref_logp, in.logp, "ref_logp (kl_beta > 0)");

  at::Tensor mask = in.mask.to(in.logp.scalar_type());
  GrpoLossResult out;
  out.active_tokens = mask.sum().item<int64_t>();
  int64_t normaliser = in.step_active_tokens > 0 ? in.step_active_tokens : std::max<int64_t>(out.active_tokens, 1);

  at::Tensor adv = in.advantages.to(in.logp.scalar_type()).unsqueeze(1).expand_as(in.logp);
  at::Tensor log_ratio = at::clamp(in.logp - in.old_logp.detach(), -config.log_ratio_clamp, config.log_ratio_clamp);
  at::Tensor ratio = at::exp(log_ratio);
  at::Tensor clipped = at::clamp(ratio, 1.0 - config.eps_low, 1.0 + config.eps_high);
  // -min(rA, clip(r)A) == max(-rA, -clip(r)A): where the clipped term wins, its gradient is zero.
  at::Tensor token_loss = at::max(-ratio * adv, -clipped * adv);
  at::Tensor total = token_loss;

  at::Tensor kl;
  if (config.kl_beta > 0) {
    // k3 estimator (Schulman): exp(ref - cur) - (ref - cur) - 1 >= 0, unbiased for KL(cur || ref).
    at::Tensor diff = at::clamp(in.ref_logp.detach() - in.logp, -config.log_ratio_clamp, config.log_ratio_clamp);
    kl = at::exp(diff) - diff - 1.0;
    total = total + config.kl_beta * kl;
  }
  out.loss = (total * mask).sum() / static_cast<double>(normaliser);

  c10::NoGradGuard no_grad;
  at::Tensor ratio_d = ratio.detach();
  at::Tensor adv_d = adv.detach();
  at::Tensor low = ((ratio_d < 1.0 - config.eps_low) & (adv_d < 0)).to(mask.scalar_type());
  at::Tensor high = ((ratio_d > 1.0 + config.eps_high) & (adv_d > 0)).to(mask.scalar_type());
  out.clip_low_fraction = mean_over(low, mask, out.active_tokens);
  out.clip_high_fraction = mean_over(high, mask, out.active_tokens);
  out.clip_fraction = out.clip_low_fraction + out.clip_high_fraction;
  out.ratio_mean = mean_over(ratio_d, mask, out.active_tokens);
  out.policy_loss = mean_over(token_loss, mask, out.active_tokens);
  if (kl.defined()) out.kl = mean_over(kl, mask, out.active_tokens);
  if (in.entropy.defined()) out.entropy = mean_over(in.entropy.to(mask.scalar_type()), mask, out.active_tokens);
  return out;
}

at::Tensor gather_token_logprobs(const at::Tensor& logits, const at::Tensor& tokens) {
  at::Tensor logp = at::log_softmax(logits.to(at::kFloat), -1);
  return logp.gather(-1, tokens.to(at::kLong).unsqueeze(-1)).squeeze(-1);
}

at::Tensor token_entropy(const at::Tensor& logits) {
  c10::NoGradGuard no_grad;
  at::Tensor logp = at::log_softmax(logits.detach().to(at::kFloat), -1);
  return -(logp.exp() * logp).sum(-1);
}

}  // namespace kforge::train
