// Pre-tokenizer scanner: each alternative of the split regexes, tried in order at
// each position as a backtracking regex engine would (leftmost-first alternation).
// Tests: tests/worker/policy/tokenizer_test.cpp; parity vs tokenizers: tests/parity/.
#include "worker/policy/pretokenizer.h"

#include <algorithm>

#include "worker/policy/unicode_tables.h"

namespace kforge::policy {

namespace {

const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Scanner over decoded code points; every match_* returns the end index of the
// match starting at `pos`, or `pos` when that alternative does not match.
class Scanner {
 public:
  explicit Scanner(const std::vector<uint32_t>& cps) : cps_(cps), n_(cps.size()) {}

  bool letter(std::size_t idx) const { return idx < n_ && unicode::is_letter(cps_[idx]); }
  bool number(std::size_t idx) const { return idx < n_ && unicode::is_number(cps_[idx]); }
  bool space(std::size_t idx) const { return idx < n_ && unicode::is_whitespace(cps_[idx]); }
  bool newline(std::size_t idx) const { return idx < n_ && (cps_[idx] == '\r' || cps_[idx] == '\n'); }
  // [^\s\p{L}\p{N}]
  bool other(std::size_t idx) const { return idx < n_ && !space(idx) && !letter(idx) && !number(idx); }

  // 's|'t|'re|'ve|'m|'ll|'d, optionally case-insensitive.
  std::size_t contraction(std::size_t pos, bool ignore_case) const {
    if (pos >= n_ || cps_[pos] != '\'') return pos;
    auto at = [&](std::size_t idx) -> uint32_t {
      if (idx >= n_) return 0;
      uint32_t cp = cps_[idx];
      if (ignore_case && cp >= 'A' && cp <= 'Z') cp += 'a' - 'A';
      return cp;
    };
    uint32_t c1 = at(pos + 1), c2 = at(pos + 2);
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return pos + 2;
    if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return pos + 3;
    return pos;
  }

  std::size_t run(std::size_t pos, bool (Scanner::*cls)(std::size_t) const, std::size_t max_len = SIZE_MAX) const {
    std::size_t end = pos;
    while (end < n_ && end - pos < max_len && (this->*cls)(end)) ++end;
    return end;
  }

  // ` ?X+` for a class X (GPT-2 style optional leading space).
  std::size_t space_then_run(std::size_t pos, bool (Scanner::*cls)(std::size_t) const) const {
    if (pos < n_ && cps_[pos] == ' ' && (this->*cls)(pos + 1)) return run(pos + 1, cls);
    return run(pos, cls);
  }

  // [^\r\n\p{L}\p{N}]?\p{L}+
  std::size_t prefixed_letters(std::size_t pos) const {
    if (letter(pos)) return run(pos, &Scanner::letter);
    if (pos < n_ && !newline(pos) && !letter(pos) && !number(pos) && letter(pos + 1)) return run(pos + 1, &Scanner::letter);
    return pos;
  }

  // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
  std::size_t others_then_newlines(std::size_t pos) const {
    std::size_t end = space_then_run(pos, &Scanner::other);
    if (end == pos) return pos;
    return run(end, &Scanner::newline);
  }

  // `\s*[\r\n]+`: greedy \s* backs off to the last newline of the whitespace run.
  std::size_t spaces_to_newline(std::size_t pos) const {
    std::size_t ws_end = run(pos, &Scanner::space);
    for (std::size_t idx = ws_end; idx > pos; --idx) {
      if (newline(idx - 1)) return idx;
    }
    return pos;
  }

  // `\s+(?!\S)`: the whitespace run, less its last char when a non-space follows.
  std::size_t spaces_not_before_text(std::size_t pos) const {
    std::size_t ws_end = run(pos, &Scanner::space);
    if (ws_end == pos) return pos;
    if (ws_end == n_) return ws_end;
    return ws_end - 1 > pos ? ws_end - 1 : pos;
  }

