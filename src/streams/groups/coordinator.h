// GroupCoordinator: the consumer-group coordinator of Kafka's classic rebalance protocol (before
// KIP-848), free of any transport. The broker decodes a request into the structs of messages.h, calls
// the method of the same name, and encodes what comes back; JoinGroup, SyncGroup and OffsetCommit answer
// through a callback because their answer may wait (for the other members, or for the fsync).
//
// Behaviour (docs/streams-groups.md has the details and the deviations from Kafka):
//  - Groups move through Empty -> PreparingRebalance -> CompletingRebalance -> Stable (Dead once
//    removed). Every completed join round starts a new generation; the protocol is the one every member
//    supports, chosen by vote of each member's first preference; the leader stays leader while it is a
//    member.
//  - JoinGroup v4+ with an empty member id answers MEMBER_ID_REQUIRED with a fresh id (KIP-394). Static
//    members (group.instance.id, KIP-345) are accepted unless Options::allow_static_membership is false.
//  - Timers: a join round ends when every member has rejoined or at the rebalance timeout (members that
//    did not rejoin are removed); the first round of an empty group waits
//    Options::initial_rebalance_delay_ms, extended while members keep arriving; a member without a
//    heartbeat for its session timeout is removed; a member that does not send SyncGroup within the
//    rebalance timeout after the join round is removed. Timers fire only in Tick(): nothing happens
//    between calls, so tests drive time with a ManualClock.
//  - Committed offsets live in an OffsetStore in Options::data_dir; an OffsetCommit is answered only
//    after its offsets are fsync'd. Commits are fenced by generation and member id; a commit with
//    generation -1 to a group without members is a standalone commit. Offsets of a group without members
//    expire after Options::offsets_retention_ms.
//  - Group membership is kept in memory only: after a restart the groups are empty (with their offsets),
//    and members get UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION and rejoin.
//
// Thread-safety: every method is safe to call from many threads at once. Each group has its own mutex
// (a map mutex guards the set of groups, taken before a group's and never while holding one). Callbacks
// never run under a lock of the coordinator: JoinGroup and SyncGroup callbacks run on the thread of
// whichever call completed them (the member's own call, another member's JoinGroup/SyncGroup/LeaveGroup/
// Heartbeat, Tick, or Shutdown); OffsetCommit callbacks run on the offset store's sync thread (or the
// caller's, for an immediate answer). Each callback runs exactly once. Callbacks must be short and must
// not block on the coordinator: post the answer to the connection's own executor.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "streams/groups/messages.h"
#include "streams/groups/offset_store.h"

namespace govern::streams::groups {

struct CoordinatorOptions {
  // What FindCoordinator answers: this broker.
  int32_t node_id = 0;
  std::string host = "localhost";
  int32_t port = 9092;
  // Directory of the offsets file (created if missing).
  std::string data_dir;
  // Kafka's group.min/max.session.timeout.ms.
  int32_t min_session_timeout_ms = 6000;
  int32_t max_session_timeout_ms = 1800000;
  // group.initial.rebalance.delay.ms: the first join round of an empty group waits this long for more.
  int32_t initial_rebalance_delay_ms = 3000;
  // group.max.size.
  int32_t max_group_size = 1000;
  // offsets.retention.ms, and how often Tick looks for expired offsets
  // (offsets.retention.check.interval.ms).
  int64_t offsets_retention_ms = 7LL * 24 * 3600 * 1000;
  int64_t offsets_retention_check_interval_ms = 600000;
  // offset.metadata.max.bytes: longer metadata gets OFFSET_METADATA_TOO_LARGE.
  int32_t max_metadata_bytes = 4096;
  // false: JoinGroup with a group.instance.id gets UNSUPPORTED_VERSION.
  bool allow_static_membership = true;
  OffsetStoreOptions store;
  // Whether a topic exists, asked as each commit is queued in the offsets' order (see
  // OffsetStore::TopicFilter): a commit racing the topic's deletion gets UNKNOWN_TOPIC_OR_PARTITION
  // instead of putting its offset back after the deletion dropped it. nullptr: every topic exists.
  std::function<bool(const std::string& topic)> topic_exists;
  const Clock* clock = nullptr;  // nullptr: Clock::Real()
  uint64_t random_seed = 0;      // for member ids; 0: from std::random_device
};

class GroupCoordinator {
 public:
  using JoinDone = std::function<void(JoinGroupResponse)>;
  using SyncDone = std::function<void(SyncGroupResponse)>;
  using CommitDone = std::function<void(OffsetCommitResponse)>;

  // Opens the offset store and creates an Empty group for every group that has offsets.
  static Result<std::unique_ptr<GroupCoordinator>> Open(CoordinatorOptions options);
  // Shuts down (see Shutdown) and waits for pending offset commits.
  ~GroupCoordinator();
  GroupCoordinator(const GroupCoordinator&) = delete;
  GroupCoordinator& operator=(const GroupCoordinator&) = delete;

  FindCoordinatorResponse FindCoordinator(const FindCoordinatorRequest& request) const;
  void JoinGroup(JoinGroupRequest request, JoinDone done);
  void SyncGroup(SyncGroupRequest request, SyncDone done);
  HeartbeatResponse Heartbeat(const HeartbeatRequest& request);
  LeaveGroupResponse LeaveGroup(const LeaveGroupRequest& request);
  void OffsetCommit(OffsetCommitRequest request, CommitDone done);
  OffsetFetchResponse OffsetFetch(const OffsetFetchRequest& request) const;
  DescribeGroupsResponse DescribeGroups(const DescribeGroupsRequest& request) const;
  ListGroupsResponse ListGroups(const ListGroupsRequest& request) const;

  // Fires every timer that is due at the clock's current time (join rounds, session and sync timeouts,
  // offset expiry). Returns the clock's monotonic time in nanoseconds at which the next timer is due
  // (INT64_MAX when none): the broker calls Tick again then, or simply every 100 ms or so.
  int64_t Tick();

  // Answers every waiting JoinGroup/SyncGroup with NOT_COORDINATOR; from then on every request gets
  // NOT_COORDINATOR. Idempotent.
  void Shutdown();

  // The topics were deleted: every group's committed offsets of them go (as Kafka does), durably, and
  // `done` runs once that is on disk (with the store's error if it failed). Commits queued before the
  // call are removed too.
  void DeleteTopicOffsets(std::vector<std::string> topics, std::function<void(Status)> done);

  // Waits until every offset commit queued so far is durable; the store's health.
  Status FlushOffsets();
  const OffsetStore& offsets() const;

  struct Impl;

 private:
  explicit GroupCoordinator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::streams::groups
