// Decoder-only Qwen2/Llama transformer on libtorch (ATen ops, autograd-ready),
// loaded from / saved to HF directories; forward with an optional KV cache.
// Tests: tests/worker/policy/model_test.cpp; parity with transformers: tests/parity/.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <string>
#include <vector>

#include "worker/policy/model_config.h"
#include "worker/policy/safetensors.h"

namespace kforge::policy {

//! A checkpoint whose tensors do not fit its config (missing, unknown, wrong shape).
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

//! Per-layer key/value cache, preallocated to `capacity` positions.
struct KvCache {
  std::vector<at::Tensor> keys;    //!< per layer [batch, kv_heads, capacity, head_dim]
  std::vector<at::Tensor> values;  //!< per layer, same shape as keys
  int64_t length = 0;              //!< positions filled so far
  //! Per row [batch] int64: leading columns that hold no token, when rows continue prompts
  //! of different lengths (sample_groups right-aligns them). Those keys are masked and a
  //! row's positions count from its first real column. Undefined: no padding.
  at::Tensor left_pad;

  //! Rows in the batch.
  int64_t batch() const { return keys.empty() ? 0 : keys[0].size(0); }
  //! Positions the cache can hold.
  int64_t capacity() const { return keys.empty() ? 0 : keys[0].size(2); }
  //! A new cache with every row repeated `times` times (memory copied, not recomputed).
  KvCache repeat_rows(int64_t times) const;
};

//! Where and in which dtype to materialise weights.
struct LoadOptions {
  std::string device = "cpu";  //!< "cpu", "cuda", "cuda:1", ...
  std::string dtype;           //!< "float32", "bfloat16", "float16"; empty: config's torch_dtype
};

//! Parses "float32" / "bfloat16" / "float16" (and "fp32", "bf16", "fp16"); throws ConfigError.
c10::ScalarType parse_dtype(const std::string& name);

//! The model: weights by HF name plus the config.
class Model {
 public:
  //! Loads config.json + model.safetensors (or sharded index) from an HF directory.
  static Model load(const std::string& dir, const LoadOptions& options = {});
  //! Random weights (normal(0, initializer_range), norms 1, biases 0) from a seed.
  static Model random(const ModelConfig& config, uint64_t seed, const LoadOptions& options = {});
  //! Builds a model from named tensors, checking names and shapes against the config.
  static Model from_tensors(const ModelConfig& config, TensorMap tensors, const LoadOptions& options = {});

  //! Writes config.json and model.safetensors (lm_head left out when tied).
  void save(const std::string& dir) const;

  //! Logits [B, T, vocab] (or [B, 1, vocab] when last_only) for tokens [B, T] (int64).
  //! With a cache, tokens continue from cache->length and the cache grows by T.
  at::Tensor forward(const at::Tensor& tokens, KvCache* cache = nullptr, bool last_only = false) const;

  //! An empty cache for `batch` rows and `capacity` positions on the model's device.
  KvCache new_cache(int64_t batch, int64_t capacity) const;

  //! The config the model was built from.
  const ModelConfig& config() const { return config_; }
  //! Weights by HF name (tensors are shared: in-place updates are seen by forward).
  const TensorMap& parameters() const { return params_; }
  //! Weights as a list (for optimisers); tied lm_head is not listed twice.
  std::vector<at::Tensor> parameter_list() const;
  //! Device of the weights.
  c10::Device device() const;
  //! Floating dtype of the weights.
  c10::ScalarType dtype() const;

 private:
  struct Layer {
    at::Tensor input_norm, q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b, post_norm, gate_w, gate_b, up_w, up_b, down_w, down_b;
  };
  ModelConfig config_;
  TensorMap params_;
  at::Tensor embed_, final_norm_, lm_head_, inv_freq_;
  std::vector<Layer> layers_;

  void bind();
  at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) const;
};

}  // namespace kforge::policy
