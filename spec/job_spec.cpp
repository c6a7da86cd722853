// The four job kinds' field tables and readers (spec/job_spec.h). Every default and
// range of a job's arguments is written here and nowhere else: the API, the worker,
// kforge-train, the CLI and the OpenAPI check read these tables. Test: ctest -R 'spec_(job_spec|agreement)_test'.
#include "spec/job_spec.h"

#include <limits>
#include <stdexcept>

namespace kforge::spec {
namespace {

constexpr int64_t kMaxId = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxSeed = 2147483647;
constexpr int64_t kMaxSteps = 1000000;

const std::vector<std::string> kTargets = {"opencl", "cuda", "triton"};

// The top-level fields both training kinds share.
template <typename T>
std::vector<Field<T>> training_top(int64_t priority) {
  return {
      choice_field<T>("method", nullptr, {"sft", "grpo", "rft"}, "sft, grpo or rft (expert iteration)", &T::method)
          .with_need(Need::in_request),
      model_field<T>("base_model", nullptr, "model name or name@version to start from (required for grpo and rft)",
                     &T::base_model),
      integer_field<T>("base_model_id", nullptr, 1, kMaxId, "the version the server resolved `base_model` to",
                       &T::base_model_id)
          .with_scope(Scope::job),
      string_field<T>("dataset", nullptr, 0, 1024, "JSONL of {prompt, completion} lines, a path on the worker (sft only)",
                      &T::dataset),
      string_field<T>("suite", nullptr, 0, 100, "'builtin' (or 'train'): the built-in suite's train split, on the worker",
                      &T::suite),
      string_field<T>("output_model", "kforge-tiny", 1, 100, "name of the model versions the job registers",
                      &T::output_model),
      integer_field<T>("priority", priority, 0, 9, "queue priority (0 = first)", &T::priority).with_scope(Scope::request),
  };
}

// Hyperparameters both training kinds have: the optimisation loop's bookkeeping.
template <typename T>
std::vector<Field<T>> training_loop(int64_t warmup_steps, const char* seed_doc) {
  return {
      integer_field<T>("hyperparameters.warmup_steps", warmup_steps, 0, kMaxSteps, "linear warm-up steps",
                       &T::warmup_steps)
          .with_flag("warmup"),
      integer_field<T>("hyperparameters.micro_batch", 4, 1, 4096, "sequences per forward", &T::micro_batch)
          .with_flag("micro-batch"),
      number_field<T>("hyperparameters.grad_clip", 1.0, 0, 1000, "global grad-norm clip (0 = off)", &T::grad_clip)
          .with_flag("grad-clip"),
      integer_field<T>("hyperparameters.checkpoint_every", 50, 0, kMaxSteps,
                       "checkpoint (a model version) every N steps (0 = at the end)", &T::checkpoint_every)
          .with_flag("checkpoint-every"),
      integer_field<T>("hyperparameters.seed", 0, 0, kMaxSeed, seed_doc, &T::seed).with_flag("seed"),
  };
}

// Defaults of the harness settings, which differ by kind (their ranges do not).
struct CheckDefaults {
  int64_t max_check_elements;
  int trials;
  int threads;  // 0: the kind has no check_threads field
  int time_kernels;
  const char* time_doc;
};

// The harness settings of a kind under `group` ("hyperparameters", "settings").
template <typename T>
std::vector<Field<T>> check_table(const std::string& group, const CheckDefaults& defaults) {
  std::string prefix = group + ".";
  std::vector<Field<T>> fields = {
      integer_field<T>(prefix + "limit_ops", 0, 0, 100000, "first N ops of the split (0 = all)", &T::check,
                       &CheckSettings::limit_ops)
          .with_flag("limit-ops"),
      integer_field<T>(prefix + "max_check_elements", defaults.max_check_elements, 0, 1000000000,
                       "check on main shapes shrunk to this many input elements (0 = full shapes)", &T::check,
                       &CheckSettings::max_check_elements)
          .with_flag("max-check-elements"),
      integer_field<T>(prefix + "check_trials", defaults.trials, 1, 20, "correctness trials per check", &T::check,
                       &CheckSettings::trials)
          .with_flag("trials"),
  };
  if (defaults.threads > 0) {
    fields.push_back(integer_field<T>(prefix + "check_threads", defaults.threads, 1, 64, "checks at once", &T::check,
                                      &CheckSettings::threads)
                         .with_flag("check-threads"));
  }
  fields.push_back(integer_field<T>(prefix + "time_kernels", defaults.time_kernels, 0, 1, defaults.time_doc, &T::check,
                                    &CheckSettings::time_kernels)
                       .with_flag("time", /*is_switch=*/true));
  return fields;
}

// "Exactly one of dataset or suite": "" counts as absent, as the worker treats it.
void check_dataset_or_suite(ReadResult<SftArgs>& read) {
  if (read.args.dataset.empty() == read.args.suite.empty()) read.fail("suite", "give exactly one of dataset or suite");
}

// GRPO and expert iteration sample from a trained model on ops they can check: a suite,
// no dataset, and a base model.
template <typename Args>
void check_sampling_job(ReadResult<Args>& read, Source source, const std::string& method) {
  const Args& args = read.args;
  if (!args.dataset.empty()) {
    read.fail("dataset", method + " needs ops it can check, not prompt/completion pairs: give suite instead");
  }
  if (args.suite.empty()) read.fail("suite", "is required for " + method + " (for example \"builtin\")");
  if (source == Source::request && args.base_model.empty()) {
    read.fail("base_model", method + " starts from a trained model: give base_model (for example kforge-tiny)");
  }
  if (source == Source::job && args.base_model_id == 0) {
    read.fail("base_model", method + " starts from a trained model version; none was given");
  }
}

}  // namespace

const std::vector<Field<GenerateArgs>>& generate_table() {
  using T = GenerateArgs;
  static const std::vector<Field<T>> table = {
      integer_field<T>("op_id", nullptr, 1, kMaxId, "id of a stored op (or send `op` inline)", &T::op_id)
          .with_need(Need::in_job),
      object_field<T>("op", "an inline op (OpCreate): validated and stored first", &T::op).with_scope(Scope::request),
      choice_field<T>("target", "opencl", kTargets, "kernel language", &T::target),
      choice_field<T>("device", "auto", {"auto", "cpu", "gpu"},
                      "where candidates are checked and timed: cpu (PoCL, against libtorch on the CPU) or gpu "
                      "(against CUDA eager and torch.compile); auto is cpu for opencl, gpu for cuda and triton",
                      &T::device),
      model_field<T>("model", "kforge-tiny", "model name or name@version that proposes candidates", &T::model),
      integer_field<T>("model_id", nullptr, 1, kMaxId, "the version the server resolved `model` to (none: teacher)",
                       &T::model_id)
          .with_scope(Scope::job),
      integer_field<T>("samples", 8, 1, 256, "candidates to sample and check", &T::samples),
      integer_field<T>("time_budget_s", 600, 1, 86400, "stop checking after this many seconds", &T::time_budget_s),
      integer_field<T>("seed", 0, 0, kMaxId, "sampling seed", &T::seed),
      integer_field<T>("priority", 2, 0, 9, "queue priority (0 = first)", &T::priority).with_scope(Scope::request),
  };
  return table;
}

const std::vector<Field<SftArgs>>& sft_table() {
  using T = SftArgs;
  static const std::vector<Field<T>> table = [] {
    auto table = training_top<T>(5);
    std::vector<Field<T>> hyper = {
        integer_field<T>("hyperparameters.epochs", 3, 1, 1000, "passes over the pairs (when max_steps is 0)", &T::epochs)
            .with_flag("epochs"),
        integer_field<T>("hyperparameters.max_steps", 0, 0, kMaxSteps, "optimizer steps (0 = from epochs)",
                         &T::max_steps)
            .with_flag("steps"),
        integer_field<T>("hyperparameters.batch_size", 16, 1, 4096, "sequences per optimizer step", &T::batch_size)
            .with_flag("batch"),
        integer_field<T>("hyperparameters.max_seq_len", 2048, 16, 131072, "longest prompt + completion (longer are skipped)",
                         &T::max_seq_len)
            .with_flag("max-tokens"),
        integer_field<T>("hyperparameters.eval_every", 25, 0, kMaxSteps, "validation loss every N steps (0 = at the end)",
                         &T::eval_every)
            .with_flag("eval-every"),
        integer_field<T>("hyperparameters.vocab_size", 4096, 260, 262144, "BPE vocabulary of a bootstrapped model",
                         &T::vocab_size)
            .with_flag("vocab-size"),
        number_field<T>("hyperparameters.learning_rate", 3e-4, 1e-8, 1, "peak learning rate", &T::learning_rate)
            .with_flag("lr"),
        number_field<T>("hyperparameters.weight_decay", 0.0, 0, 1, "AdamW decay (matrices only)", &T::weight_decay)
            .with_flag("weight-decay"),
        integer_field<T>("hyperparameters.variants_per_op", 4, 1, 64, "suite dataset: teacher schedules per op",
                         &T::variants_per_op)
            .with_flag("variants"),
    };
    table.insert(table.end(), hyper.begin(), hyper.end());
    auto loop = training_loop<T>(10, "data order and weight init");
    table.insert(table.end(), loop.begin(), loop.end());
    // The dataset checks one variant at a time (no check_threads) and needs no timing.
    auto check = check_table<T>("hyperparameters", {65536, 2, 0, 0, "1: time each verified variant (its speedup)"});
    table.insert(table.end(), check.begin(), check.end());
    return table;
  }();
  return table;
}

const std::vector<Field<GrpoArgs>>& grpo_table() {
  using T = GrpoArgs;
  static const std::vector<Field<T>> table = [] {
    auto table = training_top<T>(5);
    std::vector<Field<T>> hyper = {
        integer_field<T>("hyperparameters.steps", 200, 1, kMaxSteps, "optimizer steps", &T::steps).with_flag("steps"),
        number_field<T>("hyperparameters.learning_rate", 1e-5, 1e-9, 1, "peak learning rate", &T::learning_rate)
            .with_flag("lr"),
        integer_field<T>("hyperparameters.prompts_per_step", 4, 1, 1024, "ops per step", &T::prompts_per_step)
            .with_flag("tasks-per-step"),
        integer_field<T>("hyperparameters.group_size", 8, 2, 256, "samples per op (advantages compare within a group)",
                         &T::group_size)
            .with_flag("group"),
        number_field<T>("hyperparameters.eps_low", 0.2, 0, 1, "ratio clipped below at 1 - eps_low", &T::eps_low)
            .with_flag("eps-low"),
        number_field<T>("hyperparameters.eps_high", 0.28, 0, 1, "ratio clipped above at 1 + eps_high (>= eps_low)",
                        &T::eps_high)
            .with_flag("eps-high"),
        number_field<T>("hyperparameters.kl_coef", 0.0, 0, 10, "k3 KL weight to the frozen base model (0 = off)",
                        &T::kl_coef)
            .with_flag("kl-beta"),
        number_field<T>("hyperparameters.temperature", 1.0, 0.01, 5, "sampling temperature", &T::temperature)
            .with_flag("temperature"),
        number_field<T>("hyperparameters.top_p", 1.0, 0.01, 1, "sampling top-p", &T::top_p).with_flag("top-p"),
        integer_field<T>("hyperparameters.max_new_tokens", 1024, 1, 65536, "completion limit", &T::max_new_tokens)
            .with_flag("max-new-tokens"),
        integer_field<T>("hyperparameters.overlong_buffer", 0, 0, 65536,
                         "soft overlong penalty over the last N tokens before max_new_tokens (0 = off)",
                         &T::overlong_buffer)
            .with_flag("overlong-buffer"),
        number_field<T>("hyperparameters.speed_weight", 0.5, 0, 10, "w in the reward bonus w * min(speedup, cap)",
                        &T::speed_weight)
            .with_flag("speed-weight"),
        number_field<T>("hyperparameters.speed_cap", 3.0, 1, 1000, "cap in the reward bonus w * min(speedup, cap)",
                        &T::speed_cap)
            .with_flag("speed-cap"),
        choice_field<T>("hyperparameters.speed_bonus", "absolute", {"absolute", "among_correct"},
                        "absolute: w * min(speedup, cap) for every correct sample; among_correct: w * its rank "
                        "(min-max) among its group's correct samples",
                        &T::speed_bonus)
            .with_flag("speed-bonus"),
        choice_field<T>("hyperparameters.advantage", "group_mean", {"group_mean", "leave_one_out"},
                        "advantage baseline: the group's mean (GRPO) or the mean of the other samples (RLOO)",
                        &T::advantage)
            .with_flag("advantage"),
        integer_field<T>("hyperparameters.recheck_per_step", 2, 0, 64,
                         "correct kernels re-checked with fresh secret seeds each step (reward-hacking watch)",
                         &T::recheck_per_step)
            .with_flag("recheck"),
        integer_field<T>("hyperparameters.curriculum_every", 0, 0, kMaxSteps,
                         "measure pass@1 per task every N steps and train on tasks with 0 < pass@1 < 1 (0 = off)",
                         &T::curriculum_every)
            .with_flag("curriculum-every"),
        integer_field<T>("hyperparameters.curriculum_samples", 8, 1, 256, "samples per task when measuring pass@1",
                         &T::curriculum_samples)
            .with_flag("curriculum-samples"),
    };
    table.insert(table.end(), hyper.begin(), hyper.end());
    auto loop = training_loop<T>(0, "sampling seeds and task order");
    table.insert(table.end(), loop.begin(), loop.end());
    auto check = check_table<T>("hyperparameters", {65536, 2, 2, 1, "1: time correct kernels (the speed reward)"});
    table.insert(table.end(), check.begin(), check.end());
    return table;
  }();
  return table;
}

const std::vector<Field<RftArgs>>& rft_table() {
  using T = RftArgs;
  static const std::vector<Field<T>> table = [] {
    auto table = training_top<T>(5);
    std::vector<Field<T>> hyper = {
        integer_field<T>("hyperparameters.rounds", 4, 1, 1000, "sample -> verify -> fine-tune rounds", &T::rounds)
            .with_flag("rounds"),
        integer_field<T>("hyperparameters.samples_per_task", 8, 1, 256, "samples per op and round",
                         &T::samples_per_task)
            .with_flag("samples"),
        integer_field<T>("hyperparameters.max_kept_per_task", 4, 1, 256,
                         "distinct verified kernels kept per op and round", &T::max_kept_per_task)
            .with_flag("keep-per-task"),
        integer_field<T>("hyperparameters.steps_per_round", 50, 1, kMaxSteps,
                         "fine-tune steps per round, on every verified kernel kept so far", &T::steps_per_round)
            .with_flag("steps"),
        integer_field<T>("hyperparameters.batch_size", 16, 1, 4096, "sequences per fine-tune step", &T::batch_size)
            .with_flag("batch"),
        integer_field<T>("hyperparameters.max_seq_len", 2048, 16, 131072,
                         "longest prompt + kernel (longer are skipped)", &T::max_seq_len)
            .with_flag("max-tokens"),
        number_field<T>("hyperparameters.learning_rate", 1e-4, 1e-9, 1, "peak learning rate of each round's fine-tune",
                        &T::learning_rate)
            .with_flag("lr"),
        number_field<T>("hyperparameters.temperature", 1.0, 0.01, 5, "sampling temperature", &T::temperature)
            .with_flag("temperature"),
        number_field<T>("hyperparameters.top_p", 1.0, 0.01, 1, "sampling top-p", &T::top_p).with_flag("top-p"),
        integer_field<T>("hyperparameters.max_new_tokens", 1024, 1, 65536, "completion limit", &T::max_new_tokens)
            .with_flag("max-new-tokens"),
    };
    table.insert(table.end(), hyper.begin(), hyper.end());
    auto loop = training_loop<T>(5, "sampling seeds and fine-tune data order");
    table.insert(table.end(), loop.begin(), loop.end());
    // Only correctness decides what is kept: untimed by default.
    auto check = check_table<T>("hyperparameters", {65536, 2, 2, 0, "1: time verified samples (not needed to keep them)"});
    table.insert(table.end(), check.begin(), check.end());
    return table;
  }();
  return table;
}

const std::vector<Field<EvaluateArgs>>& evaluate_table() {
  using T = EvaluateArgs;
  static const std::vector<Field<T>> table = [] {
    std::vector<Field<T>> table = {
        model_field<T>("model", nullptr, "model name or name@version to evaluate", &T::model).with_need(Need::in_request),
        integer_field<T>("model_id", nullptr, 1, kMaxId, "the version the server resolved `model` to", &T::model_id)
            .with_scope(Scope::job),
        string_field<T>("suite", nullptr, 1, 100,
                        "'heldout' or 'builtin' (held-out split), 'train', 'all', 'builtin:<split>'", &T::suite)
            .with_need(Need::always),
        choice_field<T>("target", "opencl", kTargets, "kernel language", &T::target),
        integer_field<T>("priority", 4, 0, 9, "queue priority (0 = first)", &T::priority).with_scope(Scope::request),
        integer_field<T>("settings.samples", 4, 1, 256, "samples per op", &T::samples).with_flag("samples"),
        integer_field<T>("settings.k", nullptr, 1, 256, "pass@k (default: samples)", &T::k).with_flag("k"),
        integer_field<T>("settings.max_new_tokens", 768, 1, 65536, "completion limit", &T::max_new_tokens)
            .with_flag("max-new-tokens"),
        number_field<T>("settings.temperature", 0.8, 0.01, 5, "sampling temperature", &T::temperature)
            .with_flag("temperature"),
        number_field<T>("settings.top_p", 0.95, 0.01, 1, "sampling top-p", &T::top_p).with_flag("top-p"),
        integer_field<T>("settings.seed", 1234, 0, kMaxSeed, "sampling seed base (op index mixed in)", &T::seed)
            .with_flag("seed"),
    };
    // Full shapes by default: an evaluation's speedups are the op's.
    auto check = check_table<T>("settings", {0, 3, 2, 1, "1: time correct kernels (fast_p, speedups)"});
    table.insert(table.end(), check.begin(), check.end());
    return table;
  }();
  return table;
}

const char* kind_name(JobKind kind) {
  switch (kind) {
    case JobKind::generate: return "generate";
    case JobKind::train_sft: return "train_sft";
    case JobKind::train_grpo: return "train_grpo";
    case JobKind::train_rft: return "train_rft";
    case JobKind::evaluate: return "evaluate";
  }
  return "";
}

const std::vector<JobKind>& all_kinds() {
  static const std::vector<JobKind> kinds = {JobKind::generate, JobKind::train_sft, JobKind::train_grpo,
                                             JobKind::train_rft, JobKind::evaluate};
  return kinds;
}

std::string resolved_device(const GenerateArgs& args) {
  if (args.device != "auto") return args.device;
  return args.target == "opencl" ? "cpu" : "gpu";
}

std::vector<std::string> required_capabilities(const std::string& target, const std::string& device) {
  return {"target:" + target, "device:" + device};
}

ReadResult<GenerateArgs> read_generate(const json& doc, Source source) {
  auto read = read_table(doc, generate_table(), source);
  if (read.ok() && source == Source::request && (read.args.op_id > 0) == read.args.op.is_object()) {
    read.fail("op_id", "give exactly one of op_id or op (an inline op)");
  }
  const GenerateArgs& args = read.args;
  if (read.ok() && args.target != "opencl" && args.device == "cpu") {
    read.fail("device", "target " + args.target + " runs on a GPU only: use device gpu (or auto)");
  }
  return read;
}

ReadResult<SftArgs> read_sft(const json& doc, Source source) {
  auto read = read_table(doc, sft_table(), source);
  if (read.ok() && source != Source::flags) check_dataset_or_suite(read);
  return read;
}

ReadResult<GrpoArgs> read_grpo(const json& doc, Source source) {
  auto read = read_table(doc, grpo_table(), source);
  if (!read.ok()) return read;
  const GrpoArgs& args = read.args;
  if (source != Source::flags) check_sampling_job(read, source, "GRPO");
  if (args.eps_high < args.eps_low) read.fail("hyperparameters.eps_high", "must be at least eps_low");
  if (args.overlong_buffer > args.max_new_tokens) {
    read.fail("hyperparameters.overlong_buffer", "must be at most max_new_tokens");
  }
  return read;
}

ReadResult<RftArgs> read_rft(const json& doc, Source source) {
  auto read = read_table(doc, rft_table(), source);
  if (read.ok() && source != Source::flags) check_sampling_job(read, source, "Expert iteration");
  return read;
}

ReadResult<EvaluateArgs> read_evaluate(const json& doc, Source source) {
  auto read = read_table(doc, evaluate_table(), source);
  if (!read.ok()) return read;
  EvaluateArgs& args = read.args;
  if (args.k == 0) {
    args.k = args.samples;  // pass@k over every sample unless asked otherwise
    if (source != Source::flags) read.stored["settings"]["k"] = args.k;
  }
  if (args.k > args.samples) {
    read.fail("settings.k", "must be at most samples (" + std::to_string(args.samples) + ")");
  }
  if (source == Source::job && args.model_id == 0) read.fail("model", "no model version was given");
  if (source == Source::job && args.model.empty()) args.model = "model " + std::to_string(args.model_id);
  return read;
}

std::vector<FieldInfo> job_fields(JobKind kind) {
  switch (kind) {
    case JobKind::generate: return field_infos(generate_table());
    case JobKind::train_sft: return field_infos(sft_table());
    case JobKind::train_grpo: return field_infos(grpo_table());
    case JobKind::train_rft: return field_infos(rft_table());
    case JobKind::evaluate: return field_infos(evaluate_table());
  }
  return {};
}

FieldInfo job_field(JobKind kind, const std::string& path) {
  for (auto& field : job_fields(kind)) {
    if (field.path == path) return field;
  }
  throw std::out_of_range(std::string("no field ") + path + " in job kind " + kind_name(kind));
}

std::string default_text(const FieldInfo& field) {
  if (field.fallback.is_null()) return "";
  if (field.flag_switch) return field.fallback.get<int64_t>() != 0 ? "true" : "false";
  if (field.fallback.is_string()) return field.fallback.get<std::string>();
  return field.fallback.dump();
}

std::vector<FlagSpec> job_flags(JobKind kind) {
  std::vector<FlagSpec> flags;
  for (const auto& field : job_fields(kind)) {
    if (field.flag.empty()) continue;
    std::string help = field.doc;
    if (!field.flag_switch && (field.type == FieldType::integer || field.type == FieldType::number)) {
      help += " (" + field.minimum.dump() + ".." + field.maximum.dump() + ")";
    }
    flags.push_back({field.flag, "", default_text(field), help, field.flag_switch});
  }
  return flags;
}

json flags_document(const Flags& flags, JobKind kind) {
  json doc = json::object();
  for (const auto& field : job_fields(kind)) {
    if (field.flag.empty()) continue;
    const std::string& text = flags.get(field.flag);
    if (text.empty()) continue;  // absent: the reader applies the table's default
    json value;
    if (field.flag_switch) {
      value = flags.get_bool(field.flag) ? 1 : 0;
    } else if (field.type == FieldType::integer || field.type == FieldType::number) {
      value = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!value.is_number()) value = text;  // the reader names the flag: "must be a number, not string"
    } else {
      value = text;
    }
    std::string group = field.group();
    if (group.empty()) doc[field.name()] = value;
    else doc[group][field.name()] = value;
  }
  return doc;
}

std::string describe_flag_errors(const std::vector<FieldError>& errors, JobKind kind) {
  std::vector<FieldError> named;
  for (const auto& error : errors) {
    FieldError out = error;
    for (const auto& field : job_fields(kind)) {
      if (field.path == error.field && !field.flag.empty()) out.field = "--" + field.flag;
    }
    named.push_back(out);
  }
  return describe_errors(named);
}

}  // namespace kforge::spec
