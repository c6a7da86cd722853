// Sampler: seeded determinism, top-k / top-p edges, stop strings spanning token
// boundaries, per-row stop tokens, log-probs equal to teacher-forced scoring, and several
// prompts of different lengths decoded as one batch as they would be alone.
// Run: scripts/test.sh build -R policy
#include "worker/policy/sampler.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include "tests/worker/policy/policy_test_util.h"
#include "worker/policy/scoring.h"

namespace kp = kforge::policy;
using kforge::test::perturb_weights;
using kforge::test::tiny_config;

namespace {

// A byte-level tokenizer whose ids 0..255 are the bytes (no merges).
kp::Tokenizer byte_tokenizer() {
  kp::BpeTrainOptions options;
  options.vocab_size = 257;
  return kp::bpe_train({"x"}, options);
}

// A model over 256 byte tokens whose greedy (and, at T=1, near-certain) next token
// after byte b is successor[b]: every layer is zeroed (the residual passes the
// embedding through), embeddings are one-hot, and lm_head row successor[b] points at b.
kp::Model chain_model(const std::vector<int>& successor) {
  kp::ModelConfig config = tiny_config("llama", 256);
  config.hidden_size = 256;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.head_dim = 64;
  config.tie_word_embeddings = false;
  kp::Model model = kp::Model::random(config, 1);
  c10::NoGradGuard no_grad;
  for (const auto& [name, tensor] : model.parameters()) {
    if (name.find("layers.") != std::string::npos && name.find("norm") == std::string::npos) tensor.zero_();
  }
  model.parameters().at("model.embed_tokens.weight").copy_(at::eye(256));
  at::Tensor head = at::zeros({256, 256});
  for (int byte = 0; byte < 256; ++byte) head[successor[byte]][byte] = 2.0;  // logit 2 * sqrt(256) = 32
  model.parameters().at("lm_head.weight").copy_(head);
  return model;
}

std::vector<int> successor_for(const std::string& text) {
  std::vector<int> successor(256, ' ');
  for (std::size_t pos = 0; pos + 1 < text.size(); ++pos) successor[static_cast<unsigned char>(text[pos])] = static_cast<unsigned char>(text[pos + 1]);
  return successor;
}

}  // namespace

TEST(FilterLogits, TopKKeepsExactlyK) {
  at::Tensor logits = at::tensor(std::vector<float>{1.f, 4.f, 3.f, 2.f}).unsqueeze(0);
  at::Tensor kept = at::isfinite(kp::filter_logits(logits, 2, 1.0));
  EXPECT_EQ(kept.sum().item<int64_t>(), 2);
  EXPECT_TRUE(kept[0][1].item<bool>() && kept[0][2].item<bool>());
  // k = 0 and k >= vocab change nothing; k = 1 is greedy.
  EXPECT_TRUE(at::equal(kp::filter_logits(logits, 0, 1.0), logits));
  EXPECT_TRUE(at::equal(kp::filter_logits(logits, 4, 1.0), logits));
  EXPECT_TRUE(at::equal(kp::filter_logits(logits, 9, 1.0), logits));
  EXPECT_EQ(at::isfinite(kp::filter_logits(logits, 1, 1.0)).sum().item<int64_t>(), 1);
}

