// Model versions from directories on the server: the file list (name, size, sha256) that
// POST /v1/models records, and the models that ship with kforge (models/ in the
// repository), registered on first start by `kforge-server models ship DIR` (make run).
// Tests: tests/server/api_resources_test.cpp (ModelsShip.*), tests/scripts/run_test.cpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "db/models.h"

namespace kforge::api {

//! Fills `model.files_json` with every regular file of `model.path` (sorted by name, each
//! hashed) and, when `model.config_json` is "{}", the config from its config.json.
//! Returns the error (an unreadable file), or nullopt.
std::optional<std::string> describe_model_dir(db::ModelRecord& model);

//! What `ship_models` did with one directory.
struct ShippedModel {
  std::string name;
  std::string action;  //!< "registered", "kept" (a version of that name exists) or "skipped"
  std::string detail;  //!< "name@version" registered or kept, or why it was skipped
};

//! Registers every subdirectory of `dir` that holds a config.json as version 1 of the model
//! named after the subdirectory, unless a version of that name exists (archived ones count:
//! a user's archive is respected). A provenance.json's "evaluation" object becomes the
//! version's metrics. Idempotent; a missing `dir` ships nothing.
std::vector<ShippedModel> ship_models(pqxx::connection& conn, const std::string& dir);

}  // namespace kforge::api
