// Trainers on the real policy model (worker/policy Qwen2 transformer, CPU, tiny
// shapes): GRPO with reward "contains token 7" raises that token's probability;
// SFT on templated op/kernel pairs lowers the loss, writes HF checkpoints that load
// back identically and resume. Run: build/bin/train_model_test (label slow)
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>  // c10::NoGradGuard (at::NoGradGuard is gone in torch 2.11)
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "worker/policy/model_config.h"
#include "worker/train/grpo_trainer.h"
#include "worker/train/model_policy.h"
#include "worker/train/prompt_template.h"
#include "worker/train/sft_trainer.h"

using namespace kforge::train;
namespace fs = std::filesystem;
namespace kp = kforge::policy;

namespace {

kp::ModelConfig id_level_config(int64_t vocab) {
  kp::ModelConfig config;
  config.model_type = "qwen2";
  config.vocab_size = vocab;
  config.hidden_size = 32;
  config.intermediate_size = 64;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.head_dim = 8;
  config.max_position_embeddings = 64;
  config.qkv_bias = true;
  config.tie_word_embeddings = true;
  config.validate();
  return config;
}

// Reward 1 when the completion (ids as text) contains token 7.
class ContainsTokenChecker : public Checker {
 public:
  CheckSummary check(const Task&, const std::string& text) override {
    std::istringstream in(text);
    for (std::string word; in >> word;)
      if (word == "7") return {Outcome::correct, 0.0, false};
    return {Outcome::format_error};
  }
};

double first_token_prob(const ModelPolicy& policy, const std::vector<int64_t>& prompt, int64_t token) {
  c10::NoGradGuard no_grad;
  at::Tensor ids = at::tensor(prompt, at::kLong).unsqueeze(0);
  return at::softmax(policy.model().forward(ids, nullptr, true).squeeze(), -1)[token].item<double>();
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("kforge_train_model_" + std::to_string(getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST(RealModelGrpo, RewardForContainingATokenRaisesItsProbability) {
  ModelPolicy policy(kp::Model::random(id_level_config(16), 5), std::nullopt);
  ContainsTokenChecker checker;
  GrpoConfig config;
  config.group_size = 8;
  config.tasks_per_step = 4;
  config.micro_batch = 16;
  config.sampling.max_new_tokens = 6;
  config.optim.lr = 3e-3;
  config.optim.weight_decay = 0.0;
  config.optim.total_steps = 100;
  config.seed = 3;
  GrpoTrainer trainer(policy, nullptr, checker, config);
  std::vector<Task> tasks = {{"p1", "1 2 3", ""}, {"p2", "4 5", ""}, {"p3", "9 9 1", ""}, {"p4", "12", ""}};
  double before = 0, after = 0;
  for (const auto& task : tasks) before += first_token_prob(policy, policy.encode(task.prompt), 7) / tasks.size();
  double early = 0, late = 0;
  for (int step_idx = 0; step_idx < 12; ++step_idx) {
    GrpoStepMetrics m = trainer.step(tasks);
    if (step_idx < 3) early += m.reward_mean / 3;
    if (step_idx >= 9) late += m.reward_mean / 3;
  }
  for (const auto& task : tasks) after += first_token_prob(policy, policy.encode(task.prompt), 7) / tasks.size();
  std::cerr << "p(7 first) " << before << " -> " << after << ", reward " << early << " -> " << late << "\n";
  EXPECT_GT(after, 2 * before);
  EXPECT_GT(late, early);
}

TEST(RealModelSft, LossFallsCheckpointsLoadBackAndResume) {
  TempDir dir;
  std::vector<SftExample> pairs;
  const char* ops[][2] = {{"relu", "out[i] = x[i] > 0.0f ? x[i] : 0.0f;"},
                          {"neg", "out[i] = -x[i];"},
                          {"square", "out[i] = x[i] * x[i];"},
                          {"double", "out[i] = x[i] + x[i];"}};
  for (const auto& op : ops) {
    PromptOp prompt{op[0], std::string("def forward(x: Tensor) -> Tensor:\n    return torch.") + op[0] + "(x)\n",
                    {{"x", "float32", {1024}}}};
    std::string kernel = std::string("// kforge-launch: k grid=cdiv(numel(x),256) block=256 args=x,out,numel(x)\n") +
                         "__kernel void k(__global const float* x, __global float* out, int n) {\n"
                         "  int i = get_global_id(0);\n  if (i < n) { " + op[1] + " }\n}\n";
    pairs.push_back({render_prompt(prompt, PromptStyle::kforge_tiny), kernel});
  }
  std::vector<std::string> corpus;
  for (const auto& pair : pairs) corpus.push_back(pair.prompt + pair.completion);
  TinyModelOptions tiny;
  tiny.preset = "kforge-micro";
  tiny.vocab_size = 320;
  tiny.seed = 1;
  auto policy = bootstrap_tiny_model(corpus, tiny);
  EXPECT_GE(policy->eos_token(), 0);

  SftConfig config;
  config.max_steps = 40;
  config.batch_size = 4;
  config.micro_batch = 2;
  config.max_tokens = 512;
  config.eval_every = 20;
  config.checkpoint_every = 20;
  config.out_dir = dir.path.string();
  config.optim.lr = 3e-3;
  config.optim.warmup_steps = 4;
  SftTrainer trainer(*policy, pairs, pairs, config);
  double val_before = *trainer.validation_loss();
  SftResult result = trainer.run();
  std::cerr << "val loss " << val_before << " -> " << *result.val_loss << "\n";
  EXPECT_LT(*result.val_loss, 0.5 * val_before);
  EXPECT_EQ(result.skipped_long, 0);

  fs::path last = dir.path / "checkpoint-40";
  for (const char* file : {"config.json", "model.safetensors", "tokenizer.json", "optimizer.pt", "trainer_state.json"})
    EXPECT_TRUE(fs::exists(last / file)) << file;
  auto reloaded = ModelPolicy::from_dir(last.string());
  std::vector<std::vector<int64_t>> prompts = {policy->encode(pairs[0].prompt)};
  std::vector<std::vector<int64_t>> completions = {policy->encode(pairs[0].completion)};
  c10::NoGradGuard no_grad;
  EXPECT_TRUE(at::allclose(policy->score(prompts, completions).logprobs,
                           reloaded->score(prompts, completions).logprobs, 1e-5, 1e-6));
  EXPECT_EQ(reloaded->encode(pairs[1].prompt), policy->encode(pairs[1].prompt)) << "tokenizer.json round-trips";

  // A restarted job with a fresh model picks up the last checkpoint's weights.
  auto fresh = bootstrap_tiny_model(corpus, TinyModelOptions{"kforge-micro", 320, 77, "cpu"});
  SftTrainer restarted(*fresh, pairs, pairs, config);
  EXPECT_EQ(restarted.resume(), 40);
  EXPECT_EQ(restarted.run().steps, 40);
  EXPECT_TRUE(at::allclose(policy->score(prompts, completions).logprobs,
                           fresh->score(prompts, completions).logprobs, 1e-5, 1e-6));
}
