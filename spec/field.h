// Field tables and the one reader behind every job kind's contract (job_spec.h): a
// field's path, type, default, range and doc are written once, in a table, and the
// same reader checks POST bodies, stored job args and kforge-train flags. Test: ctest -R spec_job_spec_test.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge::spec {

using json = nlohmann::json;

//! One rejected field: its dotted path ("hyperparameters.learning_rate") and why.
struct FieldError {
  std::string field;
  std::string message;
};

//! "field: message; field: message" (the message alone when the field is "").
std::string describe_errors(const std::vector<FieldError>& errors);

//! True when `text` is valid UTF-8 without NUL: what a PostgreSQL text column accepts.
bool storable_text(std::string_view text);
//! The message a field with a NUL character gets ("must not contain NUL characters").
extern const char* const kNulMessage;
//! The dotted path ("inputs[0].name", "config.x") of the first string or member name in
//! `value` that holds a NUL character, or nullopt. `path` is the value's own path.
std::optional<std::string> find_nul(const json& value, const std::string& path = "");

//! The document a reader reads.
enum class Source {
  request,  //!< a POST body: unknown members are errors, server-filled fields are refused
  job,      //!< a stored job's args (inserted by the API or by anything with database access)
  flags,    //!< kforge-train's flags: only fields with a flag are read, nothing is required
};

//! Where a field appears.
enum class Scope {
  both,     //!< in the POST body and in the job's args
  request,  //!< only in the POST body (priority, an inline op): never stored with the job
  job,      //!< only in the job's args: the server fills it (model_id, base_model_id)
};

//! When a field must be given.
enum class Need { optional, in_request, in_job, always };

//! How a field's value is checked.
enum class FieldType {
  integer,    //!< a JSON integer, or a float with an integral value (8.0 reads as 8), within the range
  number,     //!< any finite JSON number within the range
  string,     //!< a string of minimum..maximum bytes
  choice,     //!< one of `choices`
  model_ref,  //!< "name" or "name@version" (version >= 1)
  object,     //!< any JSON object (an inline op; checked by its own reader)
};

//! One field of a job kind, untyped: everything the API, the worker, kforge-train, the
//! CLI and the OpenAPI check need to know about it.
struct FieldInfo {
  std::string path;                   //!< "samples", "hyperparameters.learning_rate"
  FieldType type = FieldType::integer;
  json fallback;                      //!< the default; null = none
  json minimum, maximum;              //!< inclusive range; for strings the length in bytes
  std::vector<std::string> choices;   //!< FieldType::choice
  Need need = Need::optional;
  Scope scope = Scope::both;
  std::string doc;                    //!< one line for --help, OpenAPI and docs
  std::string flag;                   //!< kforge-train flag name ("" = none)
  bool flag_switch = false;           //!< a 0/1 field shown as --flag / --no-flag

  //! The last path component ("learning_rate").
  std::string name() const;
  //! The enclosing object ("hyperparameters"), or "" for a top-level field.
  std::string group() const;
  //! True when `source` reads this field.
  bool read_from(Source source) const;
  //! True when `source` must contain this field.
  bool required_in(Source source) const;
};

//! Checks one present value against its field; returns the canonical value (int64 for
//! integers, double for numbers) or null with `message` set.
json check_value(const FieldInfo& field, const json& value, std::string* message);

//! The JSON type name used in messages ("integer", "number", "string", "array"...).
const char* json_type_name(const json& value);

//! Splits "name@version" (version 0 when absent); false when malformed.
bool parse_model_ref(const std::string& ref, std::string* name, int* version);

//! Checks every field of `fields` present in `doc` for `source`: `values[i]` becomes the
//! canonical value of field i (its default when absent; null when absent without one or
//! not read from this source). Appends one error per bad field; members no field names
//! are errors for Source::request only (a stored job may carry fields of an older version).
void check_fields(const json& doc, const std::vector<const FieldInfo*>& fields, Source source,
                  std::vector<json>& values, std::vector<FieldError>& errors);

//! A table row: the untyped field plus where its value goes in the kind's struct.
template <typename T>
struct Field {
  FieldInfo info;
  std::function<void(T&, const json&)> store;  //!< writes a checked value into the struct
  std::function<json(const T&)> load;          //!< the struct's value as JSON (bool as 0/1)

  //! Sets the kforge-train flag name.
  Field with_flag(std::string name, bool is_switch = false) const {
    Field out = *this;
    out.info.flag = std::move(name);
    out.info.flag_switch = is_switch;
    return out;
  }
  //! Sets when the field must be given.
  Field with_need(Need need) const {
    Field out = *this;
    out.info.need = need;
    return out;
  }
  //! Sets where the field appears.
  Field with_scope(Scope scope) const {
    Field out = *this;
    out.info.scope = scope;
    return out;
  }
};

//! What a reader returns: the struct, the canonical args to store with a job (every
//! default filled in; request-only fields left out), and every field error.
template <typename T>
struct ReadResult {
  T args;
  json stored = json::object();
  std::vector<FieldError> errors;
  bool ok() const { return errors.empty(); }
  //! Adds an error by hand (cross-field rules).
  void fail(std::string field, std::string message) { errors.push_back({std::move(field), std::move(message)}); }
};

