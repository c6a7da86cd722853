// kforge-sandbox: the child that compiles and runs one candidate kernel program.
// Started (pre-started) by the Checker under CPU/memory limits with the op's data
// arena as fd 3; speaks one JSON line per command on stdin/stdout:
//   ready -> {"cmd":"build"} -> {"cmd":"run"}... -> {"cmd":"time"} -> exit.
// A crash, hang or runaway allocation here is an outcome for the parent, never its death.
// Usage (by the harness only): kforge-sandbox [--device NAME]
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "worker/harness/cl_backend.h"

using namespace kforge::harness;
using nlohmann::json;

namespace {

constexpr int kArenaFd = 3;

struct Arena {
  const uint8_t* inputs = nullptr;  // read-only view of the input region
  uint8_t* outputs = nullptr;       // writable view of the output region
  int64_t input_bytes = 0, total_bytes = 0;

  // Maps [0, input_bytes) read-only and [input_bytes, total) writable, once.
  void map(int64_t input_region, int64_t total) {
    if (inputs && input_region == input_bytes && total == total_bytes) return;
    if (input_region % sysconf(_SC_PAGESIZE) != 0) throw std::runtime_error("arena input region not page aligned");
    struct stat st {};
    if (fstat(kArenaFd, &st) != 0 || st.st_size < total) throw std::runtime_error("arena fd 3 missing or too small");
    if (input_region > 0) {
      void* in = mmap(nullptr, static_cast<size_t>(input_region), PROT_READ, MAP_SHARED, kArenaFd, 0);
      if (in == MAP_FAILED) throw std::runtime_error(std::string("mmap arena inputs: ") + std::strerror(errno));
      inputs = static_cast<const uint8_t*>(in);
    }
    if (total > input_region) {
      void* out = mmap(nullptr, static_cast<size_t>(total - input_region), PROT_READ | PROT_WRITE, MAP_SHARED,
                       kArenaFd, input_region);
      if (out == MAP_FAILED) throw std::runtime_error(std::string("mmap arena outputs: ") + std::strerror(errno));
      outputs = static_cast<uint8_t*>(out);
    }
    input_bytes = input_region;
    total_bytes = total;
  }
};

void reply(const json& message) { std::cout << message.dump() << "\n" << std::flush; }

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

class Sandbox {
 public:
  explicit Sandbox(const std::string& device) : runtime_(device) {}

  json ready() const {
    const auto& d = runtime_.device();
    return {{"ready", true},
            {"device",
             {{"name", d.name}, {"platform", d.platform}, {"version", d.version}, {"driver", d.driver_version},
              {"c_version", runtime_.opencl_c_version()}, {"compute_units", d.compute_units},
              {"is_cpu", runtime_.is_cpu()}, {"max_work_group", runtime_.max_work_group_size()}}}};
  }

  json build(const json& cmd) {
    auto start = std::chrono::steady_clock::now();
    std::string log;
    program_ = runtime_.build(cmd.at("source").get<std::string>(), cmd.value("options", ""), log);
    if (!program_.get()) return {{"ok", false}, {"kind", "compile_error"}, {"log", log}, {"build_ms", ms_since(start)}};
    return {{"ok", true}, {"build_ms", ms_since(start)}, {"log", log}};
  }

