// The job readers of spec/job_spec.h on bad and boundary input: every field of every
// kind at and past its range, wrong types, 8.0 vs 8, unknown and missing fields, scopes,
// cross-field rules, flags; never a throw. ctest -R spec_job_spec_test
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>

#include "spec/job_spec.h"

using kforge::spec::FieldError;
using kforge::spec::FieldInfo;
using kforge::spec::FieldType;
using kforge::spec::JobKind;
using kforge::spec::Source;
using json = nlohmann::json;

namespace {

// The stored args and errors of any kind's reader, so tests can loop over kinds.
struct AnyRead {
  json stored;
  std::vector<FieldError> errors;
};

AnyRead read_any(JobKind kind, const json& doc, Source source) {
  auto pack = [](const auto& read) { return AnyRead{read.stored, read.errors}; };
  switch (kind) {
    case JobKind::generate: return pack(kforge::spec::read_generate(doc, source));
    case JobKind::train_sft: return pack(kforge::spec::read_sft(doc, source));
    case JobKind::train_grpo: return pack(kforge::spec::read_grpo(doc, source));
    case JobKind::train_rft: return pack(kforge::spec::read_rft(doc, source));
    case JobKind::evaluate: return pack(kforge::spec::read_evaluate(doc, source));
  }
  return {};
}

// The smallest valid document of each kind for each source.
json minimal(JobKind kind, Source source) {
  bool request = source == Source::request;
  switch (kind) {
    case JobKind::generate: return {{"op_id", 1}};
    case JobKind::train_sft: return request ? json{{"method", "sft"}, {"suite", "builtin"}} : json{{"suite", "builtin"}};
    case JobKind::train_grpo:
      return request ? json{{"method", "grpo"}, {"suite", "builtin"}, {"base_model", "kforge-tiny"}}
                     : json{{"suite", "builtin"}, {"base_model_id", 3}};
    case JobKind::train_rft:
      return request ? json{{"method", "rft"}, {"suite", "builtin"}, {"base_model", "kforge-tiny"}}
                     : json{{"suite", "builtin"}, {"base_model_id", 3}};
    case JobKind::evaluate:
      return request ? json{{"model", "kforge-tiny"}, {"suite", "heldout"}} : json{{"model_id", 2}, {"suite", "heldout"}};
  }
  return json::object();
}

json with_value(json doc, const FieldInfo& field, const json& value) {
  if (field.group().empty()) doc[field.name()] = value;
  else doc[field.group()][field.name()] = value;
  return doc;
}

// The error message for `path`, or "" when the field has none.
std::string error_for(const std::vector<FieldError>& errors, const std::string& path) {
  for (const auto& error : errors) {
    if (error.field == path) return error.message;
  }
  return "";
}

std::map<std::string, std::string> by_field(const std::vector<FieldError>& errors) {
  std::map<std::string, std::string> out;
  for (const auto& error : errors) out[error.field] = error.message;
  return out;
}

}  // namespace

TEST(JobSpec, EveryKindHasDocumentedFieldsWithConsistentRanges) {
  for (JobKind kind : kforge::spec::all_kinds()) {
    auto fields = kforge::spec::job_fields(kind);
    ASSERT_FALSE(fields.empty()) << kind_name(kind);
    std::map<std::string, int> seen_paths, seen_flags;
    for (const auto& field : fields) {
      SCOPED_TRACE(std::string(kind_name(kind)) + " " + field.path);
      EXPECT_FALSE(field.doc.empty());
      EXPECT_EQ(++seen_paths[field.path], 1) << "a path is written once per kind";
      if (!field.flag.empty()) EXPECT_EQ(++seen_flags[field.flag], 1) << "a flag is one field";
      if (field.type == FieldType::integer || field.type == FieldType::number) {
        ASSERT_TRUE(field.minimum.is_number() && field.maximum.is_number());
        EXPECT_LE(field.minimum.get<double>(), field.maximum.get<double>());
        if (field.fallback.is_number()) {
          EXPECT_GE(field.fallback.get<double>(), field.minimum.get<double>()) << "the default is in range";
          EXPECT_LE(field.fallback.get<double>(), field.maximum.get<double>()) << "the default is in range";
        }
      }
      if (field.type == FieldType::choice && field.fallback.is_string()) {
        EXPECT_NE(std::find(field.choices.begin(), field.choices.end(), field.fallback.get<std::string>()),
                  field.choices.end());
      }
    }
  }
}

