// Record batch v2 (magic 2), the unit the broker stores: parsing and checking a batch as a client sent
// it, and stamping the offsets the log assigns.
//
// Layout (big-endian, 61-byte header): baseOffset i64, batchLength i32 (bytes after this field),
// partitionLeaderEpoch i32, magic i8, crc u32 (CRC-32C of attributes..end), attributes i16,
// lastOffsetDelta i32, baseTimestamp i64, maxTimestamp i64, producerId i64, producerEpoch i16,
// baseSequence i32, recordsCount i32, then the records (compressed as one block when attributes name a
// codec). baseOffset and partitionLeaderEpoch lie outside the CRC, so the broker stamps them in place
// without recomputing it. Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::streams {

inline constexpr size_t kBatchHeaderSize = 61;
inline constexpr size_t kBatchLengthOffset = 8;  // where batchLength sits
inline constexpr size_t kBatchLogOverhead = 12;  // baseOffset + batchLength
inline constexpr size_t kBatchCrcStart = 21;     // attributes: first byte the CRC covers

struct BatchHeader {
  int64_t base_offset = 0;
  int32_t batch_length = 0;  // bytes after the length field; the whole batch is batch_length + 12
  int32_t leader_epoch = -1;
  int8_t magic = 0;
  uint32_t crc = 0;
  int16_t attributes = 0;
  int32_t last_offset_delta = 0;
  int64_t base_timestamp = 0;
  int64_t max_timestamp = 0;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  int32_t records_count = 0;

  size_t total_size() const { return static_cast<size_t>(batch_length) + kBatchLogOverhead; }
  int64_t last_offset() const { return base_offset + last_offset_delta; }
  int codec() const { return attributes & 7; }
  bool transactional() const { return (attributes & 0x10) != 0; }
  bool control() const { return (attributes & 0x20) != 0; }
  // Last sequence number of an idempotent batch (sequences wrap at INT32_MAX to 0).
  int32_t last_sequence() const;
};

// Reads the header fields at the start of `data` (at least kBatchHeaderSize bytes) without checking
// anything: for scanning a log whose batches were checked when they were appended.
BatchHeader PeekHeader(std::string_view data);

// Parses and checks one whole batch (exactly `data`): length consistent with data.size(), magic 2, CRC,
// lastOffsetDelta == recordsCount - 1, at least one record, and for uncompressed batches that the
// records are framed as their count says with offset deltas 0..n-1. InvalidArgument for a malformed
// batch, DataLoss for a CRC mismatch (Kafka's CORRUPT_MESSAGE).
Result<BatchHeader> ParseBatch(std::string_view data);

// Splits a produce request's record set into batches: each [start, size) must be one whole batch.
// Returns InvalidArgument when the set is empty or ends in a partial batch.
Status ForEachBatch(std::string_view records, const std::function<Status(std::string_view)>& fn);

// Overwrites baseOffset and partitionLeaderEpoch of the batch at `batch` (outside the CRC).
void StampBatch(char* batch, int64_t base_offset, int32_t leader_epoch);

// Builds an uncompressed batch of `values` (null keys, no headers), for tests and benchmarks.
std::string BuildBatch(const std::vector<std::string>& values, int64_t timestamp_ms, int64_t producer_id = -1,
                       int16_t producer_epoch = -1, int32_t base_sequence = -1);

}  // namespace govern::streams
