// Helpers shared by the policy tests: a temporary directory and small models.
// Header-only; included by tests/worker/policy/*_test.cpp.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <ATen/CPUGeneratorImpl.h>

#include "worker/policy/model.h"

namespace kforge::test {

//! A fresh directory under /tmp, removed with its contents on destruction.
struct TempDir {
  std::string path;  //!< the directory
  TempDir() {
    char tmpl[] = "/tmp/kforge_policy_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

//! A small random config of the given family (fast on CPU, exercises GQA).
inline kforge::policy::ModelConfig tiny_config(const std::string& model_type = "qwen2", int64_t vocab = 300) {
  kforge::policy::ModelConfig config;
  config.model_type = model_type;
  config.vocab_size = vocab;
  config.hidden_size = 64;
  config.intermediate_size = 96;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.head_dim = 16;
  config.max_position_embeddings = 512;
  config.qkv_bias = model_type == "qwen2";
  config.rope_theta = 10000.0;
  config.tie_word_embeddings = model_type == "qwen2";
  return config;
}

}  // namespace kforge::test

namespace kforge::test {

//! Adds noise to every weight (biases and norms too, which random() leaves at 0 / 1),
//! so that a test sees every tensor matter.
inline void perturb_weights(const kforge::policy::Model& model, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  for (const auto& [name, tensor] : model.parameters()) {
    c10::NoGradGuard no_grad;
    tensor.add_(at::empty(tensor.sizes(), tensor.options()).normal_(0.0, 0.05, gen));
  }
}

}  // namespace kforge::test
