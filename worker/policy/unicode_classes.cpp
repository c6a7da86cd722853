// Lookups into the generated Unicode range tables (binary search), plus the
// White_Space property, which is short enough to list by hand.
// Test: ctest -R policy_test (tokenizer_test.cpp).
#include <algorithm>

#include "worker/policy/unicode_tables.h"

namespace kforge::policy::unicode {

namespace {

bool in_ranges(const CodepointRange* ranges, std::size_t count, uint32_t cp) {
  const CodepointRange* end = ranges + count;
  const CodepointRange* it =
      std::upper_bound(ranges, end, cp, [](uint32_t value, const CodepointRange& range) { return value < range.lo; });
  if (it == ranges) return false;
  --it;
  return cp >= it->lo && cp <= it->hi;
}

}  // namespace

bool is_letter(uint32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return in_ranges(kLetterRanges, kLetterRangesCount, cp);
}

bool is_number(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(kNumberRanges, kNumberRangesCount, cp);
}

bool is_whitespace(uint32_t cp) {
  // Unicode White_Space (PropList.txt), which is what \s means in Oniguruma and Rust regex.
  if (cp >= 0x09 && cp <= 0x0D) return true;
  switch (cp) {
    case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

}  // namespace kforge::policy::unicode
