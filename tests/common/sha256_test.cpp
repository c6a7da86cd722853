// The one SHA-256 (common/sha256.h) against the FIPS 180-4 / NIST test vectors, in one
// piece, streamed in odd chunks, with and without the CPU's SHA instructions, and over a
// file. ctest -R common_sha256_test
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "common/sha256.h"

namespace {

// Both compression paths: the default one (SHA instructions where the CPU has them) and
// the portable one.
std::string digest(const std::string& text, bool portable) {
  kforge::Sha256 hasher(portable);
  hasher.update(text.data(), text.size());
  return hasher.hex_digest();
}

TEST(Sha256, NistVectors) {
  std::cout << "this CPU " << (kforge::sha256_accelerated() ? "has" : "lacks") << " the x86 SHA extensions\n";
  for (bool portable : {false, true}) {
    EXPECT_EQ(digest("", portable), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(digest("abc", portable), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", portable),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(digest(std::string(1000000, 'a'), portable),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }
  EXPECT_EQ(kforge::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, StreamedInAnyChunksEqualsOneShot) {
  std::string text;
  for (int idx = 0; idx < 1000; ++idx) text += static_cast<char>(idx * 37 + 11);
  const std::string whole = kforge::sha256_hex(text);
  EXPECT_EQ(whole, digest(text, /*portable=*/true));
  // Chunk sizes around the 64-byte block and the 56-byte padding boundary.
  for (size_t chunk : {1u, 7u, 55u, 56u, 63u, 64u, 65u, 200u}) {
    kforge::Sha256 hasher;
    for (size_t pos = 0; pos < text.size(); pos += chunk)
      hasher.update(text.data() + pos, std::min(chunk, text.size() - pos));
    EXPECT_EQ(hasher.hex_digest(), whole) << "chunk " << chunk;
  }
  // Messages of every length near the padding boundary differ from each other.
  for (size_t size = 50; size < 130; ++size)
    EXPECT_NE(kforge::sha256_hex(text.substr(0, size)), kforge::sha256_hex(text.substr(0, size + 1)));
}

TEST(Sha256, FileDigestMatchesAndMissingFileIsNullopt) {
  std::string path = ::testing::TempDir() + "/kforge_sha256_test.bin";
  std::string content(3 * (1 << 20) + 17, 'x');  // more than one 1 MiB read block
  std::ofstream(path, std::ios::binary) << content;
  auto digest = kforge::file_sha256_hex(path);
  ASSERT_TRUE(digest.has_value());
  EXPECT_EQ(*digest, kforge::sha256_hex(content));
  std::remove(path.c_str());
  EXPECT_FALSE(kforge::file_sha256_hex(path).has_value());
}

}  // namespace
