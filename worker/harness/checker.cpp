// The checker pipeline: format -> rules -> compile -> trials (sandboxed) -> compare
// -> timing. The parent (this file) holds the trusted state: reference outputs,
// pristine inputs in a memfd arena the child maps read-only, and every verdict.
// Test: ctest -R 'harness_(checker|adversarial)'.
#include "worker/harness/checker.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/sha256.h"

#include "worker/harness/compare.h"
#include "worker/harness/program.h"
#include "worker/harness/reference.h"
#include "worker/harness/rules.h"
#include "worker/harness/sandbox_process.h"
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

std::string describe_shapes(const ShapeSet& shapes) {
  std::string out;
  for (const auto& [name, shape] : shapes) out += (out.empty() ? "" : " ") + name + "=" + shape_to_string(shape);
  return out;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream out;
  out.precision(7);
  out << v;
  return out.str();
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

// One correctness trial: its shapes, inputs and reference outputs, and where they live in the arena.
struct Trial {
  std::string label;
  bool secret = false;
  ShapeSet shapes;
  std::vector<HostTensor> inputs;
  std::vector<HostTensor> expected;
  std::vector<int64_t> input_offsets;
  std::vector<int64_t> output_offsets;
};

// The memfd shared with sandbox children: [inputs of every trial | output slots].
struct Arena {
  int fd = -1;
  uint8_t* base = nullptr;
  int64_t input_region = 0;
  int64_t total = 0;
  ~Arena() {
    if (base) munmap(base, static_cast<size_t>(total));
    if (fd >= 0) close(fd);
  }
};

// A started sandbox child and its ready line.
struct SandboxChild {
  std::unique_ptr<SandboxProcess> process;
  bool ready = false;
  json device;
};

}  // namespace

std::string outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::format_error: return "format_error";
    case Outcome::rule_violation: return "rule_violation";
    case Outcome::compile_error: return "compile_error";
    case Outcome::runtime_error: return "runtime_error";
    case Outcome::timeout: return "timeout";
    case Outcome::wrong_output: return "wrong_output";
    case Outcome::correct: return "correct";
  }
  return "?";
}

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
  std::optional<SandboxChild> spare;

  std::unique_ptr<SandboxProcess> spawn(std::string& error) {
    SandboxLimits limits;
    limits.cpu_seconds = options.sandbox_cpu_s;
    limits.address_space_bytes = options.sandbox_memory_bytes;
    std::string binary = options.sandbox_binary.empty() ? helper_binary_path("kforge-sandbox") : options.sandbox_binary;
    return SandboxProcess::start({binary, "--device", options.device}, limits, arena.fd, error);
  }

  // Waits for the child's ready line (OpenCL initialised, device chosen).
  bool await_ready(SandboxChild& child, std::string& error) {
    if (child.ready) return true;
    std::string line;
    if (child.process->read_line(line, clock_type::now() + std::chrono::seconds(60)) != ReadStatus::line) {
      child.process->kill_now();
      error = "kforge-sandbox did not start: " + child.process->describe_exit() + " " + child.process->stderr_tail(500);
      return false;
    }
    try {
      auto ready = json::parse(line);
      if (!ready.value("ready", false)) {
        error = "kforge-sandbox: " + ready.value("message", line);
        return false;
      }
      child.device = ready["device"];
    } catch (const std::exception& e) {
      error = "kforge-sandbox sent an invalid ready line: " + line.substr(0, 200);
      return false;
    }
    child.ready = true;
    return true;
  }

  // Takes the pre-started child (or starts one) and pre-starts the next, so a
  // candidate never waits for process start-up and OpenCL initialisation.
  std::optional<SandboxChild> take_sandbox(std::string& error) {
    std::optional<SandboxChild> child;
    if (spare) {
      child = std::move(spare);
      spare.reset();
    } else {
      child.emplace();
      child->process = spawn(error);
      if (!child->process) return std::nullopt;
    }
    SandboxChild next;
    next.process = spawn(error);
    if (next.process) spare = std::move(next);
    if (!await_ready(*child, error)) return std::nullopt;
    return child;
  }

  bool build_arena(std::string& error) {
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
    arena.fd = memfd_create("kforge-arena", MFD_CLOEXEC);
    if (arena.fd < 0 || ftruncate(arena.fd, arena.total) != 0) {
      error = std::string("memfd arena: ") + std::strerror(errno);
      return false;
    }
    void* map = mmap(nullptr, static_cast<size_t>(arena.total), PROT_READ | PROT_WRITE, MAP_SHARED, arena.fd, 0);
    if (map == MAP_FAILED) {
      error = std::string("mmap arena: ") + std::strerror(errno);
      return false;
    }
    arena.base = static_cast<uint8_t*>(map);
    for (const auto& trial : trials)
      for (size_t input_idx = 0; input_idx < trial.inputs.size(); ++input_idx)
        std::memcpy(arena.base + trial.input_offsets[input_idx], trial.inputs[input_idx].data.data(),
                    trial.inputs[input_idx].data.size());
    return true;
  }

  std::vector<PlanOutput> plan_outputs(const Trial& trial) const {
    std::vector<PlanOutput> outputs;
    for (const auto& output : trial.expected) outputs.push_back({output.shape, output.dtype});
    return outputs;
  }

  TimingProtocol timing_protocol() const {
    TimingProtocol protocol;
    protocol.max_seconds = options.time_budget_s;
    protocol.target_iqr = options.target_iqr;
    protocol.attempts = options.timing_attempts;
    protocol.max_contention = options.max_contention;
    protocol.settle_tolerance = options.settle_tolerance;
    return protocol;
  }

  // The eager baseline is timed once per op and reused; a disturbed measurement (the
  // machine was busy) is re-taken on later checks, up to 3 times, keeping the quietest.
  TimingStats time_baseline() {
    if (baseline && (!baseline->disturbed || baseline_timings >= 3)) return *baseline;
    std::vector<std::vector<HostTensor>> sets(static_cast<size_t>(rotations), trials[0].inputs);
    auto timing = reference->time_forward(sets, environment.compute_units, timing_protocol());
    ++baseline_timings;
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

  CheckResult run_check(const std::string& program_text, CheckResult& result, clock_type::time_point started);
};

