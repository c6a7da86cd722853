// Conditional GET for pollers (the web UI polls jobs, generations and training
// runs): every 200 GET gets a strong ETag over its body and `Cache-Control:
// no-cache`; a request whose If-None-Match names that ETag gets 304 with no body.
// Tested in tests/api/conditional_test.cpp and over HTTP in tests/server/api_web_test.cpp.
#pragma once

#include <string>

#include "api/http.h"

namespace kforge::api {

//! A strong entity tag for a body: a quoted 64-bit FNV-1a hash in hex.
std::string etag_of(const std::string& body);

//! True when an If-None-Match value ("*", one tag or a list, W/ allowed) names `etag`.
bool etag_matches(const std::string& if_none_match, const std::string& etag);

//! Adds ETag (unless the response has one) and Cache-Control (unless set) to a 200
//! with an in-memory body; others are left alone.
void add_etag(HttpResponse& resp);

//! For GET and HEAD: add_etag, then turn a response the client already holds into
//! a bodiless 304 that keeps ETag and Cache-Control. Other methods pass through.
HttpResponse conditional_get(const HttpRequest& req, HttpResponse resp);

}  // namespace kforge::api
