// Parses and validates the op JSON into OpSpec; JSON stops here (structs inward).
// Test: ctest -R spec_op_spec_test.
#include "spec/op_spec.h"

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <set>

namespace kforge::spec {
namespace {

using nlohmann::json;

constexpr int64_t kMaxElementsPerInput = int64_t{1} << 28;  // 1 GiB of float32
constexpr size_t kMaxSourceBytes = 64 * 1024;
constexpr size_t kMaxDims = 8;

bool is_identifier(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// Output buffers are called out, out0, out1... in launch lines.
bool is_reserved_name(const std::string& s) {
  if (s.rfind("out", 0) != 0) return false;
  for (size_t pos = 3; pos < s.size(); ++pos)
    if (!std::isdigit(static_cast<unsigned char>(s[pos]))) return false;
  return true;
}

class Parser {
 public:
  std::vector<FieldError> errors;

  bool reject_unknown = false;

  void fail(const std::string& field, const std::string& message) { errors.push_back({field, message}); }

  // With reject_unknown, a member the format does not define is an error, as in the rest of the API.
  void only(const json& object, const std::string& prefix, std::initializer_list<const char*> known) {
    if (!reject_unknown || !object.is_object()) return;
    for (const auto& item : object.items()) {
      bool found = false;
      for (const char* name : known) found = found || item.key() == name;
      if (!found) fail(prefix + item.key(), "is not a known field");
    }
  }

  bool parse_shape(const json& value, const std::string& field, std::vector<int64_t>& shape) {
    if (!value.is_array()) {
      fail(field, "expected an array of positive integers such as [1024, 768]");
      return false;
    }
    if (value.size() > kMaxDims) {
      fail(field, "at most " + std::to_string(kMaxDims) + " dimensions");
      return false;
    }
    shape.clear();
    for (size_t dim_idx = 0; dim_idx < value.size(); ++dim_idx) {
      const auto& dim = value[dim_idx];
      if (!dim.is_number_integer() || dim.get<int64_t>() < 1) {
        fail(field, "dimension " + std::to_string(dim_idx) + " must be an integer >= 1, got " + dim.dump());
        return false;
      }
      shape.push_back(dim.get<int64_t>());
    }
    int64_t numel = 1;
    for (int64_t d : shape) {
      if (numel > kMaxElementsPerInput / d) {
        fail(field, "too many elements (limit " + std::to_string(kMaxElementsPerInput) + " per input)");
        return false;
      }
      numel *= d;
    }
    return true;
  }

  bool parse_pair(const json& value, const std::string& field, double& a, double& b) {
    if (!value.is_array() || value.size() != 2 || !value[0].is_number() || !value[1].is_number()) {
      fail(field, "expected two numbers, e.g. [-1, 1]");
      return false;
    }
    a = value[0].get<double>();
    b = value[1].get<double>();
    return true;
  }

  void parse_dist(const json& value, const std::string& field, DType dtype, Dist& dist) {
    static const char* kHelp =
        "expected \"normal\", \"uniform\", \"ones\", \"zeros\", {\"normal\": [mean, std]}, "
        "{\"uniform\": [lo, hi]} or {\"randint\": [lo, hi]}";
    std::string kind;
    const json* params = nullptr;
    if (value.is_string()) {
      kind = value.get<std::string>();
    } else if (value.is_object() && value.size() == 1) {
      kind = value.begin().key();
      params = &value.begin().value();
    } else {
      fail(field, kHelp);
      return;
    }
    if (kind == "normal") {
      dist = {DistKind::normal, 0.0, 1.0};
      if (params && parse_pair(*params, field + ".normal", dist.a, dist.b) && dist.b < 0)
        fail(field + ".normal", "std must be >= 0");
    } else if (kind == "uniform") {
      dist = {DistKind::uniform, 0.0, 1.0};
      if (params && parse_pair(*params, field + ".uniform", dist.a, dist.b) && !(dist.a < dist.b))
        fail(field + ".uniform", "need lo < hi");
    } else if (kind == "randint") {
      dist = {DistKind::randint, 0.0, 10.0};
      if (params && parse_pair(*params, field + ".randint", dist.a, dist.b) && !(dist.a < dist.b))
        fail(field + ".randint", "need lo < hi");
    } else if (kind == "ones" && !params) {
      dist = {DistKind::ones, 1.0, 1.0};
    } else if (kind == "zeros" && !params) {
      dist = {DistKind::zeros, 0.0, 0.0};
    } else {
      fail(field, std::string("unknown distribution '") + kind + "': " + kHelp);
      return;
    }
    if (!dtype_is_float(dtype) && (dist.kind == DistKind::normal || dist.kind == DistKind::uniform))
      fail(field, "integer and bool inputs need {\"randint\": [lo, hi]}, \"ones\" or \"zeros\"");
  }

  void parse_input(const json& value, size_t input_idx, std::set<std::string>& names, InputSpec& input) {
    const std::string field = "inputs[" + std::to_string(input_idx) + "]";
    if (!value.is_object()) {
      fail(field, "expected an object {\"name\", \"shape\", \"dtype\", \"dist\"}");
      return;
    }
    only(value, field + ".", {"name", "shape", "dtype", "dist"});
    if (!value.contains("name") || !value["name"].is_string()) {
      fail(field + ".name", "required string");
    } else {
      input.name = value["name"].get<std::string>();
      if (!is_identifier(input.name))
        fail(field + ".name", "'" + input.name + "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
      else if (is_reserved_name(input.name))
        fail(field + ".name", "'" + input.name + "' is reserved for outputs (out, out0, out1...)");
      else if (!names.insert(input.name).second)
        fail(field + ".name", "duplicate input name '" + input.name + "'");
    }
    if (!value.contains("shape")) fail(field + ".shape", "required, e.g. [1024, 768]");
    else parse_shape(value["shape"], field + ".shape", input.shape);
    input.dtype = DType::float32;
    if (value.contains("dtype")) {
      if (!value["dtype"].is_string() || !dtype_from_name(value["dtype"].get<std::string>(), input.dtype))
        fail(field + ".dtype", "expected one of float32, float16, bfloat16, int32, int64, bool; got " +
                                   value["dtype"].dump());
    }
    if (dtype_is_float(input.dtype)) input.dist = {DistKind::normal, 0.0, 1.0};
    else if (input.dtype == DType::boolean) input.dist = {DistKind::randint, 0.0, 2.0};
    else input.dist = {DistKind::randint, 0.0, 10.0};
    if (value.contains("dist")) parse_dist(value["dist"], field + ".dist", input.dtype, input.dist);
  }

  void parse_tolerance(const json& root, OpSpec& spec) {
    const json* holder = &root;
    std::string prefix;
    if (root.contains("tolerance")) {
      if (!root["tolerance"].is_object()) {
        fail("tolerance", "expected {\"atol\": number, \"rtol\": number}");
        return;
      }
      holder = &root["tolerance"];
      prefix = "tolerance.";
      only(*holder, prefix, {"atol", "rtol"});
    }
    for (const char* key : {"atol", "rtol"}) {
      if (!holder->contains(key)) continue;
      const auto& v = (*holder)[key];
      if (!v.is_number() || v.get<double>() < 0) {
        fail(prefix + key, "expected a number >= 0");
        continue;
      }
      (std::string(key) == "atol" ? spec.atol : spec.rtol) = v.get<double>();
    }
  }
};

}  // namespace

std::string dtype_name(DType dtype) {
  switch (dtype) {
    case DType::float32: return "float32";
    case DType::float16: return "float16";
    case DType::bfloat16: return "bfloat16";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::boolean: return "bool";
  }
  return "?";
}

bool dtype_from_name(const std::string& name, DType& out) {
  for (DType d : {DType::float32, DType::float16, DType::bfloat16, DType::int32, DType::int64, DType::boolean}) {
    if (dtype_name(d) == name) {
      out = d;
      return true;
    }
  }
  return false;
}

int dtype_size(DType dtype) {
  switch (dtype) {
    case DType::float32: return 4;
    case DType::float16: return 2;
    case DType::bfloat16: return 2;
    case DType::int32: return 4;
    case DType::int64: return 8;
    case DType::boolean: return 1;
  }
  return 1;
}

bool dtype_is_float(DType dtype) {
  return dtype == DType::float32 || dtype == DType::float16 || dtype == DType::bfloat16;
}

int64_t shape_numel(const std::vector<int64_t>& shape) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  return numel;
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t dim_idx = 0; dim_idx < shape.size(); ++dim_idx) {
    if (dim_idx) out += ", ";
    out += std::to_string(shape[dim_idx]);
  }
  return out + "]";
}

ShapeSet OpSpec::main_shapes() const {
  ShapeSet shapes;
  for (const auto& input : inputs) shapes[input.name] = input.shape;
  return shapes;
}

OpSpecParse parse_op_spec(const std::string& text, bool reject_unknown) {
  OpSpecParse result;
  Parser p;
  p.reject_unknown = reject_unknown;
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    result.errors.push_back({"", std::string("invalid JSON: ") + e.what()});
    return result;
  }
  if (!root.is_object()) {
    result.errors.push_back({"", "expected a JSON object with name, source and inputs"});
    return result;
  }
  OpSpec& spec = result.spec;
  p.only(root, "", {"name", "source", "inputs", "extra_shapes", "tolerance", "atol", "rtol"});
  if (!root.contains("name") || !root["name"].is_string()) p.fail("name", "required string");
  else if (spec.name = root["name"].get<std::string>(); !is_identifier(spec.name))
    p.fail("name", "'" + spec.name + "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*, at most 64 characters)");
  if (!root.contains("source") || !root["source"].is_string()) {
    p.fail("source", "required string: TorchScript defining forward(...)");
  } else {
    spec.source = root["source"].get<std::string>();
    if (spec.source.find('\0') != std::string::npos) p.fail("source", kNulMessage);
    else if (spec.source.find_first_not_of(" \t\r\n") == std::string::npos) p.fail("source", "is empty");
    else if (spec.source.size() > kMaxSourceBytes) p.fail("source", "longer than 64 KiB");
  }
  std::set<std::string> names;
  if (!root.contains("inputs") || !root["inputs"].is_array() || root["inputs"].empty()) {
    p.fail("inputs", "required non-empty array of {\"name\", \"shape\", \"dtype\", \"dist\"}");
  } else {
    spec.inputs.resize(root["inputs"].size());
    for (size_t input_idx = 0; input_idx < spec.inputs.size(); ++input_idx)
      p.parse_input(root["inputs"][input_idx], input_idx, names, spec.inputs[input_idx]);
  }
  if (root.contains("extra_shapes")) {
    const auto& extra = root["extra_shapes"];
    if (!extra.is_array()) {
      p.fail("extra_shapes", "expected an array of {\"input name\": shape} objects");
    } else {
      for (size_t set_idx = 0; set_idx < extra.size(); ++set_idx) {
        const std::string field = "extra_shapes[" + std::to_string(set_idx) + "]";
        if (!extra[set_idx].is_object()) {
          p.fail(field, "expected an object mapping input names to shapes");
          continue;
        }
        ShapeSet shapes = spec.main_shapes();  // inputs not named keep their main shape
        for (auto it = extra[set_idx].begin(); it != extra[set_idx].end(); ++it) {
          if (!names.count(it.key())) {
            p.fail(field + "." + it.key(), "not an input name");
            continue;
          }
          p.parse_shape(it.value(), field + "." + it.key(), shapes[it.key()]);
        }
        spec.extra_shapes.push_back(shapes);
      }
    }
  }
  p.parse_tolerance(root, spec);
  result.errors = p.errors;
  return result;
}

std::string op_spec_to_json(const OpSpec& spec) {
  json root;
  root["name"] = spec.name;
  root["source"] = spec.source;
  root["inputs"] = json::array();
  for (const auto& input : spec.inputs) {
    json item{{"name", input.name}, {"shape", input.shape}, {"dtype", dtype_name(input.dtype)}};
    switch (input.dist.kind) {
      case DistKind::normal: item["dist"] = {{"normal", {input.dist.a, input.dist.b}}}; break;
      case DistKind::uniform: item["dist"] = {{"uniform", {input.dist.a, input.dist.b}}}; break;
      case DistKind::randint: item["dist"] = {{"randint", {input.dist.a, input.dist.b}}}; break;
      case DistKind::ones: item["dist"] = "ones"; break;
      case DistKind::zeros: item["dist"] = "zeros"; break;
    }
    root["inputs"].push_back(item);
  }
  root["extra_shapes"] = json::array();
  for (const auto& shapes : spec.extra_shapes) {
    json set = json::object();
    for (const auto& [name, shape] : shapes) set[name] = shape;
    root["extra_shapes"].push_back(set);
  }
  root["tolerance"] = {{"atol", spec.atol}, {"rtol", spec.rtol}};
  return root.dump();
}

}  // namespace kforge::spec
