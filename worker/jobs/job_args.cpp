// Job payload parsing behind worker/jobs/job_args.h. The API validates the same
// fields, but a job may be inserted by anything with database access, so the runner
// checks again and names the field it rejects. Test: ctest -R jobs_args_test.
#include "worker/jobs/job_args.h"

#include <cmath>
#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace kforge::jobs {
namespace {

using json = nlohmann::json;

// Reads typed fields of one JSON object; every error names "<prefix><field>".
class ArgReader {
 public:
  ArgReader(const json& object, std::string prefix) : object_(object), prefix_(std::move(prefix)) {}

  int64_t integer(const char* name, int64_t fallback, int64_t min, int64_t max) const {
    const json* value = find(name);
    if (!value) return fallback;
    bool integral = value->is_number_integer() || value->is_number_unsigned() ||
                    (value->is_number_float() && std::floor(value->get<double>()) == value->get<double>());
    if (!integral) fail(name, "must be an integer");
    double number = value->get<double>();
    if (number < static_cast<double>(min) || number > static_cast<double>(max)) {
      fail(name, "must be in " + std::to_string(min) + ".." + std::to_string(max) + ", got " + value->dump());
    }
    return static_cast<int64_t>(number);
  }

  double number(const char* name, double fallback, double min, double max) const {
    const json* value = find(name);
    if (!value) return fallback;
    if (!value->is_number()) fail(name, "must be a number");
    double number = value->get<double>();
    if (!(number >= min && number <= max)) {
      fail(name, "must be in " + json(min).dump() + ".." + json(max).dump() + ", got " + value->dump());
    }
    return number;
  }

  std::string string(const char* name, const std::string& fallback) const {
    const json* value = find(name);
    if (!value) return fallback;
    if (!value->is_string()) fail(name, "must be a string");
    return value->get<std::string>();
  }

  [[noreturn]] void fail(const std::string& name, const std::string& message) const {
    throw std::invalid_argument(prefix_ + name + ": " + message);
  }

 private:
  const json* find(const char* name) const {
    if (!object_.is_object() || !object_.contains(name) || object_[name].is_null()) return nullptr;
    return &object_[name];
  }
  const json& object_;
  std::string prefix_;
};

json parse_object(const std::string& args_json, const char* kind) {
  json args = json::parse(args_json, nullptr, /*allow_exceptions=*/false);
  if (!args.is_object()) throw std::invalid_argument(std::string(kind) + " args: not a JSON object");
  return args;
}

// "hyperparameters" may be absent (defaults) but not something other than an object.
json hyperparameters_of(const json& args) {
  if (!args.contains("hyperparameters") || args["hyperparameters"].is_null()) return json::object();
  if (!args["hyperparameters"].is_object()) throw std::invalid_argument("hyperparameters: must be an object");
  return args["hyperparameters"];
}

void read_check(const ArgReader& hyper, CheckSettings& check) {
  check.limit_ops = static_cast<int>(hyper.integer("limit_ops", check.limit_ops, 0, 100000));
  check.max_check_elements = hyper.integer("max_check_elements", check.max_check_elements, 0, 1000000000);
  check.trials = static_cast<int>(hyper.integer("check_trials", check.trials, 1, 20));
  check.threads = static_cast<int>(hyper.integer("check_threads", check.threads, 1, 64));
  check.time_kernels = hyper.integer("time_kernels", check.time_kernels ? 1 : 0, 0, 1) == 1;
}

bool has_level_dirs(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return false;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("level", 0) == 0) return true;
  }
  return false;
}

}  // namespace

SftJobArgs parse_sft_job_args(const std::string& args_json) {
  json args = parse_object(args_json, "train_sft");
  ArgReader top(args, "");
  SftJobArgs out;
  out.dataset = top.string("dataset", "");
  out.suite = top.string("suite", "");
  if (out.dataset.empty() == out.suite.empty()) top.fail("suite", "give exactly one of dataset or suite");
  out.base_model_id = top.integer("base_model_id", 0, 0, INT64_MAX);
  out.output_model = top.string("output_model", out.output_model);
  if (out.output_model.empty()) top.fail("output_model", "must not be empty");
  json hyper_json = hyperparameters_of(args);
  ArgReader hyper(hyper_json, "hyperparameters.");
  out.epochs = static_cast<int>(hyper.integer("epochs", out.epochs, 1, 1000));
  out.max_steps = static_cast<int>(hyper.integer("max_steps", out.max_steps, 0, 1000000));
  out.batch_size = static_cast<int>(hyper.integer("batch_size", out.batch_size, 1, 4096));
  out.micro_batch = static_cast<int>(hyper.integer("micro_batch", out.micro_batch, 1, 4096));
  out.max_seq_len = static_cast<int>(hyper.integer("max_seq_len", out.max_seq_len, 16, 131072));
  out.warmup_steps = static_cast<int>(hyper.integer("warmup_steps", out.warmup_steps, 0, 1000000));
  out.eval_every = static_cast<int>(hyper.integer("eval_every", out.eval_every, 0, 1000000));
  out.checkpoint_every = static_cast<int>(hyper.integer("checkpoint_every", out.checkpoint_every, 0, 1000000));
  out.vocab_size = static_cast<int>(hyper.integer("vocab_size", out.vocab_size, 260, 262144));
  out.learning_rate = hyper.number("learning_rate", out.learning_rate, 1e-8, 1);
  out.weight_decay = hyper.number("weight_decay", out.weight_decay, 0, 1);
  out.grad_clip = hyper.number("grad_clip", out.grad_clip, 0, 1000);
  out.seed = static_cast<uint64_t>(hyper.integer("seed", 0, 0, 2147483647));
  out.variants_per_op = static_cast<int>(hyper.integer("variants_per_op", out.variants_per_op, 1, 64));
  read_check(hyper, out.check);
  return out;
}

