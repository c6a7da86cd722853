// CheckResult as data: outcome names, the JSON a ResultStore keeps and a job stores
// (to_json / from_json; NaN and Inf travel as strings), and which results a store
// keeps under which key. Test: ctest -R 'harness_checker_test|jobs_result_store_db_test'.
#include <cmath>
#include <cstdlib>

#include "common/sha256.h"
#include "worker/harness/check_result_json.h"
#include "worker/harness/checker.h"
#include "worker/harness/compare.h"

namespace kforge::harness {
namespace {

using nlohmann::json;

json environment_to_json(const Environment& environment) {
  return {{"device", environment.device},
          {"platform", environment.platform},
          {"device_version", environment.device_version},
          {"driver_version", environment.driver_version},
          {"opencl_c_version", environment.opencl_c_version},
          {"compute_units", environment.compute_units},
          {"torch_version", environment.torch_version},
          {"torch_threads", environment.torch_threads},
          {"blas", environment.blas},
          {"load_average", environment.load_average},
          {"target", environment.target},
          {"gpu", environment.gpu},
          {"baseline", environment.baseline},
          {"triton_version", environment.triton_version},
          {"cuda_version", environment.cuda_version},
          {"gpu_clocks", environment.gpu_clocks},
          {"reference_max_abs_diff", environment.reference_max_abs_diff},
          {"sandbox", environment.sandbox}};
}

Environment environment_from_json(const json& e) {
  Environment environment;
  environment.device = e.value("device", "");
  environment.platform = e.value("platform", "");
  environment.device_version = e.value("device_version", "");
  environment.driver_version = e.value("driver_version", "");
  environment.opencl_c_version = e.value("opencl_c_version", "");
  environment.compute_units = e.value("compute_units", 0);
  environment.torch_version = e.value("torch_version", "");
  environment.torch_threads = e.value("torch_threads", 0);
  environment.load_average = e.value("load_average", 0.0);
  environment.blas = e.value("blas", "");
  environment.target = e.value("target", "");
  environment.gpu = e.value("gpu", false);
  environment.baseline = e.value("baseline", "");
  environment.triton_version = e.value("triton_version", "");
  environment.cuda_version = e.value("cuda_version", "");
  environment.gpu_clocks = e.value("gpu_clocks", "");
  environment.reference_max_abs_diff = e.value("reference_max_abs_diff", 0.0);
  environment.sandbox = e.value("sandbox", "");
  return environment;
}

json mismatch_to_json(const Mismatch& mismatch) {
  json m{{"trial", mismatch.trial}, {"shapes", mismatch.shapes}, {"output", mismatch.output},
         {"index", mismatch.index}, {"coords", mismatch.coords}, {"bad_count", mismatch.bad_count},
         {"numel", mismatch.numel}, {"values_hidden", mismatch.values_hidden}};
  if (!mismatch.values_hidden) {
    // JSON has no NaN/Inf: write them as strings.
    auto value = [](double v) -> json { return std::isfinite(v) ? json(v) : json(format_value(v)); };
    m["expected"] = value(mismatch.expected);
    m["actual"] = value(mismatch.actual);
  }
  return m;
}

Mismatch mismatch_from_json(const json& m) {
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
  return mismatch;
}

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

json timing_stats_to_json(const TimingStats& t) {
  return json{{"median_ms", t.median_ms},       {"min_ms", t.min_ms},
              {"iqr_ms", t.iqr_ms},             {"runs", t.runs},
              {"rotations", t.rotations},       {"kernel_median_ms", t.kernel_median_ms},
              {"warmup_runs", t.warmup_runs},   {"settled", t.settled},
              {"attempts", t.attempts},         {"others_cores", t.others_cores},
              {"disturbed", t.disturbed}};
}

TimingStats timing_stats_from_json(const json& t) {
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
}

std::string CheckResult::to_json() const {
  json out;
  out["outcome"] = outcome_name(outcome);
  out["message"] = message;
  if (!rule.empty()) out["rule"] = rule;
  if (mismatch) out["mismatch"] = mismatch_to_json(*mismatch);
  if (kernel) out["kernel"] = timing_stats_to_json(*kernel);
  if (baseline) out["baseline"] = timing_stats_to_json(*baseline);
  if (baseline_compile) out["baseline_compile"] = timing_stats_to_json(*baseline_compile);
  if (kernel && baseline_compile) out["speedup_vs_compile"] = speedup_vs_compile;
  if (kernel && baseline) {
    out["speedup"] = speedup;
    out["speedup_vs_eager"] = speedup;
    out["suspicious"] = suspicious;
  }
  out["weak_test"] = weak_test;
  out["cached"] = cached;
  out["trials_passed"] = trials_passed;
  out["program_hash"] = program_hash;
  out["cache_key"] = cache_key;
  out["environment"] = environment_to_json(environment);
  out["phases_ms"] = {{"compile", compile_ms},   {"run", run_ms},     {"time", time_ms},
                      {"overhead", overhead_ms}, {"total", total_ms}, {"sandbox_wait", sandbox_wait_ms},
                      {"spare_wait", spare_wait_ms}, {"child", child_ms}, {"compare", compare_ms},
                      {"io", io_ms}, {"time_kernel", time_kernel_ms}, {"time_eager", time_eager_ms},
                      {"time_compile", time_compile_ms}, {"jit", jit_ms}, {"prepared", prepared_ms}};
  // Messages carry a child's words and a program's bytes: invalid UTF-8 becomes U+FFFD,
  // never an exception.
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
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
    if (in.contains("mismatch")) out.mismatch = mismatch_from_json(in["mismatch"]);
    if (in.contains("kernel")) out.kernel = timing_stats_from_json(in["kernel"]);
    if (in.contains("baseline")) out.baseline = timing_stats_from_json(in["baseline"]);
    if (in.contains("baseline_compile")) out.baseline_compile = timing_stats_from_json(in["baseline_compile"]);
    out.speedup = in.value("speedup", 0.0);
    out.speedup_vs_compile = in.value("speedup_vs_compile", 0.0);
    out.suspicious = in.value("suspicious", false);
    out.weak_test = in.value("weak_test", false);
    out.cached = in.value("cached", false);
    out.trials_passed = in.value("trials_passed", 0);
    out.program_hash = in.value("program_hash", "");
    out.cache_key = in.value("cache_key", "");
    if (in.contains("environment")) out.environment = environment_from_json(in["environment"]);
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
      out.compare_ms = p.value("compare", 0.0);
      out.io_ms = p.value("io", 0.0);
      out.time_kernel_ms = p.value("time_kernel", 0.0);
      out.time_eager_ms = p.value("time_eager", 0.0);
      out.time_compile_ms = p.value("time_compile", 0.0);
      out.jit_ms = p.value("jit", 0.0);
      out.prepared_ms = p.value("prepared", 0.0);
    }
    return out;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string SetupPhases::to_json() const {
  return json{{"reference_compile", reference_compile_ms},
              {"inputs", inputs_ms},
              {"reference", reference_ms},
              {"arena", arena_ms},
              {"sandbox_start", sandbox_start_ms},
              {"gpu_reference_start", gpu_reference_start_ms},
              {"gpu_reference", gpu_reference_ms},
              {"total", total_ms},
              {"pooled_children", pooled_children}}
      .dump();
}

bool result_is_storable(const CheckResult& result) {
  if (result.outcome == Outcome::timeout) return false;
  return result.message.rfind("harness error", 0) != 0;
}

std::string result_store_key(const CheckResult& result, const CheckOptions& options) {
  // Bump the harness version when a change makes earlier verdicts or timings stale (4: issue 14's
  // rules on the lexed text, unpublished shapes, 64 KiB guards; 5: the CPU eager baseline from a
  // caching allocator).
  std::string fingerprint = "harness=5;target=" + options.target + ";trials=" + std::to_string(options.trials) +
                            ";extra=" + std::to_string(options.check_extra_shapes) +
                            ";determinism=" + std::to_string(options.determinism) +
                            ";time=" + std::to_string(options.time) + ";build=" + options.build_options +
                            ";baseline_allocator=" + baseline_allocator_name(options.baseline_allocator);
  return result.cache_key + ":" + sha256_hex(fingerprint).substr(0, 16);
}

}  // namespace kforge::harness
