// Helpers shared by the v1 handlers: JSON body parsing (with a nesting limit),
// field validation that collects every offending field, cursor pagination,
// and the wrappers that lease a connection, authenticate, and honour
// Idempotency-Key on POST. Tested in tests/api/handler_util_test.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "api/auth.h"
#include "api/context.h"
#include "api/errors.h"
#include "api/http.h"

namespace kforge::api {

using json = nlohmann::json;

//! Deepest JSON nesting a request body may have.
constexpr int kMaxJsonDepth = 64;

//! Parses the body as a JSON object; on failure returns the 400 response.
std::optional<HttpResponse> parse_json_object(const std::string& body, json* out);

//! Collects field errors while reading a JSON object; 422 when any. For the bodies of
//! ops, models and tokens: job kinds have their own tables and reader (spec/job_spec.h).
class FieldReader {
 public:
  explicit FieldReader(const json& object, std::string prefix = "") : object_(object), prefix_(std::move(prefix)) {}
  //! Required or optional string with a length bound; returns fallback when absent.
  std::string string(const std::string& name, bool required, const std::string& fallback = "", size_t max_len = 200);
  //! Integer within [min, max]; fallback when absent.
  int64_t integer(const std::string& name, bool required, int64_t fallback, int64_t min, int64_t max);
  //! Number within [min, max]; fallback when absent.
  double number(const std::string& name, bool required, double fallback, double min, double max);
  //! One of the allowed strings.
  std::string choice(const std::string& name, bool required, const std::string& fallback,
                     const std::vector<std::string>& allowed);
  //! Sub-object or null when absent (error when present and not an object).
  const json* object(const std::string& name, bool required);
  //! Rejects members not in `known` (catches typos such as "sampels").
  void only(const std::vector<std::string>& known);
  //! Adds an error by hand.
  void fail(const std::string& name, const std::string& message) { errors_.push_back({prefix_ + name, message}); }
  //! Merges errors gathered by another reader.
  void merge(const FieldReader& other);
  const std::vector<FieldError>& errors() const { return errors_; }
  bool ok() const { return errors_.empty(); }
  //! The 422 response listing every error.
  HttpResponse response(const std::string& detail = "the request body has invalid fields") const;

 private:
  const json* find(const std::string& name, bool required);
  const json& object_;
  std::string prefix_;
  std::vector<FieldError> errors_;
};

//! The 422 problem+json listing field errors (a job reader's, or a lookup's such as "no such model").
HttpResponse field_problem(const std::vector<FieldError>& errors,
                           const std::string& detail = "the request body has invalid fields");

//! A page request: `after` (opaque cursor, "" = from the start) and `limit` 1-100 (default 20).
struct PageRequest {
  std::string after;
  int limit = 20;
};

//! Reads after/limit from the query; 400 naming the parameter on error.
std::optional<HttpResponse> parse_page(const HttpRequest& req, PageRequest* page);
//! Parses an id cursor ("" -> 0); false when not a positive integer.
bool parse_id_cursor(const std::string& after, int64_t* id);
//! Parses a path id; false when not a positive integer.
bool parse_path_id(const std::string& text, int64_t* id);
//! An opaque cursor for a composite key (hex of the parts joined by 0x1f).
std::string encode_cursor(const std::vector<std::string>& parts);
//! Decodes encode_cursor's output into exactly `count` parts; false if malformed.
bool decode_cursor(const std::string& cursor, size_t count, std::vector<std::string>* parts);
//! {"data": items, "next_cursor": next or null, "has_more": bool}.
HttpResponse page_response(json items, const std::optional<std::string>& next_cursor);
//! A JSON response with a status.
HttpResponse json_response(int status, const json& body);
//! Parses JSON text stored in the database (never fails the request: bad text -> null).
json parse_stored(const std::string& text);

//! A handler that gets a leased connection and the authenticated caller.
using DbHandler = std::function<HttpResponse(pqxx::connection&, const Principal&)>;
//! A POST handler that also gets the parsed JSON body.
using PostHandler = std::function<HttpResponse(pqxx::connection&, const Principal&, const json&)>;

//! Leases a connection, authenticates for `scope`, runs the handler. A lost
//! database becomes 503 with Retry-After.
HttpResponse with_db(ApiContext& ctx, const HttpRequest& req, Scope scope, const DbHandler& handler);
//! The response for a job whose Idempotency-Key record was written with the job but
//! whose first response was not stored (the server stopped in between).
using PendingReplay = std::function<HttpResponse(pqxx::connection&, int64_t job_id)>;

//! with_db plus JSON body parsing and Idempotency-Key (1-255 printable ASCII): one
//! request per (caller, method, path, key) at a time (another gets 409 + Retry-After);
//! a repeat with the same body gets the stored response (Idempotent-Replayed: true); a
//! different body gets 422. Job-creating handlers bind the key in the job's transaction
//! (enqueue_job) and pass `pending` to describe such a job.
HttpResponse with_post(ApiContext& ctx, const HttpRequest& req, Scope scope, const PostHandler& handler,
                       const PendingReplay& pending = nullptr);
//! True for a usable Idempotency-Key: 1-255 printable ASCII characters.
bool valid_idempotency_key(const std::string& key);

}  // namespace kforge::api