Checker::Checker() : impl_(std::make_unique<Impl>()) {}
Checker::~Checker() = default;

bool Checker::weak_test() const { return impl_->weak; }

std::vector<std::vector<int64_t>> Checker::output_shapes() const {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& output : impl_->trials[0].expected) shapes.push_back(output.shape);
  return shapes;
}

std::unique_ptr<Checker> Checker::create(const OpSpec& spec, const CheckOptions& options, std::string& error) {
  std::unique_ptr<Checker> checker(new Checker());
  Impl& impl = *checker->impl_;
  impl.spec = spec;
  impl.options = options;
  impl.reference = Reference::compile(spec, error);
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
  ShapeSet main = spec.main_shapes();
  for (int trial_idx = 0; trial_idx < std::max(1, options.trials); ++trial_idx)
    impl.trials.push_back({"trial " + std::to_string(trial_idx + 1) + " of " + std::to_string(std::max(1, options.trials)),
                           false, main, make_inputs(spec, main, fresh + 0x9E3779B97F4A7C15ull * (trial_idx + 1)), {}, {}, {}});
  impl.trials.push_back({"secret-seed trial", true, main,
                         make_inputs(spec, main, std::hash<std::string>{}(impl.op_hash) ^ secret), {}, {}, {}});
  if (options.check_extra_shapes)
    for (size_t set_idx = 0; set_idx < spec.extra_shapes.size(); ++set_idx)
      impl.trials.push_back({"extra shapes " + std::to_string(set_idx + 1), false, spec.extra_shapes[set_idx],
                             make_inputs(spec, spec.extra_shapes[set_idx], fresh ^ (0xABCDEFull + set_idx)), {}, {}, {}});
  for (auto& trial : impl.trials) {
    auto run = impl.reference->run(trial.inputs);
    if (!run.error.empty()) {
      error = "the op's reference fails on shapes " + describe_shapes(trial.shapes) + ": " + run.error;
      return nullptr;
    }
    trial.expected = std::move(run.outputs);
    if (trial.expected.size() != impl.trials[0].expected.size()) {
      error = "the op's reference returns a different number of outputs for shapes " + describe_shapes(trial.shapes);
      return nullptr;
    }
  }
  impl.weak = std::all_of(impl.trials[0].expected.begin(), impl.trials[0].expected.end(),
                          [](const HostTensor& t) { return near_constant(t); });
  if (!impl.build_arena(error)) return nullptr;
  // Rotate through enough input/output sets to exceed twice the last-level cache.
  int64_t set_bytes = 0;
  for (const auto& t : impl.trials[0].inputs) set_bytes += static_cast<int64_t>(t.data.size());
  for (const auto& t : impl.trials[0].expected) set_bytes += static_cast<int64_t>(t.data.size());
  int64_t llc = options.llc_bytes > 0 ? options.llc_bytes : last_level_cache_bytes();
  impl.rotations = static_cast<int>(std::clamp<int64_t>((2 * llc + set_bytes - 1) / std::max<int64_t>(set_bytes, 1), 1, 16));
  while (impl.rotations > 1 && impl.rotations * set_bytes > (int64_t{2} << 30)) --impl.rotations;
  // Start the first sandbox now: it tells us the device, and it is ready for the first candidate.
  SandboxChild first;
  first.process = impl.spawn(error);
  if (!first.process || !impl.await_ready(first, error)) return nullptr;
  const auto& device = first.device;
  impl.environment.device = device.value("name", "");
  impl.environment.platform = device.value("platform", "");
  impl.environment.device_version = device.value("version", "");
  impl.environment.driver_version = device.value("driver", "");
  impl.environment.opencl_c_version = device.value("c_version", "");
  impl.environment.compute_units = device.value("compute_units", 1);
  impl.environment.torch_version = torch_version_string();
  impl.environment.torch_threads = impl.environment.compute_units;
  impl.environment.blas = blas_description();
  impl.max_block = device.value("max_work_group", int64_t{1024});
  impl.spare = std::move(first);
  return checker;
}

