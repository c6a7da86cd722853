// `kforge eval start|show|compare` and `kforge eval ID`: queue, follow, print and compare
// evaluations over the REST API; see eval_commands.h. Test: ctest -R cli_test.
#include "cli/eval_commands.h"

#include <chrono>
#include <ostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/output.h"

namespace kforge::cli {
namespace {

using json = nlohmann::json;

const char* kEvalUsage =
    "kforge: usage: kforge eval start MODEL SUITE [key=value ...] [--wait]\n"
    "               kforge eval [show] ID\n"
    "               kforge eval compare BASELINE_ID ID\n";

// Evaluation ids are positive integers; anything else is a usage error said plainly
// (rather than a 404 for a path the server never routes).
bool valid_id(const std::string& text, std::ostream& err) {
  bool digits = !text.empty() && text.size() < 19 && text.find_first_not_of("0123456789") == std::string::npos;
  if (digits && std::stoll(text) > 0) return true;
  err << "kforge: an evaluation id is a positive number (see `kforge jobs list --kind evaluate`), got '" << text << "'\n";
  return false;
}

// The member `key` of `object`, or null (for objects from older servers, and nulls).
json member(const json& object, const std::string& key) {
  return object.is_object() && object.contains(key) ? object[key] : json(nullptr);
}

std::string percent(const json& value) {
  return value.is_number() ? fmt_number(value.get<double>() * 100, 1) + "%" : "-";
}

int show_evaluation(const json& evaluation, std::ostream& out) {
  out << "evaluation " << evaluation["id"] << ": " << evaluation.value("model", "") << " on "
      << evaluation.value("suite", "") << " (" << evaluation.value("target", "") << ") "
      << evaluation["status"].get<std::string>() << "\n";
  const json& metrics = evaluation["metrics"];
  if (!metrics.is_object()) {
    if (evaluation["error"].is_object()) out << "  error: " << evaluation["error"].value("message", "") << "\n";
    return evaluation["status"] == "failed" || evaluation["status"] == "cancelled" ? 1 : 0;
  }
  json device = member(evaluation, "device");
  out << "  device " << (device.is_string() ? device.get<std::string>() : "-") << ", " << metrics.value("ops", 0)
      << " ops x " << metrics.value("samples_per_op", 0) << " samples, "
      << (metrics.value("timed", false) ? "timed" : "untimed") << "; 95% bootstrap intervals over ops\n";
  std::vector<std::vector<std::string>> rows;
  auto add = [&](const std::string& label, const std::string& key, const std::string& fallback = "") {
    rows.push_back({label, rate_with_interval(metrics, key, fallback)});
  };
  add("pass@1", "pass_at_1", "fast_0");  // fast_0: evaluations stored before pass_at_1
  add("pass@" + std::to_string(metrics.value("k", 1)), "pass_at_k");
  add("compiles", "compile_rate");
  add("rule violations", "rule_violation_rate");
  for (const char* p : {"1", "1_5", "2"}) add(std::string("fast_") + p + " vs eager", std::string("fast_") + p);
  if (member(metrics, "fast_1_vs_compile").is_number()) {
    for (const char* p : {"1", "1_5", "2"})
      add(std::string("fast_") + p + " vs torch.compile", std::string("fast_") + p + "_vs_compile");
  } else {
    rows.push_back({"fast_1 vs torch.compile", "not measured on this device"});
  }
  rows.push_back({"geomean speedup", fmt_number(metrics.value("geomean_speedup", json())) + "x"});
  print_table(out, {"METRIC", "VALUE [95% CI]"}, rows);
  std::vector<std::vector<std::string>> ops;
  for (const auto& task : evaluation.value("tasks", json::array())) {
    ops.push_back({task.value("op", ""), std::to_string(task.value("correct", 0)) + "/" + std::to_string(task.value("samples", 0)),
                   percent(member(member(task, "fast_p"), "1")),
                   fmt_number(task.value("best_speedup", json())) + "x",
                   member(task, "first_failure").is_string() ? task["first_failure"].get<std::string>().substr(0, 60) : ""});
  }
  out << "\n";
  print_table(out, {"OP", "CORRECT", "FAST_1", "BEST", "FIRST FAILURE"}, ops);
  return 0;
}

int eval_show(Client& client, const std::string& id, bool as_json, std::ostream& out, std::ostream& err) {
  if (!valid_id(id, err)) return 2;
  auto resp = client.request("GET", "/v1/evaluations/" + id);
  if (resp.status != 200) return report_error(resp, err);
  json evaluation = json::parse(resp.body);
  if (as_json) {
    out << evaluation.dump(2) << "\n";
    return 0;
  }
  return show_evaluation(evaluation, out);
}

int eval_start(const Flags& flags, Client& client, std::ostream& out, std::ostream& err) {
  const auto& args = flags.positional();
  if (args.size() < 4) {
    err << kEvalUsage;
    return 2;
  }
  json body = {{"model", args[2]}, {"suite", args[3]}, {"settings", json::object()}};
  for (size_t arg_idx = 4; arg_idx < args.size(); ++arg_idx) {
    if (!parse_assignment(args[arg_idx], &body["settings"], err)) return 2;
  }
  if (!flags.get("target").empty()) body["target"] = flags.get("target");
  auto resp = client.request("POST", "/v1/evaluations", body.dump());
  if (resp.status != 202) return report_error(resp, err);
  json evaluation = json::parse(resp.body);
  std::string id = std::to_string(evaluation["id"].get<int64_t>());
  if (!flags.get_bool("wait")) {
    out << (flags.get_bool("json") ? evaluation.dump(2) : "queued evaluation " + id + " of " +
                                                              evaluation.value("model", "") + "; `kforge eval show " + id + "`")
        << "\n";
    return 0;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(flags.get_double("timeout-s"));
  for (;;) {
    auto poll = client.request("GET", "/v1/evaluations/" + id);
    if (poll.status != 200) return report_error(poll, err);
    evaluation = json::parse(poll.body);
    std::string status = evaluation["status"];
    if (status == "succeeded" || status == "failed" || status == "cancelled") break;
    if (std::chrono::steady_clock::now() > deadline) {
      err << "kforge: evaluation " << id << " still " << status << "; follow it with `kforge eval show " << id << "`\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(flags.get_double("poll-s")));
  }
  if (flags.get_bool("json")) {
    out << evaluation.dump(2) << "\n";
    return evaluation["status"] == "succeeded" ? 0 : 1;
  }
  int code = show_evaluation(evaluation, out);
  return evaluation["status"] == "succeeded" ? code : 1;
}

// "+12.5 pts [3.1, 21.9]" for a difference of rates.
std::string points(const json& estimate) {
  std::ostringstream text;
  double value = estimate["value"].get<double>() * 100;
  text << (value >= 0 ? "+" : "") << fmt_number(value, 1) << " pts [" << fmt_number(estimate["ci"][0].get<double>() * 100, 1)
       << ", " << fmt_number(estimate["ci"][1].get<double>() * 100, 1) << "]";
  return text.str();
}

std::string rate_estimate(const json& estimate) {
  return fmt_number(estimate["value"].get<double>() * 100, 1) + "% [" + fmt_number(estimate["ci"][0].get<double>() * 100, 1) +
         ", " + fmt_number(estimate["ci"][1].get<double>() * 100, 1) + "]";
}

int eval_compare(const Flags& flags, Client& client, std::ostream& out, std::ostream& err) {
  const auto& args = flags.positional();
  if (args.size() != 4) {
    err << kEvalUsage;
    return 2;
  }
  if (!valid_id(args[2], err) || !valid_id(args[3], err)) return 2;
  auto resp = client.request("GET", "/v1/evaluations/" + args[3] + "/compare?baseline=" + args[2]);
  if (resp.status != 200) return report_error(resp, err);
  json cmp = json::parse(resp.body);
  if (flags.get_bool("json")) {
    out << cmp.dump(2) << "\n";
    return 0;
  }
  out << "baseline   evaluation " << cmp["baseline"]["id"] << ": " << cmp["baseline"].value("model", "") << " on "
      << cmp["baseline"].value("suite", "") << "\n"
      << "compared   evaluation " << cmp["evaluation"]["id"] << ": " << cmp["evaluation"].value("model", "") << " on "
      << cmp["evaluation"].value("suite", "") << "\n"
      << cmp["ops_compared"] << " ops in common; 95% bootstrap intervals over ops, the difference paired by op\n";
  if (!cmp.value("same_suite", true)) out << "note: the two evaluations ran on different suites\n";
  if (!cmp["only_in_baseline"].empty()) out << "only in the baseline: " << cmp["only_in_baseline"].dump() << "\n";
  if (!cmp["only_in_evaluation"].empty()) out << "only in the other: " << cmp["only_in_evaluation"].dump() << "\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& [metric, row] : cmp["metrics"].items()) {
    std::string verdict = row["difference_excludes_zero"].get<bool>() ? "difference excludes 0" : "difference includes 0";
    verdict += row["intervals_overlap"].get<bool>() ? "; intervals overlap" : "; intervals do not overlap";
    rows.push_back({metric, rate_estimate(row["baseline"]), rate_estimate(row["evaluation"]), points(row["difference"]), verdict});
  }
  print_table(out, {"METRIC", "BASELINE", "OTHER", "DIFFERENCE", "VERDICT"}, rows);
  std::vector<std::vector<std::string>> ops;
  for (const auto& op : cmp["per_op"]) {
    auto delta = [&op](const char* metric) {
      if (!op.contains(metric)) return std::string("-");
      double value = op[metric]["delta"].get<double>() * 100;
      return (value >= 0 ? "+" : "") + fmt_number(value, 1);
    };
    ops.push_back({op.value("op", ""), delta("pass_at_1"), delta("fast_1"), delta("rule_violation_rate")});
  }
  out << "\n";
  print_table(out, {"OP", "PASS@1 PTS", "FAST_1 PTS", "RULE VIOL PTS"}, ops);
  return 0;
}

}  // namespace

int eval_command(const Flags& flags, Client& client, std::ostream& out, std::ostream& err) {
  const auto& args = flags.positional();
  std::string sub = args.size() > 1 ? args[1] : "";
  if (sub == "start") return eval_start(flags, client, out, err);
  if (sub == "show" && args.size() == 3) return eval_show(client, args[2], flags.get_bool("json"), out, err);
  if (args.size() == 2 && !sub.empty() && sub.find_first_not_of("0123456789") == std::string::npos)
    return eval_show(client, sub, flags.get_bool("json"), out, err);  // `kforge eval 7`
  if (sub == "compare") return eval_compare(flags, client, out, err);
  err << kEvalUsage;
  return 2;
}

}  // namespace kforge::cli
