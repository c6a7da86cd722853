// The candidate resource (one checked kernel: outcome, harness message, timings,
// speedup, source) as generations, ops and /v1/candidates/{id} return it.
// Tested over HTTP in tests/server/api_web_test.cpp and api_resources_test.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/http.h"
#include "db/ops.h"

namespace kforge::api {

//! The candidate JSON (with its job_id and op_id); `with_source` adds the kernel program text.
nlohmann::json candidate_json(const db::CandidateRecord& candidate, bool with_source);

//! Fetches candidates after the id cursor (`fetch(after_id, limit)`).
using CandidateFetch = std::function<std::vector<db::CandidateRecord>(int64_t after_id, int limit)>;

//! One page of candidates in id order for GET .../candidates: reads after/limit
//! (400 naming a bad one), fetches one row more than the page to know has_more.
HttpResponse candidate_page(const HttpRequest& req, const CandidateFetch& fetch);

}  // namespace kforge::api
