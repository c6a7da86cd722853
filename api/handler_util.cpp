// Shared handler helpers behind api/handler_util.h.
// Test: ctest -R api_handler_util_test.
// Test: ctest -R api_handler_util_test, and every route test over HTTP.
#include "api/handler_util.h"

#include <cmath>
#include <limits>

#include "common/log.h"
#include "db/tokens.h"

namespace kforge::api {
namespace {

// Nesting depth of a JSON text, ignoring brackets inside strings. Checked before
// parsing so a body of 100,000 '[' is refused cheaply with a clear message.
int json_depth(const std::string& text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') deepest = std::max(deepest, ++depth);
    else if (c == ']' || c == '}') --depth;
  }
  return deepest;
}

HttpResponse unavailable(const std::string& detail) {
  HttpResponse resp = problem(ErrorKind::unavailable, detail);
  resp.headers.emplace_back("Retry-After", "1");
  return resp;
}

}  // namespace

std::optional<HttpResponse> parse_json_object(const std::string& body, json* out) {
  if (body.empty()) return problem(ErrorKind::bad_request, "the request body is empty; send a JSON object");
  int depth = json_depth(body);
  if (depth > kMaxJsonDepth) {
    return problem(ErrorKind::bad_request, "JSON nesting depth " + std::to_string(depth) + " exceeds the limit of " +
                                               std::to_string(kMaxJsonDepth));
  }
  try {
    *out = json::parse(body);
  } catch (const json::exception& e) {
    return problem(ErrorKind::bad_request, std::string("the body is not valid JSON: ") + e.what());
  }
  if (!out->is_object()) {
    return problem(ErrorKind::bad_request,
                   std::string("the body must be a JSON object, not ") + spec::json_type_name(*out));
  }
  // PostgreSQL text and jsonb cannot hold NUL: refuse it here, naming the field, before
  // any work (the readers refuse it too, for callers that do not come through here).
  if (auto field = spec::find_nul(*out)) {
    return problem(ErrorKind::unprocessable, "the request body has invalid fields", {{*field, spec::kNulMessage}});
  }
  return std::nullopt;
}

const json* FieldReader::find(const std::string& name, bool required) {
  auto found = object_.find(name);
  if (found == object_.end() || found->is_null()) {
    if (required) errors_.push_back({prefix_ + name, "is required"});
    return nullptr;
  }
  return &*found;
}

std::string FieldReader::string(const std::string& name, bool required, const std::string& fallback,
                                size_t max_len) {
  const json* value = find(name, required);
  if (!value) return fallback;
  if (!value->is_string()) {
    errors_.push_back({prefix_ + name, std::string("must be a string, not ") + spec::json_type_name(*value)});
    return fallback;
  }
  const auto& text = value->get_ref<const std::string&>();
  if (text.find('\0') != std::string::npos) {
    errors_.push_back({prefix_ + name, spec::kNulMessage});
    return fallback;
  }
  if (required && text.empty()) {
    errors_.push_back({prefix_ + name, "must not be empty"});
    return fallback;
  }
  if (text.size() > max_len) {
    errors_.push_back({prefix_ + name, "is longer than " + std::to_string(max_len) + " bytes"});
    return fallback;
  }
  return text;
}

int64_t FieldReader::integer(const std::string& name, bool required, int64_t fallback, int64_t min, int64_t max) {
  const json* value = find(name, required);
  if (!value) return fallback;
  int64_t number = 0;
  if (value->is_number_unsigned()) {
    auto big = value->get<uint64_t>();
    if (big > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      errors_.push_back({prefix_ + name, "must be between " + std::to_string(min) + " and " + std::to_string(max)});
      return fallback;
    }
    number = static_cast<int64_t>(big);
  } else if (value->is_number_integer()) {
    number = value->get<int64_t>();
  } else {
    errors_.push_back({prefix_ + name, std::string("must be an integer, not ") + spec::json_type_name(*value)});
    return fallback;
  }
  if (number < min || number > max) {
    errors_.push_back({prefix_ + name, "must be between " + std::to_string(min) + " and " + std::to_string(max)});
    return fallback;
  }
  return number;
}

double FieldReader::number(const std::string& name, bool required, double fallback, double min, double max) {
  const json* value = find(name, required);
  if (!value) return fallback;
  if (!value->is_number()) {
    errors_.push_back({prefix_ + name, std::string("must be a number, not ") + spec::json_type_name(*value)});
    return fallback;
  }
  double number = value->get<double>();
  if (!std::isfinite(number) || number < min || number > max) {
    errors_.push_back({prefix_ + name, "must be between " + json(min).dump() + " and " + json(max).dump()});
    return fallback;
  }
  return number;
}