CheckResult Checker::check(const std::string& program_text) {
  auto started = clock_type::now();
  CheckResult result;
  result.program_hash = sha256_hex(program_text);
  result.cache_key = impl_->op_hash.substr(0, 16) + ":" + result.program_hash + ":" + impl_->environment.device;
  auto serve_cached = [&](CheckResult cached) {
    cached.cached = true;
    cached.total_ms = ms_between(started, clock_type::now());
    cached.overhead_ms = cached.total_ms;
    cached.compile_ms = cached.run_ms = cached.time_ms = 0;
    cached.sandbox_wait_ms = cached.spare_wait_ms = cached.child_ms = 0;
    return cached;
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
    impl_->run_check(program_text, result, started);
  } catch (const std::exception& e) {
    // Invariant broken in the parent (not the candidate's doing): report, never throw.
    result.outcome = Outcome::runtime_error;
    result.message = std::string("harness error: ") + e.what();
  }
  result.total_ms = ms_between(started, clock_type::now());
  result.overhead_ms = std::max(0.0, result.total_ms - result.compile_ms - result.run_ms - result.time_ms);
  if (impl_->options.cache) {
    impl_->cache[result.program_hash] = result;
    if (store && result_is_storable(result))
      store->save(result_store_key(result, impl_->options), result);
  }
  return result;
}

bool result_is_storable(const CheckResult& result) {
  if (result.outcome == Outcome::timeout) return false;
  return result.message.rfind("harness error", 0) != 0;
}

std::string result_store_key(const CheckResult& result, const CheckOptions& options) {
  // Bump the harness version when a change makes earlier verdicts or timings stale.
  std::string fingerprint = "harness=2;trials=" + std::to_string(options.trials) +
                            ";extra=" + std::to_string(options.check_extra_shapes) +
                            ";determinism=" + std::to_string(options.determinism) +
                            ";time=" + std::to_string(options.time) + ";build=" + options.build_options;
  return result.cache_key + ":" + sha256_hex(fingerprint).substr(0, 16);
}

