// kforge CLI commands behind cli/commands.h. Output is for people (tables, a
// progress bar); `--json` prints the server's JSON instead, for scripts. Generation
// defaults come from spec/job_spec.h. Test: ctest -R cli_test.
#include "cli/commands.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/eval_commands.h"
#include "cli/output.h"
#include "spec/job_spec.h"

namespace kforge::cli {
namespace {



using json = nlohmann::json;

const char* kUsage =
    "commands:\n"
    "  op submit OP.json                 validate and store an op (TorchScript + inputs)\n"
    "  generate --op OP.json|--op-id N   queue a generation [--samples N --target T --model M]\n"
    "           [--wait]                 show progress, then the best kernel and its speedup\n"
    "  jobs list [--kind K --status S]   recent jobs\n"
    "  train sft|grpo|rft --suite S|--dataset D [--base-model M] [key=value ...]   queue training\n"
    "  eval start MODEL SUITE [key=value ...] [--wait]   queue an evaluation of a model version\n"
    "  eval [show] ID                    pass@1, pass@k, fast_p (vs eager, torch.compile) with 95% intervals, per op\n"
    "  eval compare BASELINE_ID ID       per-op deltas and the paired 95% interval of the difference\n"
    "  leaderboard [--models]            best kernels per op, eager ranked where it wins (or pass@1, fast_p per model)\n"
    "  demo [--demo-ops L/NAME,...]      queue a few suite ops, print each verified kernel as it lands\n"
    "  health | ready                    server status\n";


bool read_json_file(const std::string& path, json* out, std::ostream& err) {
  std::ifstream in(path);
  if (!in) {
    err << "kforge: cannot read " << path << "\n";
    return false;
  }
  try {
    *out = json::parse(in);
  } catch (const json::exception& e) {
    err << "kforge: " << path << " is not valid JSON: " << e.what() << "\n";
    return false;
  }
  return true;
}


int op_submit(const Flags& flags, Client& client, std::ostream& out, std::ostream& err) {
  const auto& args = flags.positional();
  if (args.size() != 3 || args[1] != "submit") {
    err << "kforge: usage: kforge op submit OP.json\n";
    return 2;
  }
  json op;
  if (!read_json_file(args[2], &op, err)) return 1;
  auto resp = client.request("POST", "/v1/ops", op.dump());
  if (resp.status != 200 && resp.status != 201) return report_error(resp, err);
  json body = json::parse(resp.body);
  if (flags.get_bool("json")) {
    out << body.dump(2) << "\n";
    return 0;
  }
  out << (resp.status == 201 ? "created" : "exists") << " op " << body["id"] << " " << body["name"].get<std::string>()
      << "\n";
  for (const auto& output : body["outputs"]) {
    out << "  output " << output["shape"].dump() << " " << output["dtype"].get<std::string>() << "\n";
  }
  return 0;
}

void draw_progress(const json& gen, std::ostream& out) {
  int total = gen.value("samples", 0);
  int done = gen["candidates"].value("total", 0);
  int width = 30;
  int filled = total > 0 ? std::min(width, done * width / total) : 0;
  out << "\r[" << std::string(filled, '#') << std::string(width - filled, '.') << "] " << done << "/" << total
      << " candidates  " << gen["status"].get<std::string>() << "    " << std::flush;
}

// The generation's timing note when its kernel was timed on a busy machine (result.timing,
// docs/api.md), as an indented line; "" when the timing is reliable or unknown.
std::string timing_warning(const json& gen) {
  const json result = gen.value("result", json::object());
  if (!result.is_object() || !result.contains("timing") || !result["timing"].is_object()) return "";
  const json& timing = result["timing"];
  if (timing.value("reliable", json()) != json(false)) return "";
  return "  " + timing.value("note", std::string("timing unreliable")) + "\n";
}

int show_generation_result(const json& gen, std::ostream& out, std::ostream& err) {
  std::string status = gen["status"];
  if (status != "succeeded") {
    err << "kforge: generation " << gen["id"] << " " << status;
    if (gen["error"].is_object()) err << ": " << gen["error"].value("message", "");
    err << "\n";
    return 1;
  }
  if (gen["best"].is_null()) {
    std::string message = gen["result"].is_object() ? gen["result"].value("message", "") : "";
    out << "generation " << gen["id"] << " finished: "
        << (message.empty() ? "no correct kernel among " + gen["candidates"]["total"].dump() + " candidates" : message)
        << "\n";
    return 1;
  }
  const json& best = gen["best"];
  // When eager wins (or every kernel is flagged) the result's message says so first.
  const json& result = gen.value("result", json::object());
  if (result.is_object() && result.value("message", json()).is_string())
    out << result["message"].get<std::string>() << "\n";
  out << "best kernel: candidate " << best["id"] << " on " << best.value("device", "") << ", speedup "
      << fmt_number(best["speedup"]) << "x (" << fmt_number(best["kernel_ms"], 4) << " ms vs PyTorch "
      << fmt_number(best["baseline_ms"], 4) << " ms)\n"
      << timing_warning(gen) << "\n"
      << best.value("source", "") << "\n";
  return 0;
}

int generate(const Flags& flags, Client& client, std::ostream& out, std::ostream& err) {
  json body = {{"target", flags.get("target")}, {"model", flags.get("model")}};
  try {
    body["samples"] = flags.get_int("samples");
    if (!flags.get("op-id").empty()) body["op_id"] = flags.get_int("op-id");
  } catch (const std::exception& e) {
    err << "kforge: " << e.what() << "\n";
    return 2;
  }
  if (!flags.get("op").empty()) {
    json op;
    if (!read_json_file(flags.get("op"), &op, err)) return 1;
    body["op"] = op;
  }
  if (!body.contains("op") && !body.contains("op_id")) {
    err << "kforge: generate needs --op OP.json or --op-id N\n";
    return 2;
  }
  auto resp = client.request("POST", "/v1/generations", body.dump());
  if (resp.status != 202) return report_error(resp, err);
  json gen = json::parse(resp.body);
  std::string path = "/v1/generations/" + std::to_string(gen["id"].get<int64_t>());
  if (!flags.get_bool("wait")) {
    out << (flags.get_bool("json") ? gen.dump(2) : "queued generation " + std::to_string(gen["id"].get<int64_t>()))
        << "\n";
    return 0;
  }
  double timeout_s = flags.get_double("timeout-s");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  double poll_s = flags.get_double("poll-s");
  for (;;) {
    auto poll = client.request("GET", path);
    if (poll.status != 200) return report_error(poll, err);
    gen = json::parse(poll.body);
    draw_progress(gen, err);
    std::string status = gen["status"];
    if (status == "succeeded" || status == "failed" || status == "cancelled") break;
    if (std::chrono::steady_clock::now() > deadline) {
      err << "\nkforge: still " << status << " after " << timeout_s << " s; follow it with GET " << path << "\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_s));
  }
  err << "\n";
  if (flags.get_bool("json")) {
    out << gen.dump(2) << "\n";
    return gen["status"] == "succeeded" ? 0 : 1;
  }
  return show_generation_result(gen, out, err);
}

int jobs_list(const Flags& flags, Client& client, std::ostream& out, std::ostream& err) {
  std::string path = "/v1/jobs?limit=" + flags.get("limit");
  if (!flags.get("kind").empty()) path += "&kind=" + flags.get("kind");
  if (!flags.get("status").empty()) path += "&status=" + flags.get("status");
  auto resp = client.request("GET", path);
  if (resp.status != 200) return report_error(resp, err);
  json page = json::parse(resp.body);
  if (flags.get_bool("json")) {
    out << page.dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& job : page["data"]) {
    rows.push_back({std::to_string(job["id"].get<int64_t>()), job["kind"].get<std::string>(),
                    job["status"].get<std::string>(), job["created_at"].get<std::string>()});
  }
  print_table(out, {"ID", "KIND", "STATUS", "CREATED"}, rows);
  return 0;
}


int train(const Flags& flags, Client& client, std::ostream& out, std::ostream& err) {
  const auto& args = flags.positional();
  if (args.size() < 2 || (args[1] != "sft" && args[1] != "grpo" && args[1] != "rft")) {
    err << "kforge: usage: kforge train sft|grpo|rft --suite S|--dataset D [--base-model M] [key=value ...]\n";
    return 2;
  }
  json body = {{"method", args[1]}, {"hyperparameters", json::object()}};
  if (!flags.get("suite").empty()) body["suite"] = flags.get("suite");
  if (!flags.get("dataset").empty()) body["dataset"] = flags.get("dataset");
  if (!flags.get("base-model").empty()) body["base_model"] = flags.get("base-model");
  for (size_t arg_idx = 2; arg_idx < args.size(); ++arg_idx) {
    if (!parse_assignment(args[arg_idx], &body["hyperparameters"], err)) return 2;
  }
  auto resp = client.request("POST", "/v1/training-jobs", body.dump());
  if (resp.status != 202) return report_error(resp, err);
  json job = json::parse(resp.body);
  if (flags.get_bool("json")) {
    out << job.dump(2) << "\n";
    return 0;
  }
  out << "queued training job " << job["id"] << " (" << args[1] << ")\n  hyperparameters "
      << job["hyperparameters"].dump() << "\n";
  return 0;
}

int leaderboard(const Flags& flags, Client& client, std::ostream& out, std::ostream& err) {
  bool models = flags.get_bool("models");
  auto resp = client.request("GET", std::string(models ? "/v1/leaderboard/models" : "/v1/leaderboard/ops") +
                                        "?limit=" + flags.get("limit"));
  if (resp.status != 200) return report_error(resp, err);
  json page = json::parse(resp.body);
  if (flags.get_bool("json")) {
    out << page.dump(2) << "\n";
    return 0;
  }
  if (models) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& row : page["data"]) {
      const json& m = row["metrics"];
      rows.push_back({row["model"].get<std::string>(), row["suite"].get<std::string>(),
                      rate_with_interval(m, "pass_at_1", "fast_0"), fmt_number(m.value("fast_1", json())),
                      fmt_number(m.value("fast_2", json())),
                      fmt_number(m.is_object() ? m.value("fast_1_vs_compile", json()) : json()),
                      fmt_number(m.value("geomean_speedup", json()))});
    }
    print_table(out, {"MODEL", "SUITE", "PASS@1 [95% CI]", "FAST_1", "FAST_2", "FAST_1_COMPILE", "GEOMEAN"}, rows);
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& row : page["data"]) {
    std::string winner = row.value("winner", json()).is_string() ? row["winner"].get<std::string>() : "-";
    if (winner == "pytorch_eager") winner = "PyTorch eager (use eager)";
    if (winner == "torch_compile") winner = "torch.compile (use it)";
    rows.push_back({row["op_name"].get<std::string>(), row["target"].get<std::string>(),
                    row["device"].get<std::string>(), fmt_number(row["speedup"]) + "x", winner});
  }
  print_table(out, {"OP", "TARGET", "DEVICE", "SPEEDUP", "WINNER"}, rows);
  return 0;
}

// The suite ops `kforge demo` queues by default: two single ops and two fusions that the
// teacher compiler turns into correct kernels on a CPU worker in seconds.
const char* kDemoOps = "level1/relu,level1/softmax_last,level2/silu_mul,level2/gelu_add";

// A suite file as POST /v1/generations takes it: the op format's fields only (the suite's
// level, category and split are bookkeeping the API does not accept).
bool read_suite_op(const std::string& suite_dir, const std::string& name, json* op, std::ostream& err) {
  json file;
  if (!read_json_file(suite_dir + "/" + name + ".json", &file, err)) return false;
  *op = json::object();
  for (const char* key : {"name", "source", "inputs", "extra_shapes", "tolerance"}) {
    if (file.contains(key)) (*op)[key] = file[key];
  }
  return true;
}

// One line per finished generation: the verified kernel's speedup and the head of its source.
void print_demo_result(const std::string& name, const json& gen, double seconds, std::ostream& out) {
  out << std::left << std::setw(22) << name << " generation " << gen["id"] << " " << gen["status"].get<std::string>()
      << " after " << std::fixed << std::setprecision(1) << seconds << " s: ";
  const json& best = gen["best"];
  if (gen["status"] != "succeeded" || best.is_null()) {
    out << "no verified kernel";
    if (gen["error"].is_object()) out << " (" << gen["error"].value("message", "") << ")";
    out << "\n";
    return;
  }
  out << "verified kernel, candidate " << best["id"] << ", speedup " << fmt_number(best["speedup"]) << "x ("
      << fmt_number(best["kernel_ms"], 4) << " ms vs PyTorch " << fmt_number(best["baseline_ms"], 4) << " ms)\n"
      << timing_warning(gen);
  std::istringstream source(best.value("source", ""));
  std::string line;
  for (int line_idx = 0; line_idx < 4 && std::getline(source, line); ++line_idx) out << "    " << line << "\n";
  out << "    ...  (GET /v1/candidates/" << best["id"] << " for the whole kernel)\n";
}

int demo(const Flags& flags, Client& client, std::ostream& out, std::ostream& err) {
  std::string ops_flag = flags.get("demo-ops").empty() ? kDemoOps : flags.get("demo-ops");
  std::vector<std::string> names;
  std::istringstream list(ops_flag);
  for (std::string name; std::getline(list, name, ',');) {
    if (!name.empty()) names.push_back(name);
  }
  struct Pending {
    std::string name;
    int64_t id;
    std::chrono::steady_clock::time_point posted;
  };
  std::vector<Pending> pending;
  for (const auto& name : names) {
    json body = {{"target", flags.get("target")}, {"model", flags.get("model")}};
    body["samples"] = flags.get_int("samples");
    if (!read_suite_op(flags.get("suite-dir"), name, &body["op"], err)) return 1;
    auto resp = client.request("POST", "/v1/generations", body.dump());
    if (resp.status != 202) return report_error(resp, err);
    pending.push_back({name, json::parse(resp.body)["id"].get<int64_t>(), std::chrono::steady_clock::now()});
  }
  out << "queued " << pending.size() << " demo generations (" << ops_flag << "), " << flags.get("samples")
      << " samples each; results print as they complete\n"
      << std::flush;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(flags.get_double("timeout-s"));
  size_t verified = 0, total = pending.size();
  while (!pending.empty()) {
    for (auto it = pending.begin(); it != pending.end();) {
      auto poll = client.request("GET", "/v1/generations/" + std::to_string(it->id));
      if (poll.status != 200) return report_error(poll, err);
      json gen = json::parse(poll.body);
      std::string status = gen["status"];
      if (status != "succeeded" && status != "failed" && status != "cancelled") {
        ++it;
        continue;
      }
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - it->posted).count();
      print_demo_result(it->name, gen, seconds, out);
      out << std::flush;
      if (status == "succeeded" && !gen["best"].is_null()) ++verified;
      it = pending.erase(it);
    }
    if (pending.empty()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      err << "kforge: " << pending.size() << " demo generations still running after " << flags.get("timeout-s")
          << " s (is a worker up? `kforge jobs list`)\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(flags.get_double("poll-s")));
  }
  out << verified << "/" << total << " ops have a verified kernel; `kforge leaderboard` lists the best per op\n";
  return verified == total ? 0 : 1;
}

// A generate flag whose default and doc are the generation table's (spec/job_spec.h), so
// `kforge generate` sends what the API would pick anyway.
FlagSpec generate_flag(const std::string& field_path, const std::string& flag) {
  spec::FieldInfo field = spec::job_field(spec::JobKind::generate, field_path);
  std::string help = "generate: " + field.doc;
  if (!field.choices.empty()) {
    help += " (";
    for (size_t choice_idx = 0; choice_idx < field.choices.size(); ++choice_idx)
      help += (choice_idx ? ", " : "") + field.choices[choice_idx];
    help += ")";
  }
  return {flag, "", spec::default_text(field), help};
}

}  // namespace

