// SFT trainer; see sft_trainer.h. Step s trains on batch (s mod steps_per_epoch) of
// epoch s / steps_per_epoch's seeded shuffle, so a resumed run sees exactly the data
// the uninterrupted one would have. Tested by tests/worker/train/sft_trainer_test.cpp.
#include "worker/train/sft_trainer.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <stdexcept>

#include "common/elapsed.h"
#include "common/log.h"
#include "worker/train/checkpoint.h"
#include "worker/train/sft_loss.h"

namespace fs = std::filesystem;

namespace kforge::train {

std::vector<SftExample> read_sft_jsonl(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot open SFT dataset " + path);
  std::vector<SftExample> examples;
  std::string line;
  for (int line_no = 1; std::getline(file, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto where = [&] { return path + ":" + std::to_string(line_no) + ": "; };
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(where() + "not JSON (" + e.what() + ")");
    }
    if (!record.is_object() || !record.contains("prompt") || !record["prompt"].is_string() ||
        !record.contains("completion") || !record["completion"].is_string())
      throw std::runtime_error(where() + "need an object with string fields \"prompt\" and \"completion\"");
    examples.push_back({record["prompt"].get<std::string>(), record["completion"].get<std::string>()});
  }
  return examples;
}

void write_sft_jsonl(const std::string& path, const std::vector<SftExample>& examples) {
  std::ofstream file(path);
  for (const auto& example : examples)
    file << nlohmann::json{{"prompt", example.prompt}, {"completion", example.completion}}.dump() << "\n";
  if (!file) throw std::runtime_error("cannot write " + path);
}

std::string SftConfig::validate() const {
  if (epochs < 1 && max_steps < 1) return "sft.epochs or sft.max_steps must be >= 1";
  if (max_steps < 0) return "sft.max_steps must be >= 0";
  if (batch_size < 1) return "sft.batch_size must be >= 1";
  if (micro_batch < 1) return "sft.micro_batch must be >= 1";
  if (max_tokens < 2) return "sft.max_tokens must be >= 2";
  if (eval_every < 0 || checkpoint_every < 0) return "sft.eval_every and sft.checkpoint_every must be >= 0";
  if (keep_checkpoints < 1) return "sft.keep_checkpoints must be >= 1";
  return optim.validate();
}

std::string SftStepMetrics::to_json() const {
  nlohmann::json j = {{"step", step}, {"total_steps", total_steps}, {"epoch", epoch}, {"loss", loss},
                      {"lr", lr},     {"grad_norm", grad_norm},     {"tokens", tokens}, {"seconds", seconds}};
  if (val_loss) j["val_loss"] = *val_loss;
  if (!checkpoint.empty()) j["checkpoint"] = checkpoint;
  return j.dump();
}

namespace {

struct TokenizedPair {
  std::vector<int64_t> prompt, completion;
};

}  // namespace

struct SftTrainer::Impl {
  TrainablePolicy& policy;
  SftConfig config;
  std::vector<TokenizedPair> train, validation;
  int skipped_long = 0;
  int steps_per_epoch = 1;
  int total_steps = 1;
  int step = 0;
  int resumed_from = 0;
  std::unique_ptr<Optimizer> optimizer;

  std::vector<TokenizedPair> tokenize(const std::vector<SftExample>& examples) {
    std::vector<TokenizedPair> out;
    for (const auto& example : examples) {
      TokenizedPair pair{policy.encode(example.prompt), policy.encode(example.completion)};
      if (policy.eos_token() >= 0) pair.completion.push_back(policy.eos_token());
      // A cut completion would teach the model never to finish: skip it instead.
      if (static_cast<int64_t>(pair.prompt.size() + pair.completion.size()) > config.max_tokens) {
        ++skipped_long;
        continue;
      }
      out.push_back(std::move(pair));
    }
    return out;
  }

  std::vector<size_t> batch_indices(int step_idx) const {
    int epoch = step_idx / steps_per_epoch;
    int batch_idx = step_idx % steps_per_epoch;
    std::vector<size_t> order(train.size());
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(config.seed * 1000003ull + epoch);
    std::shuffle(order.begin(), order.end(), rng);
    size_t first = static_cast<size_t>(batch_idx) * config.batch_size;
    size_t last = std::min(order.size(), first + config.batch_size);
    return {order.begin() + first, order.begin() + last};
  }

