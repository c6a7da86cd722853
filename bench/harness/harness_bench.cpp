// kforge-harness-bench: the harness benchmark runner. Reads bench/harness/cases.json
// (ops and kernels are files next to it) and writes one JSON result with the
// environment. Run from the repository root:
//   build/bin/kforge-harness-bench --cases bench/harness/cases.json --out bench/results/harness.json
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "worker/harness/checker.h"
#include "worker/harness/sandbox_process.h"

using namespace kforge::harness;
using namespace kforge::spec;
using nlohmann::json;
using clock_type = std::chrono::steady_clock;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot read " + path);
  std::ostringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

std::string shell(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe)) out += buffer;
  pclose(pipe);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

OpSpec load_op(const std::string& path) {
  auto parsed = parse_op_spec(read_text(path));
  if (!parsed.ok()) throw std::runtime_error(path + ": " + describe_errors(parsed.errors));
  return parsed.spec;
}

std::unique_ptr<Checker> make_checker(const OpSpec& spec, const CheckOptions& options) {
  std::string error;
  auto checker = Checker::create(spec, options, error);
  if (!checker) throw std::runtime_error(spec.name + ": " + error);
  return checker;
}

void require_correct(const CheckResult& result, const std::string& what) {
  if (result.outcome != Outcome::correct)
    throw std::runtime_error(what + ": " + outcome_name(result.outcome) + ": " + result.message);
}

// Candidates per second through the full sandboxed path (rules, compile, all trials,
// determinism rerun; no timing phase), cold (a new program text each time, so PoCL
// compiles it) and warm (the same text with the result cache off: a new sandbox
// process per candidate, PoCL's binary cache hit), plus result-cache hits.
json throughput_case(const json& item, const std::string& dir) {
  OpSpec spec = load_op(dir + "/" + item["op"].get<std::string>());
  std::string kernel = read_text(dir + "/" + item["kernel"].get<std::string>());
  CheckOptions options;
  options.time = false;
  auto cold_checker = make_checker(spec, options);
  std::mt19937_64 nonce(std::random_device{}());
  int cold_count = item["cold"], warm_count = item["warm"];
  std::vector<double> cold_compile, cold_total;
  auto start = clock_type::now();
  for (int cand_idx = 0; cand_idx < cold_count; ++cand_idx) {
    auto result = cold_checker->check(kernel + "// candidate " + std::to_string(nonce()) + "\n");
    require_correct(result, spec.name + " cold");
    cold_compile.push_back(result.compile_ms);
    cold_total.push_back(result.total_ms);
  }
  double cold_s = seconds_since(start);
  options.cache = false;
  auto warm_checker = make_checker(spec, options);
  require_correct(warm_checker->check(kernel), spec.name + " warm-up");
  std::vector<double> overhead, compile, run, total, wait, child;
  start = clock_type::now();
  for (int cand_idx = 0; cand_idx < warm_count; ++cand_idx) {
    auto result = warm_checker->check(kernel);
    require_correct(result, spec.name + " warm");
    overhead.push_back(result.overhead_ms);
    wait.push_back(result.sandbox_wait_ms);
    child.push_back(result.child_ms - result.compile_ms - result.run_ms);
    compile.push_back(result.compile_ms);
    run.push_back(result.run_ms);
    total.push_back(result.total_ms);
  }
  double warm_s = seconds_since(start);
  options.cache = true;
  auto cached_checker = make_checker(spec, options);
  cached_checker->check(kernel);
  start = clock_type::now();
  for (int cand_idx = 0; cand_idx < 1000; ++cand_idx) cached_checker->check(kernel);
  double cached_s = seconds_since(start);
  return {{"op", spec.name},
          {"trials_per_candidate", options.trials + 1 + static_cast<int>(spec.extra_shapes.size())},
          {"cold", {{"candidates", cold_count}, {"seconds", cold_s}, {"candidates_per_s", cold_count / cold_s},
                    {"median_compile_ms", median(cold_compile)}, {"median_total_ms", median(cold_total)}}},
          {"warm", {{"candidates", warm_count}, {"seconds", warm_s}, {"candidates_per_s", warm_count / warm_s},
                    {"median_overhead_ms", median(overhead)}, {"median_sandbox_wait_ms", median(wait)},
                    {"median_child_setup_ms", median(child)},
                    {"median_compile_ms", median(compile)},
                    {"median_run_ms", median(run)}, {"median_total_ms", median(total)}}},
          {"cached", {{"candidates", 1000}, {"candidates_per_s", 1000 / cached_s}}}};
}

