// Plain request and response structs for the consumer-group APIs of the Kafka protocol (FindCoordinator,
// JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups, ListGroups),
// with Kafka's error codes. They mirror the fields of the Kafka message definitions
// (apache/kafka clients/src/main/resources/common/message/*.json) without any wire encoding: the broker's
// codec fills a request from the bytes of whatever version it received and writes back the fields of a
// response that version has. `version` is carried where the coordinator's behaviour depends on it.
//
// Values only: not synchronised, safe to copy and move.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace govern::streams::groups {

// Kafka error codes used by the group APIs (values from Kafka's protocol documentation, "Error Codes").
enum class ErrorCode : int16_t {
  kUnknownServerError = -1,
  kNone = 0,
  kUnknownTopicOrPartition = 3,
  kOffsetMetadataTooLarge = 12,
  kCoordinatorLoadInProgress = 14,
  kCoordinatorNotAvailable = 15,
  kNotCoordinator = 16,
  kIllegalGeneration = 22,
  kInconsistentGroupProtocol = 23,
  kInvalidGroupId = 24,
  kUnknownMemberId = 25,
  kInvalidSessionTimeout = 26,
  kRebalanceInProgress = 27,
  kInvalidCommitOffsetSize = 28,
  kTopicAuthorizationFailed = 29,
  kGroupAuthorizationFailed = 30,
  kUnsupportedVersion = 35,
  kInvalidRequest = 42,
  kKafkaStorageError = 56,
  kNonEmptyGroup = 68,
  kGroupIdNotFound = 69,
  kMemberIdRequired = 79,
  kGroupMaxSizeReached = 81,
  kFencedInstanceId = 82,
};

// Kafka's upper-case name ("REBALANCE_IN_PROGRESS"); "UNKNOWN_ERROR_CODE" for values not listed above.
std::string_view ErrorName(ErrorCode code);

// ---- FindCoordinator (key 10; v0-v4) ----
// key_type 0 = group, 1 = transaction. v4 batches keys in coordinator_keys (then `key` is unused).
struct FindCoordinatorRequest {
  int16_t version = 0;
  std::string key;
  int8_t key_type = 0;
  std::vector<std::string> coordinator_keys;  // v4+
};
struct FindCoordinatorResult {
  std::string key;
  int32_t node_id = -1;
  std::string host;
  int32_t port = -1;
  ErrorCode error = ErrorCode::kNone;
  std::string error_message;
};
// For v0-v3 the single result is `result` (its key empty); for v4 `coordinators` has one per key.
struct FindCoordinatorResponse {
  FindCoordinatorResult result;
  std::vector<FindCoordinatorResult> coordinators;
};

// ---- JoinGroup (key 11; v0-v5 semantics, later fields carried for completeness) ----
struct JoinGroupProtocol {
  std::string name;
  std::string metadata;  // opaque bytes (the consumer protocol's subscription)
};
struct JoinGroupRequest {
  int16_t version = 5;
  std::string group_id;
  int32_t session_timeout_ms = 0;
  int32_t rebalance_timeout_ms = -1;             // v1+; v0 uses the session timeout
  std::string member_id;                         // empty on a first join
  std::optional<std::string> group_instance_id;  // v5+: static membership
  std::string protocol_type;                     // "consumer" for consumers
  std::vector<JoinGroupProtocol> protocols;      // in the member's order of preference
  // From the request header and the connection, shown by DescribeGroups.
  std::string client_id;
  std::string client_host;
};
struct JoinGroupMember {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::string metadata;
};
struct JoinGroupResponse {
  ErrorCode error = ErrorCode::kNone;
  int32_t generation_id = -1;
  std::string protocol_type;  // v7+ on the wire
  std::string protocol_name;
  std::string leader;
  std::string member_id;
  std::vector<JoinGroupMember> members;  // only for the leader
};

// ---- SyncGroup (key 14; v0-v3, v5 protocol fields) ----
struct SyncGroupAssignment {
  std::string member_id;
  std::string assignment;  // opaque bytes
};
struct SyncGroupRequest {
  int16_t version = 3;
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;  // v3+
  std::optional<std::string> protocol_type;      // v5+
  std::optional<std::string> protocol_name;      // v5+
  std::vector<SyncGroupAssignment> assignments;  // only the leader sends them
};
struct SyncGroupResponse {
  ErrorCode error = ErrorCode::kNone;
  std::optional<std::string> protocol_type;  // v5+
  std::optional<std::string> protocol_name;  // v5+
  std::string assignment;
};

// ---- Heartbeat (key 12; v0-v3) ----
struct HeartbeatRequest {
  int16_t version = 3;
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;  // v3+
};
struct HeartbeatResponse {
  ErrorCode error = ErrorCode::kNone;
};

