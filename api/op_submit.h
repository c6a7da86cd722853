// Validating and storing an op: parse the op JSON (field errors -> 422), then
// compile and run it once in the sandboxed probe (kforge-probe, CPU / memory /
// wall limits) to record output shapes; compile errors name the line. Used by
// POST /v1/ops and inline ops in POST /v1/generations. Tests: tests/server/api_resources_test.cpp and api_core_test.cpp.
#pragma once

#include <optional>
#include <string>

#include <pqxx/pqxx>

#include "api/auth.h"
#include "api/context.h"
#include "api/handler_util.h"
#include "db/ops.h"

namespace kforge::api {

//! A stored op, or the error response to send.
struct OpSubmit {
  std::optional<db::OpRecord> op;
  bool created = false;  //!< false: an identical op already existed and is reused
  std::optional<HttpResponse> error;
};

//! Validates, probes and stores `op_json`. Field names in errors get `field_prefix` ("op.").
OpSubmit submit_op(ApiContext& ctx, pqxx::connection& conn, const Principal& principal, const json& op_json,
                   const std::string& field_prefix);

//! The op resource JSON.
json op_json(const db::OpRecord& op);

}  // namespace kforge::api
