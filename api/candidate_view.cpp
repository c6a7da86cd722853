// candidate_json behind api/candidate_view.h.
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
  if (with_source) out["source"] = c.source;
  return out;
}

}  // namespace kforge::api