// ---- LeaveGroup (key 13; v0-v2 one member, v3+ a batch) ----
struct LeaveGroupMember {
  std::string member_id;  // empty: find the member by group_instance_id
  std::optional<std::string> group_instance_id;
};
struct LeaveGroupRequest {
  int16_t version = 3;
  std::string group_id;
  std::string member_id;                  // v0-v2
  std::vector<LeaveGroupMember> members;  // v3+
};
struct LeaveGroupMemberResult {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  ErrorCode error = ErrorCode::kNone;
};
// v0-v2: `error` is the one member's error. v3+: `error` is for the group, `members` per member.
struct LeaveGroupResponse {
  ErrorCode error = ErrorCode::kNone;
  std::vector<LeaveGroupMemberResult> members;
};

// ---- OffsetCommit (key 8; v0-v7) ----
struct OffsetCommitPartition {
  int32_t partition_index = 0;
  int64_t committed_offset = -1;
  int32_t committed_leader_epoch = -1;            // v6+
  int64_t commit_timestamp = -1;                  // v1 only; ignored (the coordinator stamps commits)
  std::optional<std::string> committed_metadata;  // null is stored as ""
};
struct OffsetCommitTopic {
  std::string name;
  std::vector<OffsetCommitPartition> partitions;
};
struct OffsetCommitRequest {
  int16_t version = 7;
  std::string group_id;
  int32_t generation_id = -1;  // v1+; -1 with an empty member id: a standalone ("simple") commit
  std::string member_id;       // v1+
  std::optional<std::string> group_instance_id;  // v7+
  int64_t retention_time_ms = -1;                // v2-v4; -1 = the coordinator's retention
  std::vector<OffsetCommitTopic> topics;
};
struct OffsetCommitPartitionResult {
  int32_t partition_index = 0;
  ErrorCode error = ErrorCode::kNone;
};
struct OffsetCommitTopicResult {
  std::string name;
  std::vector<OffsetCommitPartitionResult> partitions;
};
struct OffsetCommitResponse {
  std::vector<OffsetCommitTopicResult> topics;  // same order as the request
};

// ---- OffsetFetch (key 9; v0-v7, single group) ----
struct OffsetFetchTopic {
  std::string name;
  std::vector<int32_t> partition_indexes;
};
struct OffsetFetchRequest {
  int16_t version = 5;
  std::string group_id;
  std::optional<std::vector<OffsetFetchTopic>> topics;  // v2+: nullopt = every committed offset
  bool require_stable = false;                          // v7+ (no transactions: always stable)
};
struct OffsetFetchPartition {
  int32_t partition_index = 0;
  int64_t committed_offset = -1;  // -1: nothing committed
  int32_t committed_leader_epoch = -1;
  std::optional<std::string> metadata;  // "" when nothing committed
  ErrorCode error = ErrorCode::kNone;
};
struct OffsetFetchTopicResult {
  std::string name;
  std::vector<OffsetFetchPartition> partitions;
};
struct OffsetFetchResponse {
  ErrorCode error = ErrorCode::kNone;  // v2+
  std::vector<OffsetFetchTopicResult> topics;
};

// ---- DescribeGroups (key 15; v0-v5) ----
struct DescribeGroupsRequest {
  int16_t version = 4;
  std::vector<std::string> groups;
  bool include_authorized_operations = false;  // v3+; the broker fills the field itself
};
struct DescribedGroupMember {
  std::string member_id;
  std::optional<std::string> group_instance_id;  // v4+
  std::string client_id;
  std::string client_host;
  std::string member_metadata;    // for the selected protocol; empty unless Stable
  std::string member_assignment;  // empty unless Stable
};
struct DescribedGroup {
  ErrorCode error = ErrorCode::kNone;
  std::string group_id;
  std::string group_state;  // "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"
  std::string protocol_type;
  std::string protocol_data;  // the selected protocol's name
  std::vector<DescribedGroupMember> members;
};
struct DescribeGroupsResponse {
  std::vector<DescribedGroup> groups;  // same order as the request
};

// ---- ListGroups (key 16; v0-v4) ----
struct ListGroupsRequest {
  int16_t version = 4;
  std::vector<std::string> states_filter;  // v4+; empty = all; names compared case-insensitively
};
struct ListedGroup {
  std::string group_id;
  std::string protocol_type;
  std::string group_state;  // v4+
};
struct ListGroupsResponse {
  ErrorCode error = ErrorCode::kNone;
  std::vector<ListedGroup> groups;  // sorted by group id
};

}  // namespace govern::streams::groups
