// The transformer as HF's Qwen2/Llama modelling code computes it: RMSNorm in
// float32, NeoX rotary embeddings, grouped-query attention (softmax in float32),
// SwiGLU MLP. Tests: tests/worker/policy/model_test.cpp, tests/parity/parity.py.
#include "worker/policy/model.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <sys/stat.h>
#include <torch/version.h>

#include <cmath>
#include <fstream>

namespace kforge::policy {

namespace {

std::string shape_text(at::IntArrayRef shape) {
  std::string out = "[";
  for (std::size_t dim_idx = 0; dim_idx < shape.size(); ++dim_idx) out += (dim_idx ? ", " : "") + std::to_string(shape[dim_idx]);
  return out + "]";
}

std::string layer_name(int64_t layer_idx, const std::string& leaf) { return "model.layers." + std::to_string(layer_idx) + "." + leaf; }

// Every tensor a checkpoint must have for this config, with its shape.
std::map<std::string, std::vector<int64_t>> expected_shapes(const ModelConfig& c) {
  std::map<std::string, std::vector<int64_t>> shapes;
  int64_t q_dim = c.num_attention_heads * c.head_dim, kv_dim = c.num_key_value_heads * c.head_dim;
  shapes["model.embed_tokens.weight"] = {c.vocab_size, c.hidden_size};
  shapes["model.norm.weight"] = {c.hidden_size};
  if (!c.tie_word_embeddings) shapes["lm_head.weight"] = {c.vocab_size, c.hidden_size};
  for (int64_t layer_idx = 0; layer_idx < c.num_hidden_layers; ++layer_idx) {
    auto name = [&](const std::string& leaf) { return layer_name(layer_idx, leaf); };
    shapes[name("input_layernorm.weight")] = {c.hidden_size};
    shapes[name("post_attention_layernorm.weight")] = {c.hidden_size};
    shapes[name("self_attn.q_proj.weight")] = {q_dim, c.hidden_size};
    shapes[name("self_attn.k_proj.weight")] = {kv_dim, c.hidden_size};
    shapes[name("self_attn.v_proj.weight")] = {kv_dim, c.hidden_size};
    shapes[name("self_attn.o_proj.weight")] = {c.hidden_size, q_dim};
    if (c.qkv_bias) {
      shapes[name("self_attn.q_proj.bias")] = {q_dim};
      shapes[name("self_attn.k_proj.bias")] = {kv_dim};
      shapes[name("self_attn.v_proj.bias")] = {kv_dim};
    }
    if (c.o_bias) shapes[name("self_attn.o_proj.bias")] = {c.hidden_size};
    shapes[name("mlp.gate_proj.weight")] = {c.intermediate_size, c.hidden_size};
    shapes[name("mlp.up_proj.weight")] = {c.intermediate_size, c.hidden_size};
    shapes[name("mlp.down_proj.weight")] = {c.hidden_size, c.intermediate_size};
    if (c.mlp_bias) {
      shapes[name("mlp.gate_proj.bias")] = {c.intermediate_size};
      shapes[name("mlp.up_proj.bias")] = {c.intermediate_size};
      shapes[name("mlp.down_proj.bias")] = {c.hidden_size};
    }
  }
  return shapes;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string dtype_name(c10::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat: return "float32";
    case at::kBFloat16: return "bfloat16";
    case at::kHalf: return "float16";
    default: return c10::toString(dtype);
  }
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor variance = xf.pow(2).mean(-1, /*keepdim=*/true);
  return weight * (xf * at::rsqrt(variance + eps)).to(x.scalar_type());
}

at::Tensor rotate_half(const at::Tensor& x) {
  int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

at::Tensor maybe_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return bias.defined() ? at::linear(x, weight, bias) : at::linear(x, weight);
}

}  // namespace

c10::ScalarType parse_dtype(const std::string& name) {
  if (name == "float32" || name == "fp32" || name == "float") return at::kFloat;
  if (name == "bfloat16" || name == "bf16") return at::kBFloat16;
  if (name == "float16" || name == "fp16" || name == "half") return at::kHalf;
  throw ConfigError("unsupported dtype '" + name + "' (float32, bfloat16, float16)");
}

KvCache KvCache::repeat_rows(int64_t times) const {
  KvCache out;
  out.length = length;
  for (std::size_t layer_idx = 0; layer_idx < keys.size(); ++layer_idx) {
    // repeat_interleave keeps each source row's copies adjacent: rows [r0 x times, r1 x times, ...].
    out.keys.push_back(keys[layer_idx].repeat_interleave(times, 0));
    out.values.push_back(values[layer_idx].repeat_interleave(times, 0));
  }
  if (left_pad.defined()) out.left_pad = left_pad.repeat_interleave(times, 0);
  return out;
}

Model Model::from_tensors(const ModelConfig& config, TensorMap tensors, const LoadOptions& options) {
  config.validate();
  auto shapes = expected_shapes(config);
  for (const auto& [name, tensor] : tensors) {
    if (shapes.count(name)) continue;
    bool ignorable = ends_with(name, "rotary_emb.inv_freq") || (config.tie_word_embeddings && name == "lm_head.weight");
    if (!ignorable) throw CheckpointError("unknown tensor '" + name + "' for a " + config.model_type + " model of this config");
  }
  c10::ScalarType dtype = parse_dtype(options.dtype.empty() ? config.torch_dtype : options.dtype);
  c10::Device device(options.device);
#if TORCH_VERSION_MAJOR < 2
  // libtorch 1.x has no float16 matrix product on the CPU ("addmm_impl_cpu_" not implemented for 'Half').
  if (dtype == at::kHalf && device.is_cpu()) {
    throw ConfigError("float16 weights need a CUDA device with libtorch " TORCH_VERSION "; load as bfloat16 or float32 on the CPU");
  }
#endif
  Model model;
  model.config_ = config;
  model.config_.torch_dtype = dtype_name(dtype);
  for (const auto& [name, shape] : shapes) {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw CheckpointError("missing tensor '" + name + "' (shape " + shape_text(shape) + ")");
    if (it->second.sizes().vec() != shape) {
      throw CheckpointError("tensor '" + name + "' has shape " + shape_text(it->second.sizes()) + " but the config needs " + shape_text(shape));
    }
    if (!at::isFloatingType(it->second.scalar_type())) throw CheckpointError("tensor '" + name + "' is not floating point");
    model.params_[name] = it->second.to(device, dtype).contiguous();
  }
  model.bind();
  return model;
}

Model Model::load(const std::string& dir, const LoadOptions& options) {
  ModelConfig config = ModelConfig::load(dir);
  TensorMap tensors = checkpoint_read(dir);
  try {
    return from_tensors(config, std::move(tensors), options);
  } catch (const CheckpointError& e) {
    throw CheckpointError(dir + ": " + e.what());
  }
}

Model Model::random(const ModelConfig& config, uint64_t seed, const LoadOptions& options) {
  config.validate();
  at::Generator gen = at::detail::createCPUGenerator(seed);
  TensorMap tensors;
  for (const auto& [name, shape] : expected_shapes(config)) {
    at::Tensor tensor = at::empty(shape, at::TensorOptions().dtype(at::kFloat));
    if (ends_with(name, "norm.weight")) {
      tensor.fill_(1.0);
    } else if (ends_with(name, ".bias")) {
      tensor.zero_();
    } else {
      tensor.normal_(0.0, config.initializer_range, gen);
    }
    tensors[name] = tensor;
  }
  return from_tensors(config, std::move(tensors), options);
}

void Model::bind() {
  auto get = [&](const std::string& name) -> at::Tensor {
    auto it = params_.find(name);
    return it == params_.end() ? at::Tensor() : it->second;
  };
  embed_ = get("model.embed_tokens.weight");
  final_norm_ = get("model.norm.weight");
  lm_head_ = config_.tie_word_embeddings ? embed_ : get("lm_head.weight");
  layers_.clear();
  for (int64_t layer_idx = 0; layer_idx < config_.num_hidden_layers; ++layer_idx) {
    auto name = [&](const std::string& leaf) { return get(layer_name(layer_idx, leaf)); };
    layers_.push_back(Layer{name("input_layernorm.weight"), name("self_attn.q_proj.weight"), name("self_attn.q_proj.bias"),
                            name("self_attn.k_proj.weight"), name("self_attn.k_proj.bias"), name("self_attn.v_proj.weight"),
                            name("self_attn.v_proj.bias"), name("self_attn.o_proj.weight"), name("self_attn.o_proj.bias"),
                            name("post_attention_layernorm.weight"), name("mlp.gate_proj.weight"), name("mlp.gate_proj.bias"),
                            name("mlp.up_proj.weight"), name("mlp.up_proj.bias"), name("mlp.down_proj.weight"),
                            name("mlp.down_proj.bias")});
  }
  // inv_freq as transformers computes it: 1 / theta^(2i/d) in float32.
  int64_t dim = config_.head_dim;
  at::Tensor exponents = at::arange(0, dim, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) / static_cast<double>(dim);
  inv_freq_ = (1.0 / at::pow(config_.rope_theta, exponents)).to(embed_.device());
}

void Model::save(const std::string& dir) const {
  mkdir(dir.c_str(), 0755);
  std::ofstream config_out(dir + "/config.json", std::ios::trunc);
  if (!config_out) throw CheckpointError(dir + ": cannot write config.json");
  config_out << config_.to_json_text();
  config_out.close();
  safetensors_write(dir + "/model.safetensors", params_);
}

std::vector<at::Tensor> Model::parameter_list() const {
  std::vector<at::Tensor> out;
  for (const auto& [name, tensor] : params_) out.push_back(tensor);
  return out;
}

c10::Device Model::device() const { return embed_.device(); }
c10::ScalarType Model::dtype() const { return embed_.scalar_type(); }

KvCache Model::new_cache(int64_t batch, int64_t capacity) const {
  KvCache cache;
  auto options = embed_.options().requires_grad(false);
  for (int64_t layer_idx = 0; layer_idx < config_.num_hidden_layers; ++layer_idx) {
    cache.keys.push_back(at::zeros({batch, config_.num_key_value_heads, capacity, config_.head_dim}, options));
    cache.values.push_back(at::zeros({batch, config_.num_key_value_heads, capacity, config_.head_dim}, options));
  }
  return cache;
}

// q [B, H, T, D]; k, v [B, KV, L, D]. The query heads that share a kv head are
// folded into the row dimension, so K/V are read once per kv head, never copied.
at::Tensor Model::attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) const {
  int64_t batch = q.size(0), heads = q.size(1), steps = q.size(2), dim = q.size(3);
  int64_t kv_heads = k.size(1), group = heads / kv_heads;
  at::Tensor qg = q.reshape({batch, kv_heads, group * steps, dim});
  at::Tensor scores = at::matmul(qg, k.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(dim)));
  at::Tensor scores_f = scores.to(at::kFloat);
  // mask: [steps, keys], or [batch, 1, steps, keys] with left padding; query rows are (group, step).
  if (mask.defined()) {
    at::Tensor rows = mask.dim() == 4 ? mask.repeat({1, 1, group, 1}) : mask.repeat({group, 1});
    scores_f = scores_f.masked_fill(group > 1 ? rows : mask, -INFINITY);
  }
  at::Tensor probs = at::softmax(scores_f, -1).to(q.scalar_type());
  return at::matmul(probs, v).view({batch, heads, steps, dim});
}

