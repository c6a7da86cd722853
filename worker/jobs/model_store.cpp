// Checkpoint -> model version registration behind worker/jobs/model_store.h.
// Version numbers are per name: the next one is taken optimistically and a unique
// violation (another job registered the same version meanwhile) retries with the next.
// Test: scripts/test.sh build -R jobs_training_test.
#include "worker/jobs/model_store.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/sha256.h"

namespace kforge::jobs {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Files a model version needs to load (policy::Model + tokenizer); optimizer state
// and trainer bookkeeping stay with the checkpoint.
bool is_model_file(const std::string& name) {
  if (name == "config.json" || name == "generation_config.json" || name == "tokenizer.json" ||
      name == "tokenizer_config.json" || name == "special_tokens_map.json" || name == "model.safetensors.index.json") {
    return true;
  }
  return name.size() > 12 && name.compare(name.size() - 12, 12, ".safetensors") == 0;
}

// The id written next to dest_dir once registered ("<dest_dir>.model_id").
fs::path marker_of(const std::string& dest_dir) {
  fs::path marker = fs::path(dest_dir);
  marker += ".model_id";
  return marker;
}

// The file's sha256 for the model's file list; a checkpoint file that vanished is an error.
std::string file_digest(const fs::path& path) {
  auto digest = file_sha256_hex(path.string());
  if (!digest) throw std::runtime_error("cannot read " + path.string());
  return *digest;
}

}  // namespace

db::ModelRecord model_register_checkpoint(pqxx::connection& conn, const ModelVersionSpec& spec) {
  fs::path marker = marker_of(spec.dest_dir);
  if (fs::exists(marker)) {
    int64_t model_id = 0;
    std::ifstream(marker) >> model_id;
    if (auto existing = db::model_get(conn, model_id)) return *existing;
  }
  if (!fs::exists(fs::path(spec.checkpoint_dir) / "config.json")) {
    throw std::runtime_error("checkpoint " + spec.checkpoint_dir + " has no config.json");
  }
  // Copy to a .tmp sibling and rename, so dest_dir is either complete or absent.
  fs::path dest(spec.dest_dir);
  fs::path tmp = dest;
  tmp += ".tmp";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  std::vector<fs::path> sources;
  for (const auto& entry : fs::directory_iterator(spec.checkpoint_dir)) {
    if (entry.is_regular_file() && is_model_file(entry.path().filename().string())) sources.push_back(entry.path());
  }
  std::sort(sources.begin(), sources.end());
  json files = json::array();
  for (const auto& source : sources) {
    fs::copy_file(source, tmp / source.filename(), fs::copy_options::overwrite_existing);
    files.push_back({{"name", source.filename().string()},
                     {"size", fs::file_size(source)},
                     {"sha256", file_digest(source)}});
  }
  fs::remove_all(dest);
  fs::rename(tmp, dest);

  db::ModelRecord record;
  record.name = spec.name;
  record.parent_id = spec.parent_id;
  record.state = "ready";
  record.path = fs::absolute(dest).string();
  record.files_json = files.dump();
  record.metrics_json = spec.metrics_json;
  record.training_job_id = spec.training_job_id;
  try {
    record.config_json = json::parse(std::ifstream(dest / "config.json")).dump();
  } catch (const json::exception&) {
    record.config_json = "{}";
  }
  for (int attempt = 0;; ++attempt) {
    auto latest = db::model_find(conn, spec.name, 0, /*include_archived=*/true);
    record.version = latest ? latest->version + 1 : 1;
    try {
      record = db::model_insert(conn, record);
      break;
    } catch (const pqxx::unique_violation&) {
      if (attempt >= 20) throw;
    }
  }
  std::ofstream(marker) << record.id << "\n";
  return record;
}
}  // namespace kforge::jobs
