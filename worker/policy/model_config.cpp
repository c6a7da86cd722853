// config.json <-> ModelConfig, and presets. Unsupported features (rope_scaling,
// activations other than SiLU, sliding windows that matter) are refused by name.
// Test: ctest -R 'policy_test|train_model_test'.
#include "worker/policy/model_config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace kforge::policy {

using Json = nlohmann::json;

namespace {

int64_t get_int(const Json& doc, const char* key) {
  if (!doc.contains(key)) throw ConfigError(std::string("config.json: missing field '") + key + "'");
  if (!doc[key].is_number_integer()) throw ConfigError(std::string("config.json: field '") + key + "' must be an integer");
  return doc[key].get<int64_t>();
}

}  // namespace

ModelConfig ModelConfig::from_json_text(const std::string& text) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const std::exception& e) {
    throw ConfigError(std::string("config.json is not valid JSON: ") + e.what());
  }
  ModelConfig config;
  try {
    config.model_type = doc.value("model_type", std::string());
    if (config.model_type != "qwen2" && config.model_type != "llama" && config.model_type != "mistral") {
      throw ConfigError("config.json: model_type '" + config.model_type + "' is not supported (qwen2, llama, mistral)");
    }
    config.vocab_size = get_int(doc, "vocab_size");
    config.hidden_size = get_int(doc, "hidden_size");
    config.intermediate_size = get_int(doc, "intermediate_size");
    config.num_hidden_layers = get_int(doc, "num_hidden_layers");
    config.num_attention_heads = get_int(doc, "num_attention_heads");
    config.num_key_value_heads = doc.contains("num_key_value_heads") && !doc["num_key_value_heads"].is_null()
                                     ? get_int(doc, "num_key_value_heads")
                                     : config.num_attention_heads;
    config.head_dim = doc.contains("head_dim") && !doc["head_dim"].is_null() ? get_int(doc, "head_dim")
                                                                               : (config.num_attention_heads > 0 ? config.hidden_size / config.num_attention_heads : 0);
    config.max_position_embeddings = doc.value("max_position_embeddings", int64_t{4096});
    config.rms_norm_eps = doc.value("rms_norm_eps", 1e-6);
    config.rope_theta = doc.value("rope_theta", 10000.0);
    config.initializer_range = doc.value("initializer_range", 0.02);
    config.tie_word_embeddings = doc.value("tie_word_embeddings", false);
    if (config.model_type == "qwen2") {
      config.qkv_bias = true;  // Qwen2Attention always has q/k/v biases
    } else if (config.model_type == "llama") {
      config.qkv_bias = config.o_bias = doc.value("attention_bias", false);
      config.mlp_bias = doc.value("mlp_bias", false);
    }
    std::string act = doc.value("hidden_act", std::string("silu"));
    if (act != "silu") throw ConfigError("config.json: hidden_act '" + act + "' is not supported (silu only)");
    // transformers 5 writes rope settings as rope_parameters {rope_theta, rope_type}.
    if (doc.contains("rope_parameters") && doc["rope_parameters"].is_object()) {
      const Json& rope = doc["rope_parameters"];
      config.rope_theta = rope.value("rope_theta", config.rope_theta);
      std::string type = rope.value("rope_type", std::string("default"));
      if (type != "default") throw ConfigError("config.json: rope_parameters.rope_type '" + type + "' is not supported");
    }
    if (doc.contains("rope_scaling") && !doc["rope_scaling"].is_null()) {
      std::string type = doc["rope_scaling"].value("rope_type", doc["rope_scaling"].value("type", std::string("?")));
      if (type != "default") throw ConfigError("config.json: rope_scaling type '" + type + "' is not supported");
    }
    if (doc.value("use_sliding_window", false)) throw ConfigError("config.json: use_sliding_window is not supported");
    if (doc.contains("eos_token_id")) {
      const Json& eos = doc["eos_token_id"];
      if (eos.is_number_integer()) config.eos_token_ids.push_back(eos.get<int64_t>());
      if (eos.is_array()) {
        for (const auto& id : eos) config.eos_token_ids.push_back(id.get<int64_t>());
      }
    }
    if (doc.contains("bos_token_id") && doc["bos_token_id"].is_number_integer()) config.bos_token_id = doc["bos_token_id"].get<int64_t>();
    if (doc.contains("torch_dtype") && doc["torch_dtype"].is_string()) config.torch_dtype = doc["torch_dtype"].get<std::string>();
    if (doc.contains("dtype") && doc["dtype"].is_string()) config.torch_dtype = doc["dtype"].get<std::string>();  // transformers 5
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(std::string("config.json: mistyped field: ") + e.what());
  }
  config.validate();
  return config;
}

ModelConfig ModelConfig::load(const std::string& dir) {
  std::ifstream in(dir + "/config.json");
  if (!in) throw ConfigError(dir + ": no config.json");
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    return from_json_text(buffer.str());
  } catch (const ConfigError& e) {
    throw ConfigError(dir + "/" + e.what());
  }
}

void ModelConfig::validate() const {
  auto positive = [](int64_t value, const char* name) {
    if (value <= 0) throw ConfigError(std::string("config.json: ") + name + " must be positive, got " + std::to_string(value));
  };
  positive(vocab_size, "vocab_size");
  positive(hidden_size, "hidden_size");
  positive(intermediate_size, "intermediate_size");
  positive(num_hidden_layers, "num_hidden_layers");
  positive(num_attention_heads, "num_attention_heads");
  positive(num_key_value_heads, "num_key_value_heads");
  positive(head_dim, "head_dim");
  if (num_attention_heads % num_key_value_heads != 0) {
    throw ConfigError("config.json: num_attention_heads (" + std::to_string(num_attention_heads) +
                      ") must be a multiple of num_key_value_heads (" + std::to_string(num_key_value_heads) + ")");
  }
  if (head_dim % 2 != 0) throw ConfigError("config.json: head_dim must be even for rotary embeddings");
}

