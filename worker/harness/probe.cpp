// Client side of the probe: chooses shapes, starts kforge-probe under limits,
// turns its reply or its death into a ProbeResult. Test: ctest -R harness_probe.
#include "worker/harness/probe.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <map>

#include "worker/harness/sandbox_process.h"

namespace kforge::harness {

using spec::OpSpec;
using spec::ShapeSet;
using spec::dtype_from_name;
using spec::op_spec_to_json;
using spec::shape_numel;

namespace {

int64_t total_elements(const ShapeSet& shapes) {
  int64_t total = 0;
  for (const auto& [name, shape] : shapes) total += shape_numel(shape);
  return total;
}

}  // namespace

std::string probe_status_name(ProbeStatus status) {
  switch (status) {
    case ProbeStatus::ok: return "ok";
    case ProbeStatus::compile_error: return "compile_error";
    case ProbeStatus::runtime_error: return "runtime_error";
    case ProbeStatus::timeout: return "timeout";
    case ProbeStatus::out_of_memory: return "out_of_memory";
    case ProbeStatus::internal_error: return "internal_error";
  }
  return "?";
}

ShapeSet probe_shapes(const OpSpec& spec, int64_t max_elements, bool& scaled) {
  scaled = false;
  ShapeSet main = spec.main_shapes();
  if (total_elements(main) <= max_elements) return main;
  const ShapeSet* smallest = nullptr;
  for (const auto& extra : spec.extra_shapes)
    if (total_elements(extra) <= max_elements && (!smallest || total_elements(extra) < total_elements(*smallest)))
      smallest = &extra;
  if (smallest) return *smallest;
  // Scale every size above 32 by the same factor through one value map, so sizes that
  // were equal (a matmul's inner dimension) stay equal; small sizes (channels, heads) stay.
  scaled = true;
  ShapeSet shapes = main;
  for (int64_t factor = 2; factor <= (int64_t{1} << 30); factor *= 2) {
    for (auto& [name, shape] : shapes) {
      const auto& original = main.at(name);
      for (size_t dim_idx = 0; dim_idx < shape.size(); ++dim_idx)
        shape[dim_idx] = original[dim_idx] <= 32 ? original[dim_idx] : std::max<int64_t>(32, original[dim_idx] / factor);
    }
    if (total_elements(shapes) <= max_elements) break;
  }
  return shapes;
}

ProbeResult probe_op(const OpSpec& spec, const ProbeOptions& options) {
  using clock = std::chrono::steady_clock;
  auto started = clock::now();
  ProbeResult result;
  result.shapes = probe_shapes(spec, options.max_probe_elements, result.scaled);
  auto finish = [&](ProbeStatus status, std::string message) {
    result.status = status;
    result.message = std::move(message);
    result.wall_ms = std::chrono::duration<double, std::milli>(clock::now() - started).count();
    return result;
  };
  std::string binary = options.probe_binary.empty() ? helper_binary_path("kforge-probe") : options.probe_binary;
  SandboxLimits limits;
  limits.cpu_seconds = options.cpu_seconds;
  // Private writable memory, not address space: a probe linked with CUDA-enabled libtorch
  // (GPU hosts) maps more address space than any sensible memory limit before it starts.
  limits.data_bytes = options.memory_bytes;
  limits.wall_seconds = options.wall_seconds;
  std::string error;
  auto child = SandboxProcess::start({binary}, limits, -1, error);
  if (!child) return finish(ProbeStatus::internal_error, error);
  nlohmann::json request;
  request["op"] = nlohmann::json::parse(op_spec_to_json(spec));
  request["shapes"] = nlohmann::json::object();
  for (const auto& [name, shape] : result.shapes) request["shapes"][name] = shape;
  request["seed"] = options.seed;
  child->write_all(request.dump() + "\n");
  child->close_stdin();
  auto deadline = started + std::chrono::milliseconds(static_cast<int64_t>(options.wall_seconds * 1000));
  std::string line;
  ReadStatus read = child->read_line(line, deadline);
  if (read == ReadStatus::timeout) {
    child->kill_now();
    return finish(ProbeStatus::timeout, "timeout: the reference did not finish within " +
                                            std::to_string(static_cast<int>(options.wall_seconds)) +
                                            " s (wall clock) on shapes it should finish quickly");
  }
  child->wait_exit(clock::now() + std::chrono::seconds(5));
  if (read == ReadStatus::eof || line.empty()) {
    child->kill_now();
    if (child->cpu_limit_hit())
      return finish(ProbeStatus::timeout, "timeout: the reference used more than " +
                                              std::to_string(static_cast<int>(options.cpu_seconds)) +
                                              " s of CPU time (an endless loop?)");
    std::string tail = child->stderr_tail(600);
    bool oom = tail.find("bad_alloc") != std::string::npos || tail.find("allocate") != std::string::npos;
    if (oom) return finish(ProbeStatus::out_of_memory, "out of memory: the reference exceeded the probe's memory limit");
    return finish(ProbeStatus::runtime_error,
                  "the reference crashed: " + child->describe_exit() + (tail.empty() ? "" : ": " + tail));
  }
  nlohmann::json reply;
  try {
    reply = nlohmann::json::parse(line);
  } catch (const std::exception& e) {
    return finish(ProbeStatus::internal_error, "kforge-probe replied with invalid JSON: " + line.substr(0, 200));
  }
  std::string status = reply.value("status", "internal_error");
  std::string message = reply.value("message", "");
  if (status != "ok") {
    static const std::map<std::string, ProbeStatus> kinds = {{"compile_error", ProbeStatus::compile_error},
                                                             {"runtime_error", ProbeStatus::runtime_error},
                                                             {"out_of_memory", ProbeStatus::out_of_memory}};
    auto kind = kinds.find(status);
    return finish(kind == kinds.end() ? ProbeStatus::internal_error : kind->second, message);
  }
  auto read_outputs = [](const nlohmann::json& list) {
    std::vector<OutputInfo> outputs;
    for (const auto& output : list) {
      OutputInfo info;
      info.shape = output["shape"].get<std::vector<int64_t>>();
      dtype_from_name(output["dtype"].get<std::string>(), info.dtype);
      outputs.push_back(info);
    }
    return outputs;
  };
  result.outputs = read_outputs(reply["outputs"]);
  const auto& declared = reply.contains("declared") ? reply["declared"] : nlohmann::json(nullptr);
  if (declared.is_null()) result.declared_outputs = result.outputs;  // it ran on the declared shapes
  else if (declared.contains("outputs")) result.declared_outputs = read_outputs(declared["outputs"]);
  else result.declared_error = declared.value("error", "no meta kernel");
  return finish(ProbeStatus::ok, "");
}

}  // namespace kforge::harness
