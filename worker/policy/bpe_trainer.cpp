// BPE trainer: learns byte-level merges from a corpus and emits an HF
// tokenizer.json (loadable by kforge and by HF tokenizers). Pair counts are kept
// incrementally, with a max-heap whose stale entries are skipped on pop.
// Test: ctest -R policy_test (tokenizer_test.cpp trains and reloads a vocabulary).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "worker/policy/tokenizer.h"

namespace kforge::policy {

using Json = nlohmann::json;  // not ordered_json: its inserts are linear scans, quadratic for a 150k vocab

namespace {

uint64_t pair_key(int64_t left, int64_t right) { return (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right); }

std::string spelling_of_byte(int byte) {
  uint32_t cp = byte_to_unicode()[byte];
  std::string out;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return out;
}

struct Word {
  std::vector<int64_t> symbols;
  int64_t count = 0;
};

struct HeapEntry {
  int64_t count;
  uint64_t key;
  // Higher count first; ties go to the smaller pair key so training is deterministic.
  bool operator<(const HeapEntry& other) const { return count != other.count ? count < other.count : key > other.key; }
};

}  // namespace

Tokenizer bpe_train(const std::vector<std::string>& texts, const BpeTrainOptions& options) {
  int64_t special_count = static_cast<int64_t>(options.special_tokens.size());
  if (options.vocab_size < 256 + special_count) {
    throw TokenizerError("bpe_train: vocab_size " + std::to_string(options.vocab_size) + " is below 256 bytes + " +
                         std::to_string(special_count) + " special tokens");
  }
  // Count distinct words after pre-tokenization.
  std::unordered_map<std::string, int64_t> word_counts;
  for (const std::string& text : texts) {
    for (const auto& [begin, end] : pretokenize(text, options.pretokenizer)) ++word_counts[text.substr(begin, end - begin)];
  }
  std::vector<Word> words;
  words.reserve(word_counts.size());
  for (const auto& [bytes, count] : word_counts) {
    Word word;
    word.count = count;
    for (unsigned char byte : bytes) word.symbols.push_back(byte);
    words.push_back(std::move(word));
  }
  // Sorted so that the result does not depend on hash order.
  std::sort(words.begin(), words.end(), [](const Word& a, const Word& b) { return a.symbols < b.symbols; });

  std::vector<std::string> spellings;  // id -> byte-level spelling
  std::unordered_map<std::string, int64_t> spelling_ids;
  for (int byte = 0; byte < 256; ++byte) {
    spellings.push_back(spelling_of_byte(byte));
    spelling_ids[spellings.back()] = byte;
  }

  std::unordered_map<uint64_t, int64_t> pair_counts;
  std::unordered_map<uint64_t, std::unordered_set<std::size_t>> pair_words;
  auto add_pairs = [&](std::size_t word_idx, int64_t sign) {
    const Word& word = words[word_idx];
    for (std::size_t pos = 0; pos + 1 < word.symbols.size(); ++pos) {
      uint64_t key = pair_key(word.symbols[pos], word.symbols[pos + 1]);
      pair_counts[key] += sign * word.count;
      if (sign > 0) pair_words[key].insert(word_idx);
    }
  };
  for (std::size_t word_idx = 0; word_idx < words.size(); ++word_idx) add_pairs(word_idx, +1);
  std::priority_queue<HeapEntry> heap;
  for (const auto& [key, count] : pair_counts) heap.push({count, key});

  Json merges = Json::array();
  int64_t token_budget = options.vocab_size - special_count;
  while (static_cast<int64_t>(spellings.size()) < token_budget && !heap.empty()) {
    HeapEntry top = heap.top();
    heap.pop();
    auto count_it = pair_counts.find(top.key);
    if (count_it == pair_counts.end() || count_it->second != top.count) continue;  // stale entry
    if (top.count < options.min_frequency) break;
    int64_t left = static_cast<int64_t>(top.key >> 32), right = static_cast<int64_t>(top.key & 0xFFFFFFFFu);
    // Two different pairs can spell the same token ("ab"+"c", "a"+"bc"): one id for both.
    std::string spelling = spellings[left] + spellings[right];
    auto known = spelling_ids.find(spelling);
    int64_t merged = known != spelling_ids.end() ? known->second : static_cast<int64_t>(spellings.size());
    if (known == spelling_ids.end()) {
      spellings.push_back(spelling);
      spelling_ids[spelling] = merged;
    }
    merges.push_back(spellings[left] + " " + spellings[right]);

    std::unordered_set<uint64_t> touched;
    std::vector<std::size_t> affected(pair_words[top.key].begin(), pair_words[top.key].end());
    std::sort(affected.begin(), affected.end());
    for (std::size_t word_idx : affected) {
      Word& word = words[word_idx];
      for (std::size_t pos = 0; pos + 1 < word.symbols.size(); ++pos) touched.insert(pair_key(word.symbols[pos], word.symbols[pos + 1]));
      add_pairs(word_idx, -1);
      std::vector<int64_t> next;
      next.reserve(word.symbols.size());
      for (std::size_t pos = 0; pos < word.symbols.size(); ++pos) {
        if (pos + 1 < word.symbols.size() && word.symbols[pos] == left && word.symbols[pos + 1] == right) {
          next.push_back(merged);
          ++pos;
        } else {
          next.push_back(word.symbols[pos]);
        }
      }
      word.symbols = std::move(next);
      add_pairs(word_idx, +1);
      for (std::size_t pos = 0; pos + 1 < word.symbols.size(); ++pos) touched.insert(pair_key(word.symbols[pos], word.symbols[pos + 1]));
    }
    pair_counts.erase(top.key);
    pair_words.erase(top.key);
    for (uint64_t key : touched) {
      auto it = pair_counts.find(key);
      if (it != pair_counts.end() && it->second > 0) heap.push({it->second, key});
    }
  }

  Json vocab = Json::object();
  for (std::size_t id = 0; id < spellings.size(); ++id) vocab[spellings[id]] = static_cast<int64_t>(id);
  Json added = Json::array();
  int64_t next_id = static_cast<int64_t>(spellings.size());
  for (const std::string& special : options.special_tokens) {
    added.push_back({{"id", next_id++}, {"content", special}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  Json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  Json pre_tokenizer;
  if (options.pretokenizer == PretokenizerKind::Gpt2) {
    pre_tokenizer = byte_level;
    pre_tokenizer["use_regex"] = true;
  } else if (options.pretokenizer == PretokenizerKind::None) {
    pre_tokenizer = byte_level;
  } else {
    pre_tokenizer = {{"type", "Sequence"},
                     {"pretokenizers",
                      Json::array({Json{{"type", "Split"},
                                        {"pattern", {{"Regex", pretokenizer_regex(options.pretokenizer)}}},
                                        {"behavior", "Isolated"},
                                        {"invert", false}},
                                   byte_level})}};
  }
  Json doc = {{"version", "1.0"},
              {"truncation", nullptr},
              {"padding", nullptr},
              {"added_tokens", added},
              {"normalizer", nullptr},
              {"pre_tokenizer", pre_tokenizer},
              {"post_processor", nullptr},
              {"decoder", byte_level},
              {"model",
               {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", false},
                {"vocab", vocab},
                {"merges", merges}}}};
  return Tokenizer::from_json_text(doc.dump());
}

}  // namespace kforge::policy