// Start-up of one sandbox process to its ready line (exec + OpenCL init). The
// Checker hides it by pre-starting the next sandbox; reported for completeness.
json spawn_case() {
  std::vector<double> samples;
  for (int spawn_idx = 0; spawn_idx < 5; ++spawn_idx) {
    std::string error, line;
    auto start = clock_type::now();
    auto child = SandboxProcess::start({helper_binary_path("kforge-sandbox")}, {}, -1, error);
    if (!child) throw std::runtime_error(error);
    child->read_line(line, clock_type::now() + std::chrono::seconds(60));
    samples.push_back(seconds_since(start) * 1000);
  }
  return {{"spawn_to_ready_ms_median", median(samples)}, {"samples_ms", samples}};
}

double load_1m() {
  double load[1] = {0};
  return getloadavg(load, 1) == 1 ? load[0] : -1;
}

// Spread of a set of medians, in the vocabulary ("spread (IQR)"): IQR of the
// medians / their median; the range (max - min) / median beside it.
json spread_of(const std::vector<double>& medians) {
  std::vector<double> sorted = medians;
  std::sort(sorted.begin(), sorted.end());
  double mid = sorted[sorted.size() / 2];
  double iqr = sorted[sorted.size() * 3 / 4] - sorted[sorted.size() / 4];
  return {{"kernel_medians_ms", medians}, {"median_of_medians_ms", mid},
          {"spread_pct", 100 * iqr / mid}, {"range_pct", 100 * (sorted.back() - sorted.front()) / mid}};
}

// The same kernel timed in `runs` separate runs: each a fresh Checker (new arena,
// new sandbox processes, its own warm-up), as a user checking it again would get.
// Interleaved with the same runs with PoCL's threads unpinned (POCL_AFFINITY=0, the
// harness before the fix) so the comparison is side by side under the same load.
json stability_case(const json& item, const std::string& dir, bool compare_unpinned) {
  OpSpec spec = load_op(dir + "/" + item["op"].get<std::string>());
  std::string kernel = read_text(dir + "/" + item["kernel"].get<std::string>());
  CheckOptions options;
  options.cache = false;
  options.trials = 1;
  options.time_budget_s = item["time_budget_s"];
  std::vector<std::string> variants = {"pinned"};
  if (compare_unpinned) variants.push_back("unpinned");
  std::map<std::string, std::vector<double>> medians;
  std::map<std::string, json> rows;
  for (int run_idx = 0; run_idx < item["runs"].get<int>(); ++run_idx) {
    for (size_t pos = 0; pos < variants.size(); ++pos) {
      const std::string& variant = variants[(pos + run_idx) % variants.size()];  // alternate who goes first
      if (variant == "unpinned") setenv("POCL_AFFINITY", "0", 1);
      double load_before = load_1m();
      auto checker = make_checker(spec, options);
      auto result = checker->check(kernel);
      checker.reset();
      unsetenv("POCL_AFFINITY");
      require_correct(result, "stability");
      const TimingStats& t = *result.kernel;
      medians[variant].push_back(t.median_ms);
      rows[variant].push_back({{"median_ms", t.median_ms}, {"min_ms", t.min_ms}, {"iqr_ms", t.iqr_ms}, {"runs", t.runs},
                               {"device_median_ms", t.kernel_median_ms}, {"warmup_runs", t.warmup_runs},
                               {"settled", t.settled}, {"attempts", t.attempts}, {"others_cores", t.others_cores},
                               {"disturbed", t.disturbed}, {"spare_wait_ms", result.spare_wait_ms},
                               {"load_1m", load_before}});
      std::cerr << "  " << variant << " run " << run_idx << ": median " << t.median_ms << " ms, others "
                << t.others_cores << " cores, load " << load_before << "\n";
    }
  }
  json out{{"op", spec.name}, {"kernel", item["kernel"]}, {"separate_runs", item["runs"]},
           {"time_budget_s", options.time_budget_s}};
  for (const auto& variant : variants) {
    json entry = spread_of(medians[variant]);
    entry["runs"] = rows[variant];
    int disturbed = 0;
    for (const auto& row : rows[variant]) disturbed += row["disturbed"].get<bool>() ? 1 : 0;
    entry["disturbed_runs"] = disturbed;
    out[variant] = entry;
  }
  return out;
}

