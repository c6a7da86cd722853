// kforge-timing-study: the experiment behind docs/harness.md "Why the timer drifted".
// Times one kernel (silu_mul on 1M floats, the stability case) in separate child
// processes with the sandbox's own OpenCL code, for several variants interleaved
// round by round, and records per-run wall and event times, page faults, context
// switches, machine-wide CPU use by others and steal. Run from the repository root:
//   build/bin/kforge-timing-study --rounds 10 --variants base,affinity,cold_cache --out /tmp/study.json
#include <sys/mman.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "worker/harness/cl_backend.h"
#include "worker/harness/program.h"
#include "worker/harness/rules.h"
#include "worker/harness/sandbox_process.h"

using namespace kforge::harness;
using namespace kforge::spec;
using nlohmann::json;
using clock_type = std::chrono::steady_clock;

namespace {

const char* kKernel =
    "// kforge-launch: silu_mul grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x)\n"
    "__kernel void silu_mul(__global const float* x, __global const float* y,\n"
    "                       __global float* out, int n) {\n"
    "  int i = get_global_id(0);\n"
    "  if (i < n) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i]; }\n"
    "}\n";

double ms_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Machine-wide busy and steal jiffies from /proc/stat's "cpu" line.
struct CpuTimes {
  long long busy = 0, steal = 0, total = 0;
};
CpuTimes read_cpu_times() {
  std::ifstream stat("/proc/stat");
  std::string label;
  long long user, nice, system, idle, iowait, irq, softirq, steal;
  stat >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  CpuTimes times;
  times.busy = user + nice + system + irq + softirq;
  times.steal = steal;
  times.total = times.busy + idle + iowait + steal;
  return times;
}

double self_cpu_ms() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e3;
}

// A plain host buffer on 2 MiB-aligned memory with MADV_HUGEPAGE (no guard pages):
// tests whether TLB reach matters for the rotation sets.
struct HugeBuffer {
  void* base = nullptr;
  size_t bytes = 0;
  ClMem mem;
  HugeBuffer(cl_context context, size_t size) : bytes((size + (2u << 20) - 1) / (2u << 20) * (2u << 20)) {
    base = mmap(nullptr, bytes + (2u << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::runtime_error("mmap failed");
    auto aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(base) + (2u << 20) - 1) & ~uintptr_t{(2u << 20) - 1});
    madvise(aligned, bytes, MADV_HUGEPAGE);
    std::memset(aligned, 0, bytes);
    cl_int status = CL_SUCCESS;
    mem = ClMem(clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, size, aligned, &status));
    KFORGE_CL_CHECK(status);
  }
  ~HugeBuffer() {
    mem.reset();
    munmap(base, bytes + (2u << 20));
  }
};

// Sum of run-queue waits (ns runnable but not running) over this process's threads,
// from /proc/self/task/*/schedstat (second field).
struct RunDelay {
  std::vector<int> fds;
  void open_all() {
    std::string dir = "/proc/" + std::to_string(getpid()) + "/task";
    FILE* ls = popen(("ls " + dir).c_str(), "r");
    char name[64];
    while (ls && fgets(name, sizeof name, ls)) {
      std::string tid(name);
      tid.erase(tid.find_last_not_of("\n") + 1);
      int fd = open((dir + "/" + tid + "/schedstat").c_str(), O_RDONLY);
      if (fd >= 0) fds.push_back(fd);
    }
    if (ls) pclose(ls);
  }
  double total_ms() const {
    double total = 0;
    char buffer[128];
    for (int fd : fds) {
      ssize_t got = pread(fd, buffer, sizeof buffer - 1, 0);
      if (got <= 0) continue;
      buffer[got] = 0;
      unsigned long long on_cpu = 0, delay = 0;
      if (sscanf(buffer, "%llu %llu", &on_cpu, &delay) == 2) total += delay / 1e6;
    }
    return total;
  }
};

