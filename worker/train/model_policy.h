// The real policy for the trainers: a worker/policy Model plus its tokenizer behind
// the TrainablePolicy interface (sample_group, score_completions, HF save/load),
// and the kforge-tiny bootstrap (BPE on the corpus + random Qwen2-shape model).
// Tested by ctest -R train_model_test.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "worker/policy/model.h"
#include "worker/policy/tokenizer.h"
#include "worker/train/trainable_policy.h"

namespace kforge::train {

//! A policy::Model with its tokenizer. Without a tokenizer, text is token ids written
//! as decimal numbers separated by spaces (tests and id-level experiments).
class ModelPolicy : public TrainablePolicy {
 public:
  //! Takes the model; weights are made trainable (requires_grad) when `trainable`.
  ModelPolicy(policy::Model model, std::optional<policy::Tokenizer> tokenizer, bool trainable = true);
  //! Loads an HF directory (config.json, model.safetensors, tokenizer.json if present).
  static std::unique_ptr<ModelPolicy> from_dir(const std::string& dir, const policy::LoadOptions& options = {},
                                           bool trainable = true);

  std::vector<int64_t> encode(const std::string& text) const override;
  int64_t eos_token() const override;
  std::vector<Completion> sample(const std::vector<int64_t>& prompt, int count, const SamplingConfig& config,
                                 uint64_t seed) override;
  //! Every prompt's group decoded as one batch (policy::sample_groups).
  std::vector<std::vector<Completion>> sample_many(const std::vector<std::vector<int64_t>>& prompts, int count,
                                                   const SamplingConfig& config,
                                                   const std::vector<uint64_t>& seeds) override;
  ScoredCompletions score(const std::vector<std::vector<int64_t>>& prompts,
                          const std::vector<std::vector<int64_t>>& completions) override;
  std::vector<at::Tensor> parameters() override;
  //! Writes config.json, model.safetensors and tokenizer.json (when there is one).
  void save(const std::string& dir) const override;
  //! Copies the weights of an HF directory into this model's tensors (names and shapes must match).
  void load(const std::string& dir) override;

  //! The wrapped model.
  const policy::Model& model() const { return model_; }
  //! The tokenizer, if any.
  const std::optional<policy::Tokenizer>& tokenizer() const { return tokenizer_; }
  //! Decodes ids to the text the checker sees.
  std::string decode(const std::vector<int64_t>& ids) const;
  //! Mixed precision for sample() and score(): autocast at `dtype` (policy/autocast.h) on
  //! the model's device while the weights stay as loaded (float32: the master copy);
  //! nullopt (the default) runs in the weights' dtype.
  void set_autocast(std::optional<at::ScalarType> dtype) { autocast_ = dtype; }

 private:
  policy::Model model_;
  std::optional<policy::Tokenizer> tokenizer_;
  std::optional<at::ScalarType> autocast_;
};

//! How kforge-tiny is bootstrapped from a corpus.
struct TinyModelOptions {
  std::string preset = "kforge-tiny";   //!< policy::model_preset name, or "kforge-micro" (2x64, tests)
  int64_t vocab_size = 4096;            //!< BPE vocabulary (bytes + merges + specials)
  uint64_t seed = 0;                    //!< weight init
  std::string device = "cpu";           //!< where the weights live
};

//! Trains a byte-level BPE on `corpus`, builds a random model of the preset with that
//! vocabulary and <|endoftext|> as EOS. Same corpus and options: same model.
std::unique_ptr<ModelPolicy> bootstrap_tiny_model(const std::vector<std::string>& corpus,
                                                  const TinyModelOptions& options);

}  // namespace kforge::train
