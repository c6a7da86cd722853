// Error kinds and their one mapping to HTTP status and RFC 9457 problem+json.
// Test: ctest -R api_router_test.
// Test: ctest -R 'api_(router|core)_test' (statuses and problem bodies).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "api/http.h"
#include "spec/field.h"

namespace kforge::api {

enum class ErrorKind {
  bad_request,          //!< malformed JSON or query
  unauthorized,         //!< missing or bad token
  forbidden,            //!< token lacks the scope
  not_found,            //!< unknown route or resource
  method_not_allowed,   //!< route exists, method does not
  conflict,             //!< state does not allow the action
  payload_too_large,    //!< body over the limit
  headers_too_large,    //!< request headers over the limit
  unprocessable,        //!< schema or semantic validation failed
  unavailable,          //!< dependency down or server saturated
  internal,             //!< a bug; details are logged, not returned
};

//! One offending field in a validation error: dotted path and why (the job readers of
//! spec/job_spec.h return the same type).
using FieldError = spec::FieldError;

//! The status code for a kind (the one place this mapping lives).
int status_for(ErrorKind kind);

//! The short title and type slug for a kind ("Not Found", "not-found").
std::string title_for(ErrorKind kind);

//! A problem+json response: type, title, status, detail and optional field errors.
HttpResponse problem(ErrorKind kind, const std::string& detail, const std::vector<FieldError>& fields = {});

}  // namespace kforge::api