// One timing in this process, the way kforge-sandbox's "time" command does it,
// with the knobs the experiment varies.
json child_main(const json& config) {
  int rotations = config.value("rotations", 6);
  double budget_s = config.value("budget_s", 1.0);
  std::string warmup = config.value("warmup", "fixed");
  bool fresh_touch = config.value("fresh_touch", false);  // skip writing outputs before timing
  bool huge_pages = config.value("huge_pages", false);
  int64_t numel = int64_t{1} << 20;
  auto parsed = parse_program(kKernel);
  LaunchPlan plan;
  InputSpec x{"x", {1024, 1024}, DType::float32, {}}, y{"y", {1024, 1024}, DType::float32, {}};
  ShapeSet shapes{{"x", {1024, 1024}}, {"y", {1024, 1024}}};
  if (auto violation = make_launch_plan(parsed.program, {x, y}, shapes, {{{1024, 1024}, DType::float32}}, {}, plan))
    throw std::runtime_error(violation->message);
  auto setup_started = clock_type::now();
  ClRuntime runtime(config.value("device", ""));
  std::string log;
  ClProgram program = runtime.build(parsed.program.source, "-cl-std=CL1.2", log);
  if (!program.get()) throw std::runtime_error("build failed: " + log);
  double build_ms = ms_since(setup_started);
  std::vector<float> host(static_cast<size_t>(numel));
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (auto& value : host) value = normal(rng);
  std::vector<std::unique_ptr<GuardedBuffer>> owned;
  std::vector<std::unique_ptr<HugeBuffer>> huge;
  std::vector<PlanKernels> kernels;
  for (int set_idx = 0; set_idx < rotations; ++set_idx) {
    std::vector<cl_mem> mems;
    for (const auto& buffer : plan.buffers) {
      if (huge_pages) {
        huge.push_back(std::make_unique<HugeBuffer>(runtime.context(), static_cast<size_t>(buffer.bytes)));
        if (buffer.role == PlanBuffer::Role::input)
          KFORGE_CL_CHECK(clEnqueueWriteBuffer(runtime.queue(), huge.back()->mem.get(), CL_TRUE, 0,
                                               static_cast<size_t>(buffer.bytes), host.data(), 0, nullptr, nullptr));
        mems.push_back(huge.back()->mem.get());
        continue;
      }
      owned.push_back(std::make_unique<GuardedBuffer>(runtime.context(), buffer.bytes, runtime.is_cpu()));
      if (buffer.role == PlanBuffer::Role::input) owned.back()->write(runtime.queue(), host.data());
      else if (!fresh_touch) owned.back()->fill(runtime.queue(), 0);
      mems.push_back(owned.back()->mem());
    }
    kernels.push_back(create_plan_kernels(program.get(), plan));
    bind_plan_args(kernels.back(), plan, mems);
  }
  RunDelay run_delay;
  double last_delay_ms = 0;
  auto run_once = [&](int run_idx, std::vector<ClEvent>* events) {
    double delay_before = run_delay.total_ms();
    auto start = clock_type::now();
    enqueue_plan(runtime.queue(), kernels[run_idx % rotations], plan, events);
    KFORGE_CL_CHECK(clFinish(runtime.queue()));
    double wall = ms_since(start);
    last_delay_ms = run_delay.total_ms() - delay_before;
    return wall;
  };
  run_once(0, nullptr);  // PoCL starts its worker threads on the first launch
  run_delay.open_all();
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  auto warm_started = clock_type::now();
  std::vector<double> warm_samples;
  if (warmup == "fixed") {
    for (int warm_idx = 0; warm_idx < std::max(2, rotations); ++warm_idx) warm_samples.push_back(run_once(warm_idx, nullptr));
  } else if (warmup == "time") {  // a fixed wall-clock warm-up
    while (ms_since(warm_started) < config.value("warmup_ms", 300.0)) warm_samples.push_back(run_once(static_cast<int>(warm_samples.size()), nullptr));
  }
  double warm_ms = ms_since(warm_started);
  rusage after_warm{};
  getrusage(RUSAGE_SELF, &after_warm);
  CpuTimes machine_before = read_cpu_times();
  double self_before = self_cpu_ms();
  std::vector<double> wall, device, delays;
  std::vector<ClEvent> events;
  auto begin = clock_type::now();
  while (ms_since(begin) < budget_s * 1000) {
    wall.push_back(run_once(static_cast<int>(wall.size()), &events));
    device.push_back(events_span_ms(events));
    delays.push_back(last_delay_ms);
  }
  double elapsed_ms = ms_since(begin);
  CpuTimes machine_after = read_cpu_times();
  double self_ms = self_cpu_ms() - self_before;
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  long hz = sysconf(_SC_CLK_TCK);
  double machine_busy_ms = (machine_after.busy - machine_before.busy) * 1000.0 / hz;
  size_t tenth = std::max<size_t>(1, wall.size() / 10);
  std::vector<double> head(wall.begin(), wall.begin() + tenth), tail(wall.end() - tenth, wall.end());
  return {{"runs", wall.size()},
          {"median_ms", median(wall)},
          {"device_median_ms", median(device)},
          {"min_ms", *std::min_element(wall.begin(), wall.end())},
          {"first_tenth_median_ms", median(head)},
          {"last_tenth_median_ms", median(tail)},
          {"warm_runs", warm_samples.size()},
          {"warm_ms", warm_ms},
          {"warm_samples_ms", warm_samples},
          {"build_ms", build_ms},
          {"minor_faults_warmup", after_warm.ru_minflt - before.ru_minflt},
          {"minor_faults_timed", after.ru_minflt - after_warm.ru_minflt},
          {"invol_switches_timed", after.ru_nivcsw - after_warm.ru_nivcsw},
          // CPU the rest of the machine used while we timed, in cores (2 = both cores busy).
          {"others_cores", std::max(0.0, machine_busy_ms - self_ms) / elapsed_ms},
          {"self_cores", self_ms / elapsed_ms},
          {"steal_ms", (machine_after.steal - machine_before.steal) * 1000.0 / hz},
          {"threads", run_delay.fds.size()},
          {"samples_ms", json(std::vector<double>(wall.begin(), wall.begin() + std::min<size_t>(wall.size(), 200)))},
          {"delays_ms", json(std::vector<double>(delays.begin(), delays.begin() + std::min<size_t>(delays.size(), 200)))}};
}

