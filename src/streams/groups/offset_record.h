// The record format of the committed-offsets file (offsets.log): a commit or a deletion of one group's
// offsets, framed with a length and a CRC32C so a torn or corrupt tail is recognised.
//
// File layout (little-endian throughout):
//   header  "GOVGOFS1" (8 bytes)
//   frame*  u32 payload_length | u32 crc32c(payload) | payload
//   payload u8 type (1 commit, 2 delete, 3 delete topics) | u16 group_len | group | u32 count | entry*count
//   commit entry  u16 topic_len | topic | i32 partition | i64 offset | i32 leader_epoch
//                 | i64 commit_timestamp_ms | i64 expire_timestamp_ms | u32 metadata_len | metadata
//   delete entry  u16 topic_len | topic | i32 partition
// Type 3 (the topics were deleted) has an empty group and delete entries with partition -1: every
// group's offsets of those topics go.
// A frame is all or nothing: one OffsetCommit request is one frame, so a crash never keeps half of it.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace govern::streams::groups {

inline constexpr std::string_view kOffsetsFileMagic = "GOVGOFS1";
inline constexpr size_t kFrameHeaderSize = 8;
inline constexpr uint32_t kMaxPayloadSize = 64u << 20;  // larger lengths are corruption

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  friend auto operator<=>(const TopicPartition&, const TopicPartition&) = default;
};

struct OffsetValue {
  int64_t offset = -1;
  int32_t leader_epoch = -1;
  std::string metadata;
  int64_t commit_timestamp_ms = 0;
  int64_t expire_timestamp_ms = -1;  // -1: the coordinator's retention rule applies
  friend bool operator==(const OffsetValue&, const OffsetValue&) = default;
};

enum class RecordType : uint8_t { kCommit = 1, kDelete = 2, kDeleteTopics = 3 };

struct OffsetRecord {
  RecordType type = RecordType::kCommit;
  std::string group;
  std::vector<std::pair<TopicPartition, OffsetValue>> commits;  // kCommit
  std::vector<TopicPartition> deletes;                          // kDelete, kDeleteTopics
};

// Appends one framed record to `out`. InvalidArgument if a string is longer than its length field.
Status EncodeRecord(const OffsetRecord& record, std::string* out);

// Decodes the frame at the front of `data` into `out` and returns its size in bytes. OutOfRange when
// `data` ends inside the frame (a torn tail); DataLoss when the frame is corrupt (bad length, CRC or
// payload). Never reads outside `data`.
Result<size_t> DecodeRecord(std::string_view data, OffsetRecord* out);

}  // namespace govern::streams::groups
