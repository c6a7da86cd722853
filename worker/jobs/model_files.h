// A model version's files on this worker: its own directory when this host has it,
// else fetched from kforge-server (GET /v1/models/{id}/files/{name}) into a cache keyed
// by sha256 and checked against the digest the models row records. Docs: docs/jobs.md
// "Model files on other hosts". Test: scripts/test.sh build -R jobs_training_test.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "db/models.h"

namespace kforge::jobs {

//! Where a worker gets model files it does not have.
struct ModelFetchOptions {
  std::string server_url;  //!< kforge-server base URL (KFORGE_SERVER_URL); empty: never fetch
  std::string token;       //!< bearer token with scope submit (KFORGE_TOKEN)
  std::string cache_dir;   //!< KFORGE_MODEL_CACHE, default <data dir>/model-cache
  //! auto: the row's directory when it is on this host, else fetch; fetch: always from
  //! the server (a worker beside the server that must behave like a remote one).
  std::string mode = "auto";  //!< KFORGE_MODEL_FILES: auto or fetch
  int timeout_s = 1800;       //!< per file (KFORGE_MODEL_FETCH_TIMEOUT_S)

  //! From the environment; throws std::invalid_argument on a bad KFORGE_MODEL_FILES.
  static ModelFetchOptions from_env();
};

//! Where the files came from, for the job's result.
struct ModelFiles {
  std::string dir;          //!< a directory holding every file under its own name
  std::string source;       //!< "local" (the row's path), "cache" (all cached) or "server" (some fetched)
  int fetched = 0;          //!< files downloaded by this call
  int cached = 0;           //!< files found in the cache
  int64_t bytes_fetched = 0;
};

//! A fetched file whose sha256 is not the row's (the download is discarded). Retrying
//! fetches the same bytes, so the generate runner fails without retry.
struct ModelFileMismatch : std::runtime_error {
  using std::runtime_error::runtime_error;
};

//! The model's files as a local directory. Fetches each file the cache lacks to a
//! temporary name, hashes it, and keeps it (as <cache>/sha256/<digest>) only when the
//! digest matches the row; a mismatch throws ModelFileMismatch naming the file and
//! both digests (a failed download: std::runtime_error). Throws std::invalid_argument (naming `field`) when the version is not
//! ready, has no weights, or is elsewhere and no server is configured.
ModelFiles model_files_resolve(const db::ModelRecord& model, const ModelFetchOptions& options, const std::string& field);

}  // namespace kforge::jobs