int64_t ModelConfig::parameter_count() const {
  int64_t q = hidden_size * num_attention_heads * head_dim, kv = 2 * hidden_size * num_key_value_heads * head_dim;
  int64_t o = num_attention_heads * head_dim * hidden_size, mlp = 3 * hidden_size * intermediate_size;
  int64_t layer = q + kv + o + mlp + 2 * hidden_size;
  if (qkv_bias) layer += (num_attention_heads + 2 * num_key_value_heads) * head_dim;
  int64_t embed = vocab_size * hidden_size;
  return embed * (tie_word_embeddings ? 1 : 2) + num_hidden_layers * layer + hidden_size;
}

std::string ModelConfig::to_json_text() const {
  Json doc;
  static const std::map<std::string, std::string> kArchitectures = {
      {"qwen2", "Qwen2ForCausalLM"}, {"llama", "LlamaForCausalLM"}, {"mistral", "MistralForCausalLM"}};
  doc["architectures"] = {kArchitectures.at(model_type)};
  doc["model_type"] = model_type;
  doc["vocab_size"] = vocab_size;
  doc["hidden_size"] = hidden_size;
  doc["intermediate_size"] = intermediate_size;
  doc["num_hidden_layers"] = num_hidden_layers;
  doc["num_attention_heads"] = num_attention_heads;
  doc["num_key_value_heads"] = num_key_value_heads;
  doc["head_dim"] = head_dim;
  doc["max_position_embeddings"] = max_position_embeddings;
  doc["rms_norm_eps"] = rms_norm_eps;
  doc["rope_theta"] = rope_theta;
  doc["initializer_range"] = initializer_range;
  doc["tie_word_embeddings"] = tie_word_embeddings;
  doc["hidden_act"] = "silu";
  doc["torch_dtype"] = torch_dtype;
  if (model_type == "llama") {
    doc["attention_bias"] = qkv_bias;
    doc["mlp_bias"] = mlp_bias;
  }
  if (model_type == "qwen2") doc["use_sliding_window"] = false;
  if (eos_token_ids.size() == 1) doc["eos_token_id"] = eos_token_ids[0];
  if (eos_token_ids.size() > 1) doc["eos_token_id"] = eos_token_ids;
  if (bos_token_id >= 0) doc["bos_token_id"] = bos_token_id;
  return doc.dump(2);
}

std::vector<std::string> model_preset_names() { return {"kforge-tiny", "kforge-small", "kforge-20m", "kforge-100m", "qwen2.5-0.5b-shape"}; }

ModelConfig model_preset(const std::string& name, int64_t vocab_size) {
  ModelConfig config;
  config.model_type = "qwen2";
  config.qkv_bias = true;
  config.tie_word_embeddings = true;
  config.rope_theta = 1000000.0;
  if (name == "kforge-tiny") {
    // 4 layers x 256 wide, 4096-token BPE: ~4M parameters, fast on 2 CPU cores.
    config.vocab_size = 4096;
    config.hidden_size = 256;
    config.intermediate_size = 768;
    config.num_hidden_layers = 4;
    config.num_attention_heads = 4;
    config.num_key_value_heads = 2;
    config.max_position_embeddings = 2048;
  } else if (name == "kforge-small") {
    // 8 layers x 512 wide, 8192-token BPE: ~30M parameters (25M in the layers, 4M in the tied
    // embedding), the step up from kforge-tiny that still trains in minutes on one H100.
    config.vocab_size = 8192;
    config.hidden_size = 512;
    config.intermediate_size = 1536;
    config.num_hidden_layers = 8;
    config.num_attention_heads = 8;
    config.num_key_value_heads = 4;
    config.max_position_embeddings = 2048;
  } else if (name == "kforge-20m") {
    config.vocab_size = 16384;
    config.hidden_size = 384;
    config.intermediate_size = 1024;
    config.num_hidden_layers = 8;
    config.num_attention_heads = 6;
    config.num_key_value_heads = 2;
  } else if (name == "kforge-100m") {
    config.vocab_size = 32768;
    config.hidden_size = 768;
    config.intermediate_size = 2048;
    config.num_hidden_layers = 12;
    config.num_attention_heads = 12;
    config.num_key_value_heads = 4;
  } else if (name == "qwen2.5-0.5b-shape") {
    // Qwen2.5-0.5B's shape (random weights): 24 layers, 896 wide, 14/2 heads, 151936 vocab.
    config.vocab_size = 151936;
    config.hidden_size = 896;
    config.intermediate_size = 4864;
    config.num_hidden_layers = 24;
    config.num_attention_heads = 14;
    config.num_key_value_heads = 2;
    config.max_position_embeddings = 32768;
  } else {
    std::string names;
    for (const auto& known : model_preset_names()) names += (names.empty() ? "" : ", ") + known;
    throw ConfigError("unknown model preset '" + name + "' (known: " + names + ")");
  }
  if (vocab_size > 0) config.vocab_size = vocab_size;
  config.head_dim = config.hidden_size / config.num_attention_heads;
  config.validate();
  return config;
}

}  // namespace kforge::policy
