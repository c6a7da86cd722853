// kforge-policy: standalone commands over the policy library (no database):
//   kforge-policy train-tokenizer | encode | init | logits | generate | bench  (--help)
// Used by tests/parity/parity.py and bench/policy/ on hosts with only libtorch.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <map>
#include <fstream>
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/config.h"
#include "worker/policy/model.h"
#include "worker/policy/policy.h"
#include "worker/policy/sampler.h"
#include "worker/policy/tokenizer.h"

namespace kp = kforge::policy;
using Json = nlohmann::json;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<int64_t> parse_ids(const std::string& text) {
  std::vector<int64_t> ids;
  std::stringstream in(text);
  int64_t id;
  while (in >> id) ids.push_back(id);
  return ids;
}

kp::PretokenizerKind parse_pretokenizer(const std::string& name) {
  if (name == "qwen2") return kp::PretokenizerKind::Qwen2;
  if (name == "llama3") return kp::PretokenizerKind::Llama3;
  if (name == "gpt2") return kp::PretokenizerKind::Gpt2;
  throw std::runtime_error("unknown --pretokenizer '" + name + "' (qwen2, llama3, gpt2)");
}

kp::Model load_model(const kforge::Flags& flags) {
  kp::LoadOptions options{flags.get("device"), flags.get("dtype")};
  if (!flags.get("preset").empty()) {
    kp::ModelConfig config = kp::model_preset(flags.get("preset"), flags.get_int("vocab-size"));
    if (options.dtype.empty()) options.dtype = "float32";
    return kp::Model::random(config, static_cast<uint64_t>(flags.get_int("seed")), options);
  }
  if (flags.get("model").empty()) throw std::runtime_error("give --model DIR or --preset NAME");
  return kp::Model::load(flags.get("model"), options);
}

// Decode throughput of one group: prompt of random ids, no stop tokens, sampling at T=1.
Json bench(const kp::Model& model, const kforge::Flags& flags) {
  int64_t prompt_len = flags.get_int("prompt-len"), new_tokens = flags.get_int("new-tokens");
  at::Generator gen = at::detail::createCPUGenerator(1234);
  at::Tensor prompt_t = at::randint(model.config().vocab_size, {prompt_len}, gen, at::TensorOptions().dtype(at::kLong));
  std::vector<int64_t> prompt(prompt_t.data_ptr<int64_t>(), prompt_t.data_ptr<int64_t>() + prompt_len);
  kp::SampleOptions options;
  options.group_size = flags.get_int("group");
  options.max_new_tokens = new_tokens;
  options.temperature = 1.0;
  options.stop_token_ids = {-1};  // never matches: every row runs to max_new_tokens
  Json runs = Json::array();
  int repeats = flags.get_int("repeats");
  for (int run_idx = -1; run_idx < repeats; ++run_idx) {  // run -1 is the warm-up
    kp::SampleOptions run_options = options;
    run_options.seed = static_cast<uint64_t>(run_idx + 1);
    if (run_idx < 0) run_options.max_new_tokens = std::min<int64_t>(new_tokens, 16);
    kp::SampleStats stats;
    auto start = std::chrono::steady_clock::now();
    auto samples = kp::sample_group(model, nullptr, prompt, run_options, &stats);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (run_idx < 0) continue;
    runs.push_back({{"wall_s", wall},
                    {"prefill_s", stats.prefill_seconds},
                    {"decode_s", stats.decode_seconds},
                    {"generated_tokens", stats.generated_tokens},
                    {"tokens_per_s", stats.generated_tokens / wall}});
  }
  std::vector<double> rates;
  for (const auto& run : runs) rates.push_back(run["tokens_per_s"].get<double>());
  std::sort(rates.begin(), rates.end());
  return {{"engine", "kforge"},
          {"torch", kp::torch_version()},
          {"device", model.device().str()},
          {"dtype", model.config().torch_dtype},
          {"parameters", model.config().parameter_count()},
          {"group", options.group_size},
          {"prompt_len", prompt_len},
          {"new_tokens", new_tokens},
          {"threads", at::get_num_threads()},
          // Median; with an even count, the mean of the middle two.
          {"tokens_per_s", rates.size() % 2 ? rates[rates.size() / 2] : (rates[rates.size() / 2 - 1] + rates[rates.size() / 2]) / 2},
          {"runs", runs}};
}

