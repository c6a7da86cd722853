// Checks real responses against the served /v1/openapi.json: the path and
// method must be documented, the status must be listed for that operation, and
// a JSON body must match its schema (type, required, properties, items, enum,
// nullable, $ref, allOf, minimum/maximum). A small validator for the subset the
// document uses, so tests hold the document and the server to each other.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge::test {

class OpenApiCheck {
 public:
  //! Parses the document (fails the test on invalid JSON).
  void load(const std::string& text);
  //! "" when the response conforms, else what does not.
  std::string check(const std::string& method, const std::string& path, int status, const std::string& content_type,
                    const std::string& body) const;
  //! Validates a JSON value against a schema; appends errors with JSON paths.
  void validate(const nlohmann::json& value, const nlohmann::json& schema, const std::string& where,
                std::vector<std::string>& errors) const;
  //! The path template matching a concrete path ("/v1/ops/12" -> "/v1/ops/{id}"), or "".
  std::string template_for(const std::string& path) const;
  const nlohmann::json& doc() const { return doc_; }

 private:
  const nlohmann::json& resolve(const nlohmann::json& schema) const;
  nlohmann::json doc_;
};

}  // namespace kforge::test