CheckResult Checker::Impl::run_check(const std::string& program_text, CheckResult& result,
                                     clock_type::time_point started) {
  auto finish = [&](Outcome outcome, std::string message) {
    result.outcome = outcome;
    result.message = std::move(message);
    return result;
  };
  auto parsed = parse_program(program_text);
  if (!parsed.ok()) return finish(Outcome::format_error, parsed.error);
  const KernelProgram& program = parsed.program;
  BufferNames names;
  for (const auto& input : spec.inputs) names.inputs.push_back(input.name);
  names.output_count = trials[0].expected.size();
  ProgramLimits limits;
  limits.max_scratch_bytes = options.max_scratch_bytes;
  limits.max_block = max_block;
  if (auto violation = check_static_rules(program, names, limits)) {
    result.rule = violation->rule;
    return finish(Outcome::rule_violation, violation->rule + ": " + violation->message);
  }
  std::vector<LaunchPlan> plans(trials.size());
  for (size_t trial_idx = 0; trial_idx < trials.size(); ++trial_idx) {
    if (auto violation = make_launch_plan(program, spec.inputs, trials[trial_idx].shapes,
                                          plan_outputs(trials[trial_idx]), limits, plans[trial_idx])) {
      result.rule = violation->rule;
      return finish(Outcome::rule_violation, violation->rule + ": " + violation->message);
    }
  }

  std::string error;
  auto wait_started = clock_type::now();
  auto child = take_sandbox(error);
  result.sandbox_wait_ms = ms_between(wait_started, clock_type::now());
  if (!child) return finish(Outcome::runtime_error, "harness error: " + error);
  SandboxProcess& proc = *child->process;
  // Sends one command and waits for its reply line; a dead or silent child becomes an outcome.
  auto exchange = [&](const json& command, double timeout_s, const std::string& what, json& reply) -> bool {
    if (!proc.write_all(command.dump() + "\n")) {
      proc.wait_exit(clock_type::now() + std::chrono::seconds(2));
      finish(Outcome::runtime_error, what + ": the sandbox process died: " + proc.describe_exit());
      return false;
    }
    std::string line;
    auto sent = clock_type::now();
    auto deadline = sent + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
    ReadStatus status = proc.read_line(line, deadline);
    result.child_ms += ms_between(sent, clock_type::now());
    if (status == ReadStatus::timeout) {
      proc.kill_now();
      finish(Outcome::timeout, what + " did not finish within " + format_value(timeout_s) +
                                   " s (an endless loop, a deadlock, or far too slow)");
      return false;
    }
    if (status == ReadStatus::eof) {
      proc.wait_exit(clock_type::now() + std::chrono::seconds(5));
      proc.kill_now();
      if (proc.cpu_limit_hit()) {
        finish(Outcome::timeout, what + " exceeded the CPU-time limit (an endless loop?)");
      } else {
        std::string tail = proc.stderr_tail(400);
        finish(Outcome::runtime_error, what + " crashed: " + proc.describe_exit() + (tail.empty() ? "" : ": " + tail));
      }
      return false;
    }
    try {
      reply = json::parse(line);
    } catch (const std::exception&) {
      finish(Outcome::runtime_error, what + ": the sandbox sent garbage: " + line.substr(0, 200));
      return false;
    }
    return true;
  };

  json reply;
  if (!exchange({{"cmd", "build"}, {"source", program.source}, {"options", options.build_options}},
                options.build_timeout_s, "compiling the program", reply))
    return result;
  result.compile_ms = reply.value("build_ms", 0.0);
  if (!reply.value("ok", false)) {
    if (reply.value("kind", "") == "compile_error")
      return finish(Outcome::compile_error, "the OpenCL compiler rejected the program:\n" +
                                                compile_log_excerpt(reply.value("log", "")));
    return finish(Outcome::runtime_error, "compiling: " + reply.value("message", reply.dump()));
  }

  auto run_once = [&](size_t trial_idx, const std::vector<int64_t>& output_offsets, int poison,
                      const std::string& what) -> bool {
    const Trial& trial = trials[trial_idx];
    json command{{"cmd", "run"},          {"plan", json::parse(launch_plan_to_json(plans[trial_idx]))},
                 {"inputs", trial.input_offsets}, {"outputs", output_offsets},
                 {"poison", poison},      {"input_region", arena.input_region},
                 {"arena_bytes", arena.total}};
    json run_reply;
    if (!exchange(command, options.trial_timeout_s, what, run_reply)) return false;
    if (!run_reply.value("ok", false)) {
      std::string kind = run_reply.value("kind", "");
      if (kind == "input_mutated") {
        result.rule = "input_mutated";
        finish(Outcome::rule_violation, "input_mutated: " + what + " modified input '" +
                                            run_reply.value("buffer", "?") + "' (first changed byte " +
                                            std::to_string(run_reply.value("byte", int64_t{0})) +
                                            "); inputs are read-only, write results to the outputs");
      } else {
        finish(Outcome::runtime_error, what + ": " + run_reply.value("message", run_reply.dump()));
      }
      return false;
    }
    result.run_ms += run_reply.value("run_ms", 0.0);
    return true;
  };
  auto compare_all = [&](size_t trial_idx, const std::vector<int64_t>& output_offsets, const std::string& what) -> bool {
    const Trial& trial = trials[trial_idx];
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
      finish(Outcome::wrong_output, what + " with shapes " + mismatch.shapes + ": " + where + ": " + values + "; " +
                                        std::to_string(cmp.bad_count) + " of " + std::to_string(mismatch.numel) +
                                        " elements differ (atol " + format_value(spec.atol) + ", rtol " +
                                        format_value(spec.rtol) + ")");
      return false;
    }
    return true;
  };

  for (size_t trial_idx = 0; trial_idx < trials.size(); ++trial_idx) {
    const Trial& trial = trials[trial_idx];
    if (!run_once(trial_idx, trial.output_offsets, 0xFF, trial.label)) return result;
    if (!compare_all(trial_idx, trial.output_offsets, trial.label)) return result;
    if (trial_idx == 0 && options.determinism) {
      // Same inputs, outputs and scratch pre-filled with another pattern: a race or a
      // read of memory the program never wrote shows up as a difference.
      const std::string what = "the second run of " + trial.label + " (same inputs, different fill of outputs/scratch)";
      if (!run_once(0, determinism_offsets, 0x7F, what)) return result;
      if (!compare_all(0, determinism_offsets, what)) {
        result.message += "; the program is nondeterministic: it races or reads memory it did not write";
        return result;
      }
    }
    ++result.trials_passed;
  }
  result.outcome = Outcome::correct;
  if (!options.time) return result;

  // The pre-started next sandbox initialises OpenCL and compiles a warm-up kernel
  // (~130 ms of CPU on an idle 2-core machine): let it finish before the timed runs
  // so the harness never competes with its own measurement.
  if (spare) {
    auto spare_started = clock_type::now();
    std::string spare_error;
    if (!await_ready(*spare, spare_error)) spare.reset();
    result.spare_wait_ms = ms_between(spare_started, clock_type::now());
  }
  auto timing_started = clock_type::now();
  json time_command{{"cmd", "time"},
                    {"plan", json::parse(launch_plan_to_json(plans[0]))},
                    {"inputs", trials[0].input_offsets},
                    {"rotations", rotations},
                    {"max_seconds", options.time_budget_s},
                    {"target_iqr", options.target_iqr},
                    {"attempts", options.timing_attempts},
                    {"max_contention", options.max_contention},
                    {"settle_tolerance", options.settle_tolerance},
                    {"input_region", arena.input_region},
                    {"arena_bytes", arena.total}};
  // Warm-up (at most half a window) plus up to `attempts` windows, with slack for slow runs.
  double time_limit_s = options.time_budget_s * (std::max(1, options.timing_attempts) + 2) + options.trial_timeout_s * 2;
  if (!exchange(time_command, time_limit_s, "timing", reply)) return result;
  if (!reply.value("ok", false)) return finish(Outcome::runtime_error, "timing: " + reply.value("message", reply.dump()));
  TimingStats kernel;
  kernel.median_ms = reply.value("median_ms", 0.0);
  kernel.min_ms = reply.value("min_ms", 0.0);
  kernel.iqr_ms = reply.value("iqr_ms", 0.0);
  kernel.runs = reply.value("runs", 0);
  kernel.kernel_median_ms = reply.value("kernel_median_ms", 0.0);
  kernel.rotations = reply.value("rotations", 1);
  kernel.warmup_runs = reply.value("warmup_runs", 0);
  kernel.settled = reply.value("settled", false);
  kernel.attempts = reply.value("attempts", 1);
  kernel.others_cores = reply.value("others_cores", 0.0);
  kernel.disturbed = reply.value("disturbed", false);
  proc.write_all("{\"cmd\":\"quit\"}\n");
  result.kernel = kernel;
  result.baseline = time_baseline();
  result.time_ms = ms_between(timing_started, clock_type::now());
  if (kernel.median_ms > 0) result.speedup = result.baseline->median_ms / kernel.median_ms;
  result.suspicious = result.speedup > options.suspicious_speedup;
  if (result.suspicious)
    result.message = "speedup " + format_value(result.speedup) + "x is above the sanity bound " +
                     format_value(options.suspicious_speedup) + "x: flagged for review";
  (void)started;
  return result;
}

