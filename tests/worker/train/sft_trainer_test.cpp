// SFT trainer on a tiny bigram policy: loss and validation loss fall, long pairs
// are skipped, a run stopped and resumed from its checkpoint ends bit-for-bit where
// an uninterrupted run ends, JSONL in and out. Run: ctest -R train_test
// (one binary: build/bin/train_test --gtest_filter='SftJsonl*:SftTrainer*')
#include "worker/train/sft_trainer.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/worker/train/tiny_policy.h"

using namespace kforge::train;
namespace fs = std::filesystem;

namespace {

// "Kernels" of a toy language: after prompt letter x comes a fixed spelling.
std::vector<SftExample> toy_pairs() {
  return {{"a", "bcd"}, {"b", "cde"}, {"c", "def"}, {"d", "efg"}, {"e", "fgb"}, {"f", "gbc"}};
}

SftConfig toy_config(const std::string& out_dir) {
  SftConfig config;
  config.max_steps = 12;
  config.batch_size = 4;
  config.micro_batch = 3;
  config.max_tokens = 16;
  config.eval_every = 4;
  config.checkpoint_every = 2;
  config.keep_checkpoints = 2;
  config.out_dir = out_dir;
  config.seed = 9;
  config.optim.lr = 0.1;
  config.optim.warmup_steps = 2;
  return config;
}

struct TempDir {
  fs::path path;
  TempDir() : path(fs::temp_directory_path() / ("kforge_sft_test_" + std::to_string(getpid()) + "_" +
                                                std::to_string(counter()++))) {
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

}  // namespace

TEST(SftTrainer, LossAndValidationLossFall) {
  test::TinyBigramPolicy policy(9, 2);
  SftConfig config = toy_config("");
  config.max_steps = 30;
  SftTrainer trainer(policy, toy_pairs(), toy_pairs(), config);
  double first_val = *trainer.validation_loss();
  std::vector<SftStepMetrics> steps;
  SftResult result = trainer.run([&](const SftStepMetrics& m) { steps.push_back(m); });
  ASSERT_EQ(steps.size(), 30u);
  EXPECT_EQ(result.steps, 30);
  EXPECT_LT(steps.back().loss, steps.front().loss * 0.6);
  ASSERT_TRUE(result.val_loss.has_value());
  EXPECT_LT(*result.val_loss, first_val * 0.6) << "val " << first_val << " -> " << *result.val_loss;
  EXPECT_TRUE(steps[3].val_loss.has_value());   // step 4
  EXPECT_FALSE(steps[4].val_loss.has_value());  // step 5
  EXPECT_LT(steps[0].lr, steps[1].lr) << "warm-up";
  EXPECT_LT(steps.back().lr, steps[2].lr) << "cosine decay";
  // 4 pairs per step, each 3 letters + EOS.
  EXPECT_EQ(steps[0].tokens, 16);
  auto json = nlohmann::json::parse(steps[3].to_json());
  EXPECT_EQ(json["step"].get<int>(), 4);
  EXPECT_TRUE(json.contains("val_loss"));
}

TEST(SftTrainer, ResumedRunEndsExactlyWhereAnUninterruptedOneDoes) {
  TempDir straight_dir, resumed_dir;
  test::TinyBigramPolicy straight(9, 4);
  SftTrainer(straight, toy_pairs(), {}, toy_config(straight_dir.path.string())).run();

  // Interrupted: stop after step 5 (last checkpoint at step 4), then a fresh process-like
  // restart with a differently initialised policy resumes from the checkpoint.
  {
    test::TinyBigramPolicy first(9, 4);
    std::atomic<bool> stop{false};
    SftTrainer trainer(first, toy_pairs(), {}, toy_config(resumed_dir.path.string()));
    SftResult partial = trainer.run([&](const SftStepMetrics& m) { stop = m.step == 5; }, &stop);
    EXPECT_TRUE(partial.stopped);
    EXPECT_EQ(partial.steps, 5);
  }
  EXPECT_EQ(fs::path(latest_checkpoint(resumed_dir.path.string())).filename(), "checkpoint-4");
  test::TinyBigramPolicy restarted(9, 99);
  SftTrainer trainer(restarted, toy_pairs(), {}, toy_config(resumed_dir.path.string()));
  EXPECT_EQ(trainer.resume(), 4);
  SftResult result = trainer.run();
  EXPECT_EQ(result.resumed_from, 4);
  EXPECT_EQ(result.steps, 12);
  EXPECT_TRUE(at::allclose(restarted.table, straight.table, 1e-6, 1e-7))
      << "max diff " << (restarted.table - straight.table).abs().max().item<double>();
  // keep_checkpoints = 2: only the two newest remain.
  int checkpoints = 0;
  for (const auto& entry : fs::directory_iterator(resumed_dir.path)) checkpoints += entry.is_directory() ? 1 : 0;
  EXPECT_EQ(checkpoints, 2);
  EXPECT_TRUE(fs::exists(resumed_dir.path / "checkpoint-12" / "optimizer.pt"));
  EXPECT_TRUE(fs::exists(resumed_dir.path / "checkpoint-12" / "table.bin"));
}

TEST(SftTrainer, UnfinishedCheckpointsAreIgnored) {
  TempDir dir;
  fs::create_directories(dir.path / "checkpoint-8.tmp");
  fs::create_directories(dir.path / "checkpoint-6");  // no trainer_state.json: incomplete
  EXPECT_EQ(latest_checkpoint(dir.path.string()), "");
  EXPECT_EQ(latest_checkpoint((dir.path / "missing").string()), "");
}

TEST(SftTrainer, LongPairsAreSkippedAndCounted) {
  test::TinyBigramPolicy policy(9, 2);
  SftConfig config = toy_config("");
  config.max_tokens = 4;  // "a" + "bcd" + EOS = 5 tokens: too long
  std::vector<SftExample> pairs = {{"a", "bcd"}, {"b", "cd"}};
  SftTrainer trainer(policy, pairs, {}, config);
  SftResult result = trainer.run();
  EXPECT_EQ(result.skipped_long, 1);
  config.max_tokens = 2;
  EXPECT_THROW(SftTrainer(policy, pairs, {}, config), std::invalid_argument);
}

TEST(SftJsonl, RoundTripsAndNamesTheBadLine) {
  TempDir dir;
  std::string path = (dir.path / "data.jsonl").string();
  std::vector<SftExample> pairs = {{"op: relu\n", "__kernel void k() {}\n"}, {"q\"uote", "line\nbreak"}};
  write_sft_jsonl(path, pairs);
  auto back = read_sft_jsonl(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].prompt, "q\"uote");
  EXPECT_EQ(back[1].completion, "line\nbreak");
  std::ofstream(path, std::ios::app) << "\n{\"prompt\": \"x\"}\n";
  try {
    read_sft_jsonl(path);
    FAIL() << "missing completion accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("data.jsonl:4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("completion"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_sft_jsonl((dir.path / "none.jsonl").string()), std::runtime_error);
}
