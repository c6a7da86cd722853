// Transport-neutral HTTP request/response structs. server/http_adapter.cpp maps
// cpprestsdk to these, so handlers and their tests never touch cpprestsdk.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kforge::api {

//! One request as the handlers see it. Header names are lower-case.
struct HttpRequest {
  std::string method;
  std::string path;                            //!< decoded path, no query string
  std::map<std::string, std::string> query;    //!< decoded query parameters
  std::map<std::string, std::string> headers;  //!< lower-case names
  std::string body;
  std::string request_id;
  std::map<std::string, std::string> path_params;  //!< filled by the router
};

//! One response. content_type defaults to JSON.
struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body_file;  //!< when set, the adapter streams this file as the body instead
};

//! Returns the header value or "" (name must be lower-case).
inline std::string header(const HttpRequest& req, const std::string& name) {
  auto found = req.headers.find(name);
  return found == req.headers.end() ? std::string() : found->second;
}

}  // namespace kforge::api
