// Registration of the v1 resource routes, one function per resource family.
// Each lives in api/routes/<family>_routes.cpp; add_v1_routes wires them all.
// Test: ctest -R 'api_(core|resources)_test' (the real server over HTTP).
#pragma once

#include "api/context.h"
#include "api/executor.h"
#include "api/router.h"

namespace kforge::api {

//! /v1/workers, /v1/tokens (admin).
void add_admin_routes(Router& router, ApiContext& ctx);
//! /v1/leaderboard/ops, /v1/leaderboard/models (public).
void add_leaderboard_routes(Router& router, ApiContext& ctx);
//! /v1/models, /v1/models/{id}, /v1/models/{id}/files/{name}.
void add_model_routes(Router& router, ApiContext& ctx);
//! /v1/ops (POST submit, GET public), /v1/ops/{id}/candidates, /v1/candidates/{id}.
void add_op_routes(Router& router, ApiContext& ctx);
//! /v1/generations and its /cancel, /candidates.
void add_generation_routes(Router& router, ApiContext& ctx);
//! /v1/training-jobs and its /cancel, /metrics, /events.
void add_training_routes(Router& router, ApiContext& ctx);
//! /v1/evaluations.
void add_evaluation_routes(Router& router, ApiContext& ctx);
//! /v1/jobs: every job of every kind (the CLI's `jobs list`).
void add_job_routes(Router& router, ApiContext& ctx);
//! /metrics (Prometheus) and /v1/openapi.json.
void add_meta_routes(Router& router, ApiContext& ctx);

//! Registers the executor, jobs-by-state and workers-alive gauges for /metrics.
void register_server_gauges(ApiContext& ctx, BoundedExecutor& executor);

//! Every v1 route above.
void add_v1_routes(Router& router, ApiContext& ctx);

//! The OpenAPI 3 document served at /v1/openapi.json (api/openapi.json, embedded).
const char* openapi_document();

}  // namespace kforge::api