namespace detail {

// A canonical JSON value converted to the member's type (0/1 integers to bool).
template <typename M>
M member_value(const json& value) {
  if constexpr (std::is_same_v<M, bool>) {
    return value.get<int64_t>() != 0;
  } else if constexpr (std::is_integral_v<M>) {
    return static_cast<M>(value.get<int64_t>());
  } else {
    return value.get<M>();
  }
}

// The member as JSON: bools as 0/1, as the tables declare them.
template <typename M>
json json_value(const M& member) {
  if constexpr (std::is_same_v<M, bool>) {
    return member ? 1 : 0;
  } else {
    return json(member);
  }
}

// Member pointers may name a base class's member (SftArgs::suite is TrainingArgs::suite).
template <typename T, typename Member>
void bind_member(Field<T>& field, Member member) {
  field.store = [member](T& out, const json& value) {
    using M = std::decay_t<decltype(out.*member)>;
    out.*member = member_value<M>(value);
  };
  field.load = [member](const T& in) { return json_value(in.*member); };
}

template <typename T, typename Outer, typename Inner>
void bind_member(Field<T>& field, Outer outer, Inner inner) {
  field.store = [outer, inner](T& out, const json& value) {
    auto& nested = out.*outer;
    using M = std::decay_t<decltype(nested.*inner)>;
    nested.*inner = member_value<M>(value);
  };
  field.load = [outer, inner](const T& in) { return json_value((in.*outer).*inner); };
}

template <typename T, typename... Members>
Field<T> make_field(std::string path, FieldType type, json fallback, json minimum, json maximum, std::string doc,
                    Members... members) {
  Field<T> field;
  field.info.path = std::move(path);
  field.info.type = type;
  field.info.fallback = std::move(fallback);
  field.info.minimum = std::move(minimum);
  field.info.maximum = std::move(maximum);
  field.info.doc = std::move(doc);
  detail::bind_member(field, members...);
  return field;
}

}  // namespace detail

//! An integer field in [min, max]; `fallback` null = no default.
template <typename T, typename... Members>
Field<T> integer_field(std::string path, json fallback, int64_t min, int64_t max, std::string doc, Members... members) {
  return detail::make_field<T>(std::move(path), FieldType::integer, std::move(fallback), min, max, std::move(doc),
                               members...);
}

//! A number field in [min, max].
template <typename T, typename... Members>
Field<T> number_field(std::string path, json fallback, double min, double max, std::string doc, Members... members) {
  return detail::make_field<T>(std::move(path), FieldType::number, std::move(fallback), min, max, std::move(doc),
                               members...);
}

//! A string field of min_len..max_len bytes.
template <typename T, typename... Members>
Field<T> string_field(std::string path, json fallback, int64_t min_len, int64_t max_len, std::string doc,
                      Members... members) {
  return detail::make_field<T>(std::move(path), FieldType::string, std::move(fallback), min_len, max_len,
                               std::move(doc), members...);
}

//! One of `choices`.
template <typename T, typename... Members>
Field<T> choice_field(std::string path, json fallback, std::vector<std::string> choices, std::string doc,
                      Members... members) {
  auto field = detail::make_field<T>(std::move(path), FieldType::choice, std::move(fallback), nullptr, nullptr,
                                     std::move(doc), members...);
  field.info.choices = std::move(choices);
  return field;
}

//! A model name or name@version.
template <typename T, typename... Members>
Field<T> model_field(std::string path, json fallback, std::string doc, Members... members) {
  return detail::make_field<T>(std::move(path), FieldType::model_ref, std::move(fallback), nullptr, nullptr,
                               std::move(doc), members...);
}

//! A JSON object passed through whole.
template <typename T, typename... Members>
Field<T> object_field(std::string path, std::string doc, Members... members) {
  return detail::make_field<T>(std::move(path), FieldType::object, nullptr, nullptr, nullptr, std::move(doc),
                               members...);
}

//! The untyped rows of a table.
template <typename T>
std::vector<FieldInfo> field_infos(const std::vector<Field<T>>& table) {
  std::vector<FieldInfo> out;
  for (const auto& field : table) out.push_back(field.info);
  return out;
}

//! Reads `doc` with `table`: checks every field (check_fields), stores each value in
//! the struct and, unless request-only, in `stored` at its path. Never throws for bad input.
template <typename T>
ReadResult<T> read_table(const json& doc, const std::vector<Field<T>>& table, Source source) {
  ReadResult<T> out;
  std::vector<const FieldInfo*> infos;
  for (const auto& field : table) infos.push_back(&field.info);
  std::vector<json> values;
  check_fields(doc, infos, source, values, out.errors);
  for (size_t field_idx = 0; field_idx < table.size(); ++field_idx) {
    const FieldInfo& info = table[field_idx].info;
    const json& value = values[field_idx];
    if (!value.is_null()) table[field_idx].store(out.args, value);
    if (!info.read_from(source) || info.scope == Scope::request) continue;
    std::string group = info.group();
    if (group.empty()) {
      out.stored[info.name()] = value;
    } else {
      if (!out.stored.contains(group)) out.stored[group] = json::object();
      out.stored[group][info.name()] = value;
    }
  }
  return out;
}

}  // namespace kforge::spec
