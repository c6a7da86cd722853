// Byte-level BPE tokenizer read from (and written to) HF tokenizer.json: GPT-2
// byte map, merges in string or pair form, added/special tokens split out first,
// GPT-2 / Qwen2 / Llama-3 pre-tokenizers. Tests: tests/worker/policy/tokenizer_test.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "worker/policy/pretokenizer.h"

namespace kforge::policy {

//! A malformed or unsupported tokenizer.json; the message names the field at fault.
class TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

//! One added token (special or not); matched in raw text before BPE.
struct AddedToken {
  int64_t id = 0;        //!< token id
  std::string content;   //!< the literal text
  bool special = false;  //!< special tokens can be skipped on decode
};

//! The GPT-2 byte -> code point map (printable stand-ins for the 256 bytes).
const std::vector<uint32_t>& byte_to_unicode();

//! Byte-level BPE tokenizer.
class Tokenizer {
 public:
  //! Reads tokenizer.json; throws TokenizerError naming what is wrong.
  static Tokenizer load(const std::string& path);
  //! Parses the text of a tokenizer.json.
  static Tokenizer from_json_text(const std::string& json_text);

  //! Token ids for `text`; added tokens in the text become their ids when `parse_special`.
  std::vector<int64_t> encode(std::string_view text, bool parse_special = true) const;
  //! The exact bytes the ids stand for; special tokens left out when `skip_special`.
  std::string decode(const std::vector<int64_t>& ids, bool skip_special = false) const;
  //! Bytes of one token (byte-level decoded, or the added token's content).
  std::string token_bytes(int64_t id) const;
  //! Id of a token given in its vocabulary (byte-level) spelling or as an added token.
  std::optional<int64_t> token_id(const std::string& token) const;
  //! Size of the id space (largest id + 1).
  int64_t vocab_size() const { return vocab_size_; }
  //! Added tokens in id order.
  const std::vector<AddedToken>& added_tokens() const { return added_; }
  //! The pre-tokenizer this tokenizer splits with.
  PretokenizerKind pretokenizer() const { return pretokenizer_; }
  //! Writes tokenizer.json (the document it was built from).
  void save(const std::string& path) const;
  //! The tokenizer.json document as text.
  std::string to_json_text() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
  std::vector<AddedToken> added_;
  PretokenizerKind pretokenizer_ = PretokenizerKind::Gpt2;
  int64_t vocab_size_ = 0;

  void encode_piece(std::string_view piece, std::vector<int64_t>* out) const;
};

//! Options for learning a byte-level BPE vocabulary.
struct BpeTrainOptions {
  int64_t vocab_size = 4096;                      //!< total ids: 256 bytes + merges + special tokens
  int64_t min_frequency = 2;                      //!< stop when the best pair is rarer than this
  std::vector<std::string> special_tokens = {"<|endoftext|>"};  //!< appended after the merges
  PretokenizerKind pretokenizer = PretokenizerKind::Qwen2;       //!< how words are split
};

//! Learns merges from `texts` and returns the tokenizer (save() writes tokenizer.json).
Tokenizer bpe_train(const std::vector<std::string>& texts, const BpeTrainOptions& options);

}  // namespace kforge::policy
