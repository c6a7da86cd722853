// Batched sampling: one prompt is prefilled once, its KV cache copied to a group
// of G rows, then G samples decode together; several prompts' groups decode as one batch (temperature, top-k, top-p, stop
// strings, per-row stop, seed). Tests: tests/worker/policy/sampler_test.cpp.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "worker/policy/model.h"
#include "worker/policy/tokenizer.h"

namespace kforge::policy {

//! How to sample a group.
struct SampleOptions {
  int64_t group_size = 1;          //!< G samples sharing the prompt
  double temperature = 1.0;        //!< 0 means greedy
  double top_p = 1.0;              //!< nucleus mass kept (1 disables)
  int64_t top_k = 0;               //!< keep the k most likely tokens (0 disables)
  int64_t max_new_tokens = 256;    //!< completion length limit per row
  std::vector<std::string> stop;   //!< stop strings (matched in decoded bytes, across tokens)
  std::vector<int64_t> stop_token_ids;  //!< e.g. EOS; empty: the config's eos_token_ids
  uint64_t seed = 0;               //!< same seed, device and options: same samples (sample_group)
  int64_t max_batch_rows = 256;    //!< sample_groups decodes at most this many rows at once (whole groups)
};

//! Why a row stopped.
enum class FinishReason { Length, StopToken, StopString };

//! One sampled completion.
struct Sample {
  std::vector<int64_t> tokens;    //!< generated ids (including a final stop token, if any)
  std::vector<float> logprobs;    //!< log p(token) per generated id, under softmax(logits / T) (T=1 when greedy)
  std::string text;               //!< decoded completion, cut before the stop string / stop token
  FinishReason finish = FinishReason::Length;  //!< why it ended
};

//! Timing counters of one sample_group call.
struct SampleStats {
  double prefill_seconds = 0;    //!< prompt forward
  double decode_seconds = 0;     //!< all decode steps
  int64_t decode_steps = 0;      //!< forward calls after the prefill
  int64_t generated_tokens = 0;  //!< tokens kept over all rows
};

//! Samples `options.group_size` completions of `prompt`. The tokenizer may be null
//! when there are no stop strings (text is then left empty).
std::vector<Sample> sample_group(const Model& model, const Tokenizer* tokenizer, const std::vector<int64_t>& prompt,
                                 const SampleOptions& options, SampleStats* stats = nullptr);

//! `options.group_size` completions of each prompt, decoded together: prompts of different
//! lengths are right-aligned in one KV cache (left padding masked, positions per row), up to
//! `options.max_batch_rows` rows per batch. Prompt i's samples draw from a generator seeded
//! with seeds[i], so they do not depend on which prompts share its batch (up to floating-point
//! differences of the batched forward). Stats add up over the batches.
std::vector<std::vector<Sample>> sample_groups(const Model& model, const Tokenizer* tokenizer,
                                               const std::vector<std::vector<int64_t>>& prompts,
                                               const std::vector<uint64_t>& seeds, const SampleOptions& options,
                                               SampleStats* stats = nullptr);

//! Applies top-k then top-p to logits [rows, vocab] (float), setting dropped entries
//! to -inf. Top-p keeps the smallest set of most likely tokens whose mass reaches p.
at::Tensor filter_logits(const at::Tensor& logits, int64_t top_k, double top_p);

}  // namespace kforge::policy
