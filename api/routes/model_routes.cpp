// Model versions: GET /v1/models, GET /v1/models/{id}, POST /v1/models (admin:
// register a directory of HF-format files, hashing each), and
// GET /v1/models/{id}/files/{name} (token needed), streamed with its sha256 so
// remote workers can fetch and verify checkpoints; DELETE /v1/models/{id} (admin)
// archives a version: still listed, no longer resolved by name nor its files served.
// Tests: tests/server/api_resources_test.cpp, tests/server/api_hostile_test.cpp.
#include "api/routes/routes.h"

#include <filesystem>
#include <fstream>
#include <memory>

#include "api/handler_util.h"
#include "api/model_dir.h"
#include "common/sha256.h"
#include "db/models.h"

namespace kforge::api {
namespace {

namespace fs = std::filesystem;

json model_json(const db::ModelRecord& model) {
  json files = parse_stored(model.files_json);
  json out = {{"id", model.id},
              {"name", model.name},
              {"version", model.version},
              {"model", model.name + "@" + std::to_string(model.version)},
              {"state", model.state},
              {"files", files.is_array() ? files : json::array()},
              {"config", parse_stored(model.config_json)},
              {"metrics", parse_stored(model.metrics_json)},
              {"created_at", model.created_at}};
  out["parent_id"] = model.parent_id ? json(model.parent_id) : json(nullptr);
  out["training_job_id"] = model.training_job_id ? json(model.training_job_id) : json(nullptr);
  return out;
}


HttpResponse list_models(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
    PageRequest page;
    if (auto error = parse_page(req, &page)) return *error;
    int64_t after = 0;
    if (!parse_id_cursor(page.after, &after)) return problem(ErrorKind::bad_request, "after: not a model cursor");
    auto models = db::model_list(conn, after, page.limit + 1);
    json items = json::array();
    std::optional<std::string> next;
    for (size_t model_idx = 0; model_idx < models.size(); ++model_idx) {
      if (static_cast<int>(model_idx) == page.limit) {
        next = std::to_string(models[model_idx - 1].id);
        break;
      }
      items.push_back(model_json(models[model_idx]));
    }
    return page_response(std::move(items), next);
  });
}

HttpResponse get_model(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
    int64_t model_id = 0;
    std::optional<db::ModelRecord> model;
    if (parse_path_id(req.path_params["id"], &model_id)) model = db::model_get(conn, model_id);
    if (!model) return problem(ErrorKind::not_found, "no model " + req.path_params["id"]);
    return json_response(200, model_json(*model));
  });
}

HttpResponse register_model(ApiContext& ctx, HttpRequest& req) {
  return with_post(ctx, req, Scope::admin, [&](pqxx::connection& conn, const Principal&, const json& body) {
    FieldReader fields(body);
    fields.only({"name", "version", "path", "parent_id", "config"});
    db::ModelRecord model;
    model.name = fields.string("name", true, "", 100);
    model.version = static_cast<int>(fields.integer("version", false, 0, 1, 1000000));
    model.path = fields.string("path", true, "", 4096);
    model.parent_id = fields.integer("parent_id", false, 0, 1, INT64_MAX);
    if (const json* config = fields.object("config", false)) model.config_json = config->dump();
    std::error_code ec;
    if (!model.path.empty() && !fs::is_directory(model.path, ec)) fields.fail("path", "is not a directory on the server");
    if (!fields.ok()) return fields.response();
    if (model.version == 0) {
      auto latest = db::model_find(conn, model.name, 0, /*include_archived=*/true);
      model.version = latest ? latest->version + 1 : 1;
    }
    if (auto error = describe_model_dir(model)) return problem(ErrorKind::unprocessable, *error, {{"path", "unreadable file"}});
    try {
      return json_response(201, model_json(db::model_insert(conn, model)));
    } catch (const pqxx::unique_violation&) {
      return problem(ErrorKind::conflict,
                     "model " + model.name + "@" + std::to_string(model.version) + " already exists");
    }
  });
}

HttpResponse model_file(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::submit, [&](pqxx::connection& conn, const Principal&) {
    int64_t model_id = 0;
    std::optional<db::ModelRecord> model;
    if (parse_path_id(req.path_params["id"], &model_id)) model = db::model_get(conn, model_id);
    if (!model) return problem(ErrorKind::not_found, "no model " + req.path_params["id"]);
    if (model->state == "archived") return problem(ErrorKind::not_found, "model " + req.path_params["id"] + " is archived");
    const std::string& name = req.path_params["name"];
    // Only files recorded for the model are served: the name never reaches the file system unchecked.
    json files = parse_stored(model->files_json);
    const json* entry = nullptr;
    if (files.is_array()) {
      for (const auto& file : files) {
        if (file.is_object() && file.value("name", "") == name) entry = &file;
      }
    }
    if (!entry || name.find('/') != std::string::npos || name == ".." || name == ".") {
      return problem(ErrorKind::not_found, "model " + req.path_params["id"] + " has no file '" + name + "'");
    }
    fs::path path = fs::path(model->path) / name;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      return problem(ErrorKind::not_found, "file '" + name + "' is recorded but missing on the server");
    }
    HttpResponse resp;
    resp.content_type = "application/octet-stream";
    resp.body_file = path.string();
    std::string digest = entry->value("sha256", "");
    resp.headers.emplace_back("X-Checksum-Sha256", digest);
    resp.headers.emplace_back("ETag", "\"" + digest + "\"");
    return resp;
  });
}

HttpResponse archive_model(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::admin, [&](pqxx::connection& conn, const Principal&) {
    int64_t model_id = 0;
    std::optional<db::ModelRecord> model;
    if (parse_path_id(req.path_params["id"], &model_id)) model = db::model_get(conn, model_id);
    if (!model) return problem(ErrorKind::not_found, "no model " + req.path_params["id"]);
    if (!db::model_archive(conn, model_id)) {
      return problem(ErrorKind::conflict, "model " + model->name + "@" + std::to_string(model->version) +
                                              " is still being trained; cancel its training job first");
    }
    return json_response(200, model_json(*db::model_get(conn, model_id)));
  });
}

}  // namespace

void add_model_routes(Router& router, ApiContext& ctx) {
  router.add("GET", "/v1/models", [&ctx](HttpRequest& req) { return list_models(ctx, req); });
  router.add("POST", "/v1/models", [&ctx](HttpRequest& req) { return register_model(ctx, req); });
  router.add("GET", "/v1/models/{id}", [&ctx](HttpRequest& req) { return get_model(ctx, req); });
  router.add("DELETE", "/v1/models/{id}", [&ctx](HttpRequest& req) { return archive_model(ctx, req); });
  router.add("GET", "/v1/models/{id}/files/{name}", [&ctx](HttpRequest& req) { return model_file(ctx, req); });
}

}  // namespace kforge::api