at::Tensor Model::forward(const at::Tensor& tokens, KvCache* cache, bool last_only) const {
  if (tokens.dim() != 2) throw std::invalid_argument("forward: tokens must be [batch, steps], got " + shape_text(tokens.sizes()));
  if (tokens.scalar_type() != at::kLong) throw std::invalid_argument("forward: tokens must be int64");
  int64_t batch = tokens.size(0), steps = tokens.size(1);
  if (steps == 0) throw std::invalid_argument("forward: no tokens");
  int64_t past = cache ? cache->length : 0;
  if (cache) {
    if (cache->batch() != batch) throw std::invalid_argument("forward: cache has " + std::to_string(cache->batch()) + " rows, tokens " + std::to_string(batch));
    if (past + steps > cache->capacity()) {
      throw std::invalid_argument("forward: cache holds " + std::to_string(cache->capacity()) + " positions, need " + std::to_string(past + steps));
    }
  }
  at::Tensor ids = tokens.to(embed_.device());
  if (ids.is_cpu()) {
    int64_t lo = ids.min().item<int64_t>(), hi = ids.max().item<int64_t>();
    if (lo < 0 || hi >= config_.vocab_size) {
      throw std::invalid_argument("forward: token id out of range [0, " + std::to_string(config_.vocab_size) + ")");
    }
  }
  const int64_t heads = config_.num_attention_heads, kv_heads = config_.num_key_value_heads, dim = config_.head_dim;
  at::Tensor x = at::embedding(embed_, ids);

  const bool padded = cache && cache->left_pad.defined();
  at::Tensor positions = at::arange(past, past + steps, at::TensorOptions().dtype(at::kFloat).device(embed_.device()));
  if (padded) {  // [B, T]: a row's positions count from its first real column
    at::Tensor pad = cache->left_pad.to(embed_.device()).to(at::kFloat).unsqueeze(1);
    positions = (positions.unsqueeze(0) - pad).clamp_min(0);
  }
  at::Tensor freqs = positions.unsqueeze(-1) * inv_freq_;  // [T, D/2] or [B, T, D/2], float32 like transformers
  at::Tensor emb = at::cat({freqs, freqs}, -1);
  at::Tensor cos = emb.cos().to(x.scalar_type()), sin = emb.sin().to(x.scalar_type());
  if (padded) {  // [B, 1, T, D] against q and k [B, heads, T, D]
    cos = cos.unsqueeze(1);
    sin = sin.unsqueeze(1);
  }

  at::Tensor mask;  // true where a query may not look: key position > query position, or a pad column
  if (steps > 1) {
    at::Tensor query_pos = at::arange(past, past + steps, ids.options()).unsqueeze(1);
    at::Tensor key_pos = at::arange(0, past + steps, ids.options()).unsqueeze(0);
    mask = key_pos > query_pos;
  }
  if (padded) {
    at::Tensor key_pos = at::arange(0, past + steps, ids.options());
    at::Tensor pad_keys = key_pos.unsqueeze(0) < cache->left_pad.to(ids.device()).unsqueeze(1);  // [B, K]
    pad_keys = pad_keys.view({batch, 1, 1, past + steps});
    mask = mask.defined() ? (pad_keys | mask.view({1, 1, steps, past + steps})) : pad_keys.expand({batch, 1, steps, past + steps});
  }

  for (std::size_t layer_idx = 0; layer_idx < layers_.size(); ++layer_idx) {
    const Layer& layer = layers_[layer_idx];
    at::Tensor h = rms_norm(x, layer.input_norm, config_.rms_norm_eps);
    at::Tensor q = maybe_linear(h, layer.q_w, layer.q_b).view({batch, steps, heads, dim}).transpose(1, 2);
    at::Tensor k = maybe_linear(h, layer.k_w, layer.k_b).view({batch, steps, kv_heads, dim}).transpose(1, 2);
    at::Tensor v = maybe_linear(h, layer.v_w, layer.v_b).view({batch, steps, kv_heads, dim}).transpose(1, 2);
    q = q * cos + rotate_half(q) * sin;
    k = k * cos + rotate_half(k) * sin;
    if (cache) {
      cache->keys[layer_idx].narrow(2, past, steps).copy_(k);
      cache->values[layer_idx].narrow(2, past, steps).copy_(v);
      k = cache->keys[layer_idx].narrow(2, 0, past + steps);
      v = cache->values[layer_idx].narrow(2, 0, past + steps);
    }
    at::Tensor attn = attention(q, k, v, mask).transpose(1, 2).reshape({batch, steps, heads * dim});
    x = x + maybe_linear(attn, layer.o_w, layer.o_b);
    h = rms_norm(x, layer.post_norm, config_.rms_norm_eps);
    at::Tensor gated = at::silu(maybe_linear(h, layer.gate_w, layer.gate_b)) * maybe_linear(h, layer.up_w, layer.up_b);
    x = x + maybe_linear(gated, layer.down_w, layer.down_b);
  }
  if (cache) cache->length += steps;
  if (last_only) x = x.narrow(1, steps - 1, 1);
  x = rms_norm(x, final_norm_, config_.rms_norm_eps);
  return at::linear(x, lm_head_);
}

}  // namespace kforge::policy
