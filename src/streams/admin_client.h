// AdminClient: a small blocking Kafka-protocol client for `govern streams` (topics, groups and their
// lag), speaking the same non-flexible versions the broker serves: Metadata v1, ListOffsets v1,
// ListGroups v2, DescribeGroups v4, OffsetFetch v5. One connection, one request at a time; every read
// and write is bounded by the timeout. Not thread-safe (one caller at a time).
//
// DumpSegment reads a partition segment file (<topic>-<p>/<offset>.log) without a broker: one line per
// record batch with its offsets, leader epoch, producer id/epoch/sequence, codec, size and whether its
// CRC-32C holds, and a note about a torn or corrupt tail.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::streams {

struct PartitionOffsets {
  int32_t partition = 0;
  int64_t log_start = -1;
  int64_t high_watermark = -1;
};
struct TopicInfo {
  std::string name;
  std::vector<PartitionOffsets> partitions;
};
struct ListedGroupInfo {
  std::string group_id;
  std::string protocol_type;
};
struct GroupMemberInfo {
  std::string member_id;
  std::string client_id;
  std::string client_host;
  // From the consumer protocol's assignment ("topic", partition); empty when not a consumer group.
  std::vector<std::pair<std::string, int32_t>> assigned;
};
struct GroupPartitionLag {
  std::string topic;
  int32_t partition = 0;
  int64_t committed = -1;
  int64_t end = -1;  // the high watermark; -1 when the partition is gone
  int64_t lag = -1;  // end - committed, or -1 when either is unknown
};
struct GroupInfo {
  int16_t error = 0;  // the group's Kafka error code (0: none)
  std::string group_id;
  std::string state;
  std::string protocol_type;
  std::string protocol;
  std::vector<GroupMemberInfo> members;
  std::vector<GroupPartitionLag> offsets;
};

class AdminClient {
 public:
  // Connects to "host:port". Unavailable when the broker cannot be reached.
  static Result<std::unique_ptr<AdminClient>> Connect(std::string_view address, int timeout_ms = 10000);
  ~AdminClient();
  AdminClient(const AdminClient&) = delete;
  AdminClient& operator=(const AdminClient&) = delete;

  // Every topic with each partition's log start offset and high watermark, sorted by name.
  Result<std::vector<TopicInfo>> Topics();
  Result<std::vector<ListedGroupInfo>> ListGroups();
  // Members, and every committed offset with the partition's end and the lag.
  Result<GroupInfo> DescribeGroup(const std::string& group);

 private:
  AdminClient(int fd, int timeout_ms) : fd_(fd), timeout_ms_(timeout_ms) {}
  Result<std::string> Call(int16_t key, int16_t version, std::string_view body);
  Result<std::vector<PartitionOffsets>> Offsets(const std::string& topic, const std::vector<int32_t>& parts);
  int fd_;
  int timeout_ms_;
  int32_t next_correlation_ = 1;
};

struct SegmentSummary {
  int64_t batches = 0;
  int64_t records = 0;
  int64_t bad_crc = 0;
  int64_t torn_bytes = 0;  // bytes after the last whole batch
};
// Prints one line per batch of the segment file at `path` to `out`. NotFound/Internal when it cannot
// be read; a corrupt batch is reported, not an error.
Result<SegmentSummary> DumpSegment(const std::string& path, std::ostream& out);

}  // namespace govern::streams
