// ModelPolicy adapter and kforge-tiny bootstrap; see model_policy.h.
// Tested by tests/worker/train/model_training_test.cpp (ctest -R train_model_test; CPU, tiny shapes).
#include "worker/train/model_policy.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <sstream>
#include <stdexcept>
#include <sys/stat.h>

#include "worker/policy/autocast.h"
#include "worker/policy/model_config.h"
#include "worker/policy/safetensors.h"
#include "worker/policy/sampler.h"
#include "worker/policy/scoring.h"

namespace kforge::train {

ModelPolicy::ModelPolicy(policy::Model model, std::optional<policy::Tokenizer> tokenizer, bool trainable)
    : model_(std::move(model)), tokenizer_(std::move(tokenizer)) {
  for (auto& tensor : model_.parameter_list()) tensor.requires_grad_(trainable);
}

std::unique_ptr<ModelPolicy> ModelPolicy::from_dir(const std::string& dir, const policy::LoadOptions& options,
                                               bool trainable) {
  policy::Model model = policy::Model::load(dir, options);
  std::optional<policy::Tokenizer> tokenizer;
  struct stat st;
  if (::stat((dir + "/tokenizer.json").c_str(), &st) == 0) tokenizer = policy::Tokenizer::load(dir + "/tokenizer.json");
  return std::make_unique<ModelPolicy>(std::move(model), std::move(tokenizer), trainable);
}

std::vector<int64_t> ModelPolicy::encode(const std::string& text) const {
  // Prompts are user text: special-token spellings inside them stay plain text.
  if (tokenizer_) return tokenizer_->encode(text, /*parse_special=*/false);
  std::vector<int64_t> ids;
  std::istringstream in(text);
  for (std::string word; in >> word;) {
    try {
      ids.push_back(std::stoll(word));
    } catch (const std::exception&) {
      throw std::invalid_argument("ModelPolicy without tokenizer: '" + word + "' is not a token id");
    }
  }
  return ids;
}

int64_t ModelPolicy::eos_token() const {
  const auto& eos = model_.config().eos_token_ids;
  return eos.empty() ? -1 : eos.front();
}

std::string ModelPolicy::decode(const std::vector<int64_t>& ids) const {
  if (tokenizer_) return tokenizer_->decode(ids, /*skip_special=*/true);
  std::string text;
  for (int64_t id : ids) text += (text.empty() ? "" : " ") + std::to_string(id);
  return text;
}

std::vector<Completion> ModelPolicy::sample(const std::vector<int64_t>& prompt, int count, const SamplingConfig& config,
                                            uint64_t seed) {
  return std::move(sample_many({prompt}, count, config, {seed})[0]);
}

std::vector<std::vector<Completion>> ModelPolicy::sample_many(const std::vector<std::vector<int64_t>>& prompts,
                                                              int count, const SamplingConfig& config,
                                                              const std::vector<uint64_t>& seeds) {
  policy::SampleOptions options;
  options.group_size = count;
  options.temperature = config.temperature;
  options.top_p = config.top_p;
  options.top_k = config.top_k;
  options.max_new_tokens = config.max_new_tokens;
  options.stop = config.stop;
  policy::AutocastGuard autocast(model_.device().type(), autocast_);
  auto groups = policy::sample_groups(model_, tokenizer_ ? &*tokenizer_ : nullptr, prompts, seeds, options);
  std::vector<std::vector<Completion>> out;
  for (auto& group : groups) {
    std::vector<Completion> completions;
    for (auto& sample : group) {
      Completion completion;
      completion.truncated = sample.finish == policy::FinishReason::Length;
      completion.text = tokenizer_ ? std::move(sample.text) : decode(sample.tokens);
      completion.tokens = std::move(sample.tokens);
      completion.logprobs = std::move(sample.logprobs);
      completions.push_back(std::move(completion));
    }
    out.push_back(std::move(completions));
  }
  return out;
}

ScoredCompletions ModelPolicy::score(const std::vector<std::vector<int64_t>>& prompts,
                                     const std::vector<std::vector<int64_t>>& completions) {
  policy::AutocastGuard autocast(model_.device().type(), autocast_);
  policy::CompletionScores scores = policy::score_completions(model_, prompts, completions, 1.0);
  return {scores.logprobs, scores.mask};
}

std::vector<at::Tensor> ModelPolicy::parameters() { return model_.parameter_list(); }

void ModelPolicy::save(const std::string& dir) const {
  model_.save(dir);
  if (tokenizer_) tokenizer_->save(dir + "/tokenizer.json");
}

void ModelPolicy::load(const std::string& dir) {
  policy::TensorMap loaded = policy::checkpoint_read(dir);
  c10::NoGradGuard no_grad;
  for (const auto& [name, tensor] : model_.parameters()) {
    auto found = loaded.find(name);
    if (found == loaded.end()) {
      // Tied lm_head is not written; it shares embed_tokens.
      if (name == "lm_head.weight" && model_.config().tie_word_embeddings) continue;
      throw policy::CheckpointError(dir + ": checkpoint lacks " + name);
    }
    if (found->second.sizes() != tensor.sizes())
      throw policy::CheckpointError(dir + ": " + name + " has shape " + c10::str(found->second.sizes()) +
                                    ", model expects " + c10::str(tensor.sizes()));
    tensor.copy_(found->second);
  }
}

std::unique_ptr<ModelPolicy> bootstrap_tiny_model(const std::vector<std::string>& corpus,
                                                  const TinyModelOptions& options) {
  policy::BpeTrainOptions bpe;
  bpe.vocab_size = options.vocab_size;
  bpe.special_tokens = {"<|endoftext|>"};
  policy::Tokenizer tokenizer = policy::bpe_train(corpus, bpe);
  policy::ModelConfig config;
  if (options.preset == "kforge-micro") {
    // Two layers of 64: a seconds-long CPU SFT/GRPO for CI.
    config = policy::model_preset("kforge-tiny", tokenizer.vocab_size());
    config.hidden_size = 64;
    config.intermediate_size = 128;
    config.num_hidden_layers = 2;
    config.num_attention_heads = 4;
    config.num_key_value_heads = 2;
    config.head_dim = 16;
  } else {
    config = policy::model_preset(options.preset, tokenizer.vocab_size());
  }
  auto eos = tokenizer.token_id("<|endoftext|>");
  if (!eos) throw std::runtime_error("bootstrap_tiny_model: trained tokenizer lacks <|endoftext|>");
  config.eos_token_ids = {*eos};
  config.validate();
  policy::LoadOptions load;
  load.device = options.device;
  load.dtype = "float32";
  policy::Model model = policy::Model::random(config, options.seed, load);
  return std::make_unique<ModelPolicy>(std::move(model), std::move(tokenizer));
}

}  // namespace kforge::train
