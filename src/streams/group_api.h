// GroupApi: the consumer-group APIs of the Kafka protocol served by a Broker through its
// groups::GroupCoordinator. It owns the coordinator, decodes and encodes the non-flexible versions of
// FindCoordinator 0..2, JoinGroup 0..5, SyncGroup 0..3, Heartbeat 0..3, LeaveGroup 0..3,
// OffsetCommit 0..7, OffsetFetch 0..5, DescribeGroups 0..4 and ListGroups 0..2 (every advertised version is
// implemented; flexible versions are not advertised), and drives the coordinator's timers from a thread
// of its own (Tick at the time the coordinator asks for, at least every 100 ms).
//
// JoinGroup, SyncGroup and OffsetCommit may be answered later (other members, the fsync): the broker
// stops reading from that connection until the answer is there (as Kafka does), so answers stay in
// request order; an answer for a connection that closed meanwhile is dropped by the broker. A malformed
// body closes the connection.
//
// Order at shutdown: Shutdown() before Broker::Stop() (waiting joins and syncs get NOT_COORDINATOR and
// pending commits are answered while their connections are still open), then destroy the GroupApi after
// the broker has stopped. Thread-safe: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "streams/broker.h"
#include "streams/groups/coordinator.h"

namespace govern::streams {

namespace api {
inline constexpr int16_t kOffsetCommit = 8;
inline constexpr int16_t kOffsetFetch = 9;
inline constexpr int16_t kFindCoordinator = 10;
inline constexpr int16_t kJoinGroup = 11;
inline constexpr int16_t kHeartbeat = 12;
inline constexpr int16_t kLeaveGroup = 13;
inline constexpr int16_t kSyncGroup = 14;
inline constexpr int16_t kDescribeGroups = 15;
inline constexpr int16_t kListGroups = 16;
}  // namespace api

class GroupApi {
 public:
  // Opens the coordinator (offsets under options.data_dir; empty: <broker data_dir>/groups), registers
  // the nine group APIs on `broker` (which must not be started yet) and starts the timer thread.
  // FindCoordinator answers with the broker's node id, advertised host and bound port.
  static Result<std::unique_ptr<GroupApi>> Attach(Broker& broker, groups::CoordinatorOptions options);
  ~GroupApi();  // Shutdown(), stops the timer thread
  GroupApi(const GroupApi&) = delete;
  GroupApi& operator=(const GroupApi&) = delete;

  // Answers waiting JoinGroup/SyncGroup with NOT_COORDINATOR, waits for queued offset commits and stops
  // the timer. Idempotent.
  void Shutdown();
  groups::GroupCoordinator& coordinator();

  struct Impl;

 private:
  explicit GroupApi(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// Request decoders and response encoders, exposed for the fuzz target and tests. Each decoder takes the
// request body of one version and returns InvalidArgument when it is malformed or has bytes left over.
namespace groupwire {
Result<groups::FindCoordinatorRequest> DecodeFindCoordinator(std::string_view body, int16_t version);
Result<groups::JoinGroupRequest> DecodeJoinGroup(std::string_view body, int16_t version);
Result<groups::SyncGroupRequest> DecodeSyncGroup(std::string_view body, int16_t version);
Result<groups::HeartbeatRequest> DecodeHeartbeat(std::string_view body, int16_t version);
Result<groups::LeaveGroupRequest> DecodeLeaveGroup(std::string_view body, int16_t version);
Result<groups::OffsetCommitRequest> DecodeOffsetCommit(std::string_view body, int16_t version);
Result<groups::OffsetFetchRequest> DecodeOffsetFetch(std::string_view body, int16_t version);
Result<groups::DescribeGroupsRequest> DecodeDescribeGroups(std::string_view body, int16_t version);
Result<groups::ListGroupsRequest> DecodeListGroups(std::string_view body, int16_t version);

std::string Encode(const groups::FindCoordinatorResponse& r, int16_t version);
std::string Encode(const groups::JoinGroupResponse& r, int16_t version);
std::string Encode(const groups::SyncGroupResponse& r, int16_t version);
std::string Encode(const groups::HeartbeatResponse& r, int16_t version);
std::string Encode(const groups::LeaveGroupResponse& r, int16_t version);
std::string Encode(const groups::OffsetCommitResponse& r, int16_t version);
std::string Encode(const groups::OffsetFetchResponse& r, int16_t version);
std::string Encode(const groups::DescribeGroupsResponse& r, int16_t version);
std::string Encode(const groups::ListGroupsResponse& r, int16_t version);
}  // namespace groupwire

}  // namespace govern::streams
