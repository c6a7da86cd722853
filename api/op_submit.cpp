// submit_op behind api/op_submit.h. The probe runs in a child process, so a
// looping or 100 GB TorchScript costs one bounded wait, never the server; so does the
// conversion of a KernelBench problem ({"kernelbench": "<file>"}).
#include "api/op_submit.h"

#include <atomic>

#include "common/sha256.h"

#include "spec/op_spec.h"
#include "worker/harness/kernelbench_convert.h"
#include "worker/harness/probe.h"

namespace kforge::api {
namespace {

// A KernelBench problem file is a few KiB; this bounds what one request makes a child read.
constexpr size_t kMaxKernelBenchBytes = 256 * 1024;

// Counts probes in flight; each holds an executor thread for up to the wall limit.
std::atomic<int> g_probes_running{0};

struct ProbeSlot {
  bool held = false;
  explicit ProbeSlot(int limit) {
    int now = g_probes_running.fetch_add(1);
    held = now < limit;
    if (!held) g_probes_running.fetch_sub(1);
  }
  ~ProbeSlot() {
    if (held) g_probes_running.fetch_sub(1);
  }
};

HttpResponse probe_failure(const harness::ProbeResult& probe, const std::string& prefix) {
  std::string field = prefix + "source";
  switch (probe.status) {
    case harness::ProbeStatus::compile_error:
      return problem(ErrorKind::unprocessable, "the TorchScript source does not compile: " + probe.message,
                     {{field, probe.message}});
    case harness::ProbeStatus::runtime_error:
      return problem(ErrorKind::unprocessable, "running the op once on sample inputs failed: " + probe.message,
                     {{field, probe.message}});
    case harness::ProbeStatus::timeout:
      return problem(ErrorKind::unprocessable, "the op's sample run was stopped: " + probe.message,
                     {{field, probe.message}});
    case harness::ProbeStatus::out_of_memory:
      return problem(ErrorKind::unprocessable, "the op's sample run was stopped: " + probe.message,
                     {{field, probe.message}});
    case harness::ProbeStatus::ok:
    case harness::ProbeStatus::internal_error: break;
  }
  return problem(ErrorKind::internal, "the op could not be checked: " + probe.message);
}

// The optional suite level (the suite's files carry it: 1 single ops, 2 fusions).
// It is not part of the op's identity, so it stays out of the canonical spec.
std::optional<std::string> read_level(const json& op_body, int* level) {
  auto found = op_body.find("level");
  if (found == op_body.end() || found->is_null()) return std::nullopt;
  if (!found->is_number_integer() || found->get<int64_t>() < 1 || found->get<int64_t>() > 9) {
    return "must be an integer from 1 to 9 (the suite level: 1 single ops, 2 fusions)";
  }
  *level = found->get<int>();
  return std::nullopt;
}

// {"kernelbench": "<problem file>", "name"?: ..., "level"?: ...}: the problem converted in a
// sandboxed child into the op format; the result then goes through the same checks.
std::optional<HttpResponse> convert_kernelbench_body(ApiContext& ctx, const json& body, const std::string& prefix,
                                                     json& op) {
  const std::string field = prefix + "kernelbench";
  const json& text = body["kernelbench"];
  for (const auto& [key, value] : body.items())
    if (key != "kernelbench" && key != "name" && key != "level")
      return problem(ErrorKind::unprocessable, "a KernelBench op takes only kernelbench, name and level",
                     {{prefix + key, "not allowed beside kernelbench (the op is converted from the problem)"}});
  if (!text.is_string() || text.get_ref<const std::string&>().empty() ||
      text.get_ref<const std::string&>().size() > kMaxKernelBenchBytes)
    return problem(ErrorKind::unprocessable, "kernelbench must be the text of a problem file",
                   {{field, "must be a non-empty string of at most 256 KiB (class Model, get_inputs, get_init_inputs)"}});
  std::string name = body.contains("name") && body["name"].is_string() ? body["name"].get<std::string>() : "";
  ProbeSlot slot(ctx.max_concurrent_probes);
  if (!slot.held) {
    HttpResponse busy = problem(ErrorKind::unavailable, "too many ops are being checked right now; retry shortly");
    busy.headers.emplace_back("Retry-After", "2");
    return busy;
  }
  auto converted = harness::convert_kernelbench(text.get<std::string>(), name);
  if (converted.internal_error)
    return problem(ErrorKind::internal, "the KernelBench problem could not be converted: " + converted.message);
  if (!converted.ok)
    return problem(ErrorKind::unprocessable, "the KernelBench problem cannot be converted: " + converted.message,
                   {{field, converted.message}});
  op = converted.op;
  if (body.contains("level")) op["level"] = body["level"];
  return std::nullopt;
}

}  // namespace

json op_json(const db::OpRecord& op) {
  json spec = parse_stored(op.spec_json);
  json out = {{"id", op.id}, {"object", "op"}, {"name", op.name}, {"source", op.source}};
  for (const char* key : {"inputs", "extra_shapes", "tolerance"}) {
    if (spec.is_object() && spec.contains(key)) out[key] = spec[key];
  }
  json probe = parse_stored(op.outputs_json);
  out["outputs"] = probe.is_object() && probe.contains("outputs") ? probe["outputs"] : json::array();
  out["sample_run"] = probe.is_object() ? probe : json::object();
  out["sample_run"].erase("outputs");
  out["level"] = op.level > 0 ? json(op.level) : json(nullptr);
  out["created_at"] = op.created_at;
  return out;
}

OpSubmit submit_op(ApiContext& ctx, pqxx::connection& conn, const Principal& principal, const json& op_body_in,
                   const std::string& field_prefix) {
  OpSubmit out;
  json converted;
  if (op_body_in.is_object() && op_body_in.contains("kernelbench")) {
    if (auto error = convert_kernelbench_body(ctx, op_body_in, field_prefix, converted)) {
      out.error = *error;
      return out;
    }
  }
  const json& op_body = converted.is_null() ? op_body_in : converted;
  if (!op_body.is_object()) {
    out.error = problem(ErrorKind::unprocessable, "the op must be a JSON object",
                        {{field_prefix.empty() ? "body" : field_prefix.substr(0, field_prefix.size() - 1),
                          "must be an object"}});
    return out;
  }
  // The suite level is the API's (read_level); everything else must belong to the op format.
  json format_only = op_body;
  format_only.erase("level");
  auto parsed = spec::parse_op_spec(format_only.dump(), /*reject_unknown=*/true);
  int level = 0;
  auto level_error = read_level(op_body, &level);
  if (!parsed.ok() || level_error) {
    std::vector<FieldError> fields;
    for (const auto& error : parsed.errors) fields.push_back({field_prefix + error.field, error.message});
    if (level_error) fields.push_back({field_prefix + "level", *level_error});
    std::string detail = parsed.ok() ? "level: " + *level_error : spec::describe_errors(parsed.errors);
    out.error = problem(ErrorKind::unprocessable, "the op is invalid: " + detail, fields);
    return out;
  }
  std::string canonical = spec::op_spec_to_json(parsed.spec);
  std::string digest = sha256_hex(canonical);
  if (auto existing = db::op_find_by_sha256(conn, digest)) {
    out.op = existing;
    return out;
  }
  ProbeSlot slot(ctx.max_concurrent_probes);
  if (!slot.held) {
    HttpResponse busy = problem(ErrorKind::unavailable, "too many ops are being checked right now; retry shortly");
    busy.headers.emplace_back("Retry-After", "2");
    out.error = busy;
    return out;
  }
  harness::ProbeOptions options;
  options.wall_seconds = ctx.probe_wall_seconds;
  options.cpu_seconds = ctx.probe_wall_seconds;
  options.memory_bytes = ctx.probe_memory_bytes;
  auto probe = harness::probe_op(parsed.spec, options);
  if (!probe.ok()) {
    out.error = probe_failure(probe, field_prefix);
    return out;
  }
  // `outputs` are the declared shapes' (the probe may have run on scaled-down inputs);
  // what the sample run itself produced is kept beside them as sample_outputs.
  auto outputs_json = [](const std::vector<harness::OutputInfo>& outputs) {
    json out = json::array();
    for (const auto& output : outputs) out.push_back({{"shape", output.shape}, {"dtype", spec::dtype_name(output.dtype)}});
    return out;
  };
  json sample = {{"outputs", outputs_json(probe.declared_outputs)},
                 {"sample_outputs", outputs_json(probe.outputs)},
                 {"scaled", probe.scaled},
                 {"wall_ms", probe.wall_ms}};
  if (!probe.declared_error.empty()) sample["declared_outputs_error"] = probe.declared_error;
  sample["shapes"] = json::object();
  for (const auto& [name, shape] : probe.shapes) sample["shapes"][name] = shape;
  db::OpRecord record;
  record.name = parsed.spec.name;
  record.source = parsed.spec.source;
  record.spec_json = canonical;
  record.spec_sha256 = digest;
  record.outputs_json = sample.dump();
  record.created_by = principal.token_id;
  record.level = level;
  out.op = db::op_insert(conn, record);
  out.created = true;
  return out;
}

}  // namespace kforge::api
