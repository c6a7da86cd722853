// The one checkpoint writer (worker/train/checkpoint.h) that SFT and GRPO share: layout,
// state, pruning to the newest N, unfinished directories ignored. ctest -R train_test
#include "worker/train/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/worker/train/tiny_policy.h"

using namespace kforge::train;
namespace fs = std::filesystem;

namespace {

struct CheckpointDir {
  fs::path path = fs::temp_directory_path() / ("kforge_checkpoint_test_" + std::to_string(getpid()));
  CheckpointDir() { fs::create_directories(path); }
  ~CheckpointDir() { fs::remove_all(path); }
};

}  // namespace

TEST(Checkpoint, WritesStateKeepsTheNewestAndResumesFromThem) {
  CheckpointDir dir;
  test::TinyBigramPolicy policy(9, 3);
  OptimConfig config;
  config.lr = 0.01;
  Optimizer optimizer(policy.parameters(), config);
  std::string out = dir.path.string();
  fs::create_directories(dir.path / "checkpoint-9.tmp");  // a crash mid-write: never picked, never pruned as a step
  for (int step : {2, 4, 6}) {
    std::string written = write_checkpoint(out, step, policy, optimizer, {{"method", "grpo"}}, /*keep=*/2);
    EXPECT_EQ(written, (dir.path / ("checkpoint-" + std::to_string(step))).string());
  }
  EXPECT_FALSE(fs::exists(dir.path / "checkpoint-2")) << "pruned to the newest two";
  EXPECT_TRUE(fs::exists(dir.path / "checkpoint-4" / "optimizer.pt"));
  EXPECT_TRUE(fs::exists(dir.path / "checkpoint-6" / "table.bin")) << "the policy's own files";
  EXPECT_TRUE(fs::exists(dir.path / "checkpoint-9.tmp"));
  EXPECT_FALSE(fs::exists(dir.path / "checkpoint-6.tmp")) << "written to .tmp, then renamed";
  EXPECT_EQ(latest_checkpoint(out), (dir.path / "checkpoint-6").string());
  EXPECT_EQ(checkpoint_step(latest_checkpoint(out)), 6);
  std::ifstream state_file(dir.path / "checkpoint-6" / "trainer_state.json");
  auto state = nlohmann::json::parse(state_file);
  EXPECT_EQ(state["method"], "grpo");
  EXPECT_EQ(state["step"], 6);
  // Rewriting a step replaces it whole.
  write_checkpoint(out, 6, policy, optimizer, {{"method", "sft"}}, 2);
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(dir.path / "checkpoint-6" / "trainer_state.json"))["method"], "sft");
  EXPECT_THROW(checkpoint_step((dir.path / "checkpoint-9.tmp").string()), std::runtime_error);
  remove_tree((dir.path / "missing").string());  // absent: nothing to do, no error
}
