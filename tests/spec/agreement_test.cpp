// Every component agrees on every job field of spec/job_spec.h: the API's reader and the
// worker's parse, kforge-train's flags and binary, the CLI's defaults, the trainer configs
// and api/openapi.json (default, range, enum, length, required, doc). ctest -R spec_agreement_test
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "cli/commands.h"
#include "common/subprocess.h"
#include "spec/job_spec.h"
#include "tests/support/processes.h"
#include "worker/jobs/generate.h"
#include "worker/jobs/job_args.h"
#include "worker/train/train_cli.h"
#include "worker/train/train_config.h"

using kforge::spec::Field;
using kforge::spec::FieldInfo;
using kforge::spec::FieldType;
using kforge::spec::JobKind;
using kforge::spec::Source;
using json = nlohmann::json;

namespace {

json with_value(json doc, const FieldInfo& field, const json& value) {
  if (field.group().empty()) doc[field.name()] = value;
  else doc[field.group()][field.name()] = value;
  return doc;
}

// Values worth trying for a field: both ends of its range, a middle, just outside, and a
// wrong type. The API and the worker must accept and reject exactly the same ones.
std::vector<json> probe_values(const FieldInfo& field) {
  std::vector<json> values = {"text", json::array()};
  if (field.type == FieldType::integer) {
    int64_t min = field.minimum.get<int64_t>(), max = field.maximum.get<int64_t>();
    values.insert(values.end(), {min, max, min + (max - min) / 3, min - 1, static_cast<double>(min) + 0.5});
    if (max < std::numeric_limits<int64_t>::max()) values.push_back(max + 1);
  } else if (field.type == FieldType::number) {
    double min = field.minimum.get<double>(), max = field.maximum.get<double>();
    values.insert(values.end(), {min, max, (min + max) / 3, min - 1, max * 2 + 1});
  } else if (field.type == FieldType::choice) {
    for (const auto& choice : field.choices) values.push_back(choice);
    values.push_back("vulkan");
  } else if (field.type == FieldType::string) {
    values.insert(values.end(), {"", "x", std::string(field.maximum.get<size_t>() + 1, 'x')});
  }
  return values;
}

// What the API stores for a request, as the route does: the reader's stored args plus
// the ids the server resolves (a fixed stand-in here, since no database is involved).
json as_stored_job(JobKind kind, json stored) {
  if (kind == JobKind::generate) {
    if (stored["op_id"].is_null()) stored["op_id"] = 5;
    stored["model_id"] = 11;
  } else if (kind == JobKind::evaluate) {
    stored["model_id"] = 11;
  } else if (stored.contains("base_model") && !stored["base_model"].is_null()) {
    stored["base_model_id"] = 11;
  }
  return stored;
}

// For one kind: every probe of every request field goes through the API's reader; when
// it is accepted, the stored args go through the worker's parse, which must accept them
// and see every field's value as the API did.
template <typename Args, typename ReadFn, typename WorkerParse>
void check_api_and_worker_agree(JobKind kind, const std::vector<Field<Args>>& table, const json& minimal,
                                ReadFn read, WorkerParse worker_parse) {
  for (const auto& probe_field : table) {
    const FieldInfo& field = probe_field.info;
    if (!field.read_from(Source::request) || field.scope == kforge::spec::Scope::request) continue;
    for (const json& value : probe_values(field)) {
      SCOPED_TRACE(std::string(kind_name(kind)) + " " + field.path + " = " + value.dump());
      auto api = read(with_value(minimal, field, value), Source::request);
      // The same value inserted straight into a job (no API in between): same verdict.
      auto direct = read(as_stored_job(kind, with_value(minimal, field, value)), Source::job);
      EXPECT_EQ(api.ok(), direct.ok()) << kforge::spec::describe_errors(api.errors) << " | "
                                       << kforge::spec::describe_errors(direct.errors);
      if (!api.ok()) continue;
      Args worker;
      ASSERT_NO_THROW(worker = worker_parse(as_stored_job(kind, api.stored).dump()));
      for (const auto& compared : table) {
        if (!compared.info.read_from(Source::job) || compared.info.scope != kforge::spec::Scope::both) continue;
        EXPECT_EQ(compared.load(worker), compared.load(api.args)) << compared.info.path;
      }
    }
  }
}

std::map<std::string, kforge::FlagSpec> flags_by_name(const std::vector<kforge::FlagSpec>& flags) {
  std::map<std::string, kforge::FlagSpec> out;
  for (const auto& flag : flags) out[flag.name] = flag;
  return out;
}

kforge::Flags parsed(const std::vector<kforge::FlagSpec>& specs, std::vector<std::string> args) {
  kforge::Flags flags(specs);
  args.insert(args.begin(), "kforge-train");
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  EXPECT_FALSE(flags.parse(static_cast<int>(argv.size()), argv.data()));
  return flags;
}

// kforge-train with no table flags given reads every flagged field at its table default.
template <typename Args>
void check_train_defaults(const std::string& command, const std::vector<Field<Args>>& table, const Args& args) {
  auto flags = flags_by_name(kforge::train::command_flags(command));
  for (const auto& field : table) {
    if (field.info.flag.empty()) continue;
    SCOPED_TRACE(command + " --" + field.info.flag);
    ASSERT_TRUE(flags.count(field.info.flag));
    EXPECT_EQ(flags[field.info.flag].default_value, kforge::spec::default_text(field.info));
    EXPECT_EQ(flags[field.info.flag].is_bool, field.info.flag_switch);
    if (!field.info.fallback.is_null()) EXPECT_EQ(field.load(args), field.info.fallback);
  }
}

json openapi_schemas() {
  std::ifstream in(kforge::test::source_path("api/openapi.json"));
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str())["components"]["schemas"];
}

