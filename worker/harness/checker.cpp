// The checker pipeline, one function per stage in the order a candidate meets them:
//   format (parse_program) -> static rules -> launch plans -> build in a sandbox child
//   -> trials + compare -> determinism -> timing against libtorch eager.
// The parent (this file) holds the trusted state: reference outputs, pristine inputs in
// a memfd arena the child maps read-only, and every verdict. The child's side is
// sandbox_child.h (and sandbox_main.cpp); CheckResult's JSON is check_result.cpp. Children
// start before the arena exists (or come warm from a ChildPool) and get it attached.
// Test: ctest -R 'harness_(checker|adversarial|child_pool)'.
#include "worker/harness/checker.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "common/sha256.h"
#include "worker/harness/check_result_json.h"
#include "worker/harness/child_pool.h"
#include "worker/harness/compare.h"
#include "worker/harness/program.h"
#include "worker/harness/reference.h"
#include "worker/harness/rules.h"
#include "worker/harness/sandbox_child.h"
#include "worker/harness/sandbox_policy.h"
#include "worker/harness/timing.h"

namespace kforge::harness {

using spec::OpSpec;
using spec::ShapeSet;
using spec::op_spec_to_json;
using spec::shape_to_string;

namespace {

using clock_type = std::chrono::steady_clock;
using nlohmann::json;

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int64_t align_up(int64_t value, int64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

// A child's memory limit: the configured one, but never more than 3/4 of this machine's RAM.
int64_t sandbox_memory_limit(int64_t configured) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  int64_t ram = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : configured;
  return std::min(configured, ram / 4 * 3);
}

// Held while a measurement runs when CheckOptions::timing_lock names a file: checks side by
// side on one device (bench/gpu/check_suite.py --jobs) compile and verify in parallel but
// take turns to time. No file, or one that cannot be opened: no lock. The wait polls, so a
// cancel or shutdown (stop_requested) ends it within 10 ms; the exchange that follows then
// stops as it does for any command.
class TimingLock {
 public:
  TimingLock(const std::string& path, const std::function<bool()>& stop_requested) {
    if (path.empty()) return;
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    while (fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if ((errno != EWOULDBLOCK && errno != EINTR) || (stop_requested && stop_requested())) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~TimingLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  TimingLock(const TimingLock&) = delete;
  TimingLock& operator=(const TimingLock&) = delete;

 private:
  int fd_ = -1;
};

// What a timed run holds: the timing lock shared with other Checkers and, under the spare
// policy "gate", the GPU gate, so no pre-started child initialises its device meanwhile.
// The gate is taken first: a child initialising holds it only briefly.
class TimedWindow {
 public:
  TimedWindow(const std::string& timing_lock, const std::string& gate, const std::function<bool()>& stop_requested)
      : gate_(gate, stop_requested), timing_(timing_lock, stop_requested) {}

 private:
  TimingLock gate_;
  TimingLock timing_;
};

std::string describe_shapes(const ShapeSet& shapes) {
  std::string out;
  for (const auto& [name, shape] : shapes) out += (out.empty() ? "" : " ") + name + "=" + shape_to_string(shape);
  return out;
}

int64_t last_level_cache_bytes() {
  for (const char* index : {"index3", "index2"}) {
    std::ifstream file(std::string("/sys/devices/system/cpu/cpu0/cache/") + index + "/size");
    std::string text;
    if (file >> text && !text.empty()) {
      int64_t value = std::atoll(text.c_str());
      char unit = text.back();
      if (unit == 'K') value <<= 10;
      if (unit == 'M') value <<= 20;
      if (value > 0) return value;
    }
  }
  return int64_t{32} << 20;
}

// Keeps the compiler's error lines first: a model acts on those, not on warnings.
std::string compile_log_excerpt(const std::string& log) {
  std::istringstream lines(log);
  std::string line, errors, rest;
  while (std::getline(lines, line)) {
    if (line.find("error") != std::string::npos) errors += line + "\n";
    else if (rest.size() < 800) rest += line + "\n";
  }
  std::string out = errors.empty() ? rest : errors;
  if (out.size() > 1500) out = out.substr(0, 1500) + "...";
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Which sandbox policy a candidate's child gets: the Python runner, or kforge-sandbox on
// the CPU (PoCL) or on a GPU (CUDA; OpenCL when the device names a GPU).
SandboxKind sandbox_kind_for(const CheckOptions& options) {
  if (options.target == "triton") return SandboxKind::python;
  if (options.target == "cuda") return SandboxKind::kernel_gpu;
  std::string device = options.device;
  std::transform(device.begin(), device.end(), device.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* word : {"gpu", "nvidia", "cuda", "tesla", "geforce"})
    if (device.find(word) != std::string::npos) return SandboxKind::kernel_gpu;
  return SandboxKind::kernel_cpu;
}

// The jail's report in a line for Environment::sandbox: what was applied, what was not.
std::string sandbox_summary(const std::string& jail_report) {
  if (jail_report.empty()) return "unknown: the child sent no jail report";
  json report = json::parse(jail_report, nullptr, false);
  std::string out;
  for (const auto& layer : report.value("applied", json::array())) out += (out.empty() ? "" : ", ") + layer.get<std::string>();
  std::string degraded;
  for (const auto& why : report.value("degraded", json::array()))
    degraded += (degraded.empty() ? "" : "; ") + why.get<std::string>();
  return out + (degraded.empty() ? "" : "; not applied: " + degraded);
}

// Environment::baseline on a CPU: how eager allocates matters there. libtorch's default CPU
// allocator is glibc malloc, whose blocks above the mmap threshold (at most 32 MiB) are fresh
// mappings, page-faulted on every call; the caching allocator (steady_allocator.h) reuses them.
std::string cpu_baseline_description(int threads, bool caching) {
  std::string eager = "libtorch eager on the CPU, " + std::to_string(threads) + " threads; outputs allocated by the op on every call";
  if (caching)
    return eager + ", from a caching allocator that reuses freed blocks (steady state, as in a long-running "
                   "PyTorch process: no fresh page faults per call)";
  return eager + " (libtorch's default CPU allocator, glibc malloc: blocks above the mmap threshold, at most "
                 "32 MiB, are page-faulted per call)";
}

// Sets the verdict of a failed stage; returns false so the stage can `return fail(...)`.
bool fail(CheckResult& result, Outcome outcome, std::string message) {
  result.outcome = outcome;
  result.message = std::move(message);
  return false;
}

bool fail_rule(CheckResult& result, const RuleViolation& violation) {
  result.rule = violation.rule;
  return fail(result, Outcome::rule_violation, violation.rule + ": " + violation.message);
}

// One correctness trial: its shapes, inputs and reference outputs, and where they live in the arena.
struct Trial {
  std::string label;
  bool secret = false;
  ShapeSet shapes;
  std::vector<HostTensor> inputs;
  std::vector<HostTensor> expected;
  std::vector<int64_t> input_offsets;
  std::vector<int64_t> output_offsets;
  bool optional = false;  // dropped when the reference refuses its shapes (the unpublished set)
};

// Unpublished shapes for one Checker, from `seed`: every size of the main shapes above 2
// becomes an odd size in [size/2, size) (sizes that were equal stay equal, so matmul's
// inner dimensions still agree). A kernel honest only for the published shapes fails it.
ShapeSet unpublished_shapes(const ShapeSet& main, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::map<int64_t, int64_t> mapped;
  ShapeSet out = main;
  for (auto& [name, shape] : out)
    for (auto& size : shape) {
      if (size <= 2) continue;
      auto found = mapped.find(size);
      if (found == mapped.end()) {
        int64_t low = (size + 1) / 2, high = size - 1;
        int64_t pick = low + static_cast<int64_t>(rng() % static_cast<uint64_t>(high - low + 1));
        if (pick % 2 == 0) pick = pick + 1 <= high ? pick + 1 : pick - 1;
        found = mapped.emplace(size, std::max<int64_t>(pick, 1)).first;
      }
      size = found->second;
    }
  return out;
}

// The memfds shared with sandbox children, seen by this process as one range
// [inputs of every trial | output slots]: inputs in a sealed memfd nobody can write
// (a candidate cannot change what later candidates or the baselines read), outputs in a
// writable one.
struct Arena {
  int input_fd = -1;
  int output_fd = -1;
  uint8_t* base = nullptr;
  int64_t input_region = 0;
  int64_t total = 0;
  ~Arena() {
    if (base) munmap(base, static_cast<size_t>(total));
    if (input_fd >= 0) close(input_fd);
    if (output_fd >= 0) close(output_fd);
  }
};

// The GPU gate's file (sandbox_policy.h): the process's own memfd (child_pool.h), shared by
// every Checker of this worker and its pooled children, so no child initialises a device
// while any of them times. Not the timing lock's file: a child would then wait out other
// processes' timed runs before it could even start. Children get their own open of it.
struct GateFile {
  int fd = -1;
  std::string path;  // what TimingLock opens (a fresh open of the same file)
  bool open(std::string& error) {
    fd = process_gpu_gate_fd(error);
    if (fd < 0) return false;
    path = "/proc/self/fd/" + std::to_string(fd);
    return true;
  }
};

// A long message cut to its first `head` and last `tail` characters: a Python traceback's
// cause is at its end (torch.compile's failures on the H200 were cut before theirs).
std::string head_and_tail(const std::string& text, size_t head, size_t tail) {
  if (text.size() <= head + tail + 5) return text;
  return text.substr(0, head) + " ... " + text.substr(text.size() - tail);
}

// True when the target's device will be a GPU (the first child's ready line says for sure).
bool expects_gpu(const CheckOptions& options) {
  if (options.target == "cuda") return true;
  if (options.target == "triton") return options.device != "cpu";
  return sandbox_kind_for(options) == SandboxKind::kernel_gpu;
}

}  // namespace

struct Checker::Impl {
  OpSpec spec;
  CheckOptions options;
  std::unique_ptr<Reference> reference;
  std::vector<Trial> trials;
  std::vector<int64_t> determinism_offsets;  // output slot for the second run of trial 0
  Arena arena;
  std::string op_hash;
  bool weak = false;
  int rotations = 1;
  Environment environment;
  int64_t max_block = 1024;
  std::optional<TimingStats> baseline;
  int baseline_timings = 0;
  std::map<std::string, CheckResult> cache;
  bool gpu = false;                        // the candidate's device is a GPU: GPU reference and baselines
  std::optional<TimingStats> baseline_compile;
  GateFile gate;
  std::string spare_policy;                // options.spare_policy resolved: settle, gate or overlap
  std::unique_ptr<SandboxPool> sandboxes;  // after `arena`: children go before the memfd closes
  // Candidates to be checked next, built and their kernels compiled ahead in their own
  // children (Checker::prefetch), oldest first; two replies (build, prepare) each, read by
  // the check of the same text. prefetch_ahead + 1 of them, since the caller prefetches
  // candidates i + 1.. before it checks candidate i, which was prefetched a round before.
  struct Prefetched {
    std::string program_hash;
    std::unique_ptr<SandboxChild> child;
  };
  // Per timed side and window: gpu_time_budget_s on a GPU where set, else time_budget_s.
  double window_s() const {
    return gpu && options.gpu_time_budget_s > 0 ? options.gpu_time_budget_s : options.time_budget_s;
  }
  size_t max_prefetched() const { return static_cast<size_t>(std::max(1, options.prefetch_ahead)) + 1; }
  std::deque<Prefetched> prefetched;  // after `arena`, like sandboxes
  std::deque<Prefetched>::iterator find_prefetched(const std::string& program_hash) {
    return std::find_if(prefetched.begin(), prefetched.end(),
                        [&](const Prefetched& entry) { return entry.program_hash == program_hash; });
  }
  std::unique_ptr<SandboxChild> gpu_reference;  // the runner with the op's own code (never a candidate's)
  // The runner timing torch.compile: it compiles the op from create() on, on inputs of its own,
  // while the reference is computed and candidates are verified; its replies (build,
  // precompile) are read when the compile baseline is first needed.
  std::unique_ptr<SandboxChild> compile_reference;
  int compile_replies_pending = 0;
  std::string compile_failure;             // why the compile baseline is missing, once known
  std::unique_ptr<SandboxChild> first_child;  // started (or taken warm) before the arena exists
  bool runner_ref = false;                 // reference outputs and baselines from the runner (GPU, or asked for)
  SetupPhases setup;

  // Set-up, once per op (Checker::create).
  void make_trials(uint64_t fresh, uint64_t secret);
  bool run_reference(std::string& error);
  bool build_arena(std::string& error);
  void choose_rotations();
  bool start_sandboxes(std::string& error);
  bool candidate_launch(SandboxLaunch& launch, std::string& error) const;
  SandboxLaunch reference_launch(const std::string& device) const;
  std::unique_ptr<SandboxChild> acquire(const SandboxLaunch& launch, std::string& error);
  bool begin_children(std::string& error);
  bool finish_compile_warmup(CheckResult& result);
  //! The GPU gate's path while the spare policy is "gate", else "" (TimedWindow).
  std::string held_gate() const { return spare_policy == "gate" ? gate.path : std::string(); }
  std::vector<std::string> runner_argv(const std::string& role, const std::string& device) const;
  bool start_gpu_reference(std::string& error);

  // One check: the stages in order. Each returns false once it has set the verdict.
  void run_check(const std::string& program_text, CheckResult& result);
  ProgramLimits program_limits() const;
  bool passes_static_rules(const KernelProgram& program, CheckResult& result) const;
  bool plan_launches(const KernelProgram& program, std::vector<LaunchPlan>& plans, CheckResult& result) const;
  bool build(SandboxChild& child, const KernelProgram& program, CheckResult& result);
  bool run_trials(SandboxChild& child, const std::vector<LaunchPlan>* plans, CheckResult& result);
  json run_command(const LaunchPlan& plan, size_t trial_idx, const std::vector<int64_t>& output_offsets,
                   int poison) const;
  bool finish_run(SandboxChild& child, double limit_s, const std::string& what, CheckResult& result);
  bool outputs_match(size_t trial_idx, const std::vector<int64_t>& output_offsets, const std::string& what,
                     CheckResult& result) const;
  void time_candidate(SandboxChild& child, const LaunchPlan* plan, CheckResult& result);
  bool timed_outputs_match(CheckResult& result) const;
  bool baseline_reusable(bool busy_now) const;
  TimingStats time_baseline(bool busy_now);
  bool time_gpu_baselines(CheckResult& result);
  TimingProtocol timing_protocol() const;
  json timing_knobs() const;

  // The triton target: the same stages through the Python runner (its own rules and build).
  void run_triton_check(const std::string& program_text, CheckResult& result);
  bool build_triton(SandboxChild& child, const std::string& source, CheckResult& result);
  bool build_reply(SandboxChild& child, CheckResult& result);
  bool take_prepared(const std::string& program_hash, std::unique_ptr<SandboxChild>& child, CheckResult& result);
  json prepare_shapes() const;
  json runner_io(size_t trial_idx, const std::vector<int64_t>& output_offsets) const;
  bool reply_failed(const json& reply, const std::string& what, CheckResult& result);
  std::vector<size_t> timing_trials() const;
};

// ------------------------------------------------------------------- set-up

void Checker::Impl::make_trials(uint64_t fresh, uint64_t secret) {
  const int count = std::max(1, options.trials);
  ShapeSet main = spec.main_shapes();
  for (int trial_idx = 0; trial_idx < count; ++trial_idx)
    trials.push_back({"trial " + std::to_string(trial_idx + 1) + " of " + std::to_string(count), false, main,
                      make_inputs(spec, main, fresh + 0x9E3779B97F4A7C15ull * (trial_idx + 1)), {}, {}, {}});
  trials.push_back({"secret-seed trial", true, main, make_inputs(spec, main, std::hash<std::string>{}(op_hash) ^ secret),
                    {}, {}, {}});
  if (!options.check_extra_shapes) return;
  for (size_t set_idx = 0; set_idx < spec.extra_shapes.size(); ++set_idx)
    trials.push_back({"extra shapes " + std::to_string(set_idx + 1), false, spec.extra_shapes[set_idx],
                      make_inputs(spec, spec.extra_shapes[set_idx], fresh ^ (0xABCDEFull + set_idx)), {}, {}, {}});
  // Shapes nobody published, drawn per Checker from the secret and fresh seeds.
  ShapeSet hidden = unpublished_shapes(main, secret ^ fresh ^ 0x5EC12E7ull);
  if (hidden != main) {
    Trial trial{"unpublished shapes", false, hidden, make_inputs(spec, hidden, fresh ^ 0x0DD5EEDull), {}, {}, {}};
    trial.optional = true;
    trials.push_back(std::move(trial));
  }
}

bool Checker::Impl::run_reference(std::string& error) {
  for (size_t trial_idx = 0; trial_idx < trials.size();) {
    Trial& trial = trials[trial_idx];
    auto run = reference->run(trial.inputs);
    bool refused = !run.error.empty() || run.outputs.size() != (trial_idx == 0 ? run.outputs.size()
                                                                                : trials[0].expected.size());
    if (refused && trial.optional) {
      // An op written for its own shapes only (a view to a fixed size) refuses the unpublished set.
      trials.erase(trials.begin() + static_cast<std::ptrdiff_t>(trial_idx));
      continue;
    }
    if (!run.error.empty()) {
      error = "the op's reference fails on shapes " + describe_shapes(trial.shapes) + ": " + run.error;
      return false;
    }
    trial.expected = std::move(run.outputs);
    if (trial.expected.size() != trials[0].expected.size()) {
      error = "the op's reference returns a different number of outputs for shapes " + describe_shapes(trial.shapes);
      return false;
    }
    ++trial_idx;
  }
  weak = std::all_of(trials[0].expected.begin(), trials[0].expected.end(),
                     [](const HostTensor& t) { return near_constant(t); });
  return true;
}

bool Checker::Impl::build_arena(std::string& error) {
  const int64_t page = sysconf(_SC_PAGESIZE);
  int64_t cursor = 0;
  for (auto& trial : trials)
    for (const auto& input : trial.inputs) {
      trial.input_offsets.push_back(cursor);
      cursor = align_up(cursor + static_cast<int64_t>(input.data.size()), 64);
    }
  arena.input_region = align_up(std::max<int64_t>(cursor, 1), page);
  cursor = arena.input_region;
  for (auto& trial : trials)
    for (const auto& output : trial.expected) {
      trial.output_offsets.push_back(cursor);
      cursor = align_up(cursor + static_cast<int64_t>(output.data.size()), 64);
    }
  for (const auto& output : trials[0].expected) {
    determinism_offsets.push_back(cursor);
    cursor = align_up(cursor + static_cast<int64_t>(output.data.size()), 64);
  }
  arena.total = align_up(cursor, page);
  arena.input_fd = memfd_create("kforge-arena-inputs", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  arena.output_fd = memfd_create("kforge-arena-outputs", MFD_CLOEXEC);
  if (arena.input_fd < 0 || arena.output_fd < 0 || ftruncate(arena.input_fd, arena.input_region) != 0 ||
      ftruncate(arena.output_fd, arena.total - arena.input_region) != 0) {
    error = std::string("memfd arena: ") + std::strerror(errno);
    return false;
  }
  for (const auto& trial : trials)
    for (size_t input_idx = 0; input_idx < trial.inputs.size(); ++input_idx) {
      const auto& data = trial.inputs[input_idx].data;
      for (size_t done = 0; done < data.size();) {
        ssize_t n = pwrite(arena.input_fd, data.data() + done, data.size() - done,
                           trial.input_offsets[input_idx] + static_cast<off_t>(done));
        if (n <= 0) {
          error = std::string("writing the arena: ") + std::strerror(errno);
          return false;
        }
        done += static_cast<size_t>(n);
      }
    }
  if (fcntl(arena.input_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    error = std::string("sealing the arena's inputs: ") + std::strerror(errno);
    return false;
  }
  // One address range: inputs read-only at the start, outputs after them.
  void* range = mmap(nullptr, static_cast<size_t>(arena.total), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (range == MAP_FAILED) {
    error = std::string("mmap arena: ") + std::strerror(errno);
    return false;
  }
  arena.base = static_cast<uint8_t*>(range);
  if (mmap(arena.base, static_cast<size_t>(arena.input_region), PROT_READ, MAP_SHARED | MAP_FIXED, arena.input_fd, 0) ==
          MAP_FAILED ||
      mmap(arena.base + arena.input_region, static_cast<size_t>(arena.total - arena.input_region),
           PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, arena.output_fd, 0) == MAP_FAILED) {
    error = std::string("mmap arena: ") + std::strerror(errno);
    return false;
  }
  return true;
}

// Rotate through enough input/output sets to exceed twice the last-level cache.
void Checker::Impl::choose_rotations() {
  int64_t set_bytes = 0;
  for (const auto& t : trials[0].inputs) set_bytes += static_cast<int64_t>(t.data.size());
  for (const auto& t : trials[0].expected) set_bytes += static_cast<int64_t>(t.data.size());
  int64_t llc = options.llc_bytes > 0 ? options.llc_bytes : last_level_cache_bytes();
  rotations = static_cast<int>(std::clamp<int64_t>((2 * llc + set_bytes - 1) / std::max<int64_t>(set_bytes, 1), 1, 16));
  while (rotations > 1 && rotations * set_bytes > (int64_t{2} << 30)) --rotations;
}

// How this op's candidates' children start: the Python runner (triton) or kforge-sandbox,
// under the kind's policy and limits, with the GPU gate. The arena fds are set once it exists.
bool Checker::Impl::candidate_launch(SandboxLaunch& launch, std::string& error) const {
  if (options.target == "triton") {
    launch.argv = runner_argv("candidate", options.device.empty() ? "cuda" : options.device);
  } else if (options.target == "opencl" || options.target == "cuda") {
    std::string binary = options.sandbox_binary.empty() ? helper_binary_path("kforge-sandbox") : options.sandbox_binary;
    launch.argv = {binary, "--target", options.target, "--device", options.device};
    if (!options.warm_up) launch.argv.push_back("--no-warm-up");
  } else {
    error = "unknown target '" + options.target + "' (opencl, cuda or triton)";
    return false;
  }
  launch.kind = sandbox_kind_for(options);
  launch.limits.cpu_seconds = options.sandbox_cpu_s;
  // Private writable memory (RLIMIT_DATA), not address space: CUDA reserves address space
  // for all device and host memory, and CUDA-enabled libtorch maps gigabytes of libraries.
  launch.limits.data_bytes = sandbox_memory_limit(options.sandbox_memory_bytes);
  launch.stop_requested = options.stop_requested;
  launch.gpu_gate_fd = gate.fd;
  return true;
}

// The runner with the op's own code: reference outputs, eager and torch.compile baselines.
SandboxLaunch Checker::Impl::reference_launch(const std::string& device) const {
  SandboxLaunch launch;
  launch.argv = runner_argv("reference", device);
  launch.kind = SandboxKind::python;
  launch.limits.cpu_seconds = options.sandbox_cpu_s;
  launch.limits.data_bytes = sandbox_memory_limit(options.sandbox_memory_bytes);
  launch.gpu_gate_fd = gate.fd;
  launch.stop_requested = options.stop_requested;
  return launch;
}

// A child for `launch` before the arena exists: warm from the worker's pool when it has one,
// else started now; either way it gets the arena later (begin_attach).
std::unique_ptr<SandboxChild> Checker::Impl::acquire(const SandboxLaunch& launch, std::string& error) {
  if (options.child_pool) {
    if (auto pooled = options.child_pool->take(launch)) {
      pooled->set_stop_requested(options.stop_requested);
      ++setup.pooled_children;
      return pooled;
    }
  }
  SandboxLaunch later = launch;
  later.attach_later = true;
  return SandboxChild::start(later, error);
}

// The children a check needs, started (or taken warm) before the reference is computed, so
// their start-up (an interpreter, torch, a CUDA context, a compiler) overlaps it. The
// reference runners get the op's source at once: one builds it for eager, the other compiles
// it with torch.compile on inputs of its own, neither needing the arena yet.
bool Checker::Impl::begin_children(std::string& error) {
  SandboxLaunch launch;
  if (!candidate_launch(launch, error)) return false;
  first_child = acquire(launch, error);
  if (!first_child) return false;
  if (!options.runner_reference && !expects_gpu(options)) return true;
  const std::string device = expects_gpu(options) ? "cuda" : "cpu";
  const std::string source = normalize_source(spec.source).source;
  CheckResult scratch;
  gpu_reference = acquire(reference_launch(device), error);
  if (!gpu_reference || !gpu_reference->send({{"cmd", "build"}, {"source", source}, {"compile", false}},
                                             "building the op in the reference runner", scratch)) {
    error = "the reference runner did not start: " + error + scratch.message;
    return false;
  }
  if (!options.compile_baseline) return true;
  compile_reference = acquire(reference_launch(device), error);
  json shapes = json::array();
  for (const auto& input : spec.inputs)
    shapes.push_back({{"shape", input.shape}, {"dtype", spec::dtype_name(input.dtype)}});
  if (compile_reference &&
      compile_reference->send({{"cmd", "build"}, {"source", source}, {"compile", true}}, "torch.compile", scratch) &&
      compile_reference->send({{"cmd", "precompile"}, {"inputs", shapes}}, "torch.compile", scratch)) {
    compile_replies_pending = 2;
  } else {
    compile_failure = "the torch.compile runner did not start: " + error + scratch.message;
    compile_reference.reset();
  }
  return true;
}

// The first candidate child (begun in create) gets the arena and says which device it
// initialised: the environment every result carries; then the pool of spares.
bool Checker::Impl::start_sandboxes(std::string& error) {
  SandboxLaunch launch;
  if (!candidate_launch(launch, error)) return false;
  launch.arena_inputs_fd = arena.input_fd;
  launch.arena_outputs_fd = arena.output_fd;
  sandboxes = std::make_unique<SandboxPool>(launch);
  sandboxes->use_child_pool(options.child_pool);
  auto waited = clock_type::now();
  std::unique_ptr<SandboxChild> first = std::move(first_child);
  if (!first->begin_attach(arena.input_fd, arena.output_fd, gate.fd, error) || !first->await_ready(error) ||
      !first->finish_attach(error)) {
    // A pooled child may have died while it waited: one started with the arena says why not.
    error.clear();
    first = SandboxChild::start(launch, error);
    if (!first || !first->await_ready(error)) return false;
  }
  setup.sandbox_start_ms = ms_between(waited, clock_type::now());
  const json& device = first->device();
  environment.device = device.value("name", "");
  environment.platform = device.value("platform", "");
  environment.device_version = device.value("version", "");
  environment.driver_version = device.value("driver", "");
  environment.opencl_c_version = device.value("c_version", "");
  environment.compute_units = device.value("compute_units", 1);
  environment.torch_version = torch_version_string();
  environment.target = options.target;
  environment.triton_version = device.value("triton_version", "");
  environment.cuda_version = device.value("cuda_version", "");
  gpu = !device.value("is_cpu", true);
  environment.gpu = gpu;
  runner_ref = gpu || options.runner_reference;
  if (gpu) {
    environment.baseline = "PyTorch CUDA eager and torch.compile (default mode) in a separate trusted runner; "
                           "CUDA events, L2 flushed before every run, TF32 off";
  } else if (runner_ref) {
    environment.baseline = "PyTorch eager on the CPU in the Python runner (the GPU path's reference runner, "
                           "run on a CPU: a test of that path, not a CPU baseline)";
  } else {
    environment.torch_threads = environment.compute_units;
    environment.blas = blas_description();
    environment.baseline = cpu_baseline_description(environment.compute_units,
                                                    options.baseline_allocator == BaselineAllocator::caching);
  }
  max_block = device.value("max_work_group", int64_t{1024});
  spare_policy = options.spare_policy.empty() ? (gpu ? "gate" : "settle") : options.spare_policy;
  // With the worker's pool on a CPU the pool's warm children are the spares: a private spare
  // would start during the next check and make its timed runs wait for it (settle).
  const int default_spares = gpu ? 2 : (options.child_pool && spare_policy == "settle" ? 0 : 1);
  sandboxes->set_depth(options.spares > 0 ? options.spares : default_spares);
  environment.sandbox = sandbox_summary(first->jail_report());
  // What the candidate runner paid before ready (Triton's compiler, the driver's helper module
  // and a launcher: runner/warm_kernels.py), or why that failed: a failed warm-up is paid
  // again by every candidate's first run.
  if (const json& warm = first->device().value("warm", json::object()); warm.is_object() && !warm.empty()) {
    environment.sandbox += "; runner warm-up " + warm.value("what", std::string("?"));
    environment.sandbox += warm.contains("error") ? " failed: " + warm.value("error", std::string())
                                                  : " " + format_value(warm.value("ms", 0.0)) + " ms";
  }
  // Page-locked inputs make the per-trial copies several times faster (GPU children only).
  if (gpu)
    environment.sandbox += first->device().value("pinned_inputs", false)
                               ? "; arena inputs page-locked"
                               : "; arena inputs pageable (" + first->device().value("host_pinning", "not pinned") + ")";
  sandboxes->keep(std::move(first));
  return true;
}

// The Python runner: the triton target's candidates, and the GPU reference and baselines.
std::vector<std::string> Checker::Impl::runner_argv(const std::string& role, const std::string& device) const {
  std::string python = options.python;
  if (python.empty()) {
    const char* configured = std::getenv("KFORGE_PYTHON");
    python = configured && *configured ? configured : "python3";
  }
  std::string script = options.runner_script.empty() ? helper_binary_path("runner/kforge_runner.py") : options.runner_script;
  return {resolve_program(python), script, "--role", role, "--device", device};
}

// On a GPU the reference outputs come from the op's own code on CUDA tensors (TF32 off), in
// a runner that never sees a candidate; the CPU libtorch outputs stay as a cross-check. The
// runner was begun in create() and has had the op's source since; here it gets the arena.
bool Checker::Impl::start_gpu_reference(std::string& error) {
  const std::string device = gpu ? "cuda" : "cpu";
  const std::string source = normalize_source(spec.source).source;
  CheckResult scratch;
  json reply;
  auto waited = clock_type::now();
  // Ready, then the build sent in create(), then the attach; a child that was not begun (the
  // device turned out to be a GPU) or died meanwhile is replaced by one started with the arena.
  bool started = gpu_reference && gpu_reference->begin_attach(arena.input_fd, arena.output_fd, gate.fd, error) &&
                 gpu_reference->await_ready(error) &&
                 gpu_reference->receive(options.build_timeout_s, "compiling the op on the GPU", reply, scratch) &&
                 gpu_reference->finish_attach(error);
  if (!started) {
    SandboxLaunch launch = reference_launch(device);
    launch.arena_inputs_fd = arena.input_fd;
    launch.arena_outputs_fd = arena.output_fd;
    error.clear();
    scratch = CheckResult();
    gpu_reference = SandboxChild::start(launch, error);
    if (!gpu_reference || !gpu_reference->await_ready(error)) {
      error = "the GPU reference runner did not start: " + error;
      return false;
    }
    gpu_reference->exchange({{"cmd", "build"}, {"source", source}, {"compile", false}}, options.build_timeout_s,
                            "compiling the op on the GPU", reply, scratch);
  }
  setup.gpu_reference_start_ms = ms_between(waited, clock_type::now());
  auto computed = clock_type::now();
  const json& described = gpu_reference->device();
  environment.triton_version = described.value("triton_version", environment.triton_version);
  environment.cuda_version = described.value("cuda_version", environment.cuda_version);
  environment.torch_version = described.value("torch_version", environment.torch_version);
  if (!scratch.message.empty() || !reply.value("ok", false)) {
    error = "the op does not build on the GPU: " + (scratch.message.empty() ? reply.value("log", reply.dump()) : scratch.message);
    return false;
  }
  for (size_t trial_idx = 0; trial_idx < trials.size(); ++trial_idx) {
    Trial& trial = trials[trial_idx];
    json command = runner_io(trial_idx, trial.output_offsets);
    command["cmd"] = "run";
    if (!gpu_reference->exchange(command, options.trial_timeout_s * 3, "the op on the GPU", reply, scratch) ||
        !reply.value("ok", false)) {
      error = "the op fails on the GPU with shapes " + describe_shapes(trial.shapes) + ": " +
              (scratch.message.empty() ? reply.value("message", reply.dump()) : scratch.message);
      return false;
    }
    for (size_t out_idx = 0; out_idx < trial.expected.size(); ++out_idx) {
      HostTensor& expected = trial.expected[out_idx];
      const uint8_t* gpu_out = arena.base + trial.output_offsets[out_idx];
      HostTensor gpu_tensor = expected;
      std::memcpy(gpu_tensor.data.data(), gpu_out, gpu_tensor.data.size());
      for (int64_t idx = 0; idx < expected.numel(); ++idx) {
        double diff = std::fabs(gpu_tensor.value_at(idx) - expected.value_at(idx));
        if (std::isfinite(diff)) environment.reference_max_abs_diff = std::max(environment.reference_max_abs_diff, diff);
      }
      expected = std::move(gpu_tensor);
    }
  }
  weak = std::all_of(trials[0].expected.begin(), trials[0].expected.end(),
                     [](const HostTensor& t) { return near_constant(t); });
  setup.gpu_reference_ms = ms_between(computed, clock_type::now());
  // The torch.compile runner gets the arena too (after its build and precompile, which it
  // works through first); its replies are read when the compile baseline is needed.
  if (compile_reference && compile_reference->needs_attach()) {  // not on a restart (harvest_inductor)
    std::string attach_error;
    if (!compile_reference->begin_attach(arena.input_fd, arena.output_fd, gate.fd, attach_error)) {
      compile_failure = "the torch.compile runner: " + attach_error;
      compile_reference.reset();
      compile_replies_pending = 0;
    }
  }
  return true;
}

// Reads what the torch.compile runner has done since create(): its build and the compile of
// the op on inputs of its own (seconds to a minute: Inductor's codegen, Triton's compiles,
// autotuning on the GPU). Called before the first timed window, so none of that GPU work
// overlaps a measurement, and by the compile baseline. Its wait counts as time_compile.
bool Checker::Impl::finish_compile_warmup(CheckResult& result) {
  if (!compile_reference || compile_replies_pending == 0) return compile_reference != nullptr;
  auto waited = clock_type::now();
  CheckResult scratch;
  json reply;
  std::string error;
  bool ok = compile_reference->await_ready(error);
  if (!ok) compile_failure = "the torch.compile runner did not start: " + error;
  for (const char* what : {"building the op for torch.compile", "compiling the op with torch.compile"}) {
    if (!ok || compile_replies_pending == 0) break;
    ok = compile_reference->receive(300 + options.trial_timeout_s, what, reply, scratch) && reply.value("ok", false);
    --compile_replies_pending;
    if (!ok) {
      std::string why = scratch.message.empty() ? reply.value("message", reply.value("log", reply.dump())) : scratch.message;
      compile_failure = std::string(what) + ": " + why;
    }
  }
  if (ok && !compile_reference->finish_attach(error)) {
    ok = false;
    compile_failure = "the torch.compile runner: " + error;
  }
  result.time_compile_ms += ms_between(waited, clock_type::now());
  if (!ok) {
    compile_reference.reset();
    compile_replies_pending = 0;
  }
  return ok;
}

Checker::Checker() : impl_(std::make_unique<Impl>()) {}
Checker::~Checker() = default;

bool Checker::weak_test() const { return impl_->weak; }

bool Checker::times_on_gpu() const { return impl_->gpu; }

const SetupPhases& Checker::setup_phases() const { return impl_->setup; }

void Checker::warm_pool(const CheckOptions& options) {
  if (!options.child_pool) return;
  Checker launches;  // only for the launch recipes its Impl builds
  Impl& impl = *launches.impl_;
  impl.options = options;
  std::string error;
  SandboxLaunch launch;
  if (!impl.gate.open(error) || !impl.candidate_launch(launch, error)) return;
  // A GPU triton generation takes its first candidate's runner and prefetch_ahead more at once.
  const bool prefetching = options.target == "triton" && expects_gpu(options);
  options.child_pool->warm(launch, prefetching ? static_cast<int>(impl.max_prefetched()) : 0);
  if (options.runner_reference || expects_gpu(options)) {
    SandboxLaunch reference = impl.reference_launch(expects_gpu(options) ? "cuda" : "cpu");
    options.child_pool->warm(reference);
  }
}

std::vector<std::vector<int64_t>> Checker::output_shapes() const {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& output : impl_->trials[0].expected) shapes.push_back(output.shape);
  return shapes;
}

std::unique_ptr<Checker> Checker::create(const OpSpec& spec, const CheckOptions& options, std::string& error) {
  auto created = clock_type::now();
  std::unique_ptr<Checker> checker(new Checker());
  Impl& impl = *checker->impl_;
  impl.spec = spec;
  impl.options = options;
  const std::string& policy = options.spare_policy;
  if (!policy.empty() && policy != "settle" && policy != "gate" && policy != "overlap") {
    error = "unknown spare policy '" + policy + "' (settle, gate or overlap)";
    return nullptr;
  }
  // The children first: their start-up overlaps the reference work below.
  if (!impl.gate.open(error) || !impl.begin_children(error)) return nullptr;
  SetupPhases& setup = impl.setup;
  auto phase_started = clock_type::now();
  auto phase_ms = [&phase_started] {
    auto now = clock_type::now();
    double ms = ms_between(phase_started, now);
    phase_started = now;
    return ms;
  };
  impl.reference = Reference::compile(spec, error);
  setup.reference_compile_ms = phase_ms();
  if (!impl.reference) {
    error = "the op's reference does not compile: " + error;
    return nullptr;
  }
  impl.op_hash = sha256_hex(op_spec_to_json(spec));
  // Fresh seeds per Checker (never stored or shown), plus the worker's secret seed.
  std::random_device entropy;
  uint64_t fresh = (uint64_t{entropy()} << 32) ^ entropy();
  uint64_t secret = options.secret_seed;
  if (secret == 0) {
    const char* configured = std::getenv("KFORGE_SECRET_SEED");
    secret = configured && *configured ? std::strtoull(configured, nullptr, 10) : (uint64_t{entropy()} << 32) ^ entropy();
  }
  impl.make_trials(fresh, secret);
  setup.inputs_ms = phase_ms();
  if (!impl.run_reference(error)) return nullptr;
  setup.reference_ms = phase_ms();
  if (!impl.build_arena(error)) return nullptr;
  impl.choose_rotations();
  setup.arena_ms = phase_ms();
  if (!impl.start_sandboxes(error)) return nullptr;
  if (impl.runner_ref) {
    if (!impl.start_gpu_reference(error)) return nullptr;
  } else {
    impl.gpu_reference.reset();  // begun for a GPU that the device turned out not to be
    impl.compile_reference.reset();
  }
  setup.total_ms = ms_between(created, clock_type::now());
  // On a GPU the children taken warm are replaced now (their start-up is CPU work, and touches
  // the device only under the gate); on a CPU after the first check's timed runs.
  if (options.child_pool && impl.gpu) options.child_pool->refill();
  return checker;
}

bool Checker::prefetch(const std::string& program_text) {
  Impl& impl = *impl_;
  if (!(impl.gpu || impl.options.prefetch_on_cpu) || impl.options.target != "triton" || !impl.sandboxes) return false;
  const std::string hash = sha256_hex(program_text);
  if (impl.find_prefetched(hash) != impl.prefetched.end()) return true;
  if (impl.options.cache && impl.cache.count(hash)) return false;
  // The oldest goes when there are too many (killed with its CUDA context): never checked.
  if (impl.prefetched.size() >= impl.max_prefetched()) impl.prefetched.pop_front();
  std::string error;
  auto child = impl.sandboxes->take(error);
  if (!child) return false;
  CheckResult scratch;
  if (!child->send({{"cmd", "build"}, {"source", strip_fence(program_text)}}, "importing the module", scratch) ||
      !child->send({{"cmd", "prepare"}, {"shapes", impl.prepare_shapes()}}, "compiling the kernels ahead", scratch))
    return false;
  impl.prefetched.push_back(Impl::Prefetched{hash, std::move(child)});
  return true;
}

// Inductor's kernels through the reference runner (runner/inductor_harvest.py), on the first
// trial's inputs: the op's main shapes, which its autotuned configs are chosen for.
InductorHarvest Checker::harvest_inductor() {
  InductorHarvest harvest;
  Impl& impl = *impl_;
  if (impl.options.target != "triton") {
    harvest.reason = "Inductor's kernels are Triton: target " + impl.options.target + " gets no Inductor candidate";
    return harvest;
  }
  if (!impl.gpu || !impl.gpu_reference) {
    harvest.reason = "Inductor's kernels are harvested on a GPU host (torch.compile on CUDA); this check runs on the CPU";
    return harvest;
  }
  json command = impl.runner_io(0, impl.trials[0].output_offsets);
  command["cmd"] = "harvest";
  CheckResult scratch;
  json reply;
  // torch.compile and Inductor's autotuning: seconds to a minute, like the compile baseline.
  if (!impl.gpu_reference->exchange(command, 300 + impl.options.trial_timeout_s, "harvesting Inductor's kernels", reply,
                                    scratch)) {
    harvest.reason = "the reference runner failed while harvesting Inductor's kernels: " + scratch.message;
    // The runner may be gone (a crash, the time limit): a fresh one serves the baselines.
    std::string error;
    if (!impl.start_gpu_reference(error)) harvest.reason += "; restarting it failed: " + error;
    return harvest;
  }
  harvest.harvest_ms = reply.value("harvest_ms", 0.0);
  if (reply.contains("provenance")) harvest.provenance = reply["provenance"].dump();
  if (reply.value("ok", false) && reply.value("source", "").size() > 0) {
    harvest.source = reply["source"].get<std::string>();
  } else {
    harvest.reason = reply.value("reason", reply.value("message", reply.dump()));
  }
  return harvest;
}

// ------------------------------------------------------------- one check

CheckResult Checker::check(const std::string& program_text) {
  // Never throws, whatever the bytes: a broken invariant (or a failing result store) is a
  // runtime_error result with the reason.
  auto started = clock_type::now();
  CheckResult result;
  try {
    check_into(program_text, started, result);
  } catch (const std::exception& e) {
    result.outcome = Outcome::runtime_error;
    result.message = std::string("harness error: ") + e.what();
  } catch (...) {
    result.outcome = Outcome::runtime_error;
    result.message = "harness error: an unknown exception";
  }
  return result;
}

void Checker::check_into(const std::string& program_text, clock_type::time_point started, CheckResult& result) {
  result.program_hash = sha256_hex(program_text);
  result.cache_key = impl_->op_hash.substr(0, 16) + ":" + result.program_hash + ":" + impl_->environment.device;
  auto serve_cached = [&](CheckResult cached) {
    cached.cached = true;
    cached.total_ms = ms_between(started, clock_type::now());
    cached.overhead_ms = cached.total_ms;
    cached.compile_ms = cached.run_ms = cached.time_ms = 0;
    cached.sandbox_wait_ms = cached.spare_wait_ms = cached.child_ms = cached.compare_ms = cached.io_ms = 0;
    result = std::move(cached);
  };
  const auto& store = impl_->options.result_store;
  if (impl_->options.cache) {
    auto hit = impl_->cache.find(result.program_hash);
    if (hit != impl_->cache.end()) return serve_cached(hit->second);
    // Checked before by another Checker (another job, another worker) on this device.
    if (store) {
      if (auto text = store->load(result_store_key(result, impl_->options))) {
        if (auto stored = CheckResult::from_json(*text);
            stored && stored->program_hash == result.program_hash && stored->cache_key == result.cache_key) {
          impl_->cache[result.program_hash] = *stored;
          return serve_cached(*stored);
        }
      }
    }
  }
  result.weak_test = impl_->weak;
  result.environment = impl_->environment;
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) result.environment.load_average = load[0];
  try {
    impl_->run_check(program_text, result);
  } catch (const std::exception& e) {
    // Invariant broken in the parent (not the candidate's doing): report, never throw.
    result.outcome = Outcome::runtime_error;
    result.message = std::string("harness error: ") + e.what();
  }
  result.total_ms = ms_between(started, clock_type::now());
  result.overhead_ms = std::max(0.0, result.total_ms - result.compile_ms - result.run_ms - result.time_ms);
  // The timed runs are over: the worker's pool replaces the children taken, while the caller
  // stores this result and the next candidate is built and verified.
  if (impl_->options.child_pool) impl_->options.child_pool->refill();
  if (impl_->options.cache) {
    impl_->cache[result.program_hash] = result;
    if (store && result_is_storable(result)) {
      try {
        store->save(result_store_key(result, impl_->options), result);
      } catch (const std::exception&) {
        // A store that fails to save costs a later cache miss, never this verdict.
      }
    }
  }
}

void Checker::Impl::run_check(const std::string& program_text, CheckResult& result) {
  if (options.target == "triton") {
    run_triton_check(program_text, result);
    return;
  }
  auto parsed = parse_program(program_text);
  if (!parsed.ok()) {
    fail(result, Outcome::format_error, parsed.error);
    return;
  }
  const KernelProgram& program = parsed.program;
  const bool cuda_source = program.dialect == Dialect::cuda;
  if (cuda_source != (options.target == "cuda")) {
    fail(result, Outcome::format_error,
         cuda_source ? "this is a CUDA program (__global__ kernels) but the target is " + options.target +
                           ": write __kernel functions in OpenCL C, or check it with target cuda"
                     : "this is an OpenCL program (__kernel functions) but the target is cuda: write "
                       "extern \"C\" __global__ kernels (docs/kernel-format.md)");
    return;
  }
  std::vector<LaunchPlan> plans;
  if (!passes_static_rules(program, result) || !plan_launches(program, plans, result)) return;

  std::string error;
  auto wait_started = clock_type::now();
  auto child = sandboxes->take(error);
  result.sandbox_wait_ms = ms_between(wait_started, clock_type::now());
  if (!child) {
    fail(result, Outcome::runtime_error, "harness error: " + error);
    return;
  }
  if (!build(*child, program, result) || !run_trials(*child, &plans, result)) return;
  result.outcome = Outcome::correct;
  if (options.time) time_candidate(*child, &plans[0], result);
}

ProgramLimits Checker::Impl::program_limits() const {
  ProgramLimits limits;
  limits.max_scratch_bytes = options.max_scratch_bytes;
  limits.max_block = max_block;
  return limits;
}

bool Checker::Impl::passes_static_rules(const KernelProgram& program, CheckResult& result) const {
  BufferNames names;
  for (const auto& input : spec.inputs) names.inputs.push_back(input.name);
  names.output_count = trials[0].expected.size();
  if (auto violation = check_static_rules(program, names, program_limits())) return fail_rule(result, *violation);
  return true;
}

// One launch plan per trial: the launch lines evaluated on that trial's shapes.
bool Checker::Impl::plan_launches(const KernelProgram& program, std::vector<LaunchPlan>& plans,
                                  CheckResult& result) const {
  plans.assign(trials.size(), LaunchPlan{});
  for (size_t trial_idx = 0; trial_idx < trials.size(); ++trial_idx) {
    std::vector<PlanOutput> outputs;
    for (const auto& output : trials[trial_idx].expected) outputs.push_back({output.shape, output.dtype});
    if (auto violation = make_launch_plan(program, spec.inputs, trials[trial_idx].shapes, outputs, program_limits(),
                                          plans[trial_idx]))
      return fail_rule(result, *violation);
  }
  return true;
}

bool Checker::Impl::build(SandboxChild& child, const KernelProgram& program, CheckResult& result) {
  json reply;
  std::vector<std::string> kernels;
  for (const auto& kernel : program.kernels) kernels.push_back(kernel.name);
  const bool cuda = options.target == "cuda";
  if (!child.exchange({{"cmd", "build"}, {"source", program.source},
                       {"options", cuda ? std::string() : options.build_options}, {"kernels", kernels}},
                      options.build_timeout_s, "compiling the program", reply, result))
    return false;
  result.compile_ms = reply.value("build_ms", 0.0);
  if (reply.value("ok", false)) return true;
  if (reply.value("kind", "") == "compile_error")
    return fail(result, Outcome::compile_error,
                std::string(cuda ? "NVRTC" : "the OpenCL compiler") + " rejected the program:\n" +
                    compile_log_excerpt(reply.value("log", "")));
  return fail(result, Outcome::runtime_error, "compiling: " + reply.value("message", reply.dump()));
}

// Every trial in order (fresh seeds, the secret seed, extra shapes), the first one twice:
// the second time with outputs and scratch pre-filled with another pattern, so a race or
// a read of memory the program never wrote shows up as a difference. Pipelined: the next
// run goes to the child before this one's outputs are compared (each run writes its own
// output slots), so the child's copies and the parent's comparison overlap; verdicts
// still come in trial order.
// `plans` (one per trial) for kernel programs; nullptr for a Triton module (the runner).
bool Checker::Impl::run_trials(SandboxChild& child, const std::vector<LaunchPlan>* plans, CheckResult& result) {
  struct Step {
    size_t trial;
    const std::vector<int64_t>* outputs;
    int poison;
    std::string what;
    bool determinism;
  };
  std::vector<Step> steps;
  for (size_t trial_idx = 0; trial_idx < trials.size(); ++trial_idx) {
    steps.push_back({trial_idx, &trials[trial_idx].output_offsets, 0xFF, trials[trial_idx].label, false});
    if (trial_idx == 0 && options.determinism)
      steps.push_back({0, &determinism_offsets, 0x7F,
                       "the second run of " + trials[0].label + " (same inputs, different fill of outputs/scratch)",
                       true});
  }
  auto send = [&](const Step& step) {
    json command = plans ? run_command((*plans)[step.trial], step.trial, *step.outputs, step.poison)
                         : runner_io(step.trial, *step.outputs);
    command["cmd"] = "run";
    return child.send(command, step.what, result);
  };
  if (!send(steps[0])) return false;
  for (size_t step_idx = 0; step_idx < steps.size(); ++step_idx) {
    const Step& step = steps[step_idx];
    // A Triton module's first call compiles its kernels: it gets the build's time.
    const double limit_s = !plans && step_idx == 0 ? options.build_timeout_s : options.trial_timeout_s;
    if (!finish_run(child, limit_s, step.what, result)) return false;
    if (step_idx + 1 < steps.size() && !send(steps[step_idx + 1])) return false;
    if (!outputs_match(step.trial, *step.outputs, step.what, result)) {
      if (step.determinism)
        result.message += "; the program is nondeterministic: it races or reads memory it did not write";
      return false;
    }
    if (!step.determinism) ++result.trials_passed;
  }
  return true;
}

// The command that runs the program on one trial's inputs into `output_offsets`, outputs
// and scratch pre-filled with the `poison` byte; the child checks that inputs stayed unchanged.
json Checker::Impl::run_command(const LaunchPlan& plan, size_t trial_idx, const std::vector<int64_t>& output_offsets,
                                int poison) const {
  return {{"plan", json::parse(launch_plan_to_json(plan))},
          {"inputs", trials[trial_idx].input_offsets},
          {"outputs", output_offsets},
          {"poison", poison},
          {"input_region", arena.input_region},
          {"arena_bytes", arena.total}};
}

// Waits for the reply of a run sent earlier: a crash, a timeout, a changed input or (the
// runner) a rule broken is the verdict.
bool Checker::Impl::finish_run(SandboxChild& child, double limit_s, const std::string& what, CheckResult& result) {
  json reply;
  if (!child.receive(limit_s, what, reply, result)) return false;
  if (!reply.value("ok", false)) return reply_failed(reply, what, result);
  result.run_ms += reply.value("run_ms", 0.0);
  result.jit_ms += reply.value("jit_ms", 0.0);
  result.io_ms += reply.value("io_ms", 0.0);
  return true;
}

// Compares every output in the arena with the reference; the first mismatch is the
// verdict (values hidden for the secret-seed trial: they would leak its inputs).
bool Checker::Impl::outputs_match(size_t trial_idx, const std::vector<int64_t>& output_offsets,
                                  const std::string& what, CheckResult& result) const {
  const Trial& trial = trials[trial_idx];
  struct CompareClock {  // the time spent here counts as compare_ms, however it returns
    CheckResult& result;
    clock_type::time_point started = clock_type::now();
    ~CompareClock() { result.compare_ms += ms_between(started, clock_type::now()); }
  } compare_clock{result};
  for (size_t out_idx = 0; out_idx < trial.expected.size(); ++out_idx) {
    const HostTensor& expected = trial.expected[out_idx];
    auto cmp = compare_output(expected, arena.base + output_offsets[out_idx], spec.atol, spec.rtol);
    if (cmp.ok) continue;
    Mismatch mismatch;
    mismatch.trial = trial.label;
    mismatch.shapes = describe_shapes(trial.shapes);
    mismatch.output = output_name(out_idx, trial.expected.size());
    mismatch.index = cmp.first_bad;
    mismatch.coords = index_to_coords(cmp.first_bad, expected.shape);
    mismatch.values_hidden = trial.secret;
    mismatch.expected = trial.secret ? 0 : cmp.expected;
    mismatch.actual = trial.secret ? 0 : cmp.actual;
    mismatch.bad_count = cmp.bad_count;
    mismatch.numel = expected.numel();
    std::string where = mismatch.output + mismatch.coords + " (flat index " + std::to_string(cmp.first_bad) + ")";
    std::string values = trial.secret ? "values hidden for the secret-seed trial"
                                      : "expected " + format_value(cmp.expected) + ", got " + format_value(cmp.actual);
    result.mismatch = mismatch;
    return fail(result, Outcome::wrong_output,
                what + " with shapes " + mismatch.shapes + ": " + where + ": " + values + "; " +
                    std::to_string(cmp.bad_count) + " of " + std::to_string(mismatch.numel) +
                    " elements differ (atol " + format_value(spec.atol) + ", rtol " + format_value(spec.rtol) + ")");
  }
  return true;
}

TimingProtocol Checker::Impl::timing_protocol() const {
  TimingProtocol protocol;
  protocol.max_seconds = window_s();
  protocol.target_iqr = options.target_iqr;
  protocol.attempts = options.timing_attempts;
  protocol.max_contention = options.max_contention;
  protocol.settle_tolerance = options.settle_tolerance;
  return protocol;
}

// The main-shape trials (fresh seeds and the secret seed): the verified input sets that
// timed runs rotate through, each timed output checked afterwards.
std::vector<size_t> Checker::Impl::timing_trials() const {
  std::vector<size_t> out;
  for (size_t trial_idx = 0; trial_idx < trials.size(); ++trial_idx)
    if (trials[trial_idx].shapes == trials[0].shapes) out.push_back(trial_idx);
  return out;
}

json Checker::Impl::timing_knobs() const {
  // On a GPU repeats stop once the spread is under 1% (KernelBench, GPU MODE), or at the budget.
  return {{"max_seconds", window_s()},
          {"target_iqr", gpu ? std::min(options.target_iqr, 0.01) : options.target_iqr},
          {"attempts", options.timing_attempts},
          {"max_contention", options.max_contention},
          {"settle_tolerance", options.settle_tolerance},
          {"input_region", arena.input_region},
          {"arena_bytes", arena.total}};
}

// Times the correct candidate in its child: the verified trial sets rotate through the
// same buffers (new data at the same addresses every visit), and what the timed runs
// wrote comes back to be checked against the reference like any trial. Then the
// baselines, by the same protocol: libtorch eager in this process on a CPU; PyTorch CUDA
// eager and torch.compile in the reference runner on a GPU.
void Checker::Impl::time_candidate(SandboxChild& child, const LaunchPlan* plan, CheckResult& result) {
  // On a CPU the pre-started sandboxes initialise their device and compile a warm-up
  // kernel (~130 ms of CPU on an idle 2-core machine): let them finish before the timed
  // runs so the harness never competes with its own measurement. On a GPU they go on
  // starting (their CPU work does not touch the measurement) and the timed window holds
  // the GPU gate instead (TimedWindow; the wait for it counts as spare_wait).
  if (spare_policy == "settle" && (sandboxes->has_spare() || options.child_pool)) {
    auto spare_started = clock_type::now();
    sandboxes->settle();
    result.spare_wait_ms = ms_between(spare_started, clock_type::now());
  }
  auto timing_started = clock_type::now();
  // torch.compile's runner has compiled the op since create(), autotuning on the GPU: that
  // must be over before anything is timed (its wait is the compile baseline's cost).
  finish_compile_warmup(result);
  auto kernel_started = clock_type::now();
  json time_command = timing_knobs();
  time_command["cmd"] = "time";
  json sets = json::array();
  for (size_t trial_idx : timing_trials()) {
    if (plan) {
      sets.push_back({{"inputs", trials[trial_idx].input_offsets}, {"outputs", trials[trial_idx].output_offsets}});
    } else {
      json io = runner_io(trial_idx, trials[trial_idx].output_offsets);
      sets.push_back({{"inputs", io["inputs"]}, {"outputs", io["outputs"]}});
    }
  }
  time_command["sets"] = sets;
  if (plan) {
    time_command["plan"] = json::parse(launch_plan_to_json(*plan));
    time_command["rotations"] = gpu ? 1 : rotations;  // GPUs flush L2 instead of rotating buffers
  }
  // Warm-up (at most half a window) plus up to `attempts` windows, with slack for slow runs.
  double time_limit_s = window_s() * (std::max(1, options.timing_attempts) + 2) + options.trial_timeout_s * 2;
  json reply;
  {
    auto window_asked = clock_type::now();
    TimedWindow window(options.timing_lock, held_gate(), options.stop_requested);
    if (spare_policy == "gate") result.spare_wait_ms += ms_between(window_asked, clock_type::now());
    if (!child.exchange(time_command, time_limit_s, "timing", reply, result)) return;
  }
  if (!reply.value("ok", false)) {
    reply_failed(reply, "timing", result);
    return;
  }
  if (!timed_outputs_match(result)) return;
  TimingStats kernel = timing_stats_from_json(reply);
  child.quit();
  result.kernel = kernel;
  result.time_kernel_ms = ms_between(kernel_started, clock_type::now());
  if (runner_ref) {
    if (!time_gpu_baselines(result)) return;
  } else {
    auto eager_started = clock_type::now();
    TimedWindow window(options.timing_lock, held_gate(), options.stop_requested);
    // A kernel window others disturbed says the machine is busy now: a disturbed baseline is
    // not re-taken then (it would be disturbed again), only on a later, quieter check.
    const bool reused = baseline_reusable(kernel.disturbed);
    result.baseline = time_baseline(kernel.disturbed);
    if (!reused) result.time_eager_ms = ms_between(eager_started, clock_type::now());
    result.environment.baseline = environment.baseline;  // says so if the caching allocator could not be used
  }
  result.time_ms = ms_between(timing_started, clock_type::now());
  if (kernel.median_ms > 0) {
    result.speedup = result.baseline->median_ms / kernel.median_ms;
    if (result.baseline_compile) result.speedup_vs_compile = result.baseline_compile->median_ms / kernel.median_ms;
  }
  result.suspicious = result.speedup > options.suspicious_speedup;
  if (result.suspicious)
    result.message = "speedup " + format_value(result.speedup) + "x is above the sanity bound " +
                     format_value(options.suspicious_speedup) + "x: flagged for review";
}

// What the timed runs wrote must match the reference too: a kernel that caches results,
// skips work once it is being timed, or races only under load is caught here.
bool Checker::Impl::timed_outputs_match(CheckResult& result) const {
  for (size_t trial_idx : timing_trials()) {
    const std::string what = "a timed run on the inputs of " + trials[trial_idx].label;
    if (!outputs_match(trial_idx, trials[trial_idx].output_offsets, what, result)) {
      result.message += "; outputs of timed runs must match the reference like verified ones (a result cached "
                        "across calls, or work skipped while timed, shows here)";
      return false;
    }
  }
  return true;
}

// PyTorch CUDA eager and torch.compile of the op, timed once per op over the same verified
// sets and with the same protocol as candidates: eager by the reference runner, torch.compile
// by its own runner, which has compiled the op since create() (finish_compile_warmup).
bool Checker::Impl::time_gpu_baselines(CheckResult& result) {
  json sets = json::array();
  for (size_t trial_idx : timing_trials()) {
    json io = runner_io(trial_idx, trials[trial_idx].output_offsets);
    sets.push_back({{"inputs", io["inputs"]}, {"outputs", io["outputs"]}});
  }
  for (const char* mode : {"eager", "compile"}) {
    const bool compile = std::string(mode) == "compile";
    if (compile && !options.compile_baseline) break;
    std::optional<TimingStats>& stats = compile ? baseline_compile : baseline;
    if (stats) continue;
    auto started = clock_type::now();
    if (compile && !finish_compile_warmup(result)) {
      // The compile baseline is a bonus: say why it is missing (once), keep the verdict.
      if (!compile_failure.empty()) environment.baseline += "; torch.compile failed: " + head_and_tail(compile_failure, 160, 500);
      compile_failure.clear();
      break;
    }
    SandboxChild& runner = compile ? *compile_reference : *gpu_reference;
    json command = timing_knobs();
    command["cmd"] = "time";
    command["mode"] = mode;
    command["sets"] = sets;
    CheckResult scratch;
    json reply;
    // The first call compiles when nothing has yet (outside the timing lock, never timed).
    bool ready = true;
    if (compile) {
      json warm = runner_io(timing_trials().front(), trials[timing_trials().front()].output_offsets);
      warm["cmd"] = "run";
      warm["mode"] = mode;
      ready = runner.exchange(warm, 300 + options.trial_timeout_s, "compiling PyTorch compile", reply, scratch) &&
              reply.value("ok", false);
    }
    double limit_s = window_s() * 4 + options.trial_timeout_s * 2 + (compile ? 300 : 0);
    if (ready) {
      TimedWindow window(options.timing_lock, held_gate(), options.stop_requested);
      ready = runner.exchange(command, limit_s, std::string("timing PyTorch ") + mode, reply, scratch) &&
              reply.value("ok", false);
    }
    (compile ? result.time_compile_ms : result.time_eager_ms) += ms_between(started, clock_type::now());
    if (!ready) {
      std::string why = scratch.message.empty() ? reply.value("message", reply.dump()) : scratch.message;
      if (compile) {
        environment.baseline += "; torch.compile failed: " + head_and_tail(why, 160, 500);
        compile_reference.reset();
        break;
      }
      fail(result, Outcome::runtime_error, "harness error: timing the eager baseline: " + why);
      return false;
    }
    stats = timing_stats_from_json(reply);
    if (reply.contains("clocks")) environment.gpu_clocks = reply["clocks"].dump();
    if (compile) compile_reference->quit();  // done with it: its process and GPU memory go
  }
  result.baseline = baseline;
  result.baseline_compile = baseline_compile;
  result.environment.baseline = environment.baseline;
  result.environment.gpu_clocks = environment.gpu_clocks;
  return true;
}

// ------------------------------------------------------ the triton target

void Checker::Impl::run_triton_check(const std::string& program_text, CheckResult& result) {
  std::string error;
  auto wait_started = clock_type::now();
  std::unique_ptr<SandboxChild> child;
  bool built = false;
  if (find_prefetched(result.program_hash) != prefetched.end()) {
    if (!take_prepared(result.program_hash, child, result)) return;  // its build failed: the verdict
    built = child != nullptr;
  }
  if (!child) child = sandboxes->take(error);
  result.sandbox_wait_ms = ms_between(wait_started, clock_type::now());
  if (!child) {
    fail(result, Outcome::runtime_error, "harness error: " + error);
    return;
  }
  if (!built && !build_triton(*child, strip_fence(program_text), result)) return;
  if (!run_trials(*child, nullptr, result)) return;
  result.outcome = Outcome::correct;
  if (options.time) time_candidate(*child, nullptr, result);
}

bool Checker::Impl::build_triton(SandboxChild& child, const std::string& source, CheckResult& result) {
  return child.send({{"cmd", "build"}, {"source", source}}, "importing the module", result) &&
         build_reply(child, result);
}

bool Checker::Impl::build_reply(SandboxChild& child, CheckResult& result) {
  json reply;
  if (!child.receive(options.build_timeout_s, "importing the module", reply, result)) return false;
  result.compile_ms = reply.value("build_ms", 0.0);
  if (reply.value("ok", false)) return true;
  return reply_failed(reply, "importing the module", result);
}

// The prefetched child of this program: its build's reply is this check's build (a failure
// is the verdict: false), then its prepare's. A prepare that crashed or hung (the candidate's
// forward on uninitialised inputs) costs the child, not the verdict: `child` comes back
// null and the check starts over in a fresh one.
bool Checker::Impl::take_prepared(const std::string& program_hash, std::unique_ptr<SandboxChild>& child,
                                  CheckResult& result) {
  auto entry = find_prefetched(program_hash);
  std::unique_ptr<SandboxChild> prepared = std::move(entry->child);
  prefetched.erase(entry);
  if (!build_reply(*prepared, result)) return false;
  json reply;
  CheckResult scratch;
  if (!prepared->receive(std::min(options.build_timeout_s, 120.0), "compiling the kernels ahead", reply, scratch) ||
      !reply.value("ok", false)) {
    log_warn("checker", "a prefetched candidate's prepare failed; checking it in a fresh child",
             {{"program", program_hash.substr(0, 16)},
              {"error", scratch.message.empty() ? reply.dump().substr(0, 300) : scratch.message.substr(0, 300)}});
    result.compile_ms = 0;
    return true;
  }
  result.prepared_ms = reply.value("prepare_ms", 0.0);
  child = std::move(prepared);
  return true;
}

// Every distinct set of input shapes the trials run (main, extra, unpublished), as the
// runner's prepare takes them: one compile per Triton specialisation they lead to.
json Checker::Impl::prepare_shapes() const {
  json sets = json::array();
  std::set<std::string> seen;
  for (const Trial& trial : trials) {
    json inputs = json::array();
    for (const HostTensor& input : trial.inputs)
      inputs.push_back({{"shape", input.shape}, {"dtype", spec::dtype_name(input.dtype)}});
    if (seen.insert(inputs.dump()).second) sets.push_back(std::move(inputs));
  }
  return sets;
}

// The runner's view of one trial: every input and output with its arena offset, shape and dtype.
json Checker::Impl::runner_io(size_t trial_idx, const std::vector<int64_t>& output_offsets) const {
  const Trial& trial = trials[trial_idx];
  json inputs = json::array(), outputs = json::array();
  for (size_t input_idx = 0; input_idx < trial.inputs.size(); ++input_idx)
    inputs.push_back({{"name", spec.inputs[input_idx].name},
                      {"offset", trial.input_offsets[input_idx]},
                      {"shape", trial.inputs[input_idx].shape},
                      {"dtype", spec::dtype_name(trial.inputs[input_idx].dtype)}});
  for (size_t out_idx = 0; out_idx < trial.expected.size(); ++out_idx)
    outputs.push_back({{"offset", output_offsets[out_idx]},
                       {"shape", trial.expected[out_idx].shape},
                       {"dtype", spec::dtype_name(trial.expected[out_idx].dtype)}});
  return {{"inputs", inputs}, {"outputs", outputs}, {"input_region", arena.input_region}, {"arena_bytes", arena.total}};
}

// A runner's {"ok": false} reply as the verdict: its rule, a compile error (Triton compiles
// on first launch), an input it changed, or a runtime error.
bool Checker::Impl::reply_failed(const json& reply, const std::string& what, CheckResult& result) {
  const std::string kind = reply.value("kind", "");
  const std::string message = reply.value("message", "");
  if (kind == "rule_violation") {
    result.rule = reply.value("rule", "");
    return fail(result, Outcome::rule_violation, result.rule + ": " + message);
  }
  if (kind == "compile_error")
    return fail(result, Outcome::compile_error, what + ": " + compile_log_excerpt(reply.value("log", message)));
  if (kind == "input_mutated") {
    result.rule = "input_mutated";
    return fail(result, Outcome::rule_violation,
                "input_mutated: " + what + " modified input '" + reply.value("buffer", "?") + "' (first changed byte " +
                    std::to_string(reply.value("byte", int64_t{0})) + "); inputs are read-only, write results to the outputs");
  }
  return fail(result, Outcome::runtime_error, what + ": " + (message.empty() ? reply.dump() : message));
}

// The eager baseline is timed once per op and reused; a disturbed measurement (the
// machine was busy) is re-taken on later checks, up to 3 times, keeping the quietest, but
// only when the check's own kernel window was quiet (`busy_now` false): under sustained load
// every re-take is disturbed too and costs seconds per candidate for nothing.
bool Checker::Impl::baseline_reusable(bool busy_now) const {
  return baseline && (!baseline->disturbed || baseline_timings >= 3 || busy_now);
}

TimingStats Checker::Impl::time_baseline(bool busy_now) {
  if (baseline_reusable(busy_now)) return *baseline;
  std::vector<std::vector<HostTensor>> sets(static_cast<size_t>(rotations), trials[0].inputs);
  auto timing = reference->time_forward(sets, environment.compute_units, timing_protocol(), options.baseline_allocator);
  ++baseline_timings;
  if (options.baseline_allocator == BaselineAllocator::caching && !timing.caching_allocator)
    environment.baseline = cpu_baseline_description(environment.compute_units, false) +
                           "; the caching allocator was asked for, but libtorch kept a CPU allocator set with a "
                           "higher priority";
  const TimingRecord& record = timing.record;
  TimingStats stats;
  stats.median_ms = record.median_ms;
  stats.min_ms = record.min_ms;
  stats.iqr_ms = record.iqr_ms;
  stats.runs = record.runs;
  stats.rotations = rotations;
  stats.warmup_runs = record.warmup_runs;
  stats.settled = record.settled;
  stats.attempts = record.attempts;
  stats.others_cores = record.others_cores;
  stats.disturbed = record.disturbed;
  if (!baseline || stats.others_cores < baseline->others_cores) baseline = stats;
  return *baseline;
}

CheckResult check_candidate(const OpSpec& spec, const std::string& program_text, const CheckOptions& options) {
  std::string error;
  auto checker = Checker::create(spec, options, error);
  if (!checker) {
    CheckResult result;
    result.outcome = Outcome::runtime_error;
    result.message = "harness error: " + error;
    result.program_hash = sha256_hex(program_text);
    return result;
  }
  return checker->check(program_text);
}

}  // namespace kforge::harness
