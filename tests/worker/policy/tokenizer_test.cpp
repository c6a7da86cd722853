// Tokenizer: byte round trip (0..255, invalid UTF-8, multi-byte Unicode), the
// GPT-2 / Qwen2 / Llama-3 splits, added tokens, merges in both forms, the BPE
// trainer, and malformed tokenizer.json errors. Run: scripts/test.sh build -R policy
#include "worker/policy/tokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/worker/policy/policy_test_util.h"

namespace kp = kforge::policy;

namespace {

std::vector<std::string> split(const std::string& text, kp::PretokenizerKind kind) {
  std::vector<std::string> pieces;
  for (const auto& [begin, end] : kp::pretokenize(text, kind)) pieces.push_back(text.substr(begin, end - begin));
  return pieces;
}

const std::string kCorpus =
    "def forward(x, y):\n    return torch.silu(x) * y\n\n"
    "__kernel void add(__global const float* a, __global float* out, int n) {\n"
    "  int i = get_global_id(0);\n  if (i < n) out[i] = a[i] + 1.0f;\n}\n"
    "Grüße aus Köln! Ωμέγα 你好世界 🙂🙂 naïve café 12345 67890\n"
    "The quick brown fox jumps over the lazy dog. It's what we've done; they'll see.\n";

kp::Tokenizer trained(kp::PretokenizerKind kind = kp::PretokenizerKind::Qwen2, int64_t vocab = 400) {
  kp::BpeTrainOptions options;
  options.vocab_size = vocab;
  options.pretokenizer = kind;
  options.special_tokens = {"<|endoftext|>", "<|im_start|>"};
  std::vector<std::string> texts;
  for (int copy_idx = 0; copy_idx < 20; ++copy_idx) texts.push_back(kCorpus);
  return kp::bpe_train(texts, options);
}

std::string tokenizer_error(const std::string& json_text) {
  try {
    kp::Tokenizer::from_json_text(json_text);
  } catch (const kp::TokenizerError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Pretokenizer, Qwen2SplitsLikeItsRegex) {
  using V = std::vector<std::string>;
  auto kind = kp::PretokenizerKind::Qwen2;
  EXPECT_EQ(split("Hello world's 123  foo", kind), (V{"Hello", " world", "'s", " ", "1", "2", "3", " ", " foo"}));
  EXPECT_EQ(split("a\n\n  b", kind), (V{"a", "\n\n", " ", " b"}));
  EXPECT_EQ(split("x!!\n\ny", kind), (V{"x", "!!\n\n", "y"}));
  EXPECT_EQ(split("IT'S (ok)", kind), (V{"IT", "'S", " (", "ok", ")"}));
  EXPECT_EQ(split("héllo 世界  ", kind), (V{"héllo", " 世界", "  "}));
  EXPECT_EQ(split("x٣y", kind), (V{"x", "٣", "y"}));  // Arabic-Indic digit is \p{N}
  EXPECT_EQ(split("\tfoo", kind), (V{"\tfoo"}));
}

TEST(Pretokenizer, Llama3GroupsDigitsByThree) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split("1234567 ab", kp::PretokenizerKind::Llama3), (V{"123", "456", "7", " ab"}));
}

TEST(Pretokenizer, Gpt2SplitsLikeItsRegex) {
  using V = std::vector<std::string>;
  auto kind = kp::PretokenizerKind::Gpt2;
  EXPECT_EQ(split("Hello world's 123  foo", kind), (V{"Hello", " world", "'s", " 123", " ", " foo"}));
  EXPECT_EQ(split("IT'S", kind), (V{"IT", "'", "S"}));  // case-sensitive contractions
  EXPECT_EQ(split("a \n b", kind), (V{"a", " \n", " b"}));
}

TEST(Tokenizer, EveryByteRoundTrips) {
  for (auto kind : {kp::PretokenizerKind::Qwen2, kp::PretokenizerKind::Gpt2, kp::PretokenizerKind::Llama3}) {
    kp::Tokenizer tok = trained(kind);
    std::string all;
    for (int byte = 0; byte < 256; ++byte) {
      std::string one(1, static_cast<char>(byte));
      EXPECT_EQ(tok.decode(tok.encode(one)), one) << byte;
      all += one;
    }
    EXPECT_EQ(tok.decode(tok.encode(all)), all);
    std::mt19937 rng(7);
    for (int trial_idx = 0; trial_idx < 50; ++trial_idx) {
      std::string random_bytes(1 + rng() % 64, '\0');
      for (auto& ch : random_bytes) ch = static_cast<char>(rng() % 256);
      EXPECT_EQ(tok.decode(tok.encode(random_bytes)), random_bytes);
    }
  }
}