  // Sum of completion NLL and token count over pairs, micro-batched; with grad when `train_mode`.
  std::pair<double, int64_t> run_pairs(const std::vector<const TokenizedPair*>& pairs, bool train_mode,
                                       double normaliser) {
    double nll_sum = 0;
    int64_t tokens = 0;
    for (size_t first = 0; first < pairs.size(); first += config.micro_batch) {
      std::vector<std::vector<int64_t>> prompts, completions;
      for (size_t idx = first; idx < std::min(pairs.size(), first + config.micro_batch); ++idx) {
        prompts.push_back(pairs[idx]->prompt);
        completions.push_back(pairs[idx]->completion);
      }
      std::optional<c10::NoGradGuard> no_grad;
      if (!train_mode) no_grad.emplace();
      ScoredCompletions scores = policy.score(prompts, completions);
      int64_t micro_tokens = scores.mask.sum().item<int64_t>();
      at::Tensor loss = completion_nll(scores.logprobs.to(at::kFloat), scores.mask, train_mode ? normaliser : 1.0);
      if (train_mode) {
        loss.backward();
        nll_sum += loss.item<double>() * normaliser;
      } else {
        nll_sum += loss.item<double>();
      }
      tokens += micro_tokens;
    }
    return {nll_sum, tokens};
  }

  // This process's share of a step's (or the validation set's) pairs.
  std::vector<const TokenizedPair*> my_share(const std::vector<const TokenizedPair*>& pairs) const {
    if (!config.data_parallel) return pairs;
    auto [first, last] = shard_range(pairs.size(), config.data_parallel->rank(), config.data_parallel->world_size());
    return {pairs.begin() + first, pairs.begin() + last};
  }

  // NLL sum and tokens over every process (each ran its share).
  std::pair<double, int64_t> summed(std::pair<double, int64_t> local) const {
    if (!config.data_parallel) return local;
    auto sums = config.data_parallel->allreduce_sum({local.first, static_cast<double>(local.second)});
    return {sums[0], static_cast<int64_t>(sums[1])};
  }

  bool writes_checkpoints() const {
    return !config.out_dir.empty() && (!config.data_parallel || config.data_parallel->rank() == 0);
  }

