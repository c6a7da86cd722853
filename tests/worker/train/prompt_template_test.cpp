// Prompt templates: the kforge-tiny layout is exactly as documented, ChatML wraps
// the same body in turns. Run: build/bin/train_test --gtest_filter='PromptTemplate*'
#include "worker/train/prompt_template.h"

#include <gtest/gtest.h>

using namespace kforge::train;

TEST(PromptTemplate, KforgeTinyLayoutIsAsDocumented) {
  PromptOp op{"silu_mul", "def forward(x: Tensor, y: Tensor) -> Tensor:\n    return torch.silu(x) * y",
              {{"x", "float32", {4096, 4096}}, {"y", "float32", {1023}}}, "opencl"};
  EXPECT_EQ(render_prompt(op, PromptStyle::kforge_tiny),
            "### op silu_mul\n### target opencl\n### inputs\nx: float32[4096, 4096]\ny: float32[1023]\n"
            "### source\ndef forward(x: Tensor, y: Tensor) -> Tensor:\n    return torch.silu(x) * y\n### kernel\n");
}

TEST(PromptTemplate, ChatmlWrapsTheSameBody) {
  PromptOp op{"relu", "def forward(x: Tensor) -> Tensor:\n    return torch.relu(x)\n", {{"x", "float32", {8}}}};
  std::string prompt = render_prompt(op, PromptStyle::chatml);
  EXPECT_EQ(prompt.rfind("<|im_start|>system\n", 0), 0u);
  EXPECT_NE(prompt.find("<|im_start|>user\n### op relu\n"), std::string::npos);
  EXPECT_EQ(prompt.substr(prompt.size() - 22), "<|im_start|>assistant\n");
  EXPECT_EQ(prompt_stop_strings(PromptStyle::chatml), std::vector<std::string>{"<|im_end|>"});
  PromptStyle style;
  EXPECT_TRUE(prompt_style_from_name("kforge-tiny", style));
  EXPECT_EQ(style, PromptStyle::kforge_tiny);
  EXPECT_FALSE(prompt_style_from_name("alpaca", style));
}
