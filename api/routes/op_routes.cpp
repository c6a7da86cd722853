// Ops: POST /v1/ops (scope submit; validated, compiled and sample-run in the
// sandboxed probe), GET /v1/ops and GET /v1/ops/{id} (public), and their checked
// kernels: GET /v1/ops/{id}/candidates (every job) and GET /v1/candidates/{id};
// DELETE /v1/ops/{id} (admin: the op and its candidates, unless a generation of it is in flight).
// Tested over HTTP in tests/server/api_resources_test.cpp, api_core_test.cpp, api_web_test.cpp and api_hostile_test.cpp.
#include "api/routes/routes.h"

#include "api/candidate_view.h"
#include "api/handler_util.h"
#include "api/op_submit.h"

namespace kforge::api {
namespace {

HttpResponse create_op(ApiContext& ctx, HttpRequest& req) {
  return with_post(ctx, req, Scope::submit, [&](pqxx::connection& conn, const Principal& principal, const json& body) {
    OpSubmit result = submit_op(ctx, conn, principal, body, "");
    if (result.error) return *result.error;
    HttpResponse resp = json_response(result.created ? 201 : 200, op_json(*result.op));
    resp.headers.emplace_back("Location", "/v1/ops/" + std::to_string(result.op->id));
    return resp;
  });
}

HttpResponse list_ops(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
    PageRequest page;
    if (auto error = parse_page(req, &page)) return *error;
    int64_t after = 0;
    if (!parse_id_cursor(page.after, &after)) {
      return problem(ErrorKind::bad_request, "after: not an op cursor", {{"after", "malformed cursor"}});
    }
    auto ops = db::op_list(conn, after, page.limit + 1);
    json items = json::array();
    std::optional<std::string> next;
    for (size_t op_idx = 0; op_idx < ops.size(); ++op_idx) {
      if (static_cast<int>(op_idx) == page.limit) {
        next = std::to_string(ops[op_idx - 1].id);
        break;
      }
      items.push_back(op_json(ops[op_idx]));
    }
    return page_response(std::move(items), next);
  });
}

HttpResponse get_op(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
    int64_t op_id = 0;
    std::optional<db::OpRecord> op;
    if (parse_path_id(req.path_params["id"], &op_id)) op = db::op_get(conn, op_id);
    if (!op) return problem(ErrorKind::not_found, "no op " + req.path_params["id"]);
    return json_response(200, op_json(*op));
  });
}

HttpResponse delete_op(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::admin, [&](pqxx::connection& conn, const Principal&) {
    int64_t op_id = 0;
    if (!parse_path_id(req.path_params["id"], &op_id)) return problem(ErrorKind::not_found, "no op " + req.path_params["id"]);
    auto deleted = db::op_delete(conn, op_id);
    if (!deleted.found) return problem(ErrorKind::not_found, "no op " + req.path_params["id"]);
    if (deleted.in_flight > 0) {
      return problem(ErrorKind::conflict, "op " + std::to_string(op_id) + " has " + std::to_string(deleted.in_flight) +
                                              " generation(s) waiting or running; cancel them first");
    }
    return json_response(200, {{"id", op_id}, {"object", "op"}, {"deleted", true},
                               {"candidates_deleted", deleted.candidates_deleted}});
  });
}

// Every candidate of the op, whichever job checked it, in id (checking) order.
HttpResponse list_op_candidates(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
    int64_t op_id = 0;
    if (!parse_path_id(req.path_params["id"], &op_id) || !db::op_get(conn, op_id)) {
      return problem(ErrorKind::not_found, "no op " + req.path_params["id"]);
    }
    return candidate_page(req, [&](int64_t after, int limit) {
      return db::candidate_list_for_op(conn, op_id, after, limit);
    });
  });
}

HttpResponse get_candidate(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
    int64_t candidate_id = 0;
    std::optional<db::CandidateRecord> candidate;
    if (parse_path_id(req.path_params["id"], &candidate_id)) candidate = db::candidate_get(conn, candidate_id);
    if (!candidate) return problem(ErrorKind::not_found, "no candidate " + req.path_params["id"]);
    return json_response(200, candidate_json(*candidate, true));
  });
}

}  // namespace

void add_op_routes(Router& router, ApiContext& ctx) {
  router.add("POST", "/v1/ops", [&ctx](HttpRequest& req) { return create_op(ctx, req); });
  router.add("GET", "/v1/ops", [&ctx](HttpRequest& req) { return list_ops(ctx, req); });
  router.add("GET", "/v1/ops/{id}", [&ctx](HttpRequest& req) { return get_op(ctx, req); });
  router.add("GET", "/v1/ops/{id}/candidates", [&ctx](HttpRequest& req) { return list_op_candidates(ctx, req); });
  router.add("GET", "/v1/candidates/{id}", [&ctx](HttpRequest& req) { return get_candidate(ctx, req); });
  router.add("DELETE", "/v1/ops/{id}", [&ctx](HttpRequest& req) { return delete_op(ctx, req); });
}

}  // namespace kforge::api
