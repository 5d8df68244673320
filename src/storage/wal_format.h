// The on-disk format of the write-ahead log (docs/wal-format.md describes it for people): the segment
// file header, the record frame, the cursor file, and the decoders that recovery, readers and the fuzz
// target share. Pure functions over bytes: thread-safe. Every decoder accepts arbitrary input and never
// reads outside the span it was given.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace govern::wal {

inline constexpr char kSegmentMagic[8] = {'G', 'O', 'V', 'W', 'A', 'L', '\r', '\n'};
inline constexpr char kCursorMagic[8] = {'G', 'O', 'V', 'C', 'U', 'R', '\r', '\n'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kSegmentHeaderSize = 32;
inline constexpr size_t kRecordHeaderSize = 16;  // crc32c u32, length u32, sequence u64
inline constexpr uint32_t kMaxRecordSize = 64u << 20;

// Little-endian helpers (the format is little-endian on every machine).
inline void PutU32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
inline void PutU64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
inline uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}
inline uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

// "00000000000000000001.wal": the first sequence, 20 digits, so names sort like numbers.
std::string SegmentFileName(uint64_t first_seq);
// Parses a segment file name; false for anything else (temp files included).
bool ParseSegmentFileName(std::string_view name, uint64_t* first_seq);

std::string EncodeSegmentHeader(uint64_t first_seq);
// Checks magic, version, size and checksum; returns the first sequence.
Result<uint64_t> DecodeSegmentHeader(std::string_view bytes);

// The record checksum: CRC32C over the payload, then over header bytes 4..16 (length and sequence).
// Payload first so appenders can checksum the payload before they hold the log's lock and learn their
// sequence: payload_crc is Crc32c(payload).
uint32_t RecordCrc(uint32_t payload_crc, uint32_t length, uint64_t seq);
// Writes the 16-byte header for a record into out.
void EncodeRecordHeader(char* out, uint32_t payload_crc, uint32_t length, uint64_t seq);

enum class DecodeState {
  kRecord,     // a whole valid record
  kNeedMore,   // the bytes end inside the record (a torn tail if the file ends here)
  kZero,       // the header is all zero bytes: the unused (preallocated) end of the segment
  kBadLength,  // length over kMaxRecordSize
  kBadCrc,     // checksum mismatch
  kBadSeq,     // valid checksum but not the sequence expected here
};

struct Decoded {
  DecodeState state = DecodeState::kNeedMore;
  uint64_t seq = 0;
  std::string_view payload;  // points into the input
  size_t size = 0;           // header + payload, when known
};

// Decodes the record at the start of `bytes`, which must carry `expected_seq`.
Decoded DecodeRecord(std::string_view bytes, uint64_t expected_seq);

std::string_view DecodeStateName(DecodeState s);

// Why a segment scan stopped.
enum class TailKind {
  kClean,          // end of file, or nothing but zero bytes from the last record to the end
  kTruncated,      // the file ends inside a record (torn write)
  kZerosThenData,  // zero bytes, then non-zero bytes further on (a write reached disk out of order)
  kCorrupt,        // bad checksum, bad length or unexpected sequence
};

struct SegmentScan {
  uint64_t first_seq = 0;
  uint64_t count = 0;      // valid records from the start
  uint64_t valid_end = 0;  // file offset just past the last valid record
  TailKind tail = TailKind::kClean;
  std::string reason;  // for logs, empty when clean
};

// Scans a whole segment file: the header (an error if bad), then records until the first that is not
// valid. Never fails on bad records: the caller decides whether a non-clean tail is a torn write to cut
// (the last segment) or data loss (a sealed segment).
Result<SegmentScan> ScanSegment(std::string_view file);

// Cursor files: magic, version, name, next sequence, CRC32C.
std::string EncodeCursor(std::string_view name, uint64_t next_seq);
struct CursorFile {
  std::string name;
  uint64_t next_seq = 0;
};
Result<CursorFile> DecodeCursor(std::string_view bytes);
// Cursor names: 1..64 of [A-Za-z0-9_.-], not starting with '.'.
bool ValidCursorName(std::string_view name);

}  // namespace govern::wal
