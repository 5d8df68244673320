// Encoders and decoders for the write-ahead log's files.
#include "storage/wal_format.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "storage/crc32c.h"

namespace govern::wal {

using storage::Crc32c;
using storage::Crc32cExtend;

std::string SegmentFileName(uint64_t first_seq) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%020" PRIu64 ".wal", first_seq);
  return buf;
}

bool ParseSegmentFileName(std::string_view name, uint64_t* first_seq) {
  if (name.size() != 24 || name.substr(20) != ".wal") return false;
  uint64_t v = 0;
  for (size_t i = 0; i < 20; ++i) {
    char c = name[i];
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (v == 0) return false;
  *first_seq = v;
  return true;
}

std::string EncodeSegmentHeader(uint64_t first_seq) {
  std::string h(kSegmentHeaderSize, '\0');
  std::memcpy(h.data(), kSegmentMagic, 8);
  PutU32(h.data() + 8, kFormatVersion);
  PutU32(h.data() + 12, kSegmentHeaderSize);
  PutU64(h.data() + 16, first_seq);
  PutU32(h.data() + 24, Crc32c(h.data(), 24));
  return h;
}

Result<uint64_t> DecodeSegmentHeader(std::string_view b) {
  if (b.size() < kSegmentHeaderSize) return DataLoss("segment header: file shorter than its header");
  if (std::memcmp(b.data(), kSegmentMagic, 8) != 0) return DataLoss("segment header: bad magic");
  if (GetU32(b.data() + 24) != Crc32c(b.data(), 24)) return DataLoss("segment header: checksum mismatch");
  uint32_t version = GetU32(b.data() + 8);
  if (version != kFormatVersion) {
    return DataLoss("segment header: unsupported format version " + std::to_string(version));
  }
  if (GetU32(b.data() + 12) != kSegmentHeaderSize) return DataLoss("segment header: bad header size");
  uint64_t first = GetU64(b.data() + 16);
  if (first == 0) return DataLoss("segment header: first sequence is 0");
  return first;
}

uint32_t RecordCrc(uint32_t payload_crc, uint32_t length, uint64_t seq) {
  char tail[12];
  PutU32(tail, length);
  PutU64(tail + 4, seq);
  return Crc32cExtend(payload_crc, tail, sizeof(tail));
}

void EncodeRecordHeader(char* out, uint32_t payload_crc, uint32_t length, uint64_t seq) {
  PutU32(out, RecordCrc(payload_crc, length, seq));
  PutU32(out + 4, length);
  PutU64(out + 8, seq);
}

Decoded DecodeRecord(std::string_view b, uint64_t expected_seq) {
  Decoded d;
  if (b.size() < kRecordHeaderSize) {
    // A short all-zero remainder is still the zero tail.
    bool zero = true;
    for (char c : b) zero = zero && c == 0;
    d.state = zero ? DecodeState::kZero : DecodeState::kNeedMore;
    return d;
  }
  bool zero = true;
  for (size_t i = 0; i < kRecordHeaderSize; ++i) zero = zero && b[i] == 0;
  if (zero) {
    d.state = DecodeState::kZero;
    return d;
  }
  uint32_t crc = GetU32(b.data());
  uint32_t len = GetU32(b.data() + 4);
  d.seq = GetU64(b.data() + 8);
  if (len > kMaxRecordSize) {
    d.state = DecodeState::kBadLength;
    return d;
  }
  d.size = kRecordHeaderSize + len;
  if (b.size() < d.size) {
    d.state = DecodeState::kNeedMore;
    return d;
  }
  d.payload = b.substr(kRecordHeaderSize, len);
  if (RecordCrc(Crc32c(d.payload.data(), len), len, d.seq) != crc) {
    d.state = DecodeState::kBadCrc;
    return d;
  }
  d.state = d.seq == expected_seq ? DecodeState::kRecord : DecodeState::kBadSeq;
  return d;
}

std::string_view DecodeStateName(DecodeState s) {
  switch (s) {
    case DecodeState::kRecord:
      return "record";
    case DecodeState::kNeedMore:
      return "truncated record";
    case DecodeState::kZero:
      return "zero bytes";
    case DecodeState::kBadLength:
      return "record length too large";
    case DecodeState::kBadCrc:
      return "checksum mismatch";
    case DecodeState::kBadSeq:
      return "unexpected sequence number";
  }
  return "unknown";
}

Result<SegmentScan> ScanSegment(std::string_view file) {
  GOVERN_ASSIGN_OR_RETURN(uint64_t first, DecodeSegmentHeader(file));
  SegmentScan s;
  s.first_seq = first;
  size_t off = kSegmentHeaderSize;
  for (;;) {
    if (off == file.size()) break;
    Decoded d = DecodeRecord(file.substr(off), first + s.count);
    if (d.state == DecodeState::kRecord) {
      off += d.size;
      ++s.count;
      continue;
    }
    if (d.state == DecodeState::kZero) {
      size_t nz = off;
      while (nz < file.size() && file[nz] == 0) ++nz;
      if (nz != file.size()) {
        s.tail = TailKind::kZerosThenData;
        s.reason = "zero bytes then data at offset " + std::to_string(nz);
      }
    } else if (d.state == DecodeState::kNeedMore) {
      s.tail = TailKind::kTruncated;
      s.reason = "record cut short by the end of the file";
    } else {
      s.tail = TailKind::kCorrupt;
      s.reason = std::string(DecodeStateName(d.state));
      if (d.state == DecodeState::kBadSeq) {
        s.reason +=
            " (found " + std::to_string(d.seq) + ", expected " + std::to_string(first + s.count) + ")";
      }
    }
    break;
  }
  s.valid_end = off;
  return s;
}

std::string EncodeCursor(std::string_view name, uint64_t next_seq) {
  std::string b(24 + name.size() + 4, '\0');
  std::memcpy(b.data(), kCursorMagic, 8);
  PutU32(b.data() + 8, kFormatVersion);
  PutU32(b.data() + 12, static_cast<uint32_t>(name.size()));
  PutU64(b.data() + 16, next_seq);
  std::memcpy(b.data() + 24, name.data(), name.size());
  PutU32(b.data() + 24 + name.size(), Crc32c(b.data(), 24 + name.size()));
  return b;
}

Result<CursorFile> DecodeCursor(std::string_view b) {
  if (b.size() < 28 || std::memcmp(b.data(), kCursorMagic, 8) != 0) return DataLoss("cursor file: bad magic");
  if (GetU32(b.data() + 8) != kFormatVersion) return DataLoss("cursor file: unsupported version");
  uint32_t n = GetU32(b.data() + 12);
  if (n > 64 || b.size() != 28 + n) return DataLoss("cursor file: bad length");
  if (GetU32(b.data() + 24 + n) != Crc32c(b.data(), 24 + n))
    return DataLoss("cursor file: checksum mismatch");
  CursorFile c;
  c.next_seq = GetU64(b.data() + 16);
  c.name = std::string(b.substr(24, n));
  if (!ValidCursorName(c.name)) return DataLoss("cursor file: bad name");
  return c;
}

bool ValidCursorName(std::string_view name) {
  if (name.empty() || name.size() > 64 || name[0] == '.') return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace govern::wal
