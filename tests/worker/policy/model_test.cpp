// Transformer: config parsing errors, checkpoint save/load (single and sharded)
// with name/shape validation, and KV-cache decode equal to a full forward.
// Run: scripts/test.sh build -R policy
#include "worker/policy/model.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include <torch/version.h>

#include <fstream>

#include "tests/worker/policy/policy_test_util.h"
#include "worker/policy/policy.h"

namespace kp = kforge::policy;
using kforge::test::perturb_weights;
using kforge::test::TempDir;
using kforge::test::tiny_config;

namespace {

std::string config_error(const std::string& text) {
  try {
    kp::ModelConfig::from_json_text(text);
  } catch (const kp::ConfigError& e) {
    return e.what();
  }
  return "";
}

at::Tensor random_tokens(int64_t batch, int64_t steps, int64_t vocab, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randint(vocab, {batch, steps}, gen, at::TensorOptions().dtype(at::kLong));
}

}  // namespace

TEST(ModelConfig, ParsesQwen2AndLlamaAndRoundTrips) {
  auto qwen = kp::ModelConfig::from_json_text(R"({"model_type":"qwen2","vocab_size":100,"hidden_size":32,
      "intermediate_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,
      "rope_theta":1000000.0,"tie_word_embeddings":true,"eos_token_id":[5,6]})");
  EXPECT_TRUE(qwen.qkv_bias);
  EXPECT_FALSE(qwen.o_bias);
  EXPECT_EQ(qwen.head_dim, 8);
  EXPECT_EQ(qwen.eos_token_ids, (std::vector<int64_t>{5, 6}));
  auto llama = kp::ModelConfig::from_json_text(R"({"model_type":"llama","vocab_size":100,"hidden_size":32,
      "intermediate_size":64,"num_hidden_layers":2,"num_attention_heads":4,"attention_bias":true,"head_dim":16})");
  EXPECT_TRUE(llama.qkv_bias && llama.o_bias);
  EXPECT_EQ(llama.num_key_value_heads, 4);
  EXPECT_EQ(llama.head_dim, 16);
  auto v5 = kp::ModelConfig::from_json_text(R"({"model_type":"qwen2","vocab_size":100,"hidden_size":32,
      "intermediate_size":64,"num_hidden_layers":2,"num_attention_heads":4,"dtype":"bfloat16",
      "rope_parameters":{"rope_theta":5000.0,"rope_type":"default"}})");
  EXPECT_EQ(v5.rope_theta, 5000.0);
  EXPECT_EQ(v5.torch_dtype, "bfloat16");
  auto again = kp::ModelConfig::from_json_text(llama.to_json_text());
  EXPECT_EQ(again.head_dim, 16);
  EXPECT_TRUE(again.o_bias);
}

TEST(ModelConfig, BadConfigsNameTheField) {
  EXPECT_NE(config_error(R"({"model_type":"qwen2"})").find("missing field 'vocab_size'"), std::string::npos);
  EXPECT_NE(config_error(R"({"model_type":"gpt2"})").find("model_type 'gpt2'"), std::string::npos);
  std::string base = R"("model_type":"llama","vocab_size":10,"hidden_size":32,"intermediate_size":64,"num_hidden_layers":1,)";
  EXPECT_NE(config_error("{" + base + R"("num_attention_heads":4,"num_key_value_heads":3})").find("multiple of num_key_value_heads"),
            std::string::npos);
  EXPECT_NE(config_error("{" + base + R"("num_attention_heads":4,"rope_scaling":{"rope_type":"yarn"}})").find("rope_scaling type 'yarn'"),
            std::string::npos);
  EXPECT_NE(config_error("{" + base + R"("num_attention_heads":4,"hidden_act":"gelu"})").find("hidden_act 'gelu'"), std::string::npos);
  EXPECT_NE(config_error("{nope").find("not valid JSON"), std::string::npos);
}

TEST(ModelConfig, PresetsHaveTheAdvertisedSizes) {
  int64_t tiny = kp::model_preset("kforge-tiny").parameter_count();
  EXPECT_GT(tiny, 2'000'000);
  EXPECT_LT(tiny, 8'000'000);
  int64_t small = kp::model_preset("kforge-small").parameter_count();
  EXPECT_GT(small, 20'000'000) << "tens of millions";
  EXPECT_LT(small, 40'000'000);
  EXPECT_GT(kp::model_preset("kforge-100m").parameter_count(), 80'000'000);
  EXPECT_LT(kp::model_preset("kforge-100m").parameter_count(), 120'000'000);
  int64_t qwen_half = kp::model_preset("qwen2.5-0.5b-shape").parameter_count();
  EXPECT_GT(qwen_half, 450'000'000);  // Qwen2.5-0.5B has 494M
  EXPECT_LT(qwen_half, 520'000'000);
  kp::Model model = kp::Model::random(kp::model_preset("kforge-tiny"), 1);
  int64_t counted = 0;
  for (const auto& tensor : model.parameter_list()) counted += tensor.numel();
  EXPECT_EQ(counted, tiny);
  EXPECT_THROW(kp::model_preset("nope"), kp::ConfigError);
}