std::vector<FlagSpec> cli_flags() {
  return {
      {"url", "KFORGE_URL", "http://127.0.0.1:8080", "server base URL"},
      {"token", "KFORGE_TOKEN", "", "API token (Bearer)"},
      {"op", "", "", "generate: op JSON file"},
      {"op-id", "", "", "generate: id of a stored op"},
      generate_flag("samples", "samples"),
      generate_flag("target", "target"),
      generate_flag("model", "model"),
      {"wait", "", "false", "generate, eval start: wait and show progress, then the result", true},
      {"timeout-s", "", "3600", "generate --wait, eval start --wait, demo: give up after this long"},
      {"poll-s", "", "1", "generate --wait, eval start --wait, demo: polling interval"},
      {"kind", "", "", "jobs list: generate, train_sft, train_grpo, train_rft, evaluate"},
      {"status", "", "", "jobs list: queued, running, succeeded, failed, cancelled, retrying"},
      {"limit", "", "20", "jobs list / leaderboard: rows (1-100)"},
      {"suite", "", "", "train: op suite"},
      {"dataset", "", "", "train: dataset path"},
      {"base-model", "", "", "train: starting model (required for grpo)"},
      {"models", "", "false", "leaderboard: models instead of ops", true},
      {"json", "", "false", "print the server's JSON", true},
      {"suite-dir", "KFORGE_SUITE_DIR", "suite", "demo: the op suite's folder (level1/, level2/)"},
      {"demo-ops", "", "", std::string("demo: suite ops to queue (default ") + kDemoOps + ")"},
  };
}

int run_command_line(const Flags& flags, Client& client, std::ostream& out, std::ostream& err) {
  const auto& args = flags.positional();
  if (flags.help_requested() || args.empty()) {
    out << flags.usage("kforge <command>", kUsage);
    return flags.help_requested() ? 0 : 2;
  }
  const std::string& command = args[0];
  try {
    if (command == "op") return op_submit(flags, client, out, err);
    if (command == "generate") return generate(flags, client, out, err);
    if (command == "jobs" && args.size() == 2 && args[1] == "list") return jobs_list(flags, client, out, err);
    if (command == "train") return train(flags, client, out, err);
    if (command == "leaderboard") return leaderboard(flags, client, out, err);
    if (command == "eval") return eval_command(flags, client, out, err);
    if (command == "demo") return demo(flags, client, out, err);
    if (command == "health" || command == "ready") {
      auto resp = client.request("GET", "/v1/" + command);
      out << resp.body << "\n";
      return resp.status == 200 ? 0 : 1;
    }
  } catch (const std::exception& e) {
    err << "kforge: " << e.what() << "\n";
    return 1;
  }
  err << "kforge: unknown command '" << command << "' (see --help)\n";
  return 2;
}

}  // namespace kforge::cli