GrpoJobArgs parse_grpo_job_args(const std::string& args_json) {
  json args = parse_object(args_json, "train_grpo");
  ArgReader top(args, "");
  GrpoJobArgs out;
  if (!top.string("dataset", "").empty()) {
    top.fail("dataset", "GRPO needs ops it can check, not prompt/completion pairs: give suite instead");
  }
  out.suite = top.string("suite", "");
  if (out.suite.empty()) top.fail("suite", "is required for GRPO (for example \"builtin\")");
  out.base_model_id = top.integer("base_model_id", 0, 0, INT64_MAX);
  if (out.base_model_id == 0) top.fail("base_model", "GRPO starts from a trained model version; none was given");
  out.output_model = top.string("output_model", out.output_model);
  if (out.output_model.empty()) top.fail("output_model", "must not be empty");
  json hyper_json = hyperparameters_of(args);
  ArgReader hyper(hyper_json, "hyperparameters.");
  out.steps = static_cast<int>(hyper.integer("steps", out.steps, 1, 1000000));
  out.learning_rate = hyper.number("learning_rate", out.learning_rate, 1e-9, 1);
  out.prompts_per_step = static_cast<int>(hyper.integer("prompts_per_step", out.prompts_per_step, 1, 1024));
  out.group_size = static_cast<int>(hyper.integer("group_size", out.group_size, 2, 256));
  out.eps_low = hyper.number("eps_low", out.eps_low, 0, 1);
  out.eps_high = hyper.number("eps_high", out.eps_high, 0, 1);
  if (out.eps_high < out.eps_low) hyper.fail("eps_high", "must be at least eps_low");
  out.kl_coef = hyper.number("kl_coef", out.kl_coef, 0, 10);
  out.temperature = hyper.number("temperature", out.temperature, 0.01, 5);
  out.top_p = hyper.number("top_p", out.top_p, 0.01, 1);
  out.max_new_tokens = static_cast<int>(hyper.integer("max_new_tokens", out.max_new_tokens, 1, 65536));
  out.speed_weight = hyper.number("speed_weight", out.speed_weight, 0, 10);
  out.speed_cap = hyper.number("speed_cap", out.speed_cap, 1, 1000);
  out.grad_clip = hyper.number("grad_clip", out.grad_clip, 0, 1000);
  out.seed = static_cast<uint64_t>(hyper.integer("seed", 0, 0, 2147483647));
  out.warmup_steps = static_cast<int>(hyper.integer("warmup_steps", out.warmup_steps, 0, 1000000));
  out.micro_batch = static_cast<int>(hyper.integer("micro_batch", out.micro_batch, 1, 4096));
  out.checkpoint_every = static_cast<int>(hyper.integer("checkpoint_every", out.checkpoint_every, 0, 1000000));
  read_check(hyper, out.check);
  return out;
}

EvaluateJobArgs parse_evaluate_job_args(const std::string& args_json) {
  json args = parse_object(args_json, "evaluate");
  ArgReader top(args, "");
  EvaluateJobArgs out;
  out.model_id = top.integer("model_id", 0, 0, INT64_MAX);
  if (out.model_id == 0) top.fail("model", "no model version was given");
  out.model = top.string("model", "model " + std::to_string(out.model_id));
  out.suite = top.string("suite", "");
  if (out.suite.empty()) top.fail("suite", "is required (for example \"heldout\")");
  out.target = top.string("target", out.target);
  if (args.contains("settings") && !args["settings"].is_null() && !args["settings"].is_object()) {
    top.fail("settings", "must be an object");
  }
  json settings = args.value("settings", json::object());
  if (settings.is_null()) settings = json::object();
  ArgReader set(settings, "settings.");
  out.samples = static_cast<int>(set.integer("samples", out.samples, 1, 256));
  out.k = static_cast<int>(set.integer("k", out.samples, 1, 256));
  if (out.k > out.samples) set.fail("k", "must be at most samples (" + std::to_string(out.samples) + ")");
  out.max_new_tokens = static_cast<int>(set.integer("max_new_tokens", out.max_new_tokens, 1, 65536));
  out.temperature = set.number("temperature", out.temperature, 0.01, 5);
  out.top_p = set.number("top_p", out.top_p, 0.01, 1);
  out.seed = static_cast<uint64_t>(set.integer("seed", static_cast<int64_t>(out.seed), 0, 2147483647));
  read_check(set, out.check);
  return out;
}

SuiteRef resolve_training_suite(const std::string& suite, const std::string& builtin_dir) {
  if (suite == "builtin" || suite == "train" || suite == "builtin:train") return {builtin_dir, "train"};
  if (suite == "heldout" || suite == "builtin:heldout") {
    throw std::invalid_argument("suite: training never uses the held-out split; give \"builtin\" (its train split)");
  }
  if (has_level_dirs(suite)) return {suite, "train"};
  throw std::invalid_argument("suite: unknown suite '" + suite + "' (this worker has \"builtin\", read from " +
                              builtin_dir + ", or a suite directory on the worker)");
}

SuiteRef resolve_evaluation_suite(const std::string& suite, const std::string& builtin_dir) {
  std::string split = suite;
  if (suite.rfind("builtin:", 0) == 0) split = suite.substr(8);
  if (suite == "builtin") split = "heldout";
  if (split == "heldout" || split == "train") return {builtin_dir, split};
  if (split == "all") return {builtin_dir, ""};
  if (has_level_dirs(suite)) return {suite, "heldout"};
  throw std::invalid_argument("suite: unknown suite '" + suite +
                              "' (use \"heldout\", \"train\", \"all\", \"builtin\" or \"builtin:<split>\")");
}

}  // namespace kforge::jobs