// The OpenAPI schema that documents a kind's request fields at `group` ("" = the body).
std::string schema_name(JobKind kind, const std::string& group) {
  switch (kind) {
    case JobKind::generate: return "GenerationCreate";
    case JobKind::train_sft: return group.empty() ? "TrainingJobCreate" : "SftHyperparameters";
    case JobKind::train_grpo: return group.empty() ? "TrainingJobCreate" : "GrpoHyperparameters";
    case JobKind::train_rft: return group.empty() ? "TrainingJobCreate" : "RftHyperparameters";
    case JobKind::evaluate: return group.empty() ? "EvaluationCreate" : "EvaluationSettings";
  }
  return "";
}

const char* openapi_type(FieldType type) {
  switch (type) {
    case FieldType::integer: return "integer";
    case FieldType::number: return "number";
    case FieldType::object: return "object";
    default: return "string";
  }
}

}  // namespace

TEST(Agreement, ApiReaderAndWorkerParseAcceptTheSameValuesAndSeeTheSameFields) {
  check_api_and_worker_agree(JobKind::generate, kforge::spec::generate_table(), json{{"op_id", 5}},
                             kforge::spec::read_generate, kforge::jobs::parse_generate_args);
  check_api_and_worker_agree(JobKind::train_sft, kforge::spec::sft_table(), json{{"method", "sft"}, {"suite", "builtin"}},
                             kforge::spec::read_sft, kforge::jobs::parse_sft_job_args);
  check_api_and_worker_agree(JobKind::train_grpo, kforge::spec::grpo_table(),
                             json{{"method", "grpo"}, {"suite", "builtin"}, {"base_model", "kforge-tiny"}},
                             kforge::spec::read_grpo, kforge::jobs::parse_grpo_job_args);
  check_api_and_worker_agree(JobKind::train_rft, kforge::spec::rft_table(),
                             json{{"method", "rft"}, {"suite", "builtin"}, {"base_model", "kforge-tiny"}},
                             kforge::spec::read_rft, kforge::jobs::parse_rft_job_args);
  check_api_and_worker_agree(JobKind::evaluate, kforge::spec::evaluate_table(),
                             json{{"model", "kforge-tiny"}, {"suite", "heldout"}}, kforge::spec::read_evaluate,
                             kforge::jobs::parse_evaluate_job_args);
}

TEST(Agreement, KforgeTrainFlagsTakeTheTablesDefaultsAndRanges) {
  for (const auto& command : kforge::train::train_commands()) {
    auto kind = kforge::train::command_kind(command);
    ASSERT_TRUE(kind.has_value()) << command;
    auto flags = parsed(kforge::train::command_flags(command), {});
    if (*kind == JobKind::train_sft) {
      check_train_defaults(command, kforge::spec::sft_table(), kforge::train::sft_args(flags));
    } else if (*kind == JobKind::train_grpo) {
      check_train_defaults(command, kforge::spec::grpo_table(), kforge::train::grpo_args(flags));
    } else if (*kind == JobKind::train_rft) {
      check_train_defaults(command, kforge::spec::rft_table(), kforge::train::rft_args(flags));
    } else {
      check_train_defaults(command, kforge::spec::evaluate_table(), kforge::train::evaluate_args(flags));
    }
  }
  // Ranges are the reader's: one past the end fails naming the flag.
  auto grpo = parsed(kforge::train::command_flags("grpo"), {"--lr", "2", "--group", "1"});
  try {
    kforge::train::grpo_args(grpo);
    FAIL() << "out-of-range flags were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--lr: must be in 1e-09..1.0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--group: must be in 2..256"), std::string::npos) << e.what();
  }
}

