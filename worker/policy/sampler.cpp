// Sampler: prefill each prompt once, repeat its cache over its group (several prompts:
// right-aligned in one cache, KvCache::left_pad), decode every row together step by step.
// Rows that finish keep decoding a stop/pad token (the batch shape stays fixed) and
// their outputs are ignored. Tests: tests/worker/policy/sampler_test.cpp.
#include "worker/policy/sampler.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "common/elapsed.h"

namespace kforge::policy {

namespace {

void sync_device(const at::Tensor& tensor) {
  // A .item() on a device tensor waits for the queue; cheap and portable across libtorch versions.
  if (!tensor.is_cpu()) (void)tensor.sum().item<double>();
}

}  // namespace

at::Tensor filter_logits(const at::Tensor& logits, int64_t top_k, double top_p) {
  at::Tensor out = logits;
  int64_t vocab = logits.size(-1);
  if (top_k > 0 && top_k < vocab) {
    at::Tensor kth = std::get<0>(at::topk(out, top_k, -1)).narrow(-1, top_k - 1, 1);
    out = out.masked_fill(out < kth, -INFINITY);
  }
  if (top_p < 1.0) {
    auto sorted = at::sort(out, -1, /*descending=*/true);
    at::Tensor sorted_logits = std::get<0>(sorted), order = std::get<1>(sorted);
    at::Tensor probs = at::softmax(sorted_logits, -1);
    // Mass strictly before each token; a token is dropped once that mass already reaches p.
    at::Tensor mass_before = at::cumsum(probs, -1) - probs;
    at::Tensor drop_sorted = mass_before >= top_p;
    drop_sorted.select(-1, 0).fill_(false);  // always keep the most likely token
    at::Tensor drop = at::zeros_like(drop_sorted).scatter(-1, order, drop_sorted);
    out = out.masked_fill(drop, -INFINITY);
  }
  return out;
}

namespace {

// One batch of prompts decoded together (sample_groups splits the prompts into such batches).
std::vector<std::vector<Sample>> sample_batch(const Model& model, const Tokenizer* tokenizer,
                                              const std::vector<std::vector<int64_t>>& prompts,
                                              const std::vector<uint64_t>& seeds, const SampleOptions& options,
                                              SampleStats* stats) {
  const int64_t group = options.group_size;
  const int64_t count = static_cast<int64_t>(prompts.size());
  const int64_t rows = group * count;
  int64_t longest = 0;
  for (const auto& prompt : prompts) longest = std::max<int64_t>(longest, static_cast<int64_t>(prompt.size()));
  const int64_t capacity = longest + options.max_new_tokens;
  std::vector<int64_t> stop_ids = options.stop_token_ids.empty() ? model.config().eos_token_ids : options.stop_token_ids;
  const bool greedy = options.temperature == 0.0;
  const double temperature = greedy ? 1.0 : options.temperature;
  const c10::Device device = model.device();

  c10::NoGradGuard no_grad;  // sampling never needs a graph; scoring recomputes log-probs with one
  std::vector<at::Generator> generators;  // one per prompt: its samples depend on its seed, not on its batch
  for (uint64_t seed : seeds) {
    generators.push_back(at::globalContext().defaultGenerator(device).clone());
    generators.back().set_current_seed(seed);
  }

  // Prefill each prompt alone (no padding inside a prompt), then right-align the prompts in
  // one cache of `rows` rows: prompt i's group holds its keys in the last len_i columns.
  auto start = std::chrono::steady_clock::now();
  KvCache cache;
  std::vector<at::Tensor> first_logits;
  std::vector<int64_t> pads;
  for (int64_t prompt_idx = 0; prompt_idx < count; ++prompt_idx) {
    const auto& prompt = prompts[static_cast<size_t>(prompt_idx)];
    const int64_t length = static_cast<int64_t>(prompt.size());
    at::Tensor prompt_ids = at::tensor(prompt, at::TensorOptions().dtype(at::kLong)).unsqueeze(0).to(device);
    KvCache prompt_cache = model.new_cache(1, length);
    at::Tensor logits = model.forward(prompt_ids, &prompt_cache, /*last_only=*/true).squeeze(1);  // [1, V]
    first_logits.push_back(logits.expand({group, logits.size(-1)}));
    if (prompt_idx == 0) {
      cache = model.new_cache(rows, capacity);
      cache.length = longest;
    }
    const int64_t pad = longest - length;
    for (size_t layer_idx = 0; layer_idx < cache.keys.size(); ++layer_idx) {
      cache.keys[layer_idx].narrow(0, prompt_idx * group, group).narrow(2, pad, length).copy_(prompt_cache.keys[layer_idx]);
      cache.values[layer_idx].narrow(0, prompt_idx * group, group).narrow(2, pad, length).copy_(prompt_cache.values[layer_idx]);
    }
    pads.insert(pads.end(), static_cast<size_t>(group), pad);
  }
  if (std::any_of(pads.begin(), pads.end(), [](int64_t pad) { return pad > 0; }))
    cache.left_pad = at::tensor(pads, at::TensorOptions().dtype(at::kLong)).to(device);
  at::Tensor logits = at::cat(first_logits, 0);  // [rows, V]
  if (stats) {
    sync_device(logits);
    stats->prefill_seconds += seconds_since(start);
  }
  start = std::chrono::steady_clock::now();

  std::vector<Sample> samples(static_cast<size_t>(rows));
  std::vector<bool> done(static_cast<size_t>(rows), false);
  std::vector<std::size_t> text_scan_from(static_cast<size_t>(rows), 0);
  std::size_t longest_stop = 0;
  for (const auto& stop : options.stop) longest_stop = std::max(longest_stop, stop.size());
  int64_t pad_id = stop_ids.empty() ? 0 : stop_ids[0];
  int64_t active = rows;

  for (int64_t step_idx = 0; step_idx < options.max_new_tokens && active > 0; ++step_idx) {
    at::Tensor scaled = logits.to(at::kFloat) / temperature;
    at::Tensor logp = at::log_softmax(scaled, -1);
    at::Tensor next;
    if (greedy) {
      next = scaled.argmax(-1);
    } else {
      at::Tensor probs = at::softmax(filter_logits(scaled, options.top_k, options.top_p), -1);
      std::vector<at::Tensor> drawn;
      for (int64_t prompt_idx = 0; prompt_idx < count; ++prompt_idx)
        drawn.push_back(at::multinomial(probs.narrow(0, prompt_idx * group, group), 1, /*replacement=*/false,
                                        generators[static_cast<size_t>(prompt_idx)]));
      next = at::cat(drawn, 0).squeeze(1);
    }
    at::Tensor chosen_logp = logp.gather(-1, next.unsqueeze(1)).squeeze(1);
    at::Tensor next_cpu = next.to(at::kCPU), logp_cpu = chosen_logp.to(at::kCPU);
    const int64_t* next_ptr = next_cpu.data_ptr<int64_t>();
    const float* logp_ptr = logp_cpu.data_ptr<float>();
    std::vector<int64_t> feed(static_cast<size_t>(rows), pad_id);
    for (int64_t row_idx = 0; row_idx < rows; ++row_idx) {
      if (done[row_idx]) continue;
      Sample& sample = samples[row_idx];
      int64_t token = next_ptr[row_idx];
      feed[row_idx] = token;
      sample.tokens.push_back(token);
      sample.logprobs.push_back(logp_ptr[row_idx]);
      if (std::find(stop_ids.begin(), stop_ids.end(), token) != stop_ids.end()) {
        sample.finish = FinishReason::StopToken;
        done[row_idx] = true;
      } else if (tokenizer) {
        sample.text += tokenizer->token_bytes(token);
        // Only the tail can hold a new match: earlier text was scanned already.
        std::size_t scan_from = text_scan_from[row_idx];
        std::size_t cut = std::string::npos;
        for (const auto& stop : options.stop) cut = std::min(cut, sample.text.find(stop, scan_from));
        if (cut != std::string::npos) {
          sample.text.resize(cut);
          sample.finish = FinishReason::StopString;
          done[row_idx] = true;
        } else if (sample.text.size() >= longest_stop) {
          text_scan_from[row_idx] = sample.text.size() - (longest_stop > 0 ? longest_stop - 1 : 0);
        }
      }
      if (done[row_idx]) --active;
    }
    if (active == 0 || step_idx + 1 == options.max_new_tokens) break;
    at::Tensor feed_ids = at::tensor(feed, at::TensorOptions().dtype(at::kLong)).unsqueeze(1).to(device);
    logits = model.forward(feed_ids, &cache, /*last_only=*/false).squeeze(1);
    if (stats) ++stats->decode_steps;
  }
  if (stats) {
    stats->decode_seconds += seconds_since(start);
    for (const auto& sample : samples) stats->generated_tokens += static_cast<int64_t>(sample.tokens.size());
  }
  std::vector<std::vector<Sample>> out(static_cast<size_t>(count));
  for (int64_t row_idx = 0; row_idx < rows; ++row_idx)
    out[static_cast<size_t>(row_idx / group)].push_back(std::move(samples[static_cast<size_t>(row_idx)]));
  return out;
}

}  // namespace

std::vector<std::vector<Sample>> sample_groups(const Model& model, const Tokenizer* tokenizer,
                                               const std::vector<std::vector<int64_t>>& prompts,
                                               const std::vector<uint64_t>& seeds, const SampleOptions& options,
                                               SampleStats* stats) {
  if (seeds.size() != prompts.size())
    throw std::invalid_argument("sample_groups: " + std::to_string(seeds.size()) + " seeds for " +
                                std::to_string(prompts.size()) + " prompts");
  if (options.group_size < 1) throw std::invalid_argument("sample_group: group_size must be >= 1");
  if (options.max_new_tokens < 1) throw std::invalid_argument("sample_group: max_new_tokens must be >= 1");
  if (options.temperature < 0) throw std::invalid_argument("sample_group: temperature must be >= 0");
  if (options.top_p <= 0 || options.top_p > 1) throw std::invalid_argument("sample_group: top_p must be in (0, 1]");
  if (options.max_batch_rows < 1) throw std::invalid_argument("sample_group: max_batch_rows must be >= 1");
  if (!options.stop.empty() && !tokenizer) throw std::invalid_argument("sample_group: stop strings need a tokenizer");
  for (const auto& stop : options.stop) {
    if (stop.empty()) throw std::invalid_argument("sample_group: empty stop string");
  }
  for (const auto& prompt : prompts) {
    if (prompt.empty()) throw std::invalid_argument("sample_group: empty prompt");
    for (int64_t id : prompt) {
      // Checked here on the host: an out-of-range id on a GPU would be a device-side assert.
      if (id < 0 || id >= model.config().vocab_size) {
        throw std::invalid_argument("sample_group: prompt token " + std::to_string(id) + " outside [0, " +
                                    std::to_string(model.config().vocab_size) + ")");
      }
    }
    const int64_t capacity = static_cast<int64_t>(prompt.size()) + options.max_new_tokens;
    if (capacity > model.config().max_position_embeddings) {
      throw std::invalid_argument("sample_group: prompt + max_new_tokens = " + std::to_string(capacity) +
                                  " exceeds max_position_embeddings " +
                                  std::to_string(model.config().max_position_embeddings));
    }
  }
  if (stats) *stats = SampleStats{};
  std::vector<std::vector<Sample>> out;
  const size_t per_batch = static_cast<size_t>(std::max<int64_t>(1, options.max_batch_rows / options.group_size));
  for (size_t first = 0; first < prompts.size(); first += per_batch) {
    const size_t last = std::min(prompts.size(), first + per_batch);
    std::vector<std::vector<int64_t>> batch(prompts.begin() + first, prompts.begin() + last);
    std::vector<uint64_t> batch_seeds(seeds.begin() + first, seeds.begin() + last);
    for (auto& group : sample_batch(model, tokenizer, batch, batch_seeds, options, stats)) out.push_back(std::move(group));
  }
  return out;
}

std::vector<Sample> sample_group(const Model& model, const Tokenizer* tokenizer, const std::vector<int64_t>& prompt,
                                 const SampleOptions& options, SampleStats* stats) {
  return std::move(sample_groups(model, tokenizer, {prompt}, {options.seed}, options, stats)[0]);
}

}  // namespace kforge::policy
