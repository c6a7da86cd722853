// Model files for workers on other hosts, behind worker/jobs/model_files.h. Downloads
// go through the `curl` program (HTTP and HTTPS, timeouts, no new library in the worker,
// which GPU hosts build without cpprestsdk); the digest to trust comes from PostgreSQL,
// not from the server's reply. Test: scripts/test.sh build -R jobs_training_test.
#include "worker/jobs/model_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/subprocess.h"

namespace kforge::jobs {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct FileEntry {
  std::string name;
  std::string sha256;
  int64_t size = -1;  // -1: not recorded
};

bool is_hex_digest(const std::string& text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// The row's file list; every entry must be a plain name with a sha256 (the route
// serves only listed names, and the cache is keyed by the digest).
std::vector<FileEntry> file_entries(const db::ModelRecord& model, const std::string& label, const std::string& field) {
  json files = json::parse(model.files_json, nullptr, false);
  if (!files.is_array()) throw std::invalid_argument(field + ": model " + label + " has no file list");
  std::vector<FileEntry> entries;
  for (const auto& file : files) {
    FileEntry entry;
    entry.name = file.is_object() ? file.value("name", "") : "";
    entry.sha256 = file.is_object() ? file.value("sha256", "") : "";
    if (file.is_object() && file.contains("size") && file["size"].is_number_integer()) entry.size = file["size"];
    if (entry.name.empty() || entry.name == "." || entry.name == ".." || entry.name.find('/') != std::string::npos) {
      throw std::invalid_argument(field + ": model " + label + " lists a file with an unusable name '" + entry.name + "'");
    }
    if (!is_hex_digest(entry.sha256)) {
      throw std::invalid_argument(field + ": model " + label + " file '" + entry.name +
                                  "' has no sha256 in its row; register the version again (POST /v1/models)");
    }
    entries.push_back(entry);
  }
  return entries;
}

bool has_config(const std::vector<FileEntry>& entries) {
  for (const auto& entry : entries) {
    if (entry.name == "config.json") return true;
  }
  return false;
}

// True when `dir` holds every file with its recorded size (the same host as the row's writer).
bool complete_dir(const fs::path& dir, const std::vector<FileEntry>& entries) {
  std::error_code ec;
  for (const auto& entry : entries) {
    auto size = fs::file_size(dir / entry.name, ec);
    if (ec || (entry.size >= 0 && static_cast<int64_t>(size) != entry.size)) return false;
  }
  return true;
}

std::string percent_encode(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// A double-quoted value in a curl config file (backslash and quote escaped).
std::string curl_quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string unique_suffix() {
  static std::atomic<int> counter{0};
  return std::to_string(getpid()) + "-" + std::to_string(++counter);
}

// GET url -> dest with curl. The token goes in a 0600 config file, never on a command
// line that `ps` shows. Returns "" or what went wrong.
std::string curl_download(const std::string& url, const std::string& token, const fs::path& dest, int timeout_s,
                          const fs::path& tmp_dir) {
  fs::path config = tmp_dir / ("curl-" + unique_suffix() + ".conf");
  {
    int fd = ::open(config.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return "cannot write " + config.string();
    ::close(fd);
    std::ofstream out(config);
    out << "url = " << curl_quoted(url) << "\n"
        << "output = " << curl_quoted(dest.string()) << "\n"
        << "fail\nsilent\nshow-error\n"
        << "connect-timeout = 10\n"
        << "max-time = " << timeout_s << "\n";
    if (!token.empty()) out << "header = " << curl_quoted("Authorization: Bearer " + token) << "\n";
  }
  auto [status, output] = run_command({"curl", "--config", config.string()});
  std::error_code ec;
  fs::remove(config, ec);
  if (status == 0) return "";
  if (status == 127) return "the curl program is not installed on this worker";
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
  return "curl exit " + std::to_string(status) + ": " + output;
}

// One file into the cache as sha256/<digest>: downloaded to tmp/, hashed, renamed only
// when the digest is the row's. Returns the bytes downloaded.
int64_t fetch_blob(const db::ModelRecord& model, const std::string& label, const FileEntry& entry,
                   const ModelFetchOptions& options, const fs::path& blob) {
  fs::path tmp_dir = fs::path(options.cache_dir) / "tmp";
  fs::create_directories(tmp_dir);
  fs::path part = tmp_dir / (entry.sha256 + "." + unique_suffix() + ".part");
  std::string base = options.server_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string url = base + "/v1/models/" + std::to_string(model.id) + "/files/" + percent_encode(entry.name);
  std::error_code ec;
  std::string error = curl_download(url, options.token, part, options.timeout_s, tmp_dir);
  if (!error.empty()) {
    fs::remove(part, ec);
    throw std::runtime_error("model " + label + " file '" + entry.name + "': download from " + url + " failed: " + error);
  }
  auto digest = file_sha256_hex(part.string());
  int64_t size = static_cast<int64_t>(fs::file_size(part, ec));
  if (!digest || *digest != entry.sha256) {
    fs::remove(part, ec);  // never kept: a later job downloads it again
    throw ModelFileMismatch("model " + label + " file '" + entry.name + "': sha256 mismatch: the models row records " +
                             entry.sha256 + ", the server sent " + (digest ? *digest : "an unreadable file") +
                             " (" + url + "); the download was discarded");
  }
  ::chmod(part.c_str(), 0444);
  fs::rename(part, blob);  // atomic: a blob is complete or absent
  return size;
}

// <cache>/models/<id>: the version's files under their own names, hard links to the
// blobs (a copy where links fail). Built aside and renamed, so it is complete or absent.
fs::path link_view(const db::ModelRecord& model, const std::vector<FileEntry>& entries, const fs::path& cache) {
  fs::path view = cache / "models" / std::to_string(model.id);
  if (complete_dir(view, entries)) return view;
  fs::path building = cache / "tmp" / ("view-" + std::to_string(model.id) + "-" + unique_suffix());
  fs::create_directories(building);
  for (const auto& entry : entries) {
    fs::path blob = cache / "sha256" / entry.sha256;
    std::error_code ec;
    fs::create_hard_link(blob, building / entry.name, ec);
    if (ec) fs::copy_file(blob, building / entry.name, fs::copy_options::overwrite_existing);
  }
  fs::create_directories(view.parent_path());
  std::error_code ec, ignored;
  fs::rename(building, view, ec);  // fails when a view (non-empty) is already there
  if (!ec) return view;
  if (complete_dir(view, entries)) {  // another slot put the same view in place first
    fs::remove_all(building, ignored);
    return view;
  }
  // A view whose files no longer match (a blob was fetched again since): moved aside, not
  // deleted in place, so the swap is two renames.
  fs::path stale = cache / "tmp" / ("stale-" + std::to_string(model.id) + "-" + unique_suffix());
  fs::rename(view, stale, ignored);
  fs::rename(building, view, ec);
  fs::remove_all(stale, ignored);
  if (ec) {
    fs::remove_all(building, ignored);
    if (!complete_dir(view, entries)) {
      throw std::runtime_error("cannot put model files in place at " + view.string() + ": " + ec.message());
    }
  }
  return view;
}

}  // namespace

ModelFetchOptions ModelFetchOptions::from_env() {
  ModelFetchOptions options;
  options.server_url = env_or("KFORGE_SERVER_URL", "");
  options.token = env_or("KFORGE_TOKEN", "");
  options.cache_dir = fs::absolute(env_or("KFORGE_MODEL_CACHE", (fs::path(data_dir()) / "model-cache").string())).string();
  options.mode = env_or("KFORGE_MODEL_FILES", "auto");
  if (options.mode != "auto" && options.mode != "fetch") {
    throw std::invalid_argument("KFORGE_MODEL_FILES: must be auto or fetch, not '" + options.mode + "'");
  }
  options.timeout_s = std::stoi(env_or("KFORGE_MODEL_FETCH_TIMEOUT_S", "1800"));
  return options;
}

ModelFiles model_files_resolve(const db::ModelRecord& model, const ModelFetchOptions& options, const std::string& field) {
  std::string label = model.name + "@" + std::to_string(model.version);
  if (model.state != "ready") {
    throw std::invalid_argument(field + ": model " + label + " is " + model.state + ", not ready");
  }
  std::vector<FileEntry> entries = file_entries(model, label, field);
  if (!has_config(entries)) throw std::invalid_argument(field + ": model " + label + " has no weights (no config.json)");

  ModelFiles result;
  std::error_code ec;
  if (options.mode == "auto" && !model.path.empty() && complete_dir(model.path, entries)) {
    result.dir = model.path;
    result.source = "local";
    return result;
  }
  if (options.server_url.empty()) {
    throw std::invalid_argument(field + ": model " + label + " has no files on this worker (" + model.path +
                                ") and KFORGE_SERVER_URL is not set to fetch them from kforge-server");
  }
  fs::path cache(options.cache_dir);
  fs::create_directories(cache / "sha256");
  for (const auto& entry : entries) {
    fs::path blob = cache / "sha256" / entry.sha256;
    // A blob exists only after its digest was checked (rename after hashing); the size
    // check catches a file truncated since, without rehashing gigabytes per job.
    auto size = fs::file_size(blob, ec);
    if (!ec && (entry.size < 0 || static_cast<int64_t>(size) == entry.size)) {
      ++result.cached;
      continue;
    }
    if (!ec) fs::remove(blob, ec);
    result.bytes_fetched += fetch_blob(model, label, entry, options, blob);
    ++result.fetched;
  }
  result.dir = link_view(model, entries, cache).string();
  result.source = result.fetched > 0 ? "server" : "cache";
  log_info("worker", "model files", {{"model", label},
                           {"source", result.source},
                           {"fetched", std::to_string(result.fetched)},
                           {"cached", std::to_string(result.cached)},
                           {"bytes", std::to_string(result.bytes_fetched)},
                           {"dir", result.dir}});
  return result;
}

}  // namespace kforge::jobs