std::string FieldReader::choice(const std::string& name, bool required, const std::string& fallback,
                                const std::vector<std::string>& allowed) {
  std::string value = string(name, required, fallback);
  for (const auto& option : allowed) {
    if (value == option) return value;
  }
  std::string list;
  for (const auto& option : allowed) list += (list.empty() ? "" : ", ") + option;
  errors_.push_back({prefix_ + name, "must be one of: " + list});
  return fallback;
}

const json* FieldReader::object(const std::string& name, bool required) {
  const json* value = find(name, required);
  if (value && !value->is_object()) {
    errors_.push_back({prefix_ + name, std::string("must be an object, not ") + spec::json_type_name(*value)});
    return nullptr;
  }
  return value;
}

void FieldReader::only(const std::vector<std::string>& known) {
  for (const auto& item : object_.items()) {
    bool found = false;
    for (const auto& name : known) found = found || name == item.key();
    if (!found) errors_.push_back({prefix_ + item.key(), "is not a known field"});
  }
}

void FieldReader::merge(const FieldReader& other) {
  errors_.insert(errors_.end(), other.errors_.begin(), other.errors_.end());
}

HttpResponse FieldReader::response(const std::string& detail) const { return field_problem(errors_, detail); }

HttpResponse field_problem(const std::vector<FieldError>& errors, const std::string& detail) {
  return problem(ErrorKind::unprocessable, detail, errors);
}

std::optional<HttpResponse> parse_page(const HttpRequest& req, PageRequest* page) {
  auto after = req.query.find("after");
  if (after != req.query.end()) page->after = after->second;
  auto limit = req.query.find("limit");
  if (limit == req.query.end()) return std::nullopt;
  const std::string& text = limit->second;
  bool digits = !text.empty() && text.size() <= 4 && text.find_first_not_of("0123456789") == std::string::npos;
  int value = digits ? std::stoi(text) : 0;
  if (value < 1 || value > 100) {
    return problem(ErrorKind::bad_request, "limit must be an integer from 1 to 100, got '" + text + "'",
                   {{"limit", "must be an integer from 1 to 100"}});
  }
  page->limit = value;
  return std::nullopt;
}

bool parse_path_id(const std::string& text, int64_t* id) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  *id = std::stoll(text);
  return *id > 0;
}

bool parse_id_cursor(const std::string& after, int64_t* id) {
  if (after.empty()) {
    *id = 0;
    return true;
  }
  return parse_path_id(after, id);
}

std::string encode_cursor(const std::vector<std::string>& parts) {
  static const char* digits = "0123456789abcdef";
  std::string joined, out;
  for (size_t part_idx = 0; part_idx < parts.size(); ++part_idx) joined += (part_idx ? "\x1f" : "") + parts[part_idx];
  for (unsigned char c : joined) {
    out += digits[c >> 4];
    out += digits[c & 0xf];
  }
  return out;
}