TEST(Tokenizer, MultiByteUnicodeRoundTripsAndMerges) {
  kp::Tokenizer tok = trained();
  std::string text = "Grüße aus Köln! Ωμέγα 你好世界 🙂🙂 naïve café — ∑ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢";
  std::vector<int64_t> ids = tok.encode(text);
  EXPECT_EQ(tok.decode(ids), text);
  EXPECT_LT(ids.size(), text.size());  // learned merges are used
  // Each token decodes to bytes; concatenated they are the text (no lossy joins).
  std::string joined;
  for (int64_t id : ids) joined += tok.token_bytes(id);
  EXPECT_EQ(joined, text);
}

TEST(Tokenizer, AddedTokensSplitOutFirst) {
  kp::Tokenizer tok = trained();
  int64_t eot = *tok.token_id("<|endoftext|>");
  int64_t im_start = *tok.token_id("<|im_start|>");
  EXPECT_EQ(eot, 398);
  std::vector<int64_t> ids = tok.encode("def<|endoftext|><|im_start|>x");
  EXPECT_NE(std::find(ids.begin(), ids.end(), eot), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), im_start), ids.end());
  EXPECT_EQ(tok.decode(ids), "def<|endoftext|><|im_start|>x");
  EXPECT_EQ(tok.decode(ids, /*skip_special=*/true), "defx");
  std::vector<int64_t> literal = tok.encode("<|endoftext|>", /*parse_special=*/false);
  EXPECT_EQ(std::find(literal.begin(), literal.end(), eot), literal.end());
}

TEST(Tokenizer, SavedJsonLoadsBackWithTheSameIds) {
  kforge::test::TempDir dir;
  kp::Tokenizer tok = trained(kp::PretokenizerKind::Llama3);
  tok.save(dir.path + "/tokenizer.json");
  kp::Tokenizer back = kp::Tokenizer::load(dir.path + "/tokenizer.json");
  EXPECT_EQ(back.pretokenizer(), kp::PretokenizerKind::Llama3);
  EXPECT_EQ(back.vocab_size(), tok.vocab_size());
  EXPECT_EQ(back.encode(kCorpus), tok.encode(kCorpus));
}

TEST(Tokenizer, MergesInStringAndPairFormAgree) {
  std::string common = R"("pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},
      "added_tokens":[],"model":{"type":"BPE","vocab":{)";
  std::string vocab;
  const auto& map = kp::byte_to_unicode();
  auto spell = [&](unsigned char byte) {
    std::string out;
    uint32_t cp = map[byte];
    if (cp < 0x80) out.push_back(static_cast<char>(cp));
    else { out.push_back(static_cast<char>(0xC0 | (cp >> 6))); out.push_back(static_cast<char>(0x80 | (cp & 0x3F))); }
    return out;
  };
  for (int byte = 0; byte < 256; ++byte) vocab += "\"" + (byte == '"' ? std::string("\\\"") : byte == '\\' ? std::string("\\\\") : spell(byte)) + "\":" + std::to_string(byte) + ",";
  vocab += "\"ab\":256,\"abc\":257}";
  auto as_string = kp::Tokenizer::from_json_text("{" + common + vocab + R"(,"merges":["a b","ab c"]}})");
  auto as_pairs = kp::Tokenizer::from_json_text("{" + common + vocab + R"(,"merges":[["a","b"],["ab","c"]]}})");
  EXPECT_EQ(as_string.encode("abcab"), (std::vector<int64_t>{257, 256}));
  EXPECT_EQ(as_pairs.encode("abcab"), (std::vector<int64_t>{257, 256}));
}

TEST(Tokenizer, MalformedJsonNamesTheFault) {
  EXPECT_NE(tokenizer_error("{oops").find("not valid JSON"), std::string::npos);
  EXPECT_NE(tokenizer_error(R"({"model":{"type":"WordPiece"}})").find("model.type must be BPE"), std::string::npos);
  EXPECT_NE(tokenizer_error(R"({"model":{"type":"BPE","vocab":{"a":0},"merges":["a b"]}})").find("missing from the vocab"),
            std::string::npos);
  EXPECT_NE(tokenizer_error(R"({"pre_tokenizer":{"type":"Whitespace"},"model":{"type":"BPE","vocab":{},"merges":[]}})")
                .find("unsupported pre_tokenizer type 'Whitespace'"),
            std::string::npos);
  EXPECT_NE(tokenizer_error(R"({"model":{"type":"BPE","merges":[]}})").find("missing or mistyped"), std::string::npos);
  EXPECT_THROW(kp::Tokenizer::load("/nonexistent/tokenizer.json"), kp::TokenizerError);
}

TEST(BpeTrainer, VocabSizeIsRespectedAndTooSmallIsRefused) {
  kp::Tokenizer tok = trained(kp::PretokenizerKind::Qwen2, 400);
  EXPECT_EQ(tok.vocab_size(), 400);
  kp::BpeTrainOptions options;
  options.vocab_size = 100;
  EXPECT_THROW(kp::bpe_train({"abc"}, options), kp::TokenizerError);
}
