// Policy model library entry point: an HF model directory (config.json,
// model.safetensors, tokenizer.json) as one bundle, plus the libtorch version.
// Details per part: model.h, tokenizer.h, sampler.h, scoring.h; docs/policy.md.
// Test: ctest -R policy_test.
#pragma once

#include <optional>
#include <string>

#include "worker/policy/model.h"
#include "worker/policy/tokenizer.h"

namespace kforge::policy {

//! The libtorch version this library was compiled against, e.g. "1.13.1".
std::string torch_version();

//! A model with the tokenizer stored beside it (absent when the directory has none).
struct Policy {
  Model model;                        //!< the transformer
  std::optional<Tokenizer> tokenizer;  //!< tokenizer.json of the same directory
};

//! Loads an HF directory: config.json + weights, and tokenizer.json when present.
Policy policy_load(const std::string& dir, const LoadOptions& options = {});

//! Writes an HF directory: config.json, model.safetensors and (if given) tokenizer.json.
void policy_save(const std::string& dir, const Model& model, const Tokenizer* tokenizer = nullptr);

}  // namespace kforge::policy
