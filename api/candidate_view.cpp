// candidate_json and candidate_page behind api/candidate_view.h: one candidate's JSON
// and one page of them. Tested over HTTP: scripts/test.sh build -R 'api_web|api_resources'
#include "api/candidate_view.h"

#include "api/handler_util.h"

namespace kforge::api {
namespace {

json optional_number(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

}  // namespace

json candidate_json(const db::CandidateRecord& c, bool with_source) {
  json out = {{"id", c.id},
              {"sample_idx", c.sample_idx},
              {"target", c.target},
              {"device", c.device},
              {"outcome", c.outcome},
              {"message", c.message},
              {"reward", optional_number(c.reward)},
              {"kernel_ms", optional_number(c.kernel_ms)},
              {"baseline_ms", optional_number(c.baseline_ms)},
              {"speedup", optional_number(c.speedup)},
              {"flagged", c.flagged},
              {"details", parse_stored(c.details_json)},
              {"created_at", c.created_at}};
  out["model_id"] = c.model_id ? json(c.model_id) : json(nullptr);
  out["job_id"] = c.job_id;
  out["op_id"] = c.op_id;
  // Both baselines by name: speedup is against eager (libtorch on a CPU, CUDA eager on a
  // GPU); torch.compile is measured on GPUs only (null elsewhere).
  const json& details = out["details"];
  out["speedup_vs_eager"] = optional_number(c.speedup);
  out["speedup_vs_compile"] = details.is_object() && details.contains("speedup_vs_compile") && c.speedup
                                  ? details["speedup_vs_compile"]
                                  : json(nullptr);
  if (with_source) out["source"] = c.source;
  return out;
}

HttpResponse candidate_page(const HttpRequest& req, const CandidateFetch& fetch) {
  PageRequest page;
  if (auto error = parse_page(req, &page)) return *error;
  int64_t after = 0;
  if (!parse_id_cursor(page.after, &after)) {
    return problem(ErrorKind::bad_request, "after: not a candidate cursor", {{"after", "malformed cursor"}});
  }
  auto candidates = fetch(after, page.limit + 1);
  json items = json::array();
  std::optional<std::string> next;
  for (size_t cand_idx = 0; cand_idx < candidates.size(); ++cand_idx) {
    if (static_cast<int>(cand_idx) == page.limit) {
      next = std::to_string(candidates[cand_idx - 1].id);
      break;
    }
    items.push_back(candidate_json(candidates[cand_idx], true));
  }
  return page_response(std::move(items), next);
}

}  // namespace kforge::api
