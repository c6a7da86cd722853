// SHA-256 (FIPS 180-4) without dependencies, the one implementation every component
// uses: program and op content hashes, API token and request hashes, model file
// digests. x86 SHA instructions when the CPU has them. Test: ctest -R common_sha256_test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace kforge {

//! Incremental SHA-256: update() any number of times, then hex_digest() once.
class Sha256 {
 public:
  //! `portable`: never use the CPU's SHA instructions (the test compares both paths).
  explicit Sha256(bool portable = false);
  //! Hashes `size` more bytes.
  void update(const void* data, size_t size);
  //! Lower-case hex digest of everything updated so far; the hasher is spent afterwards.
  std::string hex_digest();

 private:
  void compress(const uint8_t* blocks, size_t count);
  bool accelerated_;
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

//! Lower-case hex SHA-256 digest of `data`.
std::string sha256_hex(const std::string& data);

//! Lower-case hex SHA-256 digest of a file, streamed in 1 MiB blocks (checkpoints can be
//! gigabytes); nullopt when the file cannot be read.
std::optional<std::string> file_sha256_hex(const std::string& path);

//! True when this CPU runs SHA-256 with the x86 SHA extensions (about 7x the portable code).
bool sha256_accelerated();

}  // namespace kforge
