// Byte-level BPE encode/decode over an HF tokenizer.json document.
// Merging repeatedly joins the leftmost pair of lowest merge rank, which is what
// HF tokenizers' BPE does. Tests: tests/worker/policy/tokenizer_test.cpp.
#include "worker/policy/tokenizer.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace kforge::policy {

using Json = nlohmann::json;  // not ordered_json: its inserts are linear scans, quadratic for a 150k vocab

namespace {

uint64_t pair_key(int64_t left, int64_t right) { return (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right); }

void append_utf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

const std::unordered_map<uint32_t, uint8_t>& unicode_to_byte() {
  static const std::unordered_map<uint32_t, uint8_t> table = [] {
    std::unordered_map<uint32_t, uint8_t> map;
    const auto& forward = byte_to_unicode();
    for (int byte = 0; byte < 256; ++byte) map[forward[byte]] = static_cast<uint8_t>(byte);
    return map;
  }();
  return table;
}

// Byte-level spelling of raw bytes: each byte becomes its stand-in code point.
std::string bytes_to_token(std::string_view bytes) {
  std::string out;
  const auto& forward = byte_to_unicode();
  for (unsigned char byte : bytes) append_utf8(forward[byte], &out);
  return out;
}

// Raw bytes of a byte-level spelling; code points outside the map stay as UTF-8.
std::string token_to_bytes(const std::string& token) {
  std::vector<uint32_t> cps;
  std::vector<std::size_t> offsets;
  utf8_decode(token, &cps, &offsets);
  const auto& back = unicode_to_byte();
  std::string out;
  for (uint32_t cp : cps) {
    auto it = back.find(cp);
    if (it != back.end()) {
      out.push_back(static_cast<char>(it->second));
    } else {
      append_utf8(cp, &out);
    }
  }
  return out;
}

PretokenizerKind parse_byte_level(const Json& node, bool* add_prefix_space) {
  if (node.value("add_prefix_space", false)) *add_prefix_space = true;
  return node.value("use_regex", true) ? PretokenizerKind::Gpt2 : PretokenizerKind::None;
}

PretokenizerKind parse_split(const Json& node) {
  const Json& pattern = node.at("pattern");
  if (!pattern.contains("Regex")) throw TokenizerError("tokenizer.json: pre_tokenizer Split needs a Regex pattern");
  std::string regex = pattern.at("Regex").get<std::string>();
  PretokenizerKind kind;
  if (!pretokenizer_kind_from_regex(regex, &kind)) {
    throw TokenizerError("tokenizer.json: unsupported Split regex (only the GPT-2, Qwen2 and Llama-3 ones): " + regex);
  }
  if (node.value("behavior", std::string("Isolated")) != "Isolated" || node.value("invert", false)) {
    throw TokenizerError("tokenizer.json: Split pre-tokenizer must have behavior Isolated and invert false");
  }
  return kind;
}

PretokenizerKind parse_pretokenizer(const Json& node, bool* add_prefix_space) {
  if (node.is_null()) return PretokenizerKind::None;
  std::string type = node.value("type", std::string());
  if (type == "ByteLevel") return parse_byte_level(node, add_prefix_space);
  if (type == "Split") return parse_split(node);
  if (type == "Sequence") {
    PretokenizerKind kind = PretokenizerKind::None;
    for (const Json& child : node.at("pretokenizers")) {
      std::string child_type = child.value("type", std::string());
      PretokenizerKind child_kind;
      if (child_type == "Split") {
        child_kind = parse_split(child);
      } else if (child_type == "ByteLevel") {
        child_kind = parse_byte_level(child, add_prefix_space);
      } else {
        throw TokenizerError("tokenizer.json: unsupported pre_tokenizer in Sequence: " + child_type);
      }
      if (child_kind != PretokenizerKind::None) {
        if (kind != PretokenizerKind::None) throw TokenizerError("tokenizer.json: two splitting pre-tokenizers in one Sequence");
        kind = child_kind;
      }
    }
    return kind;
  }
  throw TokenizerError("tokenizer.json: unsupported pre_tokenizer type '" + type + "'");
}

}  // namespace

const std::vector<uint32_t>& byte_to_unicode() {
  static const std::vector<uint32_t> table = [] {
    // GPT-2: printable Latin-1 bytes map to themselves, the rest to 256, 257, ...
    std::vector<uint32_t> map(256, 0);
    std::vector<bool> printable(256, false);
    for (int byte = '!'; byte <= '~'; ++byte) printable[byte] = true;
    for (int byte = 0xA1; byte <= 0xAC; ++byte) printable[byte] = true;
    for (int byte = 0xAE; byte <= 0xFF; ++byte) printable[byte] = true;
    uint32_t next = 256;
    for (int byte = 0; byte < 256; ++byte) map[byte] = printable[byte] ? byte : next++;
    return map;
  }();
  return table;
}

