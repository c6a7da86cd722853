// ETags and 304s behind api/conditional.h. FNV-1a, not a cryptographic hash: the
// tag only has to change when the body does, and it costs ~1 ns per byte.
// Tested by ctest -R api_conditional (and api_web over HTTP).
#include "api/conditional.h"

#include <cctype>
#include <cstdint>
#include <cstdio>

namespace kforge::api {
namespace {

const std::string* find_header(const HttpResponse& resp, const std::string& lower_name) {
  for (const auto& [name, value] : resp.headers) {
    if (name.size() != lower_name.size()) continue;
    bool same = true;
    for (size_t char_idx = 0; char_idx < name.size() && same; ++char_idx) {
      same = std::tolower(static_cast<unsigned char>(name[char_idx])) == lower_name[char_idx];
    }
    if (same) return &value;
  }
  return nullptr;
}

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

// Weak comparison (RFC 9110 13.1.2 for If-None-Match): W/ prefixes are ignored.
std::string opaque_tag(const std::string& tag) { return tag.rfind("W/", 0) == 0 ? tag.substr(2) : tag; }

}  // namespace

std::string etag_of(const std::string& body) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char byte : body) {
    hash ^= byte;
    hash *= 1099511628211ull;
  }
  char text[24];
  std::snprintf(text, sizeof text, "\"%016llx\"", static_cast<unsigned long long>(hash));
  return text;
}

bool etag_matches(const std::string& if_none_match, const std::string& etag) {
  std::string wanted = opaque_tag(etag);
  size_t start = 0;
  while (start <= if_none_match.size()) {
    size_t comma = if_none_match.find(',', start);
    std::string item = trim(if_none_match.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (item == "*" || (!item.empty() && opaque_tag(item) == wanted)) return true;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return false;
}

void add_etag(HttpResponse& resp) {
  if (resp.status != 200 || !resp.body_file.empty()) return;
  if (!find_header(resp, "etag")) resp.headers.emplace_back("ETag", etag_of(resp.body));
  // Stored copies must be revalidated: a poller always sees the current state.
  if (!find_header(resp, "cache-control")) resp.headers.emplace_back("Cache-Control", "no-cache");
}

HttpResponse conditional_get(const HttpRequest& req, HttpResponse resp) {
  if (req.method != "GET" && req.method != "HEAD") return resp;
  add_etag(resp);
  const std::string* etag = find_header(resp, "etag");
  std::string if_none_match = header(req, "if-none-match");
  if (resp.status != 200 || !etag || if_none_match.empty() || !etag_matches(if_none_match, *etag)) return resp;
  HttpResponse not_modified;
  not_modified.status = 304;
  not_modified.content_type = resp.content_type;
  for (const auto& [name, value] : resp.headers) {
    // RFC 9110 15.4.5: a 304 carries the validators and caching headers of the 200.
    std::string lower;
    for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "etag" || lower == "cache-control" || lower == "vary") not_modified.headers.emplace_back(name, value);
  }
  return not_modified;
}

}  // namespace kforge::api