TEST(JobSpec, DefaultsFillEveryAbsentFieldInBothSources) {
  for (JobKind kind : kforge::spec::all_kinds()) {
    for (Source source : {Source::request, Source::job}) {
      AnyRead read = read_any(kind, minimal(kind, source), source);
      ASSERT_TRUE(read.errors.empty()) << kind_name(kind) << ": " << kforge::spec::describe_errors(read.errors);
      for (const auto& field : kforge::spec::job_fields(kind)) {
        if (!field.read_from(source) || field.scope == kforge::spec::Scope::request) {
          EXPECT_FALSE(field.group().empty() ? read.stored.contains(field.name())
                                             : read.stored[field.group()].contains(field.name()))
              << field.path << " is not stored from this source";
          continue;
        }
        json stored = field.group().empty() ? read.stored[field.name()] : read.stored[field.group()][field.name()];
        if (field.fallback.is_null()) continue;
        EXPECT_EQ(stored, field.fallback) << kind_name(kind) << " " << field.path;
        EXPECT_EQ(stored.type(), field.fallback.type()) << field.path << " keeps its JSON type";
      }
    }
  }
}

TEST(JobSpec, EveryRangeIsInclusiveAndNamedOutside) {
  for (JobKind kind : kforge::spec::all_kinds()) {
    for (Source source : {Source::request, Source::job}) {
      for (const auto& field : kforge::spec::job_fields(kind)) {
        if (!field.read_from(source)) continue;
        if (field.type != FieldType::integer && field.type != FieldType::number) continue;
        SCOPED_TRACE(std::string(kind_name(kind)) + " " + field.path + (source == Source::job ? " (job)" : " (request)"));
        json base = minimal(kind, source);
        for (const json& inside : {field.minimum, field.maximum}) {
          AnyRead read = read_any(kind, with_value(base, field, inside), source);
          EXPECT_EQ(error_for(read.errors, field.path).rfind("must be in", 0), std::string::npos) << inside;
        }
        json below, above;
        if (field.type == FieldType::integer) {
          below = field.minimum.get<int64_t>() - 1;
          above = field.maximum.get<int64_t>() == std::numeric_limits<int64_t>::max()
                      ? json(uint64_t{1} << 63)
                      : json(field.maximum.get<int64_t>() + 1);
        } else {
          double min = field.minimum.get<double>(), max = field.maximum.get<double>();
          below = min > 0 ? min / 2 : min - 1;
          above = max * 2 + 1;
        }
        for (const json& outside : {below, above}) {
          AnyRead read = read_any(kind, with_value(base, field, outside), source);
          EXPECT_EQ(error_for(read.errors, field.path).rfind("must be in", 0), 0u) << outside;
        }
      }
    }
  }
}

TEST(JobSpec, IntegralFloatsAreIntegersOthersAreNot) {
  // Decision: JSON has one number type, so 8.0 reads as 8 everywhere (stored as 8);
  // 8.5, "8", true and 1e300 are not integers.
  auto read = kforge::spec::read_generate({{"op_id", 1.0}, {"samples", 8.0}}, Source::request);
  ASSERT_TRUE(read.ok()) << kforge::spec::describe_errors(read.errors);
  EXPECT_EQ(read.args.samples, 8);
  EXPECT_EQ(read.args.op_id, 1);
  EXPECT_TRUE(read.stored["samples"].is_number_integer());
  auto job = kforge::spec::read_generate({{"op_id", 1}, {"samples", 8.0}}, Source::job);
  EXPECT_EQ(job.args.samples, 8) << "the worker reads 8.0 as the API does";
  auto bad = by_field(kforge::spec::read_generate(
                          {{"op_id", 1}, {"samples", 8.5}, {"seed", "8"}, {"time_budget_s", true}}, Source::request)
                          .errors);
  EXPECT_EQ(bad["samples"], "must be an integer, not number");
  EXPECT_EQ(bad["seed"], "must be an integer, not string");
  EXPECT_EQ(bad["time_budget_s"], "must be an integer, not boolean");
  auto huge = kforge::spec::read_generate({{"op_id", 1}, {"samples", 1e300}}, Source::request);
  EXPECT_FALSE(error_for(huge.errors, "samples").empty());
  // Numbers take integers as they are.
  auto lr = kforge::spec::read_sft(json::parse(R"({"suite": "s", "hyperparameters": {"learning_rate": 1}})"),
                                   Source::job);
  ASSERT_TRUE(lr.ok());
  EXPECT_DOUBLE_EQ(lr.args.learning_rate, 1.0);
}

