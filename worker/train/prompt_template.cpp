// Prompt templates; see prompt_template.h and docs/training.md.
// Tested by tests/worker/train/prompt_template_test.cpp.
#include "worker/train/prompt_template.h"

#include <sstream>

namespace kforge::train {

bool prompt_style_from_name(const std::string& name, PromptStyle& out) {
  if (name == "kforge-tiny") {
    out = PromptStyle::kforge_tiny;
    return true;
  }
  if (name == "chatml") {
    out = PromptStyle::chatml;
    return true;
  }
  return false;
}

namespace {

std::string body(const PromptOp& op) {
  std::ostringstream out;
  out << "### op " << op.name << "\n### target " << op.target << "\n### inputs\n";
  for (const auto& input : op.inputs) {
    out << input.name << ": " << input.dtype << "[";
    for (size_t dim = 0; dim < input.shape.size(); ++dim) out << (dim ? ", " : "") << input.shape[dim];
    out << "]\n";
  }
  out << "### source\n" << op.source;
  if (op.source.empty() || op.source.back() != '\n') out << "\n";
  return out.str();
}

}  // namespace

std::string render_prompt(const PromptOp& op, PromptStyle style) {
  if (style == PromptStyle::kforge_tiny) return body(op) + "### kernel\n";
  return "<|im_start|>system\nYou write correct, fast " + op.target +
         " kernels for PyTorch ops in kforge's kernel program format: kernel source plus "
         "'// kforge-launch:' lines. Answer with the program only.<|im_end|>\n"
         "<|im_start|>user\n" +
         body(op) + "<|im_end|>\n<|im_start|>assistant\n";
}

std::vector<std::string> prompt_stop_strings(PromptStyle style) {
  if (style == PromptStyle::chatml) return {"<|im_end|>"};
  return {"\n### op "};  // a model that starts a second prompt has finished its kernel
}

}  // namespace kforge::train