TEST(Agreement, KforgeTrainBinaryRefusesOutOfRangeFlagsAndShowsTableDefaults) {
  auto [status, output] = kforge::run_command({kforge::test::bin_path("kforge-train"), "grpo", "--lr", "5"});
  EXPECT_EQ(status, 2) << output;
  EXPECT_NE(output.find("--lr: must be in"), std::string::npos) << output;
  auto [help_status, help] = kforge::run_command({kforge::test::bin_path("kforge-train"), "eval", "--help"});
  EXPECT_EQ(help_status, 0) << help;
  auto seed = kforge::spec::job_field(JobKind::evaluate, "settings.seed");
  EXPECT_NE(help.find("[default: " + kforge::spec::default_text(seed) + "]"), std::string::npos) << help;
}

TEST(Agreement, TrainerConfigsCarryEverySpecField) {
  // Distinct non-default values, so a field the config builder forgets shows up.
  auto grpo = kforge::spec::read_grpo(json::parse(R"({"hyperparameters": {
      "steps": 7, "learning_rate": 0.002, "prompts_per_step": 3, "group_size": 5, "eps_low": 0.1, "eps_high": 0.3,
      "kl_coef": 0.04, "temperature": 0.7, "top_p": 0.9, "max_new_tokens": 99, "overlong_buffer": 9,
      "speed_weight": 0.6, "speed_cap": 4, "grad_clip": 2.5, "seed": 17, "warmup_steps": 2, "micro_batch": 6,
      "check_threads": 3}})"),
                                      Source::flags);
  ASSERT_TRUE(grpo.ok()) << kforge::spec::describe_errors(grpo.errors);
  auto config = kforge::train::grpo_config(grpo.args, kforge::train::PromptStyle::kforge_tiny);
  EXPECT_EQ(config.steps, 7);
  EXPECT_EQ(config.optim.total_steps, 7);
  EXPECT_DOUBLE_EQ(config.optim.lr, 0.002);
  EXPECT_EQ(config.tasks_per_step, 3);
  EXPECT_EQ(config.group_size, 5);
  EXPECT_DOUBLE_EQ(config.loss.eps_low, 0.1);
  EXPECT_DOUBLE_EQ(config.loss.eps_high, 0.3);
  EXPECT_DOUBLE_EQ(config.loss.kl_beta, 0.04);
  EXPECT_DOUBLE_EQ(config.sampling.temperature, 0.7);
  EXPECT_DOUBLE_EQ(config.sampling.top_p, 0.9);
  EXPECT_EQ(config.sampling.max_new_tokens, 99);
  EXPECT_FALSE(config.sampling.stop.empty());
  EXPECT_EQ(config.overlong_buffer_tokens, 9);
  EXPECT_DOUBLE_EQ(config.reward.speed_weight, 0.6);
  EXPECT_DOUBLE_EQ(config.reward.speed_cap, 4);
  EXPECT_DOUBLE_EQ(config.optim.grad_clip, 2.5);
  EXPECT_EQ(config.seed, 17u);
  EXPECT_EQ(config.optim.warmup_steps, 2);
  EXPECT_EQ(config.micro_batch, 6);
  EXPECT_EQ(config.check_threads, 3);
  EXPECT_EQ(config.validate(), "");

  auto sft = kforge::spec::read_sft(json::parse(R"({"hyperparameters": {
      "epochs": 2, "max_steps": 9, "batch_size": 12, "micro_batch": 3, "max_seq_len": 512, "warmup_steps": 4,
      "eval_every": 5, "checkpoint_every": 6, "learning_rate": 0.01, "weight_decay": 0.1, "grad_clip": 0.5,
      "seed": 8}})"),
                                    Source::flags);
  ASSERT_TRUE(sft.ok()) << kforge::spec::describe_errors(sft.errors);
  auto sft_config = kforge::train::sft_config(sft.args);
  EXPECT_EQ(sft_config.epochs, 2);
  EXPECT_EQ(sft_config.max_steps, 9);
  EXPECT_EQ(sft_config.batch_size, 12);
  EXPECT_EQ(sft_config.micro_batch, 3);
  EXPECT_EQ(sft_config.max_tokens, 512);
  EXPECT_EQ(sft_config.optim.warmup_steps, 4);
  EXPECT_EQ(sft_config.eval_every, 5);
  EXPECT_EQ(sft_config.checkpoint_every, 6);
  EXPECT_DOUBLE_EQ(sft_config.optim.lr, 0.01);
  EXPECT_DOUBLE_EQ(sft_config.optim.weight_decay, 0.1);
  EXPECT_DOUBLE_EQ(sft_config.optim.grad_clip, 0.5);
  EXPECT_EQ(sft_config.seed, 8u);

  auto eval = kforge::spec::read_evaluate(json::parse(R"({"settings": {
      "samples": 6, "k": 2, "max_new_tokens": 77, "temperature": 0.5, "top_p": 0.8, "seed": 3, "check_threads": 5}})"),
                                          Source::flags);
  ASSERT_TRUE(eval.ok()) << kforge::spec::describe_errors(eval.errors);
  auto eval_config = kforge::train::eval_config(eval.args, kforge::train::PromptStyle::kforge_tiny);
  EXPECT_EQ(eval_config.samples_per_op, 6);
  EXPECT_EQ(eval_config.k, 2);
  EXPECT_EQ(eval_config.sampling.max_new_tokens, 77);
  EXPECT_DOUBLE_EQ(eval_config.sampling.temperature, 0.5);
  EXPECT_DOUBLE_EQ(eval_config.sampling.top_p, 0.8);
  EXPECT_EQ(eval_config.seed, 3u);
  EXPECT_EQ(eval_config.check_threads, 5);
}

