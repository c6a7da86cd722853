// Checkpoint write, prune and discovery behind worker/train/checkpoint.h.
// Test: ctest -R train_test (Checkpoint.*, SftTrainer.* resume).
#include "worker/train/checkpoint.h"

#include <ftw.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/log.h"

namespace fs = std::filesystem;

namespace kforge::train {
namespace {

int remove_entry(const char* path, const struct stat*, int, struct FTW*) { return std::remove(path); }

// checkpoint-<step> directories under out_dir, oldest first (checkpoint-12.tmp and the like excluded).
std::vector<std::pair<long, fs::path>> step_dirs(const std::string& out_dir) {
  std::vector<std::pair<long, fs::path>> found;
  std::error_code ec;
  if (out_dir.empty() || !fs::is_directory(out_dir, ec)) return found;
  for (const auto& entry : fs::directory_iterator(out_dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("checkpoint-", 0) != 0) continue;
    char* end = nullptr;
    long step = std::strtol(name.c_str() + 11, &end, 10);
    if (*end == '\0') found.emplace_back(step, entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

// POSIX nftw rather than std::filesystem::remove_all: on the GPU host's PyTorch 2.11
// build, remove_all of an old checkpoint crashed the trainer with SIGSEGV every time it
// pruned (seen at steps 1500 and 2000 of two runs, always leaving the checkpoint in place).
void remove_tree(const std::string& path) {
  std::error_code ignored;
  if (!fs::exists(fs::symlink_status(path, ignored))) return;
  if (nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    log_warn("train", "could not remove a directory", {{"path", path}, {"error", std::strerror(errno)}});
}

std::string write_checkpoint(const std::string& out_dir, int step, const TrainablePolicy& policy,
                             const Optimizer& optimizer, nlohmann::json state, int keep) {
  return write_checkpoint(out_dir, step, policy, &optimizer, std::move(state), keep);
}

std::string write_checkpoint(const std::string& out_dir, int step, const TrainablePolicy& policy,
                             const Optimizer* optimizer, nlohmann::json state, int keep,
                             const std::vector<std::pair<std::string, std::string>>& files) {
  fs::path final_dir = fs::path(out_dir) / ("checkpoint-" + std::to_string(step));
  fs::path tmp_dir = final_dir;
  tmp_dir += ".tmp";
  remove_tree(tmp_dir.string());
  fs::create_directories(tmp_dir);
  policy.save(tmp_dir.string());
  if (optimizer) optimizer->save((tmp_dir / "optimizer.pt").string());
  for (const auto& [name, text] : files) std::ofstream((tmp_dir / name).string()) << text;
  state["step"] = step;
  std::ofstream((tmp_dir / "trainer_state.json").string()) << state.dump(2) << "\n";
  // Rename last: a crash mid-write leaves only a .tmp that resume ignores.
  remove_tree(final_dir.string());
  fs::rename(tmp_dir, final_dir);
  auto found = step_dirs(out_dir);
  for (size_t idx = 0; idx + std::max(1, keep) < found.size(); ++idx) remove_tree(found[idx].second.string());
  return final_dir.string();
}

std::string latest_checkpoint(const std::string& out_dir) {
  auto found = step_dirs(out_dir);
  for (auto it = found.rbegin(); it != found.rend(); ++it) {
    if (fs::exists(it->second / "trainer_state.json")) return it->second.string();
  }
  return "";
}

int checkpoint_step(const std::string& checkpoint_dir) {
  std::string path = (fs::path(checkpoint_dir) / "trainer_state.json").string();
  std::ifstream in(path);
  auto state = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!state.is_object() || !state.contains("step") || !state["step"].is_number_integer())
    throw std::runtime_error("checkpoint state " + path + " has no integer step");
  return state["step"].get<int>();
}

}  // namespace kforge::train