TEST(JobSpec, WrongTypesUnknownAndMissingFieldsAreNamed) {
  auto generate = by_field(kforge::spec::read_generate(
                               json::parse(R"({"sampels": 3, "target": "vulkan", "model": "a@b", "model_id": 4})"),
                               Source::request)
                               .errors);
  EXPECT_EQ(generate["sampels"], "is not a known field");
  EXPECT_EQ(generate["model_id"], "is not a known field") << "the server fills model_id";
  EXPECT_EQ(generate["target"], "must be one of: opencl, cuda, triton");
  EXPECT_EQ(generate["model"], "must be a model name or name@version, such as kforge-tiny@2");

  auto sft = by_field(kforge::spec::read_sft(
                          json::parse(R"({"suite": "s", "hyperparameters": {"lr": 1, "epochs": "two"}})"), Source::request)
                          .errors);
  EXPECT_EQ(sft["method"], "is required");
  EXPECT_EQ(sft["hyperparameters.lr"], "is not a known field");
  EXPECT_EQ(sft["hyperparameters.epochs"], "must be an integer, not string");

  auto not_object = kforge::spec::read_grpo(json::parse(R"({"suite": "s", "hyperparameters": [1]})"), Source::job);
  EXPECT_EQ(error_for(not_object.errors, "hyperparameters"), "must be an object, not array");
  auto not_a_doc = kforge::spec::read_evaluate(json::array(), Source::job);
  EXPECT_NE(kforge::spec::describe_errors(not_a_doc.errors).find("not a JSON object"), std::string::npos);

  auto evaluate = by_field(kforge::spec::read_evaluate(json::object(), Source::request).errors);
  EXPECT_EQ(evaluate["model"], "is required");
  EXPECT_EQ(evaluate["suite"], "is required");
  EXPECT_EQ(error_for(kforge::spec::read_generate(json::object(), Source::job).errors, "op_id"), "is required");
  auto empty = by_field(kforge::spec::read_sft(json::parse(R"({"suite": "s", "output_model": ""})"), Source::job).errors);
  EXPECT_EQ(empty["output_model"], "must not be empty");
}

TEST(JobSpec, StoredJobsMayCarryFieldsThisVersionDoesNotKnow) {
  auto read = kforge::spec::read_sft(json::parse(R"({"suite": "s", "retired": 1, "hyperparameters": {"old_knob": 2}})"),
                                     Source::job);
  EXPECT_TRUE(read.ok()) << kforge::spec::describe_errors(read.errors);
}

TEST(JobSpec, RequestOnlyAndServerFilledFields) {
  auto read = kforge::spec::read_generate(json::parse(R"({"op": {"name": "x"}, "priority": 7})"), Source::request);
  ASSERT_TRUE(read.ok()) << kforge::spec::describe_errors(read.errors);
  EXPECT_EQ(read.args.priority, 7);
  EXPECT_TRUE(read.args.op.is_object());
  EXPECT_FALSE(read.stored.contains("priority")) << "priority is the queue's, not the job's";
  EXPECT_FALSE(read.stored.contains("op"));
  EXPECT_FALSE(read.stored.contains("model_id"));
  // A job's args may carry priority from somewhere else; the runner ignores it.
  auto job = kforge::spec::read_generate(json::parse(R"({"op_id": 3, "model_id": 5, "priority": 99})"), Source::job);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job.args.model_id, 5);
  EXPECT_EQ(job.args.priority, 0);
}

