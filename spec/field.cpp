// The field reader behind spec/field.h: type and range checks with the messages every
// component shows, dotted paths for nested objects. Test: ctest -R spec_job_spec_test.
#include "spec/field.h"

#include <cmath>
#include <limits>
#include <set>

namespace kforge::spec {
namespace {

// Integral doubles up to 2^53 are exact; beyond that "integral" says nothing.
constexpr double kExactIntegerLimit = 9007199254740992.0;

std::string range_text(const json& minimum, const json& maximum) { return minimum.dump() + ".." + maximum.dump(); }

json check_integer(const FieldInfo& field, const json& value, std::string* message) {
  int64_t number = 0;
  if (value.is_number_unsigned()) {
    auto big = value.get<uint64_t>();
    if (big > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      *message = "must be in " + range_text(field.minimum, field.maximum) + ", got " + value.dump();
      return nullptr;
    }
    number = static_cast<int64_t>(big);
  } else if (value.is_number_integer()) {
    number = value.get<int64_t>();
  } else if (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>() &&
             std::fabs(value.get<double>()) <= kExactIntegerLimit) {
    number = static_cast<int64_t>(value.get<double>());  // 8.0 is 8: JSON has one number type
  } else {
    *message = std::string("must be an integer, not ") + json_type_name(value);
    return nullptr;
  }
  if (number < field.minimum.get<int64_t>() || number > field.maximum.get<int64_t>()) {
    *message = "must be in " + range_text(field.minimum, field.maximum) + ", got " + value.dump();
    return nullptr;
  }
  return number;
}

json check_number(const FieldInfo& field, const json& value, std::string* message) {
  if (!value.is_number()) {
    *message = std::string("must be a number, not ") + json_type_name(value);
    return nullptr;
  }
  double number = value.get<double>();
  if (!std::isfinite(number) || number < field.minimum.get<double>() || number > field.maximum.get<double>()) {
    *message = "must be in " + range_text(field.minimum, field.maximum) + ", got " + value.dump();
    return nullptr;
  }
  return number;
}

json check_string(const FieldInfo& field, const json& value, std::string* message) {
  if (!value.is_string()) {
    *message = std::string("must be a string, not ") + json_type_name(value);
    return nullptr;
  }
  const auto& text = value.get_ref<const std::string&>();
  if (text.find('\0') != std::string::npos) {
    *message = kNulMessage;
    return nullptr;
  }
  if (field.minimum.is_number() && static_cast<int64_t>(text.size()) < field.minimum.get<int64_t>()) {
    *message = text.empty() ? "must not be empty" : "is shorter than " + field.minimum.dump() + " bytes";
    return nullptr;
  }
  if (field.maximum.is_number() && static_cast<int64_t>(text.size()) > field.maximum.get<int64_t>()) {
    *message = "is longer than " + field.maximum.dump() + " bytes";
    return nullptr;
  }
  return value;
}

json check_choice(const FieldInfo& field, const json& value, std::string* message) {
  if (value.is_string()) {
    for (const auto& option : field.choices) {
      if (value.get_ref<const std::string&>() == option) return value;
    }
  }
  std::string list;
  for (const auto& option : field.choices) list += (list.empty() ? "" : ", ") + option;
  *message = "must be one of: " + list;
  return nullptr;
}

json check_model_ref(const json& value, std::string* message) {
  std::string name;
  int version = 0;
  if (value.is_string() && value.get_ref<const std::string&>().find('\0') != std::string::npos) {
    *message = kNulMessage;
    return nullptr;
  }
  if (!value.is_string() || !parse_model_ref(value.get<std::string>(), &name, &version)) {
    *message = "must be a model name or name@version, such as kforge-tiny@2";
    return nullptr;
  }
  return value;
}

// The member `name` of the object at `group` ("" = the document), or null.
const json* lookup(const json& doc, const std::string& group, const std::string& name) {
  const json* object = &doc;
  if (!group.empty()) {
    auto found = doc.find(group);
    if (found == doc.end() || !found->is_object()) return nullptr;
    object = &*found;
  }
  auto found = object->find(name);
  if (found == object->end() || found->is_null()) return nullptr;
  return &*found;
}

// Members of `object` that no field read from `source` names (groups count as names).
void reject_unknown(const json& object, const std::string& group, const std::vector<const FieldInfo*>& fields,
                    Source source, std::vector<FieldError>& errors) {
  std::set<std::string> known;
  for (const FieldInfo* field : fields) {
    if (!field->read_from(source)) continue;
    if (field->group() == group) known.insert(field->name());
    if (group.empty() && !field->group().empty()) known.insert(field->group());
  }
  std::string prefix = group.empty() ? "" : group + ".";
  for (const auto& item : object.items()) {
    if (!known.count(item.key())) errors.push_back({prefix + item.key(), "is not a known field"});
  }
}

}  // namespace

const char* const kNulMessage = "must not contain NUL characters (\\u0000)";

bool storable_text(std::string_view text) {
  // UTF-8 per RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF.
  size_t pos = 0;
  while (pos < text.size()) {
    auto byte = static_cast<unsigned char>(text[pos]);
    if (byte == 0) return false;
    if (byte < 0x80) {
      ++pos;
      continue;
    }
    size_t extra = 0;
    uint32_t min_code = 0, code = 0;
    if ((byte & 0xe0) == 0xc0) extra = 1, min_code = 0x80, code = byte & 0x1f;
    else if ((byte & 0xf0) == 0xe0) extra = 2, min_code = 0x800, code = byte & 0x0f;
    else if ((byte & 0xf8) == 0xf0) extra = 3, min_code = 0x10000, code = byte & 0x07;
    else return false;
    if (pos + extra >= text.size()) return false;  // truncated sequence
    for (size_t cont_idx = 1; cont_idx <= extra; ++cont_idx) {
      auto cont = static_cast<unsigned char>(text[pos + cont_idx]);
      if ((cont & 0xc0) != 0x80) return false;
      code = (code << 6) | (cont & 0x3f);
    }
    if (code < min_code || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return false;
    pos += extra + 1;
  }
  return true;
}

std::optional<std::string> find_nul(const json& value, const std::string& path) {
  if (value.is_string()) {
    if (value.get_ref<const std::string&>().find('\0') != std::string::npos) return path;
    return std::nullopt;
  }
  if (value.is_array()) {
    for (size_t item_idx = 0; item_idx < value.size(); ++item_idx) {
      if (auto found = find_nul(value[item_idx], path + "[" + std::to_string(item_idx) + "]")) return found;
    }
    return std::nullopt;
  }
  if (value.is_object()) {
    for (const auto& item : value.items()) {
      std::string member = path.empty() ? item.key() : path + "." + item.key();
      if (item.key().find('\0') != std::string::npos) return member;
      if (auto found = find_nul(item.value(), member)) return found;
    }
  }
  return std::nullopt;
}

std::string describe_errors(const std::vector<FieldError>& errors) {
  std::string out;
  for (const auto& error : errors) {
    if (!out.empty()) out += "; ";
    out += error.field.empty() ? error.message : error.field + ": " + error.message;
  }
  return out;
}

std::string FieldInfo::name() const {
  auto dot = path.find('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

std::string FieldInfo::group() const {
  auto dot = path.find('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

bool FieldInfo::read_from(Source source) const {
  switch (source) {
    case Source::request: return scope != Scope::job;
    case Source::job: return scope != Scope::request;
    case Source::flags: return !flag.empty();
  }
  return false;
}

bool FieldInfo::required_in(Source source) const {
  switch (source) {
    case Source::request: return need == Need::in_request || need == Need::always;
    case Source::job: return need == Need::in_job || need == Need::always;
    case Source::flags: return false;
  }
  return false;
}

const char* json_type_name(const json& value) {
  if (value.is_null()) return "null";
  if (value.is_boolean()) return "boolean";
  if (value.is_number_integer()) return "integer";
  if (value.is_number()) return "number";
  if (value.is_string()) return "string";
  if (value.is_array()) return "array";
  return "object";
}

bool parse_model_ref(const std::string& ref, std::string* name, int* version) {
  auto at = ref.find('@');
  *name = ref.substr(0, at);
  *version = 0;
  if (name->empty() || name->size() > 100) return false;
  if (at == std::string::npos) return true;
  std::string digits = ref.substr(at + 1);
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) return false;
  *version = std::stoi(digits);
  return *version > 0;
}

json check_value(const FieldInfo& field, const json& value, std::string* message) {
  switch (field.type) {
    case FieldType::integer: return check_integer(field, value, message);
    case FieldType::number: return check_number(field, value, message);
    case FieldType::string: return check_string(field, value, message);
    case FieldType::choice: return check_choice(field, value, message);
    case FieldType::model_ref: return check_model_ref(value, message);
    case FieldType::object:
      if (value.is_object()) return value;
      *message = std::string("must be an object, not ") + json_type_name(value);
      return nullptr;
  }
  return nullptr;
}

void check_fields(const json& doc, const std::vector<const FieldInfo*>& fields, Source source,
                  std::vector<json>& values, std::vector<FieldError>& errors) {
  values.assign(fields.size(), nullptr);
  if (!doc.is_object()) {
    errors.push_back({"", std::string("not a JSON object (got ") + json_type_name(doc) + ")"});
    return;
  }
  // Nested objects ("hyperparameters") may be absent or null (all defaults), never another type.
  std::set<std::string> groups, bad_groups;
  for (const FieldInfo* field : fields) {
    if (!field->group().empty() && field->read_from(source)) groups.insert(field->group());
  }
  for (const auto& group : groups) {
    auto found = doc.find(group);
    if (found == doc.end() || found->is_null()) continue;
    if (!found->is_object()) {
      errors.push_back({group, std::string("must be an object, not ") + json_type_name(*found)});
      bad_groups.insert(group);
    } else if (source == Source::request) {
      reject_unknown(*found, group, fields, source, errors);
    }
  }
  if (source == Source::request) reject_unknown(doc, "", fields, source, errors);

  for (size_t field_idx = 0; field_idx < fields.size(); ++field_idx) {
    const FieldInfo& field = *fields[field_idx];
    if (!field.read_from(source) || bad_groups.count(field.group())) continue;
    const json* value = lookup(doc, field.group(), field.name());
    if (!value) {
      if (field.required_in(source)) errors.push_back({field.path, "is required"});
      else values[field_idx] = field.fallback;
      continue;
    }
    std::string message;
    json checked = check_value(field, *value, &message);
    if (checked.is_null()) errors.push_back({field.path, message});
    else values[field_idx] = std::move(checked);
  }
}

}  // namespace kforge::spec