  std::string write_checkpoint(const std::optional<double>& val_loss) {
    nlohmann::json state = {{"total_steps", total_steps}, {"seed", config.seed}};
    if (val_loss) state["val_loss"] = *val_loss;
    return train::write_checkpoint(config.out_dir, step, policy, *optimizer, state, config.keep_checkpoints);
  }
};

SftTrainer::SftTrainer(TrainablePolicy& policy, const std::vector<SftExample>& train,
                       const std::vector<SftExample>& validation, const SftConfig& config) {
  if (auto error = config.validate(); !error.empty()) throw std::invalid_argument(error);
  impl_.reset(new Impl{policy, config});
  impl_->train = impl_->tokenize(train);
  impl_->validation = impl_->tokenize(validation);
  if (impl_->train.empty())
    throw std::invalid_argument("sft: no training pair fits max_tokens=" + std::to_string(config.max_tokens) + " (" +
                                std::to_string(train.size()) + " given)");
  impl_->steps_per_epoch = (impl_->train.size() + config.batch_size - 1) / config.batch_size;
  impl_->total_steps = config.max_steps > 0 ? config.max_steps : config.epochs * impl_->steps_per_epoch;
  OptimConfig optim = config.optim;
  optim.total_steps = impl_->total_steps;
  optim.accumulation = 1;  // micro-batch losses are normalised by the step's tokens already
  impl_->config.optim = optim;
  impl_->optimizer = std::make_unique<Optimizer>(policy.parameters(), optim);
  if (DataParallel* dp = config.data_parallel) {
    if (config.batch_size % dp->world_size() != 0) {
      throw std::invalid_argument("sft.batch_size (" + std::to_string(config.batch_size) + ") must be a multiple of " +
                                  "world_size (" + std::to_string(dp->world_size()) + ")");
    }
    dp->broadcast_parameters(policy.parameters());  // every process starts from rank 0's weights
  }
}

SftTrainer::~SftTrainer() = default;

int SftTrainer::total_steps() const { return impl_->total_steps; }

int SftTrainer::resume() {
  std::string dir = latest_checkpoint(impl_->config.out_dir);
  if (!dir.empty()) {
    impl_->policy.load(dir);
    impl_->optimizer->load((fs::path(dir) / "optimizer.pt").string());
    impl_->step = checkpoint_step(dir);
    impl_->resumed_from = impl_->step;
    log_info("train", "resumed SFT", {{"checkpoint", dir}, {"step", std::to_string(impl_->step)}});
  }
  if (DataParallel* dp = impl_->config.data_parallel) {
    // Every process must resume from the same checkpoint (out_dir on a shared file system).
    double steps = dp->allreduce_sum({static_cast<double>(impl_->step)})[0];
    if (steps != static_cast<double>(impl_->step) * dp->world_size()) {
      throw std::runtime_error("sft: the ranks found different checkpoints; give every rank the same out_dir");
    }
  }
  return impl_->step;
}

std::optional<double> SftTrainer::validation_loss() {
  if (impl_->validation.empty()) return std::nullopt;
  std::vector<const TokenizedPair*> pairs;
  for (const auto& pair : impl_->validation) pairs.push_back(&pair);
  auto [nll_sum, tokens] = impl_->summed(impl_->run_pairs(impl_->my_share(pairs), false, 1.0));
  return nll_sum / std::max<int64_t>(1, tokens);
}

SftResult SftTrainer::run(const std::function<void(const SftStepMetrics&)>& on_step, const std::atomic<bool>* stop) {
  Impl& impl = *impl_;
  SftResult result;
  result.resumed_from = impl.resumed_from;
  result.skipped_long = impl.skipped_long;
  while (impl.step < impl.total_steps) {
    if (stop && stop->load()) {
      result.stopped = true;
      break;
    }
    auto start = std::chrono::steady_clock::now();
    std::vector<const TokenizedPair*> pairs;
    for (size_t idx : impl.batch_indices(impl.step)) pairs.push_back(&impl.train[idx]);
    int64_t batch_tokens = 0;
    for (const auto* pair : pairs) batch_tokens += pair->completion.size();
    SftStepMetrics metrics;
    metrics.epoch = impl.step / impl.steps_per_epoch;
    // The normaliser is the whole batch's token count on every process, so the summed
    // gradients are exactly one process's over the whole batch.
    auto local = impl.run_pairs(impl.my_share(pairs), true, static_cast<double>(std::max<int64_t>(1, batch_tokens)));
    if (impl.config.data_parallel) impl.config.data_parallel->allreduce_grads(impl.policy.parameters());
    auto [nll_sum, tokens] = impl.summed(local);
    auto info = impl.optimizer->micro_step();
    impl.step = info->step;
    metrics.step = impl.step;
    metrics.total_steps = impl.total_steps;
    metrics.loss = nll_sum / std::max<int64_t>(1, tokens);
    metrics.lr = info->lr;
    metrics.grad_norm = info->grad_norm;
    metrics.tokens = tokens;
    bool last = impl.step == impl.total_steps;
    if (last || (impl.config.eval_every > 0 && impl.step % impl.config.eval_every == 0))
      metrics.val_loss = validation_loss();
    if (impl.writes_checkpoints() &&
        (last || (impl.config.checkpoint_every > 0 && impl.step % impl.config.checkpoint_every == 0)))
      metrics.checkpoint = impl.write_checkpoint(metrics.val_loss);
    metrics.seconds = seconds_since(start);
    result.final_loss = metrics.loss;
    if (metrics.val_loss) result.val_loss = metrics.val_loss;
    if (!metrics.checkpoint.empty()) result.checkpoint = metrics.checkpoint;
    if (on_step) on_step(metrics);
  }
  result.steps = impl.step;
  return result;
}

}  // namespace kforge::train