TEST(JobSpec, CrossFieldRules) {
  auto both = kforge::spec::read_generate(json::parse(R"({"op_id": 1, "op": {}})"), Source::request);
  EXPECT_EQ(error_for(both.errors, "op_id"), "give exactly one of op_id or op (an inline op)");
  auto neither = kforge::spec::read_generate(json::object(), Source::request);
  EXPECT_FALSE(error_for(neither.errors, "op_id").empty());

  EXPECT_EQ(error_for(kforge::spec::read_sft(json::parse(R"({"method": "sft"})"), Source::request).errors, "suite"),
            "give exactly one of dataset or suite");
  auto grpo_dataset = kforge::spec::read_grpo(json::parse(R"({"dataset": "/x.jsonl", "base_model_id": 1})"), Source::job);
  EXPECT_EQ(error_for(grpo_dataset.errors, "dataset").rfind("GRPO needs ops", 0), 0u);
  EXPECT_FALSE(
      error_for(kforge::spec::read_grpo(json::parse(R"({"method": "grpo", "suite": "s"})"), Source::request).errors,
                "base_model")
          .empty());
  EXPECT_FALSE(error_for(kforge::spec::read_grpo(json::parse(R"({"suite": "s"})"), Source::job).errors, "base_model").empty());
  auto eps = kforge::spec::read_grpo(
      json::parse(R"({"suite": "s", "base_model_id": 1, "hyperparameters": {"eps_low": 0.3, "eps_high": 0.1}})"),
      Source::job);
  EXPECT_EQ(error_for(eps.errors, "hyperparameters.eps_high"), "must be at least eps_low");
  auto overlong = kforge::spec::read_grpo(
      json::parse(R"({"suite": "s", "base_model_id": 1, "hyperparameters": {"max_new_tokens": 64, "overlong_buffer": 65}})"),
      Source::job);
  EXPECT_EQ(error_for(overlong.errors, "hyperparameters.overlong_buffer"), "must be at most max_new_tokens");
  // Expert iteration samples and checks as GRPO does: a suite and a base model, no dataset.
  auto rft_bare = kforge::spec::read_rft(json::parse(R"({"method": "rft"})"), Source::request);
  EXPECT_EQ(error_for(rft_bare.errors, "suite"), "is required for Expert iteration (for example \"builtin\")");
  EXPECT_EQ(error_for(rft_bare.errors, "base_model"),
            "Expert iteration starts from a trained model: give base_model (for example kforge-tiny)");
  auto rft_dataset = kforge::spec::read_rft(json::parse(R"({"dataset": "/x.jsonl", "base_model_id": 1})"), Source::job);
  EXPECT_EQ(error_for(rft_dataset.errors, "dataset").rfind("Expert iteration needs ops", 0), 0u);
  auto rft_range = kforge::spec::read_rft(
      json::parse(R"({"suite": "s", "base_model_id": 1, "hyperparameters": {"rounds": 0, "samples_per_task": 257}})"),
      Source::job);
  EXPECT_EQ(error_for(rft_range.errors, "hyperparameters.rounds"), "must be in 1..1000, got 0");
  EXPECT_EQ(error_for(rft_range.errors, "hyperparameters.samples_per_task"), "must be in 1..256, got 257");
  auto rft_ok = kforge::spec::read_rft(json::parse(R"({"method": "rft", "suite": "builtin", "base_model": "m"})"),
                                       Source::request);
  ASSERT_TRUE(rft_ok.ok()) << kforge::spec::describe_errors(rft_ok.errors);
  EXPECT_EQ(rft_ok.stored["hyperparameters"]["rounds"], 4) << "defaults are echoed";
  EXPECT_EQ(rft_ok.stored["hyperparameters"]["time_kernels"], 0) << "keeping needs correctness only";
  // GRPO's issue-17 options are choices with named values.
  auto bad_choice = kforge::spec::read_grpo(
      json::parse(R"({"suite": "s", "base_model_id": 1, "hyperparameters": {"advantage": "loo", "speed_bonus": "x"}})"),
      Source::job);
  EXPECT_NE(error_for(bad_choice.errors, "hyperparameters.advantage").find("leave_one_out"), std::string::npos)
      << kforge::spec::describe_errors(bad_choice.errors);
  EXPECT_NE(error_for(bad_choice.errors, "hyperparameters.speed_bonus").find("among_correct"), std::string::npos);

  auto k_default = kforge::spec::read_evaluate(json::parse(R"({"model": "m", "suite": "s", "settings": {"samples": 6}})"),
                                               Source::request);
  ASSERT_TRUE(k_default.ok());
  EXPECT_EQ(k_default.args.k, 6) << "k defaults to samples";
  EXPECT_EQ(k_default.stored["settings"]["k"], 6) << "and is stored so";
  auto k_big = kforge::spec::read_evaluate(
      json::parse(R"({"model_id": 1, "suite": "s", "settings": {"samples": 2, "k": 3}})"), Source::job);
  EXPECT_EQ(error_for(k_big.errors, "settings.k"), "must be at most samples (2)");
  EXPECT_EQ(error_for(kforge::spec::read_evaluate(json::parse(R"({"suite": "s"})"), Source::job).errors, "model"),
            "no model version was given");
}

