// Training checkpoints, one writer for SFT (SftTrainer) and GRPO (the train_grpo job,
// kforge-train grpo): <out_dir>/checkpoint-<step>/ holds the policy files, optimizer.pt
// and trainer_state.json; resume finds the newest complete one. Test: ctest -R train_test (Checkpoint.*).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "worker/train/optim.h"
#include "worker/train/trainable_policy.h"

namespace kforge::train {

//! Writes checkpoint-<step> under out_dir: policy, optimizer state and `state` (with
//! "step" set) as trainer_state.json, into a .tmp directory renamed last, so a crash
//! mid-write leaves nothing resume would pick. Then removes all but the newest `keep`
//! checkpoints (registered model versions live in their own copies). Returns the directory.
std::string write_checkpoint(const std::string& out_dir, int step, const TrainablePolicy& policy,
                             const Optimizer& optimizer, nlohmann::json state, int keep);
//! The same without optimizer.pt (expert iteration starts a fresh optimizer every round);
//! `files` are extra (name, text) files written into the checkpoint before the rename.
std::string write_checkpoint(const std::string& out_dir, int step, const TrainablePolicy& policy,
                             const Optimizer* optimizer, nlohmann::json state, int keep,
                             const std::vector<std::pair<std::string, std::string>>& files = {});

//! Newest checkpoint-<step> directory under out_dir holding trainer_state.json; "" if none.
std::string latest_checkpoint(const std::string& out_dir);

//! The step recorded in a checkpoint's trainer_state.json; throws std::runtime_error naming the file.
int checkpoint_step(const std::string& checkpoint_dir);

//! Deletes a directory tree (a missing path is fine); logs a warning when it cannot.
void remove_tree(const std::string& path);

}  // namespace kforge::train