  json run(const json& cmd) {
    LaunchPlan plan = read_plan(cmd);
    arena_.map(cmd.at("input_region").get<int64_t>(), cmd.at("arena_bytes").get<int64_t>());
    auto offsets_in = cmd.at("inputs").get<std::vector<int64_t>>();
    auto offsets_out = cmd.at("outputs").get<std::vector<int64_t>>();
    uint8_t poison = static_cast<uint8_t>(cmd.value("poison", 255));
    cl_command_queue queue = runtime_.queue();
    std::vector<std::unique_ptr<GuardedBuffer>> buffers;
    std::vector<cl_mem> mems;
    for (const auto& buffer : plan.buffers) {
      buffers.push_back(std::make_unique<GuardedBuffer>(runtime_.context(), buffer.bytes, runtime_.is_cpu()));
      mems.push_back(buffers.back()->mem());
      if (buffer.role == PlanBuffer::Role::input) buffers.back()->write(queue, arena_.inputs + offsets_in.at(buffer.index));
      else buffers.back()->fill(queue, poison);  // outputs: NaN poison; scratch: garbage
    }
    auto kernels = create_plan_kernels(program_.get(), plan);
    bind_plan_args(kernels, plan, mems);
    std::vector<ClEvent> events;
    auto start = std::chrono::steady_clock::now();
    enqueue_plan(queue, kernels, plan, &events);
    KFORGE_CL_CHECK(clFinish(queue));
    double run_ms = ms_since(start);
    for (size_t buffer_idx = 0; buffer_idx < plan.buffers.size(); ++buffer_idx)
      if (!buffers[buffer_idx]->canary_intact(queue))
        return {{"ok", false}, {"kind", "runtime_error"},
                {"message", "out-of-bounds write: memory just outside buffer '" + plan.buffers[buffer_idx].name +
                                "' was modified"}};
    std::vector<uint8_t> readback;
    for (size_t buffer_idx = 0; buffer_idx < plan.buffers.size(); ++buffer_idx) {
      const auto& buffer = plan.buffers[buffer_idx];
      if (buffer.role == PlanBuffer::Role::output) {
        buffers[buffer_idx]->read(queue, arena_.outputs + (offsets_out.at(buffer.index) - arena_.input_bytes));
      } else if (buffer.role == PlanBuffer::Role::input) {
        readback.resize(static_cast<size_t>(buffer.bytes));
        buffers[buffer_idx]->read(queue, readback.data());
        const uint8_t* pristine = arena_.inputs + offsets_in.at(buffer.index);
        if (std::memcmp(readback.data(), pristine, readback.size()) != 0) {
          size_t first = 0;
          while (readback[first] == pristine[first]) ++first;
          return {{"ok", false}, {"kind", "input_mutated"}, {"buffer", buffer.name}, {"byte", first}};
        }
      }
    }
    return {{"ok", true}, {"run_ms", run_ms}, {"kernel_ms", events_span_ms(events)}};
  }