std::string CheckResult::to_json() const {
  json out;
  out["outcome"] = outcome_name(outcome);
  out["message"] = message;
  if (!rule.empty()) out["rule"] = rule;
  if (mismatch) {
    json m{{"trial", mismatch->trial}, {"shapes", mismatch->shapes}, {"output", mismatch->output},
           {"index", mismatch->index}, {"coords", mismatch->coords}, {"bad_count", mismatch->bad_count},
           {"numel", mismatch->numel}, {"values_hidden", mismatch->values_hidden}};
    if (!mismatch->values_hidden) {
      // JSON has no NaN/Inf: write them as strings.
      auto value = [](double v) -> json { return std::isfinite(v) ? json(v) : json(format_value(v)); };
      m["expected"] = value(mismatch->expected);
      m["actual"] = value(mismatch->actual);
    }
    out["mismatch"] = m;
  }
  auto timing = [](const TimingStats& t) {
    return json{{"median_ms", t.median_ms},       {"min_ms", t.min_ms},
                {"iqr_ms", t.iqr_ms},             {"runs", t.runs},
                {"rotations", t.rotations},       {"kernel_median_ms", t.kernel_median_ms},
                {"warmup_runs", t.warmup_runs},   {"settled", t.settled},
                {"attempts", t.attempts},         {"others_cores", t.others_cores},
                {"disturbed", t.disturbed}};
  };
  if (kernel) out["kernel"] = timing(*kernel);
  if (baseline) out["baseline"] = timing(*baseline);
  if (kernel && baseline) {
    out["speedup"] = speedup;
    out["suspicious"] = suspicious;
  }
  out["weak_test"] = weak_test;
  out["cached"] = cached;
  out["trials_passed"] = trials_passed;
  out["program_hash"] = program_hash;
  out["cache_key"] = cache_key;
  out["environment"] = {{"device", environment.device},
                        {"platform", environment.platform},
                        {"device_version", environment.device_version},
                        {"driver_version", environment.driver_version},
                        {"opencl_c_version", environment.opencl_c_version},
                        {"compute_units", environment.compute_units},
                        {"torch_version", environment.torch_version},
                        {"torch_threads", environment.torch_threads},
                        {"blas", environment.blas},
                        {"load_average", environment.load_average}};
  out["phases_ms"] = {{"compile", compile_ms},   {"run", run_ms},     {"time", time_ms},
                      {"overhead", overhead_ms}, {"total", total_ms}, {"sandbox_wait", sandbox_wait_ms},
                      {"spare_wait", spare_wait_ms}, {"child", child_ms}};
  return out.dump();
}

