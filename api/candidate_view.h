// The candidate resource (one checked kernel: outcome, harness message, timings,
// speedup, source) as generations, ops and /v1/candidates/{id} return it.
// Tested over HTTP in tests/server/api_web_test.cpp and api_resources_test.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include "db/ops.h"

namespace kforge::api {

//! The candidate JSON; `with_source` adds the kernel program text.
nlohmann::json candidate_json(const db::CandidateRecord& candidate, bool with_source);

}  // namespace kforge::api