TEST(JobSpec, ModelRefs) {
  std::string name;
  int version = -1;
  EXPECT_TRUE(kforge::spec::parse_model_ref("kforge-tiny", &name, &version));
  EXPECT_EQ(name, "kforge-tiny");
  EXPECT_EQ(version, 0);
  EXPECT_TRUE(kforge::spec::parse_model_ref("kforge-tiny@12", &name, &version));
  EXPECT_EQ(version, 12);
  for (const char* bad : {"", "@3", "m@", "m@0", "m@x", "m@1234567", "m@-1"}) {
    EXPECT_FALSE(kforge::spec::parse_model_ref(bad, &name, &version)) << bad;
  }
}

TEST(JobSpec, FlagsComeFromTheTableAndGoThroughTheReader) {
  auto flags_of = kforge::spec::job_flags(JobKind::train_grpo);
  std::map<std::string, kforge::FlagSpec> by_name;
  for (const auto& flag : flags_of) by_name[flag.name] = flag;
  ASSERT_TRUE(by_name.count("lr"));
  EXPECT_EQ(by_name["lr"].default_value, "1e-05");
  EXPECT_EQ(by_name["steps"].default_value, "200");
  EXPECT_TRUE(by_name["time"].is_bool);
  EXPECT_EQ(by_name["time"].default_value, "true");

  kforge::Flags defaults(flags_of);
  char prog[] = "kforge-train";
  char* no_args[] = {prog};
  ASSERT_FALSE(defaults.parse(1, no_args));
  auto read = kforge::spec::read_grpo(kforge::spec::flags_document(defaults, JobKind::train_grpo), Source::flags);
  ASSERT_TRUE(read.ok()) << kforge::spec::describe_errors(read.errors);
  EXPECT_DOUBLE_EQ(read.args.learning_rate, 1e-5);
  EXPECT_TRUE(read.args.check.time_kernels);

  kforge::Flags bad(flags_of);
  char lr[] = "--lr", five[] = "5", no_time[] = "--no-time", group[] = "--group", word[] = "eight";
  char* args[] = {prog, lr, five, no_time, group, word};
  ASSERT_FALSE(bad.parse(6, args));
  auto bad_read = kforge::spec::read_grpo(kforge::spec::flags_document(bad, JobKind::train_grpo), Source::flags);
  std::string message = kforge::spec::describe_flag_errors(bad_read.errors, JobKind::train_grpo);
  EXPECT_NE(message.find("--lr: must be in"), std::string::npos) << message;
  EXPECT_NE(message.find("--group: must be an integer, not string"), std::string::npos) << message;
}

TEST(JobSpec, ReadersNeverThrowOnAnyJson) {
  std::vector<json> docs = {nullptr,
                            json::array(),
                            "text",
                            3,
                            json::parse(R"({"hyperparameters": "x", "settings": 5, "op": [], "samples": {}})"),
                            json::parse(R"({"op_id": -1, "samples": -9e99, "suite": 7, "model": null})"),
                            json::parse(R"({"settings": {"samples": 18446744073709551615, "k": null}})")};
  for (JobKind kind : kforge::spec::all_kinds()) {
    for (Source source : {Source::request, Source::job, Source::flags}) {
      for (const auto& doc : docs) EXPECT_NO_THROW(read_any(kind, doc, source)) << doc;
    }
  }
}
