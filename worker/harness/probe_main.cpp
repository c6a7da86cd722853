// kforge-probe: the child side of the probe. Reads {"op", "shapes", "seed"} JSON on
// stdin, compiles and runs the reference once (plus, when those shapes are not the
// declared ones, a meta-device pass for the declared outputs), prints one JSON line. Started by
// probe_op() under limits; not meant to be run by hand (but: echo '{...}' | kforge-probe).
#include <signal.h>
#include <sys/prctl.h>

#include <iostream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "worker/harness/reference.h"

using namespace kforge::harness;
using namespace kforge::spec;

namespace {

int reply(const std::string& status, const std::string& message, const nlohmann::json& outputs = nullptr,
          const nlohmann::json& declared = nullptr) {
  nlohmann::json out{{"status", status}, {"message", message}};
  if (!outputs.is_null()) out["outputs"] = outputs;
  if (!declared.is_null()) out["declared"] = declared;
  std::cout << out.dump() << "\n" << std::flush;
  return 0;
}

nlohmann::json outputs_json(const std::vector<HostTensor>& outputs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& output : outputs) out.push_back({{"shape", output.shape}, {"dtype", dtype_name(output.dtype)}});
  return out;
}

}  // namespace

int probe_main() {
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  nlohmann::json request;
  try {
    request = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return reply("internal_error", std::string("invalid request: ") + e.what());
  }
  auto parsed = parse_op_spec(request["op"].dump());
  if (!parsed.ok()) return reply("internal_error", "invalid op: " + describe_errors(parsed.errors));
  ShapeSet shapes;
  for (auto it = request["shapes"].begin(); it != request["shapes"].end(); ++it)
    shapes[it.key()] = it.value().get<std::vector<int64_t>>();
  torch_set_threads(1);  // one thread: CPU-time accounting matches wall time
  std::string error;
  auto reference = Reference::compile(parsed.spec, error);
  if (!reference) return reply("compile_error", error);
  auto inputs = make_inputs(parsed.spec, shapes, request.value("seed", uint64_t{0}));
  auto run = reference->run(inputs);
  if (!run.error.empty()) return reply(run.out_of_memory ? "out_of_memory" : "runtime_error", run.error);
  // Ran on other shapes than the declared ones (scaled down, or an extra set): the
  // declared shapes' outputs come from the meta device, which computes nothing.
  nlohmann::json declared = nullptr;
  if (shapes != parsed.spec.main_shapes()) {
    auto meta = reference->output_shapes(parsed.spec, parsed.spec.main_shapes());
    declared = meta.error.empty() ? nlohmann::json{{"outputs", outputs_json(meta.outputs)}}
                                  : nlohmann::json{{"error", meta.error}};
  }
  return reply("ok", "", outputs_json(run.outputs), declared);
}

int main() {
  // Die with the parent: a sandbox must never outlive the worker that started it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  try {
    return probe_main();
  } catch (const std::bad_alloc&) {
    return reply("out_of_memory", "std::bad_alloc: the reference needs more memory than the probe's limit");
  } catch (const std::exception& e) {
    std::string what = e.what();
    bool oom = what.find("can't allocate memory") != std::string::npos;
    return reply(oom ? "out_of_memory" : "runtime_error", what.substr(0, what.find('\n')));
  }
}
