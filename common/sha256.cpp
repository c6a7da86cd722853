// SHA-256 behind common/sha256.h: the FIPS 180-4 compression function over 64-byte
// blocks (portable C++, or the x86 SHA extensions when cpuid has them), with a 64-byte
// carry buffer for streaming. Test: ctest -R common_sha256_test.
#include "common/sha256.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define KFORGE_SHA256_X86 1
#endif

namespace kforge {
namespace {

constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void compress_portable(uint32_t* state, const uint8_t* block) {
  uint32_t w[64];
  for (int t = 0; t < 16; ++t)
    w[t] = (uint32_t{block[4 * t]} << 24) | (uint32_t{block[4 * t + 1]} << 16) | (uint32_t{block[4 * t + 2]} << 8) |
           uint32_t{block[4 * t + 3]};
  for (int t = 16; t < 64; ++t) {
    uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
  for (int t = 0; t < 64; ++t) {
    uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[t] + w[t];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
  }
  state[0] += a; state[1] += b; state[2] += c; state[3] += d;
  state[4] += e; state[5] += f; state[6] += g; state[7] += h;
}

#ifdef KFORGE_SHA256_X86
// The same rounds with SHA-NI: sha256rnds2 does two rounds on the state held as ABEF /
// CDGH, sha256msg1/msg2 extend the message schedule four words at a time.
__attribute__((target("sha,sse4.1"))) void compress_sha_ni(uint32_t* state, const uint8_t* blocks, size_t count) {
  const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  // Register names list lanes from high to low, as the SHA instructions want them.
  __m128i cdab = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(state)), 0xB1);
  __m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(state + 4)), 0x1B);
  __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
  __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
  for (size_t block_idx = 0; block_idx < count; ++block_idx) {
    const uint8_t* block = blocks + 64 * block_idx;
    const __m128i abef_start = abef, cdgh_start = cdgh;
    __m128i words[4];  // the last 16 schedule words, four per register
    for (int group = 0; group < 16; ++group) {
      __m128i& current = words[group & 3];
      if (group < 4) {
        current = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * group)), byte_swap);
      } else {
        // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16] for t = 4*group .. 4*group+3.
        __m128i partial = _mm_sha256msg1_epu32(current, words[(group + 1) & 3]);
        partial = _mm_add_epi32(partial, _mm_alignr_epi8(words[(group + 3) & 3], words[(group + 2) & 3], 4));
        current = _mm_sha256msg2_epu32(partial, words[(group + 3) & 3]);
      }
      __m128i schedule =
          _mm_add_epi32(current, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kRound + 4 * group)));
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, schedule);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(schedule, 0x0E));
    }
    abef = _mm_add_epi32(abef, abef_start);
    cdgh = _mm_add_epi32(cdgh, cdgh_start);
  }
  __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state), _mm_blend_epi16(feba, dchg, 0xF0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 4), _mm_alignr_epi8(dchg, feba, 8));
}
#endif

bool cpu_has_sha() {
#ifdef KFORGE_SHA256_X86
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_SSE4_1) || !(ecx & bit_SSSE3)) return false;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (ebx & bit_SHA) != 0;
#else
  return false;
#endif
}

}  // namespace

bool sha256_accelerated() {
  static const bool has_sha = cpu_has_sha();
  return has_sha;
}

Sha256::Sha256(bool portable)
    : accelerated_(!portable && sha256_accelerated()),
      state_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void Sha256::compress(const uint8_t* blocks, size_t count) {
#ifdef KFORGE_SHA256_X86
  if (accelerated_) return compress_sha_ni(state_, blocks, count);
#endif
  for (size_t block_idx = 0; block_idx < count; ++block_idx) compress_portable(state_, blocks + 64 * block_idx);
}

void Sha256::update(const void* data, size_t size) {
  const uint8_t* bytes = static_cast<const uint8_t*>(data);
  total_bytes_ += size;
  if (buffered_ > 0) {
    size_t take = std::min(size, sizeof buffer_ - buffered_);
    std::memcpy(buffer_ + buffered_, bytes, take);
    buffered_ += take;
    bytes += take;
    size -= take;
    if (buffered_ < sizeof buffer_) return;
    compress(buffer_, 1);
    buffered_ = 0;
  }
  size_t whole = size / 64;
  compress(bytes, whole);
  std::memcpy(buffer_, bytes + 64 * whole, size - 64 * whole);
  buffered_ = size - 64 * whole;
}

std::string Sha256::hex_digest() {
  // Padding: 0x80, zeros up to 56 mod 64, then the message length in bits, big-endian.
  uint64_t bit_length = total_bytes_ * 8;
  uint8_t pad[72] = {0x80};
  size_t pad_size = (buffered_ < 56 ? 56 : 120) - buffered_;
  for (int byte_idx = 0; byte_idx < 8; ++byte_idx)
    pad[pad_size + byte_idx] = static_cast<uint8_t>(bit_length >> (56 - 8 * byte_idx));
  update(pad, pad_size + 8);
  char hex[65];
  for (int word = 0; word < 8; ++word) std::snprintf(hex + 8 * word, 9, "%08x", state_[word]);
  return std::string(hex, 64);
}

std::string sha256_hex(const std::string& data) {
  Sha256 hasher;
  hasher.update(data.data(), data.size());
  return hasher.hex_digest();
}

std::optional<std::string> file_sha256_hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  Sha256 hasher;
  std::vector<char> block(1 << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    if (in.gcount() > 0) hasher.update(block.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return std::nullopt;
  return hasher.hex_digest();
}

}  // namespace kforge