  // Warm-up, then repeated runs with clFinish after each, rotating among several
  // input/output sets (together larger than the last-level cache) so caches do not
  // flatter; stops when the IQR is within target or the time cap is reached.
  json time(const json& cmd) {
    LaunchPlan plan = read_plan(cmd);
    arena_.map(cmd.at("input_region").get<int64_t>(), cmd.at("arena_bytes").get<int64_t>());
    auto offsets_in = cmd.at("inputs").get<std::vector<int64_t>>();
    int rotations = std::max(1, cmd.value("rotations", 1));
    double max_seconds = cmd.value("max_seconds", 1.0), target_iqr = cmd.value("target_iqr", 0.02);
    int min_runs = cmd.value("min_runs", 5), max_runs = cmd.value("max_runs", 2000);
    cl_command_queue queue = runtime_.queue();
    std::vector<std::unique_ptr<GuardedBuffer>> owned;
    std::vector<std::vector<cl_mem>> sets(static_cast<size_t>(rotations));
    std::vector<cl_mem> scratch(plan.buffers.size(), nullptr);
    for (int set_idx = 0; set_idx < rotations; ++set_idx) {
      for (size_t buffer_idx = 0; buffer_idx < plan.buffers.size(); ++buffer_idx) {
        const auto& buffer = plan.buffers[buffer_idx];
        if (buffer.role == PlanBuffer::Role::scratch && scratch[buffer_idx]) {
          sets[set_idx].push_back(scratch[buffer_idx]);  // scratch is shared by all sets
          continue;
        }
        owned.push_back(std::make_unique<GuardedBuffer>(runtime_.context(), buffer.bytes, runtime_.is_cpu()));
        if (buffer.role == PlanBuffer::Role::input) owned.back()->write(queue, arena_.inputs + offsets_in.at(buffer.index));
        else owned.back()->fill(queue, 0);
        if (buffer.role == PlanBuffer::Role::scratch) scratch[buffer_idx] = owned.back()->mem();
        sets[set_idx].push_back(owned.back()->mem());
      }
    }
    std::vector<PlanKernels> kernels;
    for (int set_idx = 0; set_idx < rotations; ++set_idx) {
      kernels.push_back(create_plan_kernels(program_.get(), plan));
      bind_plan_args(kernels.back(), plan, sets[set_idx]);
    }
    for (int warm_idx = 0; warm_idx < std::max(2, rotations); ++warm_idx) {
      enqueue_plan(queue, kernels[warm_idx % rotations], plan, nullptr);
      KFORGE_CL_CHECK(clFinish(queue));
    }
    std::vector<double> wall, device;
    std::vector<ClEvent> events;
    auto begin = std::chrono::steady_clock::now();
    for (int run_idx = 0; run_idx < max_runs; ++run_idx) {
      auto start = std::chrono::steady_clock::now();
      enqueue_plan(queue, kernels[run_idx % rotations], plan, &events);
      KFORGE_CL_CHECK(clFinish(queue));
      wall.push_back(ms_since(start));
      device.push_back(events_span_ms(events));
      if (static_cast<int>(wall.size()) < min_runs) continue;
      if (ms_since(begin) > max_seconds * 1000) break;
      if (wall.size() >= 10 && iqr(wall) <= target_iqr * median(wall)) break;
    }
    return {{"ok", true},          {"median_ms", median(wall)}, {"min_ms", *std::min_element(wall.begin(), wall.end())},
            {"iqr_ms", iqr(wall)}, {"runs", wall.size()},       {"kernel_median_ms", median(device)},
            {"rotations", rotations}};
  }

 private:
  ClRuntime runtime_;
  ClProgram program_;
  Arena arena_;

  static double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  }
  static double iqr(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() * 3 / 4] - values[values.size() / 4];
  }
  LaunchPlan read_plan(const json& cmd) {
    if (!program_.get()) throw std::runtime_error("run before a successful build");
    LaunchPlan plan;
    std::string error;
    if (!launch_plan_from_json(cmd.at("plan").dump(), plan, error)) throw std::runtime_error(error);
    return plan;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string device;
  for (int arg_idx = 1; arg_idx + 1 < argc; ++arg_idx)
    if (std::string(argv[arg_idx]) == "--device") device = argv[arg_idx + 1];
  std::unique_ptr<Sandbox> sandbox;
  try {
    sandbox = std::make_unique<Sandbox>(device);
  } catch (const std::exception& e) {
    reply({{"ready", false}, {"message", e.what()}});
    return 1;
  }
  reply(sandbox->ready());
  std::string line;
  while (std::getline(std::cin, line)) {
    json cmd;
    try {
      cmd = json::parse(line);
    } catch (const std::exception& e) {
      reply({{"ok", false}, {"kind", "internal_error"}, {"message", std::string("bad command: ") + e.what()}});
      continue;
    }
    std::string name = cmd.value("cmd", "");
    if (name == "quit") break;
    try {
      if (name == "build") reply(sandbox->build(cmd));
      else if (name == "run") reply(sandbox->run(cmd));
      else if (name == "time") reply(sandbox->time(cmd));
      else reply({{"ok", false}, {"kind", "internal_error"}, {"message", "unknown command '" + name + "'"}});
    } catch (const ClError& e) {
      reply({{"ok", false}, {"kind", "runtime_error"}, {"message", e.what()}, {"cl_status", e.code()}});
    } catch (const std::bad_alloc&) {
      reply({{"ok", false}, {"kind", "runtime_error"}, {"message", "out of memory in the sandbox"}});
    } catch (const std::exception& e) {
      reply({{"ok", false}, {"kind", "runtime_error"}, {"message", e.what()}});
    }
  }
  return 0;
}
