// Model versions from server directories (model_dir.h): the hashed file list of POST
// /v1/models and `kforge-server models ship`. Test: ctest -R 'api_resources|scripts_run'.
#include "api/model_dir.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/sha256.h"

namespace kforge::api {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::optional<json> read_json_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  try {
    return json::parse(in);
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<std::string> describe_model_dir(db::ModelRecord& model) {
  std::error_code ec;
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(model.path, ec)) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  if (ec) return "cannot list " + model.path + ": " + ec.message();
  std::sort(paths.begin(), paths.end());
  json files = json::array();
  for (const auto& path : paths) {
    auto digest = file_sha256_hex(path.string());
    if (!digest) return "cannot read " + path.string();
    files.push_back({{"name", path.filename().string()}, {"size", fs::file_size(path, ec)}, {"sha256", *digest}});
  }
  model.files_json = files.dump();
  if (model.config_json == "{}") {
    if (auto config = read_json_file(fs::path(model.path) / "config.json"); config && config->is_object())
      model.config_json = config->dump();
  }
  return std::nullopt;
}

std::vector<ShippedModel> ship_models(pqxx::connection& conn, const std::string& dir) {
  std::vector<ShippedModel> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  std::vector<fs::path> candidates;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_directory()) candidates.push_back(entry.path());
  }
  std::sort(candidates.begin(), candidates.end());
  for (const auto& path : candidates) {
    ShippedModel shipped{path.filename().string(), "skipped", ""};
    if (!fs::is_regular_file(path / "config.json", ec)) {
      shipped.detail = "no config.json";
      out.push_back(shipped);
      continue;
    }
    if (auto existing = db::model_find(conn, shipped.name, 0, /*include_archived=*/true)) {
      shipped.action = "kept";
      shipped.detail = existing->name + "@" + std::to_string(existing->version) + " (" + existing->state + ")";
      out.push_back(shipped);
      continue;
    }
    db::ModelRecord model;
    model.name = shipped.name;
    model.version = 1;
    model.path = fs::absolute(path).lexically_normal().string();
    if (auto error = describe_model_dir(model)) {
      shipped.detail = *error;
      out.push_back(shipped);
      continue;
    }
    if (auto provenance = read_json_file(path / "provenance.json");
        provenance && provenance->is_object() && (*provenance)["evaluation"].is_object())
      model.metrics_json = (*provenance)["evaluation"].dump();
    try {
      auto inserted = db::model_insert(conn, model);
      shipped.action = "registered";
      shipped.detail = inserted.name + "@" + std::to_string(inserted.version);
    } catch (const pqxx::unique_violation&) {  // another process shipped it first
      shipped.action = "kept";
      shipped.detail = shipped.name + "@1";
    }
    out.push_back(shipped);
  }
  return out;
}

}  // namespace kforge::api
