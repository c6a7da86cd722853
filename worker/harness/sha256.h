// SHA-256 of a string, hex encoded: the content hash that identifies a candidate
// program (so identical candidates are checked once). Test: ctest -R harness_compare.
#pragma once

#include <string>

namespace kforge::harness {

//! Lower-case hex SHA-256 digest of `data`.
std::string sha256_hex(const std::string& data);

}  // namespace kforge::harness
