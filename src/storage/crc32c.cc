// CRC32C: the SSE4.2 instruction path and a slicing-by-one table fallback.
#include "storage/crc32c.h"

#include <array>
#include <cstring>

namespace govern::storage {
namespace {

constexpr uint32_t kPoly = 0x82F63B78;  // Castagnoli, bit-reversed

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t HardwareRaw(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = crc;
  // Byte steps until 8-byte aligned, so the 64-bit loads are aligned.
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = __builtin_ia32_crc32qi(static_cast<uint32_t>(c), *p++);
    --n;
  }
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = __builtin_ia32_crc32qi(static_cast<uint32_t>(c), *p++);
    --n;
  }
  return static_cast<uint32_t>(c);
}
#endif

bool DetectHardware() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
#else
  return false;
#endif
}

const bool kHardware = DetectHardware();

}  // namespace

uint32_t Crc32cExtendTable(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  for (size_t i = 0; i < n; ++i) c = kTable[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

bool Crc32cHardwareAvailable() { return kHardware; }

uint32_t Crc32cExtendHardware(uint32_t crc, const void* data, size_t n) {
#if defined(__x86_64__)
  return ~HardwareRaw(~crc, static_cast<const uint8_t*>(data), n);
#else
  return Crc32cExtendTable(crc, data, n);
#endif
}

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n) {
  return kHardware ? Crc32cExtendHardware(crc, data, n) : Crc32cExtendTable(crc, data, n);
}

}  // namespace govern::storage
