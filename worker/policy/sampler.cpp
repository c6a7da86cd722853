// Sampler: prefill once, repeat the cache over the group, decode step by step.
// Rows that finish keep decoding a stop/pad token (the batch shape stays fixed) and
// their outputs are ignored. Tests: tests/worker/policy/sampler_test.cpp.
#include "worker/policy/sampler.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace kforge::policy {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

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

std::vector<Sample> sample_group(const Model& model, const Tokenizer* tokenizer, const std::vector<int64_t>& prompt,
                                 const SampleOptions& options, SampleStats* stats) {
  if (prompt.empty()) throw std::invalid_argument("sample_group: empty prompt");
  if (options.group_size < 1) throw std::invalid_argument("sample_group: group_size must be >= 1");
  if (options.max_new_tokens < 1) throw std::invalid_argument("sample_group: max_new_tokens must be >= 1");
  if (options.temperature < 0) throw std::invalid_argument("sample_group: temperature must be >= 0");
  if (options.top_p <= 0 || options.top_p > 1) throw std::invalid_argument("sample_group: top_p must be in (0, 1]");
  if (!options.stop.empty() && !tokenizer) throw std::invalid_argument("sample_group: stop strings need a tokenizer");
  for (const auto& stop : options.stop) {
    if (stop.empty()) throw std::invalid_argument("sample_group: empty stop string");
  }
  for (int64_t id : prompt) {
    // Checked here on the host: an out-of-range id on a GPU would be a device-side assert.
    if (id < 0 || id >= model.config().vocab_size) {
      throw std::invalid_argument("sample_group: prompt token " + std::to_string(id) + " outside [0, " +
                                  std::to_string(model.config().vocab_size) + ")");
    }
  }
  const int64_t group = options.group_size;
  const int64_t prompt_len = static_cast<int64_t>(prompt.size());
  const int64_t capacity = prompt_len + options.max_new_tokens;
  if (capacity > model.config().max_position_embeddings) {
    throw std::invalid_argument("sample_group: prompt + max_new_tokens = " + std::to_string(capacity) +
                                " exceeds max_position_embeddings " + std::to_string(model.config().max_position_embeddings));
  }
  std::vector<int64_t> stop_ids = options.stop_token_ids.empty() ? model.config().eos_token_ids : options.stop_token_ids;
  const bool greedy = options.temperature == 0.0;
  const double temperature = greedy ? 1.0 : options.temperature;
  const c10::Device device = model.device();

  c10::NoGradGuard no_grad;  // sampling never needs a graph; scoring recomputes log-probs with one
  at::Generator gen = at::globalContext().defaultGenerator(device).clone();
  gen.set_current_seed(options.seed);

  auto start = std::chrono::steady_clock::now();
  at::Tensor prompt_ids = at::tensor(prompt, at::TensorOptions().dtype(at::kLong)).unsqueeze(0).to(device);
  at::Tensor logits;
  KvCache cache;
  {
    KvCache prompt_cache = model.new_cache(1, capacity);
    logits = model.forward(prompt_ids, &prompt_cache, /*last_only=*/true).squeeze(1);  // [1, V]
    cache = prompt_cache.repeat_rows(group);
  }
  logits = logits.expand({group, logits.size(-1)});
  if (stats) {
    sync_device(logits);
    stats->prefill_seconds = seconds_since(start);
  }
  start = std::chrono::steady_clock::now();

  std::vector<Sample> samples(group);
  std::vector<bool> done(group, false);
  std::vector<std::size_t> text_scan_from(group, 0);
  std::size_t longest_stop = 0;
  for (const auto& stop : options.stop) longest_stop = std::max(longest_stop, stop.size());
  int64_t pad_id = stop_ids.empty() ? 0 : stop_ids[0];
  int64_t active = group;

  for (int64_t step_idx = 0; step_idx < options.max_new_tokens && active > 0; ++step_idx) {
    at::Tensor scaled = logits.to(at::kFloat) / temperature;
    at::Tensor logp = at::log_softmax(scaled, -1);
    at::Tensor next;
    if (greedy) {
      next = scaled.argmax(-1);
    } else {
      at::Tensor filtered = filter_logits(scaled, options.top_k, options.top_p);
      next = at::multinomial(at::softmax(filtered, -1), 1, /*replacement=*/false, gen).squeeze(1);
    }
    at::Tensor chosen_logp = logp.gather(-1, next.unsqueeze(1)).squeeze(1);
    at::Tensor next_cpu = next.to(at::kCPU), logp_cpu = chosen_logp.to(at::kCPU);
    const int64_t* next_ptr = next_cpu.data_ptr<int64_t>();
    const float* logp_ptr = logp_cpu.data_ptr<float>();
    std::vector<int64_t> feed(group, pad_id);
    for (int64_t row_idx = 0; row_idx < group; ++row_idx) {
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
    stats->decode_seconds = seconds_since(start);
    for (const auto& sample : samples) stats->generated_tokens += static_cast<int64_t>(sample.tokens.size());
  }
  return samples;
}

}  // namespace kforge::policy
