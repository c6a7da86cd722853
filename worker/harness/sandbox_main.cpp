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
#include <cstdlib>
#include <cstring>
#include <signal.h>
#include <sys/prctl.h>

#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "worker/harness/cl_backend.h"
#include "worker/harness/timing.h"

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
  explicit Sandbox(const std::string& device) : runtime_(device) { warm_up(); }

  // Builds and runs a trivial kernel once, so the compiler and the launch machinery
  // are loaded before "ready": a pre-started sandbox then pays none of it per candidate.
  void warm_up() {
    std::string log;
    ClProgram program = runtime_.build("__kernel void kforge_warm_up(__global float* p) { p[get_global_id(0)] = 1.0f; }",
                                       "-cl-std=CL1.2", log);
    if (!program.get()) return;
    LaunchPlan plan;
    plan.buffers = {{"p", PlanBuffer::Role::scratch, 0, 64 * 4}};
    PlanLaunch launch;
    launch.kernel = "kforge_warm_up";
    launch.global[0] = 64;
    launch.local[0] = 64;
    launch.args = {{PlanArg::Kind::buffer, 0, 0, 0}};
    plan.launches = {launch};
    GuardedBuffer buffer(runtime_.context(), 64 * 4, runtime_.is_cpu());
    auto kernels = create_plan_kernels(program.get(), plan);
    bind_plan_args(kernels, plan, {buffer.mem()});
    enqueue_plan(runtime_.queue(), kernels, plan, nullptr);
    KFORGE_CL_CHECK(clFinish(runtime_.queue()));
  }

  json ready() const {
    const auto& d = runtime_.device();
    return {{"ready", true},
            {"device",
             {{"name", d.name}, {"platform", d.platform}, {"version", d.version}, {"driver", d.driver_version},
              {"c_version", runtime_.opencl_c_version()}, {"compute_units", d.compute_units},
              {"is_cpu", runtime_.is_cpu()}, {"max_work_group", runtime_.max_work_group_size()},
              {"pocl_affinity", std::getenv("POCL_AFFINITY") ? std::getenv("POCL_AFFINITY") : ""}}}};
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

  // The timing protocol of timing.h (warm-up until settled, windows, contention,
  // retry) with clFinish after each run (device-wide sync), rotating among several
  // input/output sets (together larger than the last-level cache) so caches do not flatter.
  json time(const json& cmd) {
    LaunchPlan plan = read_plan(cmd);
    arena_.map(cmd.at("input_region").get<int64_t>(), cmd.at("arena_bytes").get<int64_t>());
    auto offsets_in = cmd.at("inputs").get<std::vector<int64_t>>();
    int rotations = std::max(1, cmd.value("rotations", 1));
    TimingProtocol protocol;
    protocol.max_seconds = cmd.value("max_seconds", protocol.max_seconds);
    protocol.target_iqr = cmd.value("target_iqr", protocol.target_iqr);
    protocol.attempts = cmd.value("attempts", protocol.attempts);
    protocol.max_contention = cmd.value("max_contention", protocol.max_contention);
    protocol.settle_tolerance = cmd.value("settle_tolerance", protocol.settle_tolerance);
    protocol.touch_runs = std::max(2, rotations);
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
        // Every page is written here (inputs copied, outputs and scratch filled), so
        // first-touch page faults happen before the warm-up, not inside timed runs.
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
    std::vector<ClEvent> events;
    auto run = [&](int run_idx) {
      auto start = std::chrono::steady_clock::now();
      enqueue_plan(queue, kernels[run_idx % rotations], plan, &events);
      KFORGE_CL_CHECK(clFinish(queue));
      TimingSample sample;
      sample.wall_ms = ms_since(start);
      sample.device_ms = events_span_ms(events);
      return sample;
    };
    // A warm-up block visits every rotation set once.
    TimingRecord record = run_timing_protocol(run, protocol, std::max(3, rotations));
    return {{"ok", true},
            {"median_ms", record.median_ms},
            {"min_ms", record.min_ms},
            {"iqr_ms", record.iqr_ms},
            {"runs", record.runs},
            {"kernel_median_ms", record.device_median_ms},
            {"rotations", rotations},
            {"warmup_runs", record.warmup_runs},
            {"settled", record.settled},
            {"attempts", record.attempts},
            {"attempt_medians_ms", record.attempt_medians_ms},
            {"others_cores", record.others_cores},
            {"disturbed", record.disturbed}};
  }

 private:
  ClRuntime runtime_;
  ClProgram program_;
  Arena arena_;

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
  // Die with the parent: a sandbox must never outlive the worker that started it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Pin PoCL's worker threads, one per core (unless the caller chose otherwise).
  // Unpinned, on a busy machine the threads share cores with other work and the
  // timings jump by scheduler ticks; see docs/harness.md "Why the timer drifted".
  setenv("POCL_AFFINITY", "1", 0);
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
