// CRC32C (Castagnoli), the checksum that frames every write-ahead log record.
//
// Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at first use) and a table
// otherwise; both give identical results. Pure functions: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace govern::storage {

// Returns the CRC32C of data[0, n) continued from `crc`, the finished CRC of the bytes before it
// (0 for none). So Crc32cExtend(Crc32c(a), b) == Crc32c(a + b).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);

inline uint32_t Crc32c(const void* data, size_t n) { return Crc32cExtend(0, data, n); }
inline uint32_t Crc32c(std::string_view s) { return Crc32cExtend(0, s.data(), s.size()); }

// Exposed for tests: the two implementations, callable whatever the CPU.
uint32_t Crc32cExtendTable(uint32_t crc, const void* data, size_t n);
bool Crc32cHardwareAvailable();
uint32_t Crc32cExtendHardware(uint32_t crc, const void* data, size_t n);  // only if available

}  // namespace govern::storage
