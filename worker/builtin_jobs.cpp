// Built-in job kinds. `noop` exists for tests and the queue benchmark:
//   args {"sleep_ms": 0, "progress_steps": 0, "fail_attempts": 0, "fail_permanently": false, "result": any}
// It sleeps (cooperatively), reports progress steps, fails its first
// fail_attempts attempts (retryable), and completes with {"attempt", "slept_ms", "echo"}.
#include <nlohmann/json.hpp>

#include "worker/worker.h"

namespace kforge::worker {
namespace {

std::string stopped_message(StopReason reason) {
  switch (reason) {
    case StopReason::cancel_requested: return "stopped: cancel requested";
    case StopReason::lease_lost: return "stopped: lease lost";
    case StopReason::shutdown: return "stopped: worker shutting down";
    case StopReason::none: break;
  }
  return "stopped";
}

JobOutcome run_noop(JobContext& ctx) {
  auto args = nlohmann::json::parse(ctx.args_json(), nullptr, /*allow_exceptions=*/false);
  if (!args.is_object()) return JobOutcome::fail("noop: args must be a JSON object", false);
  int sleep_ms = 0, steps = 0, fail_attempts = 0;
  bool fail_permanently = false;
  try {
    sleep_ms = args.value("sleep_ms", 0);
    steps = args.value("progress_steps", 0);
    fail_attempts = args.value("fail_attempts", 0);
    fail_permanently = args.value("fail_permanently", false);
  } catch (const nlohmann::json::exception& e) {
    return JobOutcome::fail(std::string("noop: bad args: ") + e.what(), false);
  }
  if (sleep_ms < 0 || sleep_ms > 3600 * 1000) return JobOutcome::fail("noop: sleep_ms must be 0..3600000", false);
  if (steps < 0 || steps > 10000) return JobOutcome::fail("noop: progress_steps must be 0..10000", false);
  if (fail_permanently) return JobOutcome::fail("noop: told to fail permanently", false);
  if (ctx.attempt() <= fail_attempts)
    return JobOutcome::fail("noop: told to fail attempt " + std::to_string(ctx.attempt()), true);

  if (steps > 0) {
    for (int step_idx = 0; step_idx < steps; ++step_idx) {
      if (!ctx.sleep_for(sleep_ms / 1000.0 / steps)) return JobOutcome::fail(stopped_message(ctx.stop_reason()));
      ctx.report_progress(nlohmann::json{{"step", step_idx + 1}, {"of", steps}}.dump());
    }
  } else if (sleep_ms > 0 && !ctx.sleep_for(sleep_ms / 1000.0)) {
    return JobOutcome::fail(stopped_message(ctx.stop_reason()));
  }
  nlohmann::json result = {{"attempt", ctx.attempt()}, {"slept_ms", sleep_ms}};
  if (args.contains("result")) result["echo"] = args["result"];
  return JobOutcome::complete(result.dump());
}

}  // namespace

void register_builtin_jobs(HandlerRegistry& registry) { registry.add("noop", run_noop); }

}  // namespace kforge::worker