// GRPO's sampling shape: `prompts` prompts of different lengths (prompt_len, minus 7% per
// prompt), a group each, decoded one prompt after another (sample_group) and all together
// (sample_groups), alternating per repeat so both see the same machine state.
Json bench_prompts(const kp::Model& model, const kforge::Flags& flags) {
  const int64_t count = flags.get_int("prompts"), prompt_len = flags.get_int("prompt-len");
  at::Generator gen = at::detail::createCPUGenerator(1234);
  std::vector<std::vector<int64_t>> prompts;
  std::vector<uint64_t> seeds;
  for (int64_t prompt_idx = 0; prompt_idx < count; ++prompt_idx) {
    int64_t length = std::max<int64_t>(1, prompt_len - prompt_len * 7 * prompt_idx / 100);
    at::Tensor ids = at::randint(model.config().vocab_size, {length}, gen, at::TensorOptions().dtype(at::kLong));
    prompts.emplace_back(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + length);
    seeds.push_back(static_cast<uint64_t>(prompt_idx + 1));
  }
  kp::SampleOptions options;
  options.group_size = flags.get_int("group");
  options.max_new_tokens = flags.get_int("new-tokens");
  options.temperature = 1.0;
  options.stop_token_ids = {-1};  // never matches: every row runs to max_new_tokens
  std::map<std::string, std::vector<double>> walls;
  for (int run_idx = -1; run_idx < flags.get_int("repeats"); ++run_idx) {  // run -1 is the warm-up
    for (const std::string mode : {"sequential", "batched"}) {
      auto start = std::chrono::steady_clock::now();
      if (mode == "batched") {
        kp::sample_groups(model, nullptr, prompts, seeds, options);
      } else {
        for (size_t prompt_idx = 0; prompt_idx < prompts.size(); ++prompt_idx) {
          kp::SampleOptions one = options;
          one.seed = seeds[prompt_idx];
          kp::sample_group(model, nullptr, prompts[prompt_idx], one);
        }
      }
      if (run_idx >= 0) walls[mode].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  auto median = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  };
  const double tokens = static_cast<double>(count * options.group_size * options.max_new_tokens);
  return {{"engine", "kforge"},
          {"device", model.device().str()},
          {"dtype", model.config().torch_dtype},
          {"parameters", model.config().parameter_count()},
          {"prompts", count},
          {"group", options.group_size},
          {"prompt_len_max", prompt_len},
          {"new_tokens", options.max_new_tokens},
          {"threads", at::get_num_threads()},
          {"sequential_wall_s", median(walls["sequential"])},
          {"batched_wall_s", median(walls["batched"])},
          {"sequential_tokens_per_s", tokens / median(walls["sequential"])},
          {"batched_tokens_per_s", tokens / median(walls["batched"])},
          {"batched_speedup", median(walls["sequential"]) / median(walls["batched"])},
          {"runs", {{"sequential_wall_s", walls["sequential"]}, {"batched_wall_s", walls["batched"]}}}};
}

int run(const std::string& command, const kforge::Flags& flags) {
  if (command == "train-tokenizer") {
    std::vector<std::string> texts;
    for (std::size_t arg_idx = 1; arg_idx < flags.positional().size(); ++arg_idx) texts.push_back(read_file(flags.positional()[arg_idx]));
    if (texts.empty()) throw std::runtime_error("train-tokenizer needs corpus files as arguments");
    kp::BpeTrainOptions options;
    options.vocab_size = flags.get_int("vocab-size") > 0 ? flags.get_int("vocab-size") : 4096;
    options.pretokenizer = parse_pretokenizer(flags.get("pretokenizer"));
    kp::bpe_train(texts, options).save(flags.get("out"));
    std::cout << "wrote " << flags.get("out") << "\n";
    return 0;
  }
  if (command == "encode") {
    // --in: a JSON array of strings; --out: a JSON array of id arrays.
    kp::Tokenizer tokenizer = kp::Tokenizer::load(flags.get("tokenizer"));
    Json docs = Json::parse(read_file(flags.get("in")));
    Json out = Json::array();
    for (const auto& doc : docs) out.push_back(tokenizer.encode(doc.get<std::string>()));
    std::ofstream(flags.get("out")) << out.dump();
    return 0;
  }
  if (command == "init") {
    // With --tokenizer, the vocabulary size comes from it and tokenizer.json is saved alongside.
    std::optional<kp::Tokenizer> tokenizer;
    if (!flags.get("tokenizer").empty()) tokenizer = kp::Tokenizer::load(flags.get("tokenizer"));
    kp::ModelConfig config = kp::model_preset(flags.get("preset"), tokenizer ? tokenizer->vocab_size() : flags.get_int("vocab-size"));
    if (tokenizer) {
      for (const auto& added : tokenizer->added_tokens()) {
        if (added.content == "<|endoftext|>") config.eos_token_ids = {added.id};
      }
    }
    kp::Model model = kp::Model::random(config, static_cast<uint64_t>(flags.get_int("seed")), {"cpu", flags.get("dtype").empty() ? "float32" : flags.get("dtype")});
    model.save(flags.get("out"));
    if (tokenizer) tokenizer->save(flags.get("out") + "/tokenizer.json");
    std::cout << "wrote " << flags.get("out") << " (" << config.parameter_count() << " parameters)\n";
    return 0;
  }
  kp::Model model = load_model(flags);
  if (command == "logits") {
    // Raw float32 logits [T, V] of one sequence, for parity checks.
    std::vector<int64_t> ids = parse_ids(flags.get("tokens"));
    at::Tensor tokens = at::tensor(ids, at::TensorOptions().dtype(at::kLong)).unsqueeze(0);
    c10::NoGradGuard no_grad;
    at::Tensor logits = model.forward(tokens).squeeze(0).to(at::kFloat).to(at::kCPU).contiguous();
    std::ofstream out(flags.get("out"), std::ios::binary);
    out.write(static_cast<const char*>(logits.data_ptr()), logits.numel() * sizeof(float));
    return out ? 0 : 1;
  }
  if (command == "generate") {
    kp::SampleOptions options;
    options.temperature = flags.get_double("temperature");
    options.max_new_tokens = flags.get_int("new-tokens");
    options.group_size = flags.get_int("group");
    options.seed = static_cast<uint64_t>(flags.get_int("seed"));
    options.stop_token_ids = {-1};
    auto samples = kp::sample_group(model, nullptr, parse_ids(flags.get("tokens")), options);
    for (const auto& sample : samples) {
      for (std::size_t tok_idx = 0; tok_idx < sample.tokens.size(); ++tok_idx) std::cout << (tok_idx ? " " : "") << sample.tokens[tok_idx];
      std::cout << "\n";
    }
    return 0;
  }
  if (command == "bench") {
    std::cout << (flags.get_int("prompts") > 1 ? bench_prompts(model, flags) : bench(model, flags)).dump() << "\n";
    return 0;
  }
  std::cerr << "kforge-policy: unknown command '" << command << "' (see --help)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  kforge::Flags flags({
      {"tokenizer", "", "", "tokenizer.json path"},
      {"in", "", "", "input file"},
      {"out", "", "", "output file or directory"},
      {"vocab-size", "", "0", "tokenizer vocab / preset vocab override (0: default)"},
      {"pretokenizer", "", "qwen2", "train-tokenizer split: qwen2, llama3, gpt2"},
      {"model", "", "", "HF model directory"},
      {"preset", "", "", "random model from a preset: kforge-tiny, kforge-small, kforge-20m, kforge-100m, qwen2.5-0.5b-shape"},
      {"seed", "", "0", "random seed"},
      {"device", "", "cpu", "cpu or cuda"},
      {"dtype", "", "", "float32, bfloat16, float16 (default: config's)"},
      {"tokens", "", "", "space-separated token ids"},
      {"temperature", "", "0", "generate: 0 is greedy"},
      {"new-tokens", "", "64", "tokens to generate"},
      {"group", "", "1", "samples per prompt"},
      {"prompt-len", "", "512", "bench: prompt tokens"},
      {"repeats", "", "3", "bench: timed runs after one warm-up"},
      {"prompts", "", "1", "bench: prompts of different lengths, sampled one by one and as one batch (GRPO's shape)"},
  });
  if (auto error = flags.parse(argc, argv)) {
    std::cerr << "kforge-policy: " << *error << "\n";
    return 2;
  }
  if (flags.help_requested() || flags.positional().empty()) {
    std::cout << flags.usage("kforge-policy train-tokenizer|encode|init|logits|generate|bench", "kforge policy model tools");
    return flags.help_requested() ? 0 : 2;
  }
  try {
    return run(flags.positional()[0], flags);
  } catch (const std::exception& e) {
    std::cerr << "kforge-policy: " << e.what() << "\n";
    return 1;
  }
}