std::optional<CheckResult> CheckResult::from_json(const std::string& text) {
  json in = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!in.is_object() || !in.contains("outcome")) return std::nullopt;
  try {
    CheckResult out;
    static const Outcome outcomes[] = {Outcome::format_error, Outcome::rule_violation, Outcome::compile_error,
                                       Outcome::runtime_error, Outcome::timeout, Outcome::wrong_output,
                                       Outcome::correct};
    bool known = false;
    for (Outcome outcome : outcomes)
      if (outcome_name(outcome) == in["outcome"].get<std::string>()) {
        out.outcome = outcome;
        known = true;
      }
    if (!known) return std::nullopt;
    out.message = in.value("message", "");
    out.rule = in.value("rule", "");
    if (in.contains("mismatch")) {
      const json& m = in["mismatch"];
      Mismatch mismatch;
      mismatch.trial = m.value("trial", "");
      mismatch.shapes = m.value("shapes", "");
      mismatch.output = m.value("output", "");
      mismatch.index = m.value("index", int64_t{-1});
      mismatch.coords = m.value("coords", "");
      mismatch.bad_count = m.value("bad_count", int64_t{0});
      mismatch.numel = m.value("numel", int64_t{0});
      mismatch.values_hidden = m.value("values_hidden", false);
      // NaN/Inf travel as strings.
      auto value = [](const json& v) { return v.is_number() ? v.get<double>() : std::strtod(v.get<std::string>().c_str(), nullptr); };
      if (m.contains("expected")) mismatch.expected = value(m["expected"]);
      if (m.contains("actual")) mismatch.actual = value(m["actual"]);
      out.mismatch = mismatch;
    }
    auto timing = [](const json& t) {
      TimingStats stats;
      stats.median_ms = t.value("median_ms", 0.0);
      stats.min_ms = t.value("min_ms", 0.0);
      stats.iqr_ms = t.value("iqr_ms", 0.0);
      stats.runs = t.value("runs", 0);
      stats.rotations = t.value("rotations", 1);
      stats.kernel_median_ms = t.value("kernel_median_ms", 0.0);
      stats.warmup_runs = t.value("warmup_runs", 0);
      stats.settled = t.value("settled", false);
      stats.attempts = t.value("attempts", 1);
      stats.others_cores = t.value("others_cores", 0.0);
      stats.disturbed = t.value("disturbed", false);
      return stats;
    };
    if (in.contains("kernel")) out.kernel = timing(in["kernel"]);
    if (in.contains("baseline")) out.baseline = timing(in["baseline"]);
    out.speedup = in.value("speedup", 0.0);
    out.suspicious = in.value("suspicious", false);
    out.weak_test = in.value("weak_test", false);
    out.cached = in.value("cached", false);
    out.trials_passed = in.value("trials_passed", 0);
    out.program_hash = in.value("program_hash", "");
    out.cache_key = in.value("cache_key", "");
    if (in.contains("environment")) {
      const json& e = in["environment"];
      out.environment.device = e.value("device", "");
      out.environment.platform = e.value("platform", "");
      out.environment.device_version = e.value("device_version", "");
      out.environment.driver_version = e.value("driver_version", "");
      out.environment.opencl_c_version = e.value("opencl_c_version", "");
      out.environment.compute_units = e.value("compute_units", 0);
      out.environment.torch_version = e.value("torch_version", "");
      out.environment.torch_threads = e.value("torch_threads", 0);
      out.environment.load_average = e.value("load_average", 0.0);
      out.environment.blas = e.value("blas", "");
    }
    if (in.contains("phases_ms")) {
      const json& p = in["phases_ms"];
      out.compile_ms = p.value("compile", 0.0);
      out.run_ms = p.value("run", 0.0);
      out.time_ms = p.value("time", 0.0);
      out.overhead_ms = p.value("overhead", 0.0);
      out.total_ms = p.value("total", 0.0);
      out.sandbox_wait_ms = p.value("sandbox_wait", 0.0);
      out.spare_wait_ms = p.value("spare_wait", 0.0);
      out.child_ms = p.value("child", 0.0);
    }
    return out;
  } catch (const std::exception&) {
    return std::nullopt;
  }
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
