// Admin routes: GET /v1/workers (heartbeats, current jobs), and API tokens
// (GET/POST /v1/tokens, POST /v1/tokens/{id}/revoke). All need scope admin.
// Tested over HTTP in tests/server/api_core_test.cpp and api_resources_test.cpp.
#include "api/routes/routes.h"

#include "api/handler_util.h"
#include "db/sql.h"
#include "db/tokens.h"

namespace kforge::api {
namespace {

// A worker that has not heartbeated for this long is shown as not alive.
constexpr double kWorkerAliveSeconds = 30;

json token_json(const db::TokenRecord& token) {
  json out = {{"id", token.id},         {"name", token.name},         {"prefix", token.prefix},
              {"scopes", token.scopes}, {"created_at", token.created_at}};
  out["last_used_at"] = token.last_used_at.empty() ? json(nullptr) : json(token.last_used_at);
  out["revoked_at"] = token.revoked_at.empty() ? json(nullptr) : json(token.revoked_at);
  return out;
}

HttpResponse list_workers(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::admin, [&](pqxx::connection& conn, const Principal&) {
    PageRequest page;
    if (auto error = parse_page(req, &page)) return *error;
    int64_t after = 0;
    if (!parse_id_cursor(page.after, &after)) return problem(ErrorKind::bad_request, "after: not a worker cursor");
    pqxx::read_transaction txn(conn);
    auto rows = txn.exec_params(db::sql("api_worker_list"), after, page.limit + 1, kWorkerAliveSeconds);
    json items = json::array();
    std::optional<std::string> next;
    for (const auto& row : rows) {
      if (static_cast<int>(items.size()) == page.limit) {
        next = std::to_string(items.back()["id"].get<int64_t>());
        break;
      }
      json worker = parse_stored(row[0].as<std::string>());
      worker["alive"] = row[1].as<bool>();
      items.push_back(std::move(worker));
    }
    return page_response(std::move(items), next);
  });
}

HttpResponse create_token(ApiContext& ctx, HttpRequest& req) {
  return with_post(ctx, req, Scope::admin, [&](pqxx::connection& conn, const Principal&, const json& body) {
    FieldReader fields(body);
    fields.only({"name", "scopes"});
    std::string name = fields.string("name", false, "", 100);
    std::vector<std::string> scopes;
    auto scope_list = body.find("scopes");
    if (scope_list == body.end() || !scope_list->is_array() || scope_list->empty()) {
      fields.fail("scopes", "must be a non-empty array of \"submit\" / \"admin\"");
    } else {
      for (const auto& scope : *scope_list) {
        if (!scope.is_string() || (scope != "submit" && scope != "admin")) {
          fields.fail("scopes", "each scope must be \"submit\" or \"admin\"");
          break;
        }
        scopes.push_back(scope.get<std::string>());
      }
    }
    if (!fields.ok()) return fields.response();
    std::string secret = token_generate();
    auto record = db::token_insert(conn, name, sha256_hex(secret), secret.substr(0, 8), scopes);
    json out = token_json(record);
    out["token"] = secret;  // shown once; only the hash is kept
    return json_response(201, out);
  });
}

HttpResponse list_tokens(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::admin, [&](pqxx::connection& conn, const Principal&) {
    PageRequest page;
    if (auto error = parse_page(req, &page)) return *error;
    int64_t after = 0;
    if (!parse_id_cursor(page.after, &after)) return problem(ErrorKind::bad_request, "after: not a token cursor");
    auto tokens = db::token_list(conn, after, page.limit + 1);
    json items = json::array();
    std::optional<std::string> next;
    for (size_t token_idx = 0; token_idx < tokens.size(); ++token_idx) {
      if (static_cast<int>(token_idx) == page.limit) {
        next = std::to_string(tokens[token_idx - 1].id);
        break;
      }
      items.push_back(token_json(tokens[token_idx]));
    }
    return page_response(std::move(items), next);
  });
}

HttpResponse revoke_token(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::admin, [&](pqxx::connection& conn, const Principal&) {
    int64_t token_id = 0;
    if (!parse_path_id(req.path_params["id"], &token_id) || !db::token_revoke(conn, token_id)) {
      return problem(ErrorKind::not_found, "no active token " + req.path_params["id"]);
    }
    return json_response(200, {{"id", token_id}, {"revoked", true}});
  });
}

}  // namespace

void add_admin_routes(Router& router, ApiContext& ctx) {
  router.add("GET", "/v1/workers", [&ctx](HttpRequest& req) { return list_workers(ctx, req); });
  router.add("GET", "/v1/tokens", [&ctx](HttpRequest& req) { return list_tokens(ctx, req); });
  router.add("POST", "/v1/tokens", [&ctx](HttpRequest& req) { return create_token(ctx, req); });
  router.add("POST", "/v1/tokens/{id}/revoke", [&ctx](HttpRequest& req) { return revoke_token(ctx, req); });
}

}  // namespace kforge::api
