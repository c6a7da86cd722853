// OpenApiCheck behind openapi_check.h.
// Used by ctest -R 'api_(core|resources)_test|cli_test|jobs_(generate|training)_test'.
#include "tests/server/openapi_check.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kforge::test {
namespace {

std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream in(path.substr(0, path.find('?')));
  std::string part;
  while (std::getline(in, part, '/')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

}  // namespace

void OpenApiCheck::load(const std::string& text) {
  try {
    doc_ = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "/v1/openapi.json is not JSON: " << e.what();
  }
}

std::string OpenApiCheck::template_for(const std::string& path) const {
  auto parts = segments(path);
  if (!doc_.contains("paths")) return "";
  for (const auto& [templ, item] : doc_["paths"].items()) {
    auto pattern = segments(templ);
    if (pattern.size() != parts.size()) continue;
    bool ok = true;
    for (size_t seg_idx = 0; seg_idx < pattern.size() && ok; ++seg_idx) {
      bool variable = pattern[seg_idx].front() == '{';
      ok = variable || pattern[seg_idx] == parts[seg_idx];
    }
    if (ok) return templ;
  }
  return "";
}

const nlohmann::json& OpenApiCheck::resolve(const nlohmann::json& schema) const {
  if (schema.is_object() && schema.contains("$ref")) {
    std::string ref = schema["$ref"];
    const std::string prefix = "#/components/schemas/";
    return resolve(doc_["components"]["schemas"][ref.substr(prefix.size())]);
  }
  return schema;
}

void OpenApiCheck::validate(const nlohmann::json& value, const nlohmann::json& raw_schema, const std::string& where,
                            std::vector<std::string>& errors) const {
  const nlohmann::json& schema = resolve(raw_schema);
  if (!schema.is_object()) return;
  if (value.is_null()) {
    if (!schema.value("nullable", false) && (schema.contains("type") || schema.contains("allOf"))) {
      errors.push_back(where + ": null but not nullable");
    }
    return;
  }
  if (schema.contains("allOf")) {
    for (const auto& part : schema["allOf"]) validate(value, part, where, errors);
  }
  if (schema.contains("enum")) {
    bool found = false;
    for (const auto& option : schema["enum"]) found = found || option == value;
    if (!found) errors.push_back(where + ": " + value.dump() + " not in enum " + schema["enum"].dump());
  }
  if (!schema.contains("type")) return;
  std::string type = schema["type"];
  bool type_ok = (type == "object" && value.is_object()) || (type == "array" && value.is_array()) ||
                 (type == "string" && value.is_string()) || (type == "boolean" && value.is_boolean()) ||
                 (type == "integer" && value.is_number_integer()) || (type == "number" && value.is_number());
  if (!type_ok) {
    errors.push_back(where + ": expected " + type + ", got " + value.dump().substr(0, 80));
    return;
  }
  if (value.is_number()) {
    if (schema.contains("minimum") && value.get<double>() < schema["minimum"].get<double>())
      errors.push_back(where + ": below minimum");
    if (schema.contains("maximum") && value.get<double>() > schema["maximum"].get<double>())
      errors.push_back(where + ": above maximum");
  }
  if (type == "object") {
    if (schema.contains("required")) {
      for (const auto& name : schema["required"]) {
        if (!value.contains(name.get<std::string>())) errors.push_back(where + ": missing required " + name.dump());
      }
    }
    if (schema.contains("properties")) {
      for (const auto& [name, sub] : schema["properties"].items()) {
        if (value.contains(name)) validate(value[name], sub, where + "." + name, errors);
      }
    }
  }
  if (type == "array" && schema.contains("items")) {
    for (size_t item_idx = 0; item_idx < value.size(); ++item_idx) {
      validate(value[item_idx], schema["items"], where + "[" + std::to_string(item_idx) + "]", errors);
    }
  }
}

std::string OpenApiCheck::check(const std::string& method, const std::string& path, int status,
                                const std::string& content_type, const std::string& body) const {
  std::string templ = template_for(path);
  if (templ.empty()) return "path " + path + " is not documented";
  std::string lower = method;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto& item = doc_["paths"][templ];
  if (!item.contains(lower)) {
    // A 405 for an undocumented method is the documented behaviour of every path.
    return status == 405 ? "" : method + " " + templ + " is not documented";
  }
  const auto& responses = item[lower]["responses"];
  std::string code = std::to_string(status);
  if (!responses.contains(code)) return "status " + code + " is not documented for " + method + " " + templ;
  const auto& response = responses[code];
  if (!response.contains("content")) return "";
  std::string media = content_type.substr(0, content_type.find(';'));
  if (!response["content"].contains(media)) {
    return "content type '" + content_type + "' is not documented for " + code + " on " + method + " " + templ;
  }
  if (media != "application/json" && media != "application/problem+json") return "";
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(body);
  } catch (const std::exception& e) {
    return std::string("body is not JSON: ") + e.what();
  }
  std::vector<std::string> errors;
  validate(value, response["content"][media]["schema"], "$", errors);
  std::string out;
  for (const auto& error : errors) out += (out.empty() ? "" : "; ") + error;
  return out;
}

}  // namespace kforge::test