  std::size_t next(std::size_t pos, PretokenizerKind kind) const {
    std::size_t end;
    if (kind == PretokenizerKind::Gpt2) {
      if ((end = contraction(pos, false)) > pos) return end;
      if ((end = space_then_run(pos, &Scanner::letter)) > pos) return end;
      if ((end = space_then_run(pos, &Scanner::number)) > pos) return end;
      if ((end = space_then_run(pos, &Scanner::other)) > pos) return end;
      if ((end = spaces_not_before_text(pos)) > pos) return end;
      if ((end = run(pos, &Scanner::space)) > pos) return end;
      return pos + 1;  // unreachable for valid classes; keeps the scan total
    }
    if ((end = contraction(pos, true)) > pos) return end;
    if ((end = prefixed_letters(pos)) > pos) return end;
    std::size_t max_digits = kind == PretokenizerKind::Llama3 ? 3 : 1;
    if ((end = run(pos, &Scanner::number, max_digits)) > pos) return end;
    if ((end = others_then_newlines(pos)) > pos) return end;
    if ((end = spaces_to_newline(pos)) > pos) return end;
    if ((end = spaces_not_before_text(pos)) > pos) return end;
    if ((end = run(pos, &Scanner::space)) > pos) return end;
    return pos + 1;
  }

 private:
  const std::vector<uint32_t>& cps_;
  std::size_t n_;
};

}  // namespace

std::string pretokenizer_regex(PretokenizerKind kind) {
  switch (kind) {
    case PretokenizerKind::Qwen2: return kQwen2Regex;
    case PretokenizerKind::Llama3: return kLlama3Regex;
    case PretokenizerKind::Gpt2: return kGpt2Regex;
    case PretokenizerKind::None: return "";
  }
  return "";
}

bool pretokenizer_kind_from_regex(const std::string& regex, PretokenizerKind* kind) {
  for (auto candidate : {PretokenizerKind::Qwen2, PretokenizerKind::Llama3, PretokenizerKind::Gpt2}) {
    if (regex == pretokenizer_regex(candidate)) {
      *kind = candidate;
      return true;
    }
  }
  return false;
}

void utf8_decode(std::string_view text, std::vector<uint32_t>* codepoints, std::vector<std::size_t>* offsets) {
  codepoints->clear();
  offsets->clear();
  std::size_t pos = 0;
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  while (pos < text.size()) {
    unsigned char lead = bytes[pos];
    std::size_t len = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    uint32_t cp = 0;
    bool valid = len > 0 && pos + len <= text.size();
    if (valid) {
      cp = len == 1 ? lead : len == 2 ? (lead & 0x1F) : len == 3 ? (lead & 0x0F) : (lead & 0x07);
      for (std::size_t cont_idx = 1; cont_idx < len; ++cont_idx) {
        unsigned char cont = bytes[pos + cont_idx];
        if ((cont & 0xC0) != 0x80) {
          valid = false;
          break;
        }
        cp = (cp << 6) | (cont & 0x3F);
      }
      // Overlong forms, surrogates and out-of-range values are not valid UTF-8.
      static const uint32_t kMinForLen[] = {0, 0, 0x80, 0x800, 0x10000};
      if (valid && (cp < kMinForLen[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) valid = false;
    }
    if (!valid) {
      cp = 0xDC00 + lead;
      len = 1;
    }
    codepoints->push_back(cp);
    offsets->push_back(pos);
    pos += len;
  }
}

std::vector<std::pair<std::size_t, std::size_t>> pretokenize(std::string_view text, PretokenizerKind kind) {
  std::vector<std::pair<std::size_t, std::size_t>> pieces;
  if (text.empty()) return pieces;
  if (kind == PretokenizerKind::None) {
    pieces.emplace_back(0, text.size());
    return pieces;
  }
  std::vector<uint32_t> cps;
  std::vector<std::size_t> offsets;
  utf8_decode(text, &cps, &offsets);
  Scanner scanner(cps);
  std::size_t pos = 0;
  while (pos < cps.size()) {
    std::size_t end = scanner.next(pos, kind);
    std::size_t byte_end = end < cps.size() ? offsets[end] : text.size();
    pieces.emplace_back(offsets[pos], byte_end);
    pos = end;
  }
  return pieces;
}

}  // namespace kforge::policy