// Waits up to `max_wait_s` for the 1-minute load average to drop below `threshold`
// (the machine is shared with other people's builds): the stability goal is for an idle machine.
json wait_quiet(double threshold, double max_wait_s) {
  auto start = clock_type::now();
  double load = load_1m();
  while (load >= threshold && seconds_since(start) < max_wait_s) {
    sleep(5);
    load = load_1m();
  }
  return {{"threshold", threshold}, {"waited_s", seconds_since(start)}, {"load_1m_at_start", load},
          {"quiet", load < threshold}};
}

json timed(Checker& checker, const std::string& kernel, const std::string& what) {
  auto result = checker.check(kernel);
  require_correct(result, what);
  return json::parse(result.to_json());
}

// A fused elementwise kernel against libtorch eager (same process, threads =
// compute units), and its bandwidth against a measured copy ceiling.
json silu_mul_case(const json& item, const std::string& dir) {
  OpSpec spec = load_op(dir + "/" + item["op"].get<std::string>());
  OpSpec copy_spec = load_op(dir + "/" + item["copy_op"].get<std::string>());
  CheckOptions options;
  options.trials = 1;
  options.time_budget_s = item["time_budget_s"];
  auto checker = make_checker(spec, options);
  auto copy_checker = make_checker(copy_spec, options);
  const double elements = static_cast<double>(shape_numel(spec.inputs[0].shape));
  const double silu_bytes = 3 * 4 * elements, copy_bytes = 2 * 4 * elements;  // reads + writes per run
  json copy = timed(*copy_checker, read_text(dir + "/" + item["copy_kernel"].get<std::string>()), "copy");
  double copy_gbps = copy_bytes / (copy["kernel"]["median_ms"].get<double>() * 1e6);
  json kernels = json::array();
  double best_speedup = 0, best_fraction = 0;
  for (const auto& path : item["kernels"]) {
    json result = timed(*checker, read_text(dir + "/" + path.get<std::string>()), path.get<std::string>());
    double gbps = silu_bytes / (result["kernel"]["median_ms"].get<double>() * 1e6);
    double speedup = result["speedup"];
    kernels.push_back({{"kernel", path}, {"kernel_timing", result["kernel"]}, {"eager_timing", result["baseline"]},
                       {"speedup_vs_eager", speedup}, {"gb_per_s", gbps}, {"fraction_of_copy", gbps / copy_gbps},
                       {"suspicious", result["suspicious"]}});
    if (speedup > best_speedup) {
      best_speedup = speedup;
      best_fraction = gbps / copy_gbps;
    }
  }
  return {{"elements", elements}, {"copy_kernel_timing", copy["kernel"]}, {"copy_eager_timing", copy["baseline"]},
          {"copy_gb_per_s", copy_gbps}, {"kernels", kernels}, {"best_speedup_vs_eager", best_speedup},
          {"best_fraction_of_copy", best_fraction}, {"torch_threads", copy["environment"]["torch_threads"]},
          {"environment", copy["environment"]}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string cases_path = "bench/harness/cases.json", out_path, only;
  double quiet_wait_s = 0;
  bool compare_unpinned = true;
  std::string command_line;
  for (int arg_idx = 0; arg_idx < argc; ++arg_idx) command_line += (arg_idx ? " " : "") + std::string(argv[arg_idx]);
  for (int arg_idx = 1; arg_idx + 1 < argc; ++arg_idx) {
    std::string arg = argv[arg_idx];
    if (arg == "--cases") cases_path = argv[++arg_idx];
    else if (arg == "--out") out_path = argv[++arg_idx];
    else if (arg == "--only") only = argv[++arg_idx];
    else if (arg == "--wait-quiet") quiet_wait_s = std::atof(argv[++arg_idx]);
    else if (arg == "--compare-unpinned") compare_unpinned = std::string(argv[++arg_idx]) != "0";
  }
  try {
    json cases = json::parse(read_text(cases_path));
    std::string dir = cases_path.substr(0, cases_path.rfind('/'));
    json out;
    out["command"] = command_line;
    out["environment"] = {{"date", shell("date -u +%Y-%m-%dT%H:%M:%SZ")}, {"uptime_before", shell("uptime")},
                          {"nproc", shell("nproc")}, {"cpu", shell("lscpu | grep 'Model name' | sed 's/.*: *//'")},
                          {"git_commit", shell("git rev-parse HEAD 2>/dev/null")},
                          {"git_dirty", !shell("git status --porcelain -- worker bench 2>/dev/null").empty()},
                          {"note", "shared 2-core machine: other people's builds may run at the same time; see uptime "
                                   "and, per timing, others_cores (CPU other processes used while it was measured)"}};
    auto want = [&](const std::string& name) { return only.empty() || only == name; };
    if (want("throughput")) {
      json rows = json::array();
      for (const auto& item : cases["throughput"]) {
        std::cerr << "throughput " << item["name"] << "...\n";
        rows.push_back(throughput_case(item, dir));
      }
      out["throughput"] = rows;
      out["candidates_per_s_cold"] = rows[0]["cold"]["candidates_per_s"];
      out["candidates_per_s_warm"] = rows[0]["warm"]["candidates_per_s"];
      out["overhead_ms"] = rows[0]["warm"]["median_overhead_ms"];
      out["sandbox_spawn"] = spawn_case();
    }
    if (want("stability")) {
      if (quiet_wait_s > 0) {
        std::cerr << "waiting up to " << quiet_wait_s << " s for load average < 0.5...\n";
        out["quiet_wait"] = wait_quiet(0.5, quiet_wait_s);
      }
      out["environment"]["uptime_before_stability"] = shell("uptime");
      std::cerr << "stability...\n";
      out["stability"] = stability_case(cases["stability"], dir, compare_unpinned);
      out["timing_spread_pct"] = out["stability"]["pinned"]["spread_pct"];
      out["timing_range_pct"] = out["stability"]["pinned"]["range_pct"];
    }
    if (want("silu_mul")) {
      std::cerr << "silu_mul 16M...\n";
      out["silu_mul"] = silu_mul_case(cases["silu_mul"], dir);
      out["silu_mul_speedup_vs_eager"] = out["silu_mul"]["best_speedup_vs_eager"];
      out["silu_mul_fraction_of_copy"] = out["silu_mul"]["best_fraction_of_copy"];
    }
    out["environment"]["uptime_after"] = shell("uptime");
    std::string text = out.dump(2);
    if (out_path.empty()) std::cout << text << "\n";
    else std::ofstream(out_path) << text << "\n";
    std::cerr << "done\n";
  } catch (const std::exception& e) {
    std::cerr << "kforge-harness-bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
