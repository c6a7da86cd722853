// Transformer configuration read from / written to HF config.json (Qwen2, Llama,
// Mistral), and kforge's presets. Tests: tests/worker/policy/model_test.cpp.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kforge::policy {

//! A config.json that is missing a field, has a wrong value, or asks for an unsupported feature.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

//! Hyper-parameters of a decoder-only Qwen2/Llama-family model.
struct ModelConfig {
  std::string model_type = "qwen2";  //!< "qwen2", "llama" or "mistral"
  int64_t vocab_size = 0;            //!< embedding rows
  int64_t hidden_size = 0;           //!< residual width
  int64_t intermediate_size = 0;     //!< SwiGLU inner width
  int64_t num_hidden_layers = 0;     //!< decoder layers
  int64_t num_attention_heads = 0;   //!< query heads
  int64_t num_key_value_heads = 0;   //!< key/value heads (GQA); divides num_attention_heads
  int64_t head_dim = 0;              //!< per-head width (default hidden_size / heads)
  int64_t max_position_embeddings = 4096;  //!< longest sequence (also the KV cache default)
  double rms_norm_eps = 1e-6;        //!< RMSNorm epsilon
  double rope_theta = 10000.0;       //!< rotary base
  double initializer_range = 0.02;   //!< std of random init
  bool tie_word_embeddings = false;  //!< lm_head shares embed_tokens
  bool qkv_bias = false;             //!< q/k/v projections have biases (Qwen2: always)
  bool o_bias = false;               //!< o_proj has a bias (Llama attention_bias)
  bool mlp_bias = false;             //!< gate/up/down have biases (Llama mlp_bias)
  std::vector<int64_t> eos_token_ids;  //!< generation stops at these
  int64_t bos_token_id = -1;         //!< -1 when absent
  std::string torch_dtype = "float32";  //!< dtype recorded in config.json

  //! Parses config.json text; throws ConfigError naming the field at fault.
  static ModelConfig from_json_text(const std::string& text);
  //! Reads <dir>/config.json.
  static ModelConfig load(const std::string& dir);
  //! HF-compatible config.json text (transformers' AutoConfig loads it).
  std::string to_json_text() const;
  //! Checks the numbers fit together (heads divide, sizes positive); throws ConfigError.
  void validate() const;
  //! Parameter count (embedding counted once when tied).
  int64_t parameter_count() const;
};

//! Named presets: "kforge-tiny" (~4M params, CPU tests), "kforge-small" (~30M), "kforge-20m", "kforge-100m"
//! (GPU training), "qwen2.5-0.5b-shape" (benchmarks). Throws ConfigError for an unknown name.
ModelConfig model_preset(const std::string& name, int64_t vocab_size = 0);

//! The names model_preset accepts.
std::vector<std::string> model_preset_names();

}  // namespace kforge::policy