TEST(FilterLogits, TopPKeepsSmallestSetReachingP) {
  // probabilities 0.5, 0.3, 0.15, 0.05 (in shuffled order)
  at::Tensor probs = at::tensor(std::vector<float>{0.15f, 0.5f, 0.05f, 0.3f}).unsqueeze(0);
  at::Tensor logits = probs.log();
  auto kept = [&](double p) { return at::isfinite(kp::filter_logits(logits, 0, p)).squeeze(0); };
  EXPECT_EQ(kept(0.75).sum().item<int64_t>(), 2);  // 0.5 + 0.3 reaches 0.75
  EXPECT_TRUE(kept(0.75)[1].item<bool>() && kept(0.75)[3].item<bool>());
  EXPECT_EQ(kept(0.85).sum().item<int64_t>(), 3);
  EXPECT_EQ(kept(0.4).sum().item<int64_t>(), 1);    // the top token alone exceeds p
  EXPECT_EQ(kept(1e-9).sum().item<int64_t>(), 1);   // tiny p still keeps one token
  EXPECT_EQ(kept(1.0).sum().item<int64_t>(), 4);
  // top-k first, then top-p over what is left (renormalised: 0.5/0.8, 0.3/0.8)
  EXPECT_EQ(at::isfinite(kp::filter_logits(logits, 2, 0.6)).sum().item<int64_t>(), 1);
  // ties at the k-th value are all kept
  at::Tensor tied = at::tensor(std::vector<float>{1.f, 1.f, 0.f}).unsqueeze(0);
  EXPECT_EQ(at::isfinite(kp::filter_logits(tied, 1, 1.0)).sum().item<int64_t>(), 2);
}

TEST(Sampler, SameSeedSameSamplesOtherSeedOthers) {
  kp::Model model = kp::Model::random(tiny_config("qwen2"), 5);
  perturb_weights(model, 6);
  kp::SampleOptions options;
  options.group_size = 4;
  options.max_new_tokens = 12;
  options.temperature = 1.0;
  options.seed = 7;
  std::vector<int64_t> prompt{1, 2, 3, 4};
  auto first = kp::sample_group(model, nullptr, prompt, options);
  auto second = kp::sample_group(model, nullptr, prompt, options);
  options.seed = 8;
  auto third = kp::sample_group(model, nullptr, prompt, options);
  ASSERT_EQ(first.size(), 4u);
  bool any_difference = false;
  for (std::size_t row_idx = 0; row_idx < first.size(); ++row_idx) {
    EXPECT_EQ(first[row_idx].tokens, second[row_idx].tokens);
    EXPECT_EQ(first[row_idx].logprobs, second[row_idx].logprobs);
    EXPECT_EQ(first[row_idx].tokens.size(), 12u);
    any_difference |= first[row_idx].tokens != third[row_idx].tokens;
  }
  EXPECT_TRUE(any_difference) << "seed 8 gave the same samples as seed 7";
  // The rows of one group differ from each other (they are independent draws).
  EXPECT_NE(first[0].tokens, first[1].tokens);
}

TEST(Sampler, TopKOneAndTinyTopPAreGreedy) {
  kp::Model model = kp::Model::random(tiny_config("llama"), 15);
  perturb_weights(model, 16);
  std::vector<int64_t> prompt{9, 8, 7};
  kp::SampleOptions greedy;
  greedy.temperature = 0;
  greedy.max_new_tokens = 10;
  auto reference = kp::sample_group(model, nullptr, prompt, greedy)[0].tokens;
  kp::SampleOptions top_k = greedy;
  top_k.temperature = 1.5;
  top_k.top_k = 1;
  top_k.group_size = 3;
  for (const auto& sample : kp::sample_group(model, nullptr, prompt, top_k)) EXPECT_EQ(sample.tokens, reference);
  kp::SampleOptions top_p = top_k;
  top_p.top_k = 0;
  top_p.top_p = 1e-6;
  for (const auto& sample : kp::sample_group(model, nullptr, prompt, top_p)) EXPECT_EQ(sample.tokens, reference);
}

