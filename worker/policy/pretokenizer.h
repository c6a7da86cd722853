// Pre-tokenizer splitting for byte-level BPE: a hand-written scanner that does what
// the GPT-2, Qwen2 and Llama-3 split regexes do (std::regex has no \p{L} / \p{N}).
// Tested by tests/worker/policy/tokenizer_test.cpp and the parity script.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kforge::policy {

//! Which split regex a tokenizer.json pre-tokenizer uses.
enum class PretokenizerKind {
  Gpt2,    //!< 's|'t|...| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ (ByteLevel use_regex)
  Qwen2,   //!< (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  Llama3,  //!< as Qwen2 but \p{N}{1,3}
  None,    //!< no splitting: the whole text is one piece
};

//! The regex string tokenizer.json carries for a kind (empty for Gpt2/None).
std::string pretokenizer_regex(PretokenizerKind kind);

//! Recognises a Split regex from tokenizer.json; false when it is none of the known ones.
bool pretokenizer_kind_from_regex(const std::string& regex, PretokenizerKind* kind);

//! Splits UTF-8 text into pieces as the regex would (byte ranges [begin, end)).
//! Invalid UTF-8 bytes count as single "other" characters, so any bytes round-trip.
std::vector<std::pair<std::size_t, std::size_t>> pretokenize(std::string_view text, PretokenizerKind kind);

//! Decodes UTF-8 into code points with each one's byte offset; invalid bytes map
//! to 0xDC00 + byte (a lone surrogate, never a letter, digit or space).
void utf8_decode(std::string_view text, std::vector<uint32_t>* codepoints, std::vector<std::size_t>* offsets);

}  // namespace kforge::policy