// A variant: environment for the child plus config overrides.
struct Variant {
  std::map<std::string, std::string> env;
  json config;
};

std::map<std::string, Variant> variants() {
  return {
      {"base", {{}, json::object()}},
      {"affinity", {{{"POCL_AFFINITY", "1"}}, json::object()}},
      {"cold_cache", {{{"POCL_CACHE_DIR", "@fresh"}}, json::object()}},
      {"no_rotation", {{}, {{"rotations", 1}}}},
      {"warm_300ms", {{}, {{"warmup", "time"}, {"warmup_ms", 300.0}}}},
      {"no_warmup", {{}, {{"warmup", "none"}}}},
      {"fresh_touch", {{}, {{"fresh_touch", true}, {"warmup", "none"}}}},
      {"one_thread", {{{"POCL_MAX_PTHREAD_COUNT", "1"}}, json::object()}},
      {"huge_pages", {{}, {{"huge_pages", true}}}},
      {"huge_affinity", {{{"POCL_AFFINITY", "1"}}, {{"huge_pages", true}}}},
  };
}

json run_child(const std::string& name, const Variant& variant, int serial) {
  std::string error;
  std::vector<std::string> saved;
  for (const auto& [key, value] : variant.env) {
    std::string set = value == "@fresh" ? "/tmp/kforge-study-cache-" + std::to_string(getpid()) + "-" + std::to_string(serial) : value;
    setenv(key.c_str(), set.c_str(), 1);
  }
  auto child = SandboxProcess::start({"/proc/self/exe", "--child", variant.config.dump()}, {}, -1, error);
  for (const auto& [key, value] : variant.env) unsetenv(key.c_str());
  if (!child) throw std::runtime_error(error);
  std::string line;
  if (child->read_line(line, clock_type::now() + std::chrono::seconds(60)) != ReadStatus::line)
    throw std::runtime_error(name + ": child failed: " + child->describe_exit() + " " + child->stderr_tail(500));
  json result = json::parse(line);
  result["variant"] = name;
  double load[1] = {0};
  getloadavg(load, 1);
  result["load_1m"] = load[0];
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--child") {
    try {
      std::cout << child_main(json::parse(argv[2])).dump() << "\n" << std::flush;
      return 0;
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n";
      return 1;
    }
  }
  int rounds = 10;
  std::string names = "base,affinity,cold_cache", out_path;
  for (int arg_idx = 1; arg_idx + 1 < argc; ++arg_idx) {
    std::string arg = argv[arg_idx];
    if (arg == "--rounds") rounds = std::atoi(argv[++arg_idx]);
    else if (arg == "--variants") names = argv[++arg_idx];
    else if (arg == "--out") out_path = argv[++arg_idx];
  }
  std::vector<std::string> chosen;
  std::stringstream list(names);
  for (std::string name; std::getline(list, name, ',');) chosen.push_back(name);
  auto all = variants();
  json runs = json::array();
  std::map<std::string, std::vector<double>> medians;
  int serial = 0;
  try {
    for (int round_idx = 0; round_idx < rounds; ++round_idx) {
      // Rotate the order each round so no variant always runs first.
      for (size_t pos = 0; pos < chosen.size(); ++pos) {
        const std::string& name = chosen[(pos + round_idx) % chosen.size()];
        if (!all.count(name)) throw std::runtime_error("unknown variant " + name);
        json result = run_child(name, all[name], serial++);
        result["round"] = round_idx;
        medians[name].push_back(result["median_ms"]);
        std::cerr << "round " << round_idx << " " << name << ": median " << result["median_ms"] << " ms (device "
                  << result["device_median_ms"] << ", first/last tenth " << result["first_tenth_median_ms"] << "/"
                  << result["last_tenth_median_ms"] << ", others " << result["others_cores"] << " cores, faults "
                  << result["minor_faults_timed"] << ", load " << result["load_1m"] << ")\n";
        runs.push_back(result);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "kforge-timing-study: " << e.what() << "\n";
    return 1;
  }
  json summary;
  for (const auto& [name, values] : medians) {
    double mid = median(values);
    double spread = (*std::max_element(values.begin(), values.end()) - *std::min_element(values.begin(), values.end())) / mid;
    summary[name] = {{"medians_ms", values}, {"median_of_medians_ms", mid}, {"spread_pct", spread * 100}};
  }
  std::string command;
  for (int arg_idx = 0; arg_idx < argc; ++arg_idx) command += (arg_idx ? " " : "") + std::string(argv[arg_idx]);
  json out{{"command", command}, {"summary", summary}, {"runs", runs}};
  if (out_path.empty()) std::cout << out.dump(2) << "\n";
  else std::ofstream(out_path) << out.dump(2) << "\n";
  for (const auto& [name, entry] : summary.items())
    std::cerr << name << ": spread " << entry["spread_pct"] << "% of median " << entry["median_of_medians_ms"] << " ms\n";
  return 0;
}