TEST(Sampler, StopStringSpanningTokensEndsTheRowAndIsCutFromText) {
  kp::Tokenizer tokenizer = byte_tokenizer();
  std::string script = "<sayHi_END!";  // every byte once: a chain with no branches
  kp::Model model = chain_model(successor_for(script));
  kp::SampleOptions options;
  options.temperature = 0;
  options.max_new_tokens = 40;
  options.stop = {"END", "never"};
  std::vector<int64_t> prompt{'<'};
  auto samples = kp::sample_group(model, &tokenizer, prompt, options);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].finish, kp::FinishReason::StopString);
  EXPECT_EQ(samples[0].text, "sayHi_");
  // Tokens run up to the one that completed "END" (E, N, D are three tokens).
  EXPECT_EQ(tokenizer.decode(samples[0].tokens), "sayHi_END");
  // Without the stop string the row runs to max_new_tokens.
  options.stop.clear();
  auto unstopped = kp::sample_group(model, &tokenizer, prompt, options);
  EXPECT_EQ(unstopped[0].finish, kp::FinishReason::Length);
  EXPECT_EQ(unstopped[0].tokens.size(), 40u);
}

TEST(Sampler, StopTokenStopsOnlyItsRow) {
  kp::Tokenizer tokenizer = byte_tokenizer();
  // After 'a' comes '!' (the stop token); after 'b' the chain loops b -> c -> b.
  std::vector<int> successor(256, ' ');
  successor['a'] = '!';
  successor['b'] = 'c';
  successor['c'] = 'b';
  kp::Model model = chain_model(successor);
  kp::SampleOptions options;
  options.temperature = 0;
  options.max_new_tokens = 6;
  options.stop_token_ids = {'!'};
  auto stopped = kp::sample_group(model, &tokenizer, {'a'}, options);
  EXPECT_EQ(stopped[0].finish, kp::FinishReason::StopToken);
  EXPECT_EQ(stopped[0].tokens, (std::vector<int64_t>{'!'}));
  EXPECT_EQ(stopped[0].text, "");
  auto running = kp::sample_group(model, &tokenizer, {'b'}, options);
  EXPECT_EQ(running[0].finish, kp::FinishReason::Length);
  EXPECT_EQ(running[0].text, "cbcbcb");
}

TEST(Sampler, LogprobsEqualTeacherForcedScoring) {
  kp::Model model = kp::Model::random(tiny_config("qwen2"), 31);
  perturb_weights(model, 32);
  kp::SampleOptions options;
  options.group_size = 3;
  options.max_new_tokens = 8;
  options.temperature = 0.7;
  options.top_k = 50;  // filtering does not change the reported log-probs
  options.seed = 3;
  std::vector<int64_t> prompt{10, 20, 30, 40, 50};
  auto samples = kp::sample_group(model, nullptr, prompt, options);
  std::vector<std::vector<int64_t>> prompts(3, prompt), completions;
  for (const auto& sample : samples) completions.push_back(sample.tokens);
  c10::NoGradGuard no_grad;
  kp::CompletionScores scores = kp::score_completions(model, prompts, completions, 0.7);
  for (std::size_t row_idx = 0; row_idx < samples.size(); ++row_idx) {
    for (std::size_t tok_idx = 0; tok_idx < samples[row_idx].logprobs.size(); ++tok_idx) {
      EXPECT_NEAR(samples[row_idx].logprobs[tok_idx], scores.logprobs[row_idx][tok_idx].item<float>(), 1e-4);
    }
  }
}