TEST(Agreement, CliDefaultsAreTheGenerationTables) {
  auto flags = flags_by_name(kforge::cli::cli_flags());
  for (const std::string path : {"samples", "target", "model"}) {
    auto field = kforge::spec::job_field(JobKind::generate, path);
    ASSERT_TRUE(flags.count(path));
    EXPECT_EQ(flags[path].default_value, kforge::spec::default_text(field)) << path;
  }
}

TEST(Agreement, OpenApiDocumentsEveryRequestFieldAsTheTableDoes) {
  json schemas = openapi_schemas();
  for (JobKind kind : kforge::spec::all_kinds()) {
    std::map<std::string, std::vector<std::string>> documented;  // schema -> request fields the table has
    for (const auto& field : kforge::spec::job_fields(kind)) {
      if (!field.read_from(Source::request)) continue;
      std::string name = schema_name(kind, field.group());
      SCOPED_TRACE(std::string(kind_name(kind)) + " " + field.path + " in " + name);
      documented[name].push_back(field.name());
      ASSERT_TRUE(schemas.contains(name));
      const json& schema = schemas[name];
      ASSERT_TRUE(schema["properties"].contains(field.name()));
      const json& property = schema["properties"][field.name()];
      if (!property.contains("allOf")) EXPECT_EQ(property.value("type", ""), openapi_type(field.type));
      EXPECT_EQ(property.value("description", ""), field.doc);
      EXPECT_EQ(property.value("default", json()), field.fallback);
      bool integer_or_number = field.type == FieldType::integer || field.type == FieldType::number;
      bool unbounded = field.maximum == json(std::numeric_limits<int64_t>::max());
      EXPECT_EQ(property.value("minimum", json()), integer_or_number ? field.minimum : json());
      EXPECT_EQ(property.value("maximum", json()), integer_or_number && !unbounded ? field.maximum : json());
      if (field.type == FieldType::string) {
        EXPECT_EQ(property.value("maxLength", json()), field.maximum);
        EXPECT_EQ(property.value("minLength", json()), field.minimum.get<int>() > 0 ? field.minimum : json());
      }
      EXPECT_EQ(property.value("enum", json()), field.type == FieldType::choice ? json(field.choices) : json());
      bool required = false;
      for (const auto& listed : schema.value("required", json::array())) required = required || listed == field.name();
      EXPECT_EQ(required, field.required_in(Source::request));
    }
    for (const auto& [name, fields] : documented) {
      for (const auto& item : schemas[name]["properties"].items()) {
        bool known = std::find(fields.begin(), fields.end(), item.key()) != fields.end();
        bool group = item.value().value("type", "") == "object" &&
                     (item.key() == "hyperparameters" || item.key() == "settings");
        EXPECT_TRUE(known || group) << name << "." << item.key() << " is documented but no table has it";
      }
    }
  }
}