TEST(Model, SaveLoadRoundTripGivesIdenticalLogits) {
  for (const std::string family : {"qwen2", "llama"}) {
    TempDir dir;
    kp::Model model = kp::Model::random(tiny_config(family), 3);
    perturb_weights(model, 4);
    model.save(dir.path);
    kp::Model loaded = kp::Model::load(dir.path);
    at::Tensor tokens = random_tokens(2, 9, 300, 5);
    EXPECT_TRUE(at::equal(model.forward(tokens), loaded.forward(tokens))) << family;
    // bf16 load: same model, coarser numbers.
    kp::Model bf16 = kp::Model::load(dir.path, {"cpu", "bfloat16"});
    EXPECT_EQ(bf16.dtype(), at::kBFloat16);
    double diff = (bf16.forward(tokens).to(at::kFloat) - model.forward(tokens)).abs().max().item<double>();
    EXPECT_LT(diff, 0.5) << family;
#if TORCH_VERSION_MAJOR < 2
    EXPECT_THROW(kp::Model::load(dir.path, {"cpu", "float16"}), kp::ConfigError);  // no CPU half matmul in 1.x
#else
    EXPECT_LT((kp::Model::load(dir.path, {"cpu", "float16"}).forward(tokens).to(at::kFloat) - model.forward(tokens)).abs().max().item<double>(), 0.1);
#endif
  }
}