// Several prompts of different lengths decode as one batch (right-aligned in one KV cache,
// the left padding masked and positions counted per row): each prompt gets what it would
// get alone, greedy and sampled (each prompt's draws come from its own seed), in one batch
// or split into batches of max_batch_rows; the log-probs match teacher-forced scoring.
TEST(SampleGroups, PromptsOfDifferentLengthsDecodeAsTheyWouldAlone) {
  for (const char* arch : {"qwen2", "llama"}) {
    kp::Model model = kp::Model::random(tiny_config(arch), 41);
    perturb_weights(model, 42);
    const std::vector<std::vector<int64_t>> prompts{{5, 6, 7}, {9, 8, 7, 6, 5, 4, 3, 2, 1}, {11, 12, 13, 14, 15}};
    const std::vector<uint64_t> seeds{3, 4, 5};
    for (double temperature : {0.0, 1.0}) {
      kp::SampleOptions options;
      options.group_size = 2;
      options.max_new_tokens = 10;
      options.temperature = temperature;
      kp::SampleStats stats;
      auto together = kp::sample_groups(model, nullptr, prompts, seeds, options, &stats);
      ASSERT_EQ(together.size(), prompts.size());
      EXPECT_LE(stats.decode_steps, options.max_new_tokens) << "one decode loop for every prompt, not one each";
      options.max_batch_rows = 2;  // one prompt's group per batch
      auto split = kp::sample_groups(model, nullptr, prompts, seeds, options);
      for (size_t prompt_idx = 0; prompt_idx < prompts.size(); ++prompt_idx) {
        options.seed = seeds[prompt_idx];
        auto alone = kp::sample_group(model, nullptr, prompts[prompt_idx], options);
        ASSERT_EQ(together[prompt_idx].size(), 2u);
        for (size_t row_idx = 0; row_idx < alone.size(); ++row_idx) {
          const auto& batched = together[prompt_idx][row_idx];
          EXPECT_EQ(batched.tokens, alone[row_idx].tokens) << arch << " T=" << temperature << " prompt " << prompt_idx;
          EXPECT_EQ(split[prompt_idx][row_idx].tokens, alone[row_idx].tokens);
          ASSERT_EQ(batched.logprobs.size(), alone[row_idx].logprobs.size());
          for (size_t tok_idx = 0; tok_idx < batched.logprobs.size(); ++tok_idx)
            EXPECT_NEAR(batched.logprobs[tok_idx], alone[row_idx].logprobs[tok_idx], 1e-4);
        }
      }
      if (temperature == 0.0) continue;
      // The batched samples' log-probs are the model's (teacher-forced, unpadded).
      std::vector<std::vector<int64_t>> score_prompts, completions;
      std::vector<const kp::Sample*> rows;
      for (size_t prompt_idx = 0; prompt_idx < prompts.size(); ++prompt_idx)
        for (const auto& sample : together[prompt_idx]) {
          score_prompts.push_back(prompts[prompt_idx]);
          completions.push_back(sample.tokens);
          rows.push_back(&sample);
        }
      c10::NoGradGuard no_grad;
      kp::CompletionScores scores = kp::score_completions(model, score_prompts, completions, temperature);
      for (size_t row_idx = 0; row_idx < rows.size(); ++row_idx)
        for (size_t tok_idx = 0; tok_idx < rows[row_idx]->logprobs.size(); ++tok_idx)
          EXPECT_NEAR(rows[row_idx]->logprobs[tok_idx], scores.logprobs[row_idx][tok_idx].item<float>(), 1e-4);
    }
  }
}

TEST(SampleGroups, SeedsMustMatchPrompts) {
  kp::Model model = kp::Model::random(tiny_config("qwen2"), 1);
  kp::SampleOptions options;
  EXPECT_THROW(kp::sample_groups(model, nullptr, {{1, 2}, {3}}, {1}, options), std::invalid_argument);
  options.max_batch_rows = 0;
  EXPECT_THROW(kp::sample_groups(model, nullptr, {{1, 2}}, {1}, options), std::invalid_argument);
}

TEST(Sampler, BadOptionsAreRefused) {
  kp::Model model = kp::Model::random(tiny_config("qwen2"), 1);
  kp::SampleOptions options;
  EXPECT_THROW(kp::sample_group(model, nullptr, {}, options), std::invalid_argument);
  EXPECT_THROW(kp::sample_group(model, nullptr, {5, 300}, options), std::invalid_argument);
  options.top_p = 0;
  EXPECT_THROW(kp::sample_group(model, nullptr, {1}, options), std::invalid_argument);
  options.top_p = 1;
  options.stop = {"x"};
  EXPECT_THROW(kp::sample_group(model, nullptr, {1}, options), std::invalid_argument);
  options.stop.clear();
  options.max_new_tokens = 10'000;
  EXPECT_THROW(kp::sample_group(model, nullptr, {1}, options), std::invalid_argument);
}
