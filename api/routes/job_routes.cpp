// GET /v1/jobs: all API job kinds newest first (generate, train_sft, train_grpo,
// train_rft, evaluate), each rendered with the shared fields plus kind and args. Public.
// Test: ctest -R api_resources_test.
#include "api/routes/routes.h"

#include "api/handler_util.h"
#include "api/job_view.h"

namespace kforge::api {

void add_job_routes(Router& router, ApiContext& ctx) {
  router.add("GET", "/v1/jobs", [&ctx](HttpRequest& req) {
    return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
      std::vector<std::string> kinds = {"generate", "train_sft", "train_grpo", "train_rft", "evaluate"};
      if (req.query.count("kind")) {
        const std::string& kind = req.query.at("kind");
        if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
          return problem(ErrorKind::bad_request, "kind must be generate, train_sft, train_grpo, train_rft or evaluate",
                         {{"kind", "unknown kind '" + kind + "'"}});
        }
        kinds = {kind};
      }
      return list_jobs(conn, req, kinds, [](pqxx::connection&, const db::Job& job) {
        json out = job_common_json(job, "job");
        out["kind"] = job.kind;
        out["args"] = parse_stored(job.args_json);
        return out;
      });
    });
  });
}

}  // namespace kforge::api
