// Policy bundle load/save (model + tokenizer in one HF directory) and the libtorch
// version. Tested by tests/worker/policy/model_test.cpp (PolicyBundle).
#include "worker/policy/policy.h"

#include <torch/version.h>
#include <unistd.h>

namespace kforge::policy {

std::string torch_version() { return TORCH_VERSION; }

Policy policy_load(const std::string& dir, const LoadOptions& options) {
  Policy policy{Model::load(dir, options), std::nullopt};
  std::string tokenizer_path = dir + "/tokenizer.json";
  if (access(tokenizer_path.c_str(), F_OK) == 0) {
    policy.tokenizer = Tokenizer::load(tokenizer_path);
    if (policy.tokenizer->vocab_size() > policy.model.config().vocab_size) {
      throw TokenizerError(tokenizer_path + ": " + std::to_string(policy.tokenizer->vocab_size()) +
                           " token ids do not fit the model's vocab_size " + std::to_string(policy.model.config().vocab_size));
    }
  }
  return policy;
}

void policy_save(const std::string& dir, const Model& model, const Tokenizer* tokenizer) {
  model.save(dir);
  if (tokenizer) tokenizer->save(dir + "/tokenizer.json");
}

}  // namespace kforge::policy
