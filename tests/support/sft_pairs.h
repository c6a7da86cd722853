// Templated SFT pairs for tests that train a tiny model: `count` op/kernel pairs over 12
// op names, each kernel with `body_lines` lines that differ per pair. Used by
// jobs_training_test and train_distributed_test.
#pragma once

#include <string>

namespace kforge::test {

//! Writes the pairs as JSONL ({"prompt", "completion", "op"}) to `path`; returns `path`.
std::string write_sft_pairs(const std::string& path, int count, int body_lines);

}  // namespace kforge::test
