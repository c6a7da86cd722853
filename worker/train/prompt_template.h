// Prompt templates: the one documented plain template kforge-tiny is trained with,
// and a ChatML path for pretrained chat models (Qwen2.5-Coder and the like).
// Format reference: docs/training.md "Prompt template". Tested by prompt_template_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kforge::train {

//! One op input as the prompt shows it.
struct PromptInput {
  std::string name;            //!< argument name
  std::string dtype;           //!< "float32", ...
  std::vector<int64_t> shape;  //!< main shape
};

//! What a prompt says about an op.
struct PromptOp {
  std::string name;                 //!< op name
  std::string source;               //!< TorchScript reference
  std::vector<PromptInput> inputs;  //!< in forward() order
  std::string target = "opencl";    //!< kernel target
};

//! Which template.
enum class PromptStyle {
  kforge_tiny,  //!< plain "### section" template, completion = kernel program + EOS
  chatml,       //!< <|im_start|>system/user/assistant turns
};

//! Parses "kforge-tiny" / "chatml"; false when unknown.
bool prompt_style_from_name(const std::string& name, PromptStyle& out);

//! The prompt text for an op; the completion (the kernel program) follows it directly.
std::string render_prompt(const PromptOp& op, PromptStyle style);

//! Stop strings to sample with under a style (EOS is handled as a token).
std::vector<std::string> prompt_stop_strings(PromptStyle style);

}  // namespace kforge::train