struct Tokenizer::Impl {
  Json doc;
  std::unordered_map<std::string, int64_t> vocab;  // byte-level spelling -> id
  std::vector<std::string> id_bytes;               // id -> raw bytes
  std::vector<bool> id_special;                    // id -> is a special added token
  std::unordered_map<uint64_t, std::pair<int64_t, int64_t>> merges;  // pair -> (rank, merged id)
  int64_t byte_ids[256];
  std::vector<AddedToken> added;  // owns what added_by_first_byte points at
  bool ignore_merges = false;
  bool add_prefix_space = false;
  // Added tokens grouped by first byte, longest first (leftmost-longest match).
  std::vector<std::vector<const AddedToken*>> added_by_first_byte = std::vector<std::vector<const AddedToken*>>(256);
};

Tokenizer Tokenizer::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TokenizerError("cannot open tokenizer file " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    return from_json_text(buffer.str());
  } catch (const TokenizerError& e) {
    throw TokenizerError(path + ": " + e.what());
  }
}

Tokenizer Tokenizer::from_json_text(const std::string& json_text) {
  auto impl = std::make_shared<Impl>();
  Tokenizer tok;
  try {
    impl->doc = Json::parse(json_text);
  } catch (const std::exception& e) {
    throw TokenizerError(std::string("tokenizer.json is not valid JSON: ") + e.what());
  }
  const Json& doc = impl->doc;
  try {
    const Json& model = doc.at("model");
    if (model.value("type", std::string("BPE")) != "BPE") {
      throw TokenizerError("tokenizer.json: model.type must be BPE, got " + model.value("type", std::string()));
    }
    if (model.value("byte_fallback", false)) throw TokenizerError("tokenizer.json: byte_fallback BPE is not supported");
    if (model.contains("continuing_subword_prefix") && !model["continuing_subword_prefix"].is_null()) {
      throw TokenizerError("tokenizer.json: continuing_subword_prefix is not supported");
    }
    impl->ignore_merges = model.value("ignore_merges", false);
    if (doc.contains("normalizer") && !doc["normalizer"].is_null()) {
      // Qwen2 declares NFC; text that is already NFC (nearly all text) is unchanged by it.
      std::string type = doc["normalizer"].value("type", std::string());
      if (type != "NFC") throw TokenizerError("tokenizer.json: unsupported normalizer '" + type + "' (only NFC, applied as identity)");
    }
    tok.pretokenizer_ = parse_pretokenizer(doc.contains("pre_tokenizer") ? doc["pre_tokenizer"] : Json(), &impl->add_prefix_space);

    int64_t max_id = -1;
    for (const auto& [token, id_json] : model.at("vocab").items()) {
      int64_t id = id_json.get<int64_t>();
      if (id < 0) throw TokenizerError("tokenizer.json: negative id for vocab token " + token);
      impl->vocab[token] = id;
      max_id = std::max(max_id, id);
    }
    if (doc.contains("added_tokens")) {
      for (const Json& added : doc["added_tokens"]) {
        AddedToken token{added.at("id").get<int64_t>(), added.at("content").get<std::string>(), added.value("special", false)};
        if (token.content.empty()) throw TokenizerError("tokenizer.json: added token with empty content");
        max_id = std::max(max_id, token.id);
        tok.added_.push_back(token);
      }
    }
    std::sort(tok.added_.begin(), tok.added_.end(), [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
    tok.vocab_size_ = max_id + 1;
    impl->id_bytes.assign(tok.vocab_size_, std::string());
    impl->id_special.assign(tok.vocab_size_, false);
    for (const auto& [token, id] : impl->vocab) impl->id_bytes[id] = token_to_bytes(token);
    for (const auto& added : tok.added_) {
      impl->id_bytes[added.id] = added.content;
      impl->id_special[added.id] = added.special;
    }
    const auto& forward = byte_to_unicode();
    for (int byte = 0; byte < 256; ++byte) {
      std::string spelling;
      append_utf8(forward[byte], &spelling);
      auto it = impl->vocab.find(spelling);
      impl->byte_ids[byte] = it == impl->vocab.end() ? -1 : it->second;
    }

    int64_t rank = 0;
    for (const Json& merge : model.at("merges")) {
      std::string left, right;
      if (merge.is_string()) {
        std::string text = merge.get<std::string>();
        std::size_t space = text.find(' ', 1);
        if (space == std::string::npos) throw TokenizerError("tokenizer.json: merge '" + text + "' is not 'left right'");
        left = text.substr(0, space);
        right = text.substr(space + 1);
      } else if (merge.is_array() && merge.size() == 2) {
        left = merge[0].get<std::string>();
        right = merge[1].get<std::string>();
      } else {
        throw TokenizerError("tokenizer.json: merge #" + std::to_string(rank) + " is neither \"a b\" nor [\"a\", \"b\"]");
      }
      auto left_it = impl->vocab.find(left), right_it = impl->vocab.find(right), merged_it = impl->vocab.find(left + right);
      if (left_it == impl->vocab.end() || right_it == impl->vocab.end() || merged_it == impl->vocab.end()) {
        throw TokenizerError("tokenizer.json: merge #" + std::to_string(rank) + " (" + left + " " + right + ") uses a token missing from the vocab");
      }
      // The first listing of a pair wins, as in HF.
      impl->merges.emplace(pair_key(left_it->second, right_it->second), std::make_pair(rank, merged_it->second));
      ++rank;
    }
  } catch (const nlohmann::json::exception& e) {
    throw TokenizerError(std::string("tokenizer.json: missing or mistyped field: ") + e.what());
  }
  impl->added = tok.added_;
  for (const auto& added : impl->added) {
    impl->added_by_first_byte[static_cast<unsigned char>(added.content[0])].push_back(&added);
  }
  for (auto& bucket : impl->added_by_first_byte) {
    std::stable_sort(bucket.begin(), bucket.end(),
                     [](const AddedToken* a, const AddedToken* b) { return a->content.size() > b->content.size(); });
  }
  tok.impl_ = impl;
  return tok;
}

void Tokenizer::encode_piece(std::string_view piece, std::vector<int64_t>* out) const {
  const Impl& impl = *impl_;
  if (impl.ignore_merges) {
    auto it = impl.vocab.find(bytes_to_token(piece));
    if (it != impl.vocab.end()) {
      out->push_back(it->second);
      return;
    }
  }
  std::vector<int64_t> symbols;
  symbols.reserve(piece.size());
  for (unsigned char byte : piece) {
    if (impl.byte_ids[byte] < 0) throw TokenizerError("tokenizer has no token for byte " + std::to_string(byte));
    symbols.push_back(impl.byte_ids[byte]);
  }
  while (symbols.size() > 1) {
    int64_t best_rank = INT64_MAX, best_id = -1;
    std::size_t best_pos = 0;
    for (std::size_t pos = 0; pos + 1 < symbols.size(); ++pos) {
      auto it = impl.merges.find(pair_key(symbols[pos], symbols[pos + 1]));
      if (it != impl.merges.end() && it->second.first < best_rank) {
        best_rank = it->second.first;
        best_id = it->second.second;
        best_pos = pos;
      }
    }
    if (best_id < 0) break;
    symbols[best_pos] = best_id;
    symbols.erase(symbols.begin() + best_pos + 1);
  }
  out->insert(out->end(), symbols.begin(), symbols.end());
}

std::vector<int64_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
  std::vector<int64_t> ids;
  std::string prefixed;
  if (impl_->add_prefix_space && !text.empty() && text[0] != ' ') {
    prefixed = " " + std::string(text);
    text = prefixed;
  }
  auto encode_plain = [&](std::string_view segment) {
    for (const auto& [begin, end] : pretokenize(segment, pretokenizer_)) encode_piece(segment.substr(begin, end - begin), &ids);
  };
  std::size_t segment_start = 0, pos = 0;
  while (parse_special && pos < text.size()) {
    const AddedToken* match = nullptr;
    for (const AddedToken* added : impl_->added_by_first_byte[static_cast<unsigned char>(text[pos])]) {
      if (text.compare(pos, added->content.size(), added->content) == 0) {
        match = added;
        break;
      }
    }
    if (!match) {
      ++pos;
      continue;
    }
    encode_plain(text.substr(segment_start, pos - segment_start));
    ids.push_back(match->id);
    pos += match->content.size();
    segment_start = pos;
  }
  encode_plain(text.substr(segment_start));
  return ids;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool skip_special) const {
  std::string out;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size_) throw TokenizerError("token id " + std::to_string(id) + " out of range [0, " + std::to_string(vocab_size_) + ")");
    if (skip_special && impl_->id_special[id]) continue;
    out += impl_->id_bytes[id];
  }
  return out;
}

std::string Tokenizer::token_bytes(int64_t id) const { return decode({id}); }

std::optional<int64_t> Tokenizer::token_id(const std::string& token) const {
  for (const auto& added : added_) {
    if (added.content == token) return added.id;
  }
  auto it = impl_->vocab.find(token);
  if (it == impl_->vocab.end()) return std::nullopt;
  return it->second;
}

std::string Tokenizer::to_json_text() const { return impl_->doc.dump(2); }

void Tokenizer::save(const std::string& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw TokenizerError("cannot write " + path);
  out << to_json_text();
  if (!out) throw TokenizerError("write failed: " + path);
}

}  // namespace kforge::policy