bool decode_cursor(const std::string& cursor, size_t count, std::vector<std::string>* parts) {
  if (cursor.size() % 2 != 0 || cursor.size() > 2048) return false;
  std::string joined;
  for (size_t pos = 0; pos < cursor.size(); pos += 2) {
    auto nibble = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      return -1;
    };
    int high = nibble(cursor[pos]), low = nibble(cursor[pos + 1]);
    if (high < 0 || low < 0) return false;
    joined += static_cast<char>(high * 16 + low);
  }
  if (!spec::storable_text(joined)) return false;  // NUL or bad UTF-8 would reach PostgreSQL
  parts->clear();
  std::string current;
  for (char c : joined) {
    if (c == '\x1f') {
      parts->push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  parts->push_back(current);
  return parts->size() == count;
}

HttpResponse page_response(json items, const std::optional<std::string>& next_cursor) {
  json body = {{"data", std::move(items)}, {"has_more", next_cursor.has_value()}};
  body["next_cursor"] = next_cursor ? json(*next_cursor) : json(nullptr);
  return json_response(200, body);
}

HttpResponse json_response(int status, const json& body) {
  HttpResponse resp;
  resp.status = status;
  // Replace invalid UTF-8 rather than throw: stored text (kernel sources, logs) may hold any bytes.
  resp.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return resp;
}

json parse_stored(const std::string& text) {
  if (text.empty()) return nullptr;
  try {
    return json::parse(text);
  } catch (const json::exception&) {
    return nullptr;
  }
}

HttpResponse with_db(ApiContext& ctx, const HttpRequest& req, Scope scope, const DbHandler& handler) {
  if (!ctx.pool) return unavailable("no database configured");
  std::optional<db::ConnectionPool::Lease> lease;
  try {
    lease.emplace(ctx.pool->acquire());
  } catch (const std::exception& e) {
    return unavailable(std::string("database unavailable: ") + e.what());
  }
  try {
    AuthResult auth = authenticate(**lease, req, scope);
    if (auth.error) return *auth.error;
    return handler(**lease, *auth.principal);
  } catch (const pqxx::broken_connection& e) {
    lease->discard();
    return unavailable(std::string("database connection lost: ") + e.what());
  }
}

bool valid_idempotency_key(const std::string& key) {
  if (key.empty() || key.size() > 255) return false;
  for (char c : key) {
    if (c < 0x20 || c > 0x7e) return false;  // printable ASCII: it is stored and compared as text
  }
  return true;
}

static HttpResponse idempotency_answer(pqxx::connection& conn, const db::IdempotencyRecord& stored,
                                const std::string& request_hash, const std::string& key,
                                const PendingReplay& pending) {
  if (stored.request_sha256 != request_hash) {
    return problem(ErrorKind::unprocessable,
                   "Idempotency-Key '" + key + "' was already used with a different request body",
                   {{"Idempotency-Key", "reused with a different body"}});
  }
  HttpResponse replay;
  if (stored.status == 0) {
    // The job was inserted with the key, but the server stopped before it stored the
    // response: describe the job as it is now.
    if (!pending || stored.job_id == 0) {
      replay = problem(ErrorKind::conflict, "the first request with Idempotency-Key '" + key + "' did not finish");
      replay.headers.emplace_back("Retry-After", "1");
      return replay;
    }
    replay = pending(conn, stored.job_id);
  } else {
    replay.status = stored.status;
    replay.content_type = stored.content_type;
    replay.body = stored.body;
  }
  replay.headers.emplace_back("Idempotent-Replayed", "true");
  return replay;
}

HttpResponse with_post(ApiContext& ctx, const HttpRequest& req, Scope scope, const PostHandler& handler,
                       const PendingReplay& pending) {
  return with_db(ctx, req, scope, [&](pqxx::connection& conn, const Principal& principal) {
    json body;
    if (auto error = parse_json_object(req.body, &body)) return *error;
    std::string key = header(req, "idempotency-key");
    if (key.empty()) return handler(conn, principal, body);
    if (!valid_idempotency_key(key)) {
      return problem(ErrorKind::bad_request, "Idempotency-Key must be 1 to 255 printable ASCII characters",
                     {{"Idempotency-Key", key.size() > 255 ? "longer than 255 characters" : "not printable ASCII"}});
    }
    // One request per key at a time: a second one while the first runs gets 409 (it may
    // retry), so the first body alone decides what the key is bound to.
    std::string scope_text = principal.key() + "\n" + req.method + "\n" + req.path + "\n" + key;
    auto lock_hash = static_cast<int32_t>(std::stoul(sha256_hex(scope_text).substr(0, 8), nullptr, 16));
    if (!db::idempotency_try_lock(conn, lock_hash)) {
      HttpResponse busy = problem(ErrorKind::conflict,
                                  "a request with Idempotency-Key '" + key + "' is in progress; retry shortly");
      busy.headers.emplace_back("Retry-After", "1");
      return busy;
    }
    struct Unlock {
      pqxx::connection& conn;
      int32_t hash;
      ~Unlock() {
        try {
          if (conn.is_open()) db::idempotency_unlock(conn, hash);
        } catch (const std::exception&) {  // a broken connection released it already
        }
      }
    } unlock{conn, lock_hash};
    std::string request_hash = sha256_hex(req.body);
    if (auto stored = db::idempotency_find(conn, principal.key(), req.method, req.path, key)) {
      return idempotency_answer(conn, *stored, request_hash, key, pending);
    }
    HttpResponse resp = handler(conn, principal, body);
    if (resp.status < 500) {
      db::idempotency_store(conn, principal.key(), req.method, req.path, key,
                            {request_hash, resp.status, resp.content_type, resp.body});
    }
    return resp;
  });
}

}  // namespace kforge::api