TEST(Model, CheckpointThatDoesNotFitTheConfigIsRefused) {
  kp::ModelConfig config = tiny_config("llama");
  kp::Model model = kp::Model::random(config, 3);
  auto expect_error = [&](kp::TensorMap tensors, const std::string& needle) {
    try {
      kp::Model::from_tensors(config, tensors);
      ADD_FAILURE() << "no error, expected: " << needle;
    } catch (const kp::CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  kp::TensorMap missing = model.parameters();
  missing.erase("model.layers.1.mlp.up_proj.weight");
  expect_error(missing, "missing tensor 'model.layers.1.mlp.up_proj.weight'");
  kp::TensorMap unknown = model.parameters();
  unknown["model.layers.0.self_attn.q_norm.weight"] = at::ones({16});
  expect_error(unknown, "unknown tensor 'model.layers.0.self_attn.q_norm.weight'");
  kp::TensorMap wrong = model.parameters();
  wrong["model.norm.weight"] = at::ones({65});
  expect_error(wrong, "has shape [65] but the config needs [64]");
  // Old Llama checkpoints carry rotary inv_freq buffers: ignored, not an error.
  kp::TensorMap with_buffer = model.parameters();
  with_buffer["model.layers.0.self_attn.rotary_emb.inv_freq"] = at::ones({8});
  EXPECT_NO_THROW(kp::Model::from_tensors(config, with_buffer));
}

TEST(Model, ShardedCheckpointLoads) {
  TempDir dir;
  kp::Model model = kp::Model::random(tiny_config("qwen2"), 3);
  perturb_weights(model, 9);
  model.save(dir.path);
  // Re-save as two shards with an index, as transformers does for large models.
  kp::TensorMap first, second;
  std::string index = R"({"metadata":{},"weight_map":{)";
  bool first_entry = true;
  for (const auto& [name, tensor] : model.parameters()) {
    bool to_first = name.find("layers.1.") == std::string::npos;
    (to_first ? first : second)[name] = tensor;
    index += std::string(first_entry ? "" : ",") + "\"" + name + "\":\"" + (to_first ? "a.safetensors" : "b.safetensors") + "\"";
    first_entry = false;
  }
  index += "}}";
  std::remove((dir.path + "/model.safetensors").c_str());
  kp::safetensors_write(dir.path + "/a.safetensors", first);
  kp::safetensors_write(dir.path + "/b.safetensors", second);
  std::ofstream(dir.path + "/model.safetensors.index.json") << index;
  kp::Model loaded = kp::Model::load(dir.path);
  at::Tensor tokens = random_tokens(1, 6, 300, 1);
  EXPECT_TRUE(at::equal(model.forward(tokens), loaded.forward(tokens)));
}

TEST(Model, KvCacheDecodeMatchesFullForward) {
  for (const std::string family : {"qwen2", "llama"}) {
    kp::Model model = kp::Model::random(tiny_config(family), 11);
    perturb_weights(model, 12);
    c10::NoGradGuard no_grad;
    at::Tensor tokens = random_tokens(2, 20, 300, 13);
    at::Tensor full = model.forward(tokens);
    kp::KvCache cache = model.new_cache(2, 32);
    std::vector<at::Tensor> pieces;
    pieces.push_back(model.forward(tokens.narrow(1, 0, 7), &cache));   // prefill
    pieces.push_back(model.forward(tokens.narrow(1, 7, 5), &cache));   // a chunk after a prefix (mask offset)
    for (int64_t pos = 12; pos < 20; ++pos) pieces.push_back(model.forward(tokens.narrow(1, pos, 1), &cache));
    EXPECT_EQ(cache.length, 20);
    at::Tensor incremental = at::cat(pieces, 1);
    double diff = (incremental - full).abs().max().item<double>();
    EXPECT_LT(diff, 1e-4) << family;
    EXPECT_GT(full.abs().max().item<double>(), 0.1);  // the comparison is not of zeros
  }
}

TEST(Model, RepeatedPromptCacheMatchesPerRowForward) {
  kp::Model model = kp::Model::random(tiny_config("qwen2"), 21);
  perturb_weights(model, 22);
  c10::NoGradGuard no_grad;
  at::Tensor prompt = random_tokens(1, 10, 300, 23);
  kp::KvCache prompt_cache = model.new_cache(1, 16);
  model.forward(prompt, &prompt_cache);
  kp::KvCache group_cache = prompt_cache.repeat_rows(3);
  at::Tensor next = at::tensor(std::vector<int64_t>{5, 77, 250}, at::kLong).unsqueeze(1);
  at::Tensor group_logits = model.forward(next, &group_cache).squeeze(1);
  for (int64_t row_idx = 0; row_idx < 3; ++row_idx) {
    at::Tensor seq = at::cat({prompt, next.narrow(0, row_idx, 1)}, 1);
    at::Tensor expected = model.forward(seq).select(1, 10).squeeze(0);
    EXPECT_LT((group_logits[row_idx] - expected).abs().max().item<double>(), 1e-4) << row_idx;
  }
  // The prompt cache itself was copied, not shared: it still holds 10 positions.
  EXPECT_EQ(prompt_cache.length, 10);
}

TEST(Model, BadForwardInputsAreRefused) {
  kp::Model model = kp::Model::random(tiny_config("qwen2"), 1);
  EXPECT_THROW(model.forward(at::zeros({4}, at::kLong)), std::invalid_argument);
  EXPECT_THROW(model.forward(at::full({1, 2}, 300, at::kLong)), std::invalid_argument);
  kp::KvCache cache = model.new_cache(1, 4);
  EXPECT_THROW(model.forward(at::zeros({1, 5}, at::kLong), &cache), std::invalid_argument);
}

TEST(PolicyBundle, SavesAndLoadsModelWithTokenizer) {
  TempDir dir;
  kp::BpeTrainOptions options;
  options.vocab_size = 280;
  kp::Tokenizer tokenizer = kp::bpe_train({"hello hello kernels kernels"}, options);
  kp::Model model = kp::Model::random(tiny_config("qwen2", 300), 2);
  kp::policy_save(dir.path, model, &tokenizer);
  kp::Policy policy = kp::policy_load(dir.path);
  ASSERT_TRUE(policy.tokenizer.has_value());
  EXPECT_EQ(policy.tokenizer->encode("hello kernels"), tokenizer.encode("hello kernels"));
  at::Tensor tokens = random_tokens(1, 5, 300, 3);
  EXPECT_TRUE(at::equal(policy.model.forward(tokens), model.forward(tokens)));
  // Without tokenizer.json the bundle has none; a tokenizer larger than the model is refused.
  std::remove((dir.path + "/tokenizer.json").c_str());
  EXPECT_FALSE(kp::policy_load(dir.path).tokenizer.has_value());
  options.vocab_size = 400;
  for (int special_idx = 0; special_idx < 60; ++special_idx) options.special_tokens.push_back("<|s" + std::to_string(special_idx) + "|>");
  kp::Tokenizer big = kp::bpe_train({"hello"}, options);  // 256 bytes + a few merges + 61 specials
  ASSERT_GT(big.vocab_size(), 300);
  big.save(dir.path + "/tokenizer.json");
  EXPECT_THROW(kp::policy_load(dir.path), kp::TokenizerError);
}
