// GroupCoordinator tests: whole join/sync/heartbeat/leave conversations of 1-3 members against a
// ManualClock (timers fire only in Tick), fencing errors, offsets, and the durable offsets file.
#include "streams/groups/coordinator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>

#include "streams/groups/test_util.h"

namespace govern::streams::groups {
namespace {

using std::chrono::milliseconds;

constexpr int32_t kSession = 10000;
constexpr int32_t kRebalance = 30000;

template <typename T>
using Slot = std::shared_ptr<std::optional<T>>;

class CoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen() {
    c_.reset();
    CoordinatorOptions o = options_;
    o.data_dir = dir_.path();
    o.clock = &clock_;
    o.random_seed = 42;
    auto r = GroupCoordinator::Open(o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    c_ = std::move(*r);
  }

  static std::vector<JoinGroupProtocol> Protocols(std::initializer_list<std::string> names) {
    std::vector<JoinGroupProtocol> out;
    for (const auto& n : names) out.push_back({n, "meta-" + n});
    return out;
  }

  Slot<JoinGroupResponse> Join(const std::string& group, const std::string& member,
                               std::vector<JoinGroupProtocol> protocols = Protocols({"range"}),
                               int16_t version = 5, std::optional<std::string> instance = std::nullopt) {
    JoinGroupRequest r;
    r.version = version;
    r.group_id = group;
    r.session_timeout_ms = kSession;
    r.rebalance_timeout_ms = kRebalance;
    r.member_id = member;
    r.group_instance_id = std::move(instance);
    r.protocol_type = "consumer";
    r.protocols = std::move(protocols);
    r.client_id = "client";
    r.client_host = "/127.0.0.1";
    auto slot = std::make_shared<std::optional<JoinGroupResponse>>();
    c_->JoinGroup(r, [slot](JoinGroupResponse resp) {
      ASSERT_FALSE(slot->has_value()) << "join answered twice";
      *slot = std::move(resp);
    });
    return slot;
  }

  // The two-step first join of JoinGroup v4+: returns the member id the coordinator handed out.
  std::string NewMemberId(const std::string& group) {
    auto r = Join(group, "");
    EXPECT_TRUE(r->has_value());
    EXPECT_EQ((*r)->error, ErrorCode::kMemberIdRequired);
    EXPECT_FALSE((*r)->member_id.empty());
    return (*r)->member_id;
  }

  Slot<SyncGroupResponse> Sync(const std::string& group, const std::string& member, int32_t generation,
                               std::vector<SyncGroupAssignment> assignments = {}) {
    SyncGroupRequest r;
    r.group_id = group;
    r.member_id = member;
    r.generation_id = generation;
    r.assignments = std::move(assignments);
    auto slot = std::make_shared<std::optional<SyncGroupResponse>>();
    c_->SyncGroup(r, [slot](SyncGroupResponse resp) {
      ASSERT_FALSE(slot->has_value()) << "sync answered twice";
      *slot = std::move(resp);
    });
    return slot;
  }

  ErrorCode Heartbeat(const std::string& group, const std::string& member, int32_t generation,
                      std::optional<std::string> instance = std::nullopt) {
    HeartbeatRequest r;
    r.group_id = group;
    r.member_id = member;
    r.generation_id = generation;
    r.group_instance_id = std::move(instance);
    return c_->Heartbeat(r).error;
  }

  Slot<OffsetCommitResponse> Commit(const std::string& group, const std::string& member, int32_t generation,
                                    const std::string& topic, int32_t partition, int64_t offset,
                                    std::string metadata = "md") {
    OffsetCommitRequest r;
    r.group_id = group;
    r.member_id = member;
    r.generation_id = generation;
    OffsetCommitPartition p;
    p.partition_index = partition;
    p.committed_offset = offset;
    p.committed_leader_epoch = 7;
    p.committed_metadata = std::move(metadata);
    r.topics.push_back({topic, {p}});
    auto slot = std::make_shared<std::optional<OffsetCommitResponse>>();
    c_->OffsetCommit(r, [slot](OffsetCommitResponse resp) { *slot = std::move(resp); });
    EXPECT_TRUE(c_->FlushOffsets().ok());
    return slot;
  }
  static ErrorCode CommitError(const Slot<OffsetCommitResponse>& s) {
    EXPECT_TRUE(s->has_value());
    return (*s)->topics.at(0).partitions.at(0).error;
  }

  OffsetFetchPartition Fetch(const std::string& group, const std::string& topic, int32_t partition) {
    OffsetFetchRequest r;
    r.group_id = group;
    r.topics = std::vector<OffsetFetchTopic>{{topic, {partition}}};
    auto resp = c_->OffsetFetch(r);
    return resp.topics.at(0).partitions.at(0);
  }

  DescribedGroup Describe(const std::string& group) {
    DescribeGroupsRequest r;
    r.groups = {group};
    return c_->DescribeGroups(r).groups.at(0);
  }

  void Advance(int64_t ms) {
    clock_.Advance(milliseconds(ms));
    c_->Tick();
  }

  // Brings `n` members into a Stable group and returns their ids (the first is the leader) and the
  // generation in *generation.
  std::vector<std::string> StableGroup(const std::string& group, int n, int32_t* generation) {
    // Every member first learns its id; the join round then waits for all of them (pending members
    // count), so the group forms in one generation.
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) ids.push_back(NewMemberId(group));
    std::vector<Slot<JoinGroupResponse>> joins;
    for (const auto& id : ids) joins.push_back(Join(group, id));
    for (auto& j : joins) {
      EXPECT_TRUE(j->has_value());
      EXPECT_EQ((*j)->error, ErrorCode::kNone);
    }
    *generation = (*joins[0])->generation_id;
    std::vector<SyncGroupAssignment> assignments;
    for (const auto& id : ids) assignments.push_back({id, "assign-" + id});
    std::vector<Slot<SyncGroupResponse>> syncs;
    for (size_t i = 1; i < ids.size(); ++i) syncs.push_back(Sync(group, ids[i], *generation));
    syncs.push_back(Sync(group, ids[0], *generation, assignments));
    for (auto& s : syncs) {
      EXPECT_TRUE(s->has_value());
      EXPECT_EQ((*s)->error, ErrorCode::kNone);
    }
    return ids;
  }

  testing::TempDir dir_;
  ManualClock clock_;
  CoordinatorOptions options_ = [] {
    CoordinatorOptions o;
    o.initial_rebalance_delay_ms = 0;
    o.min_session_timeout_ms = 1000;
    return o;
  }();
  std::unique_ptr<GroupCoordinator> c_;
};

TEST_F(CoordinatorTest, SingleMemberJoinsSyncsAndHeartbeats) {
  std::string id = NewMemberId("g");
  EXPECT_EQ(id.rfind("client-", 0), 0u) << id;
  EXPECT_EQ(Describe("g").group_state, "Empty");  // a pending member is not a member yet

  auto j = Join("g", id);
  ASSERT_TRUE(j->has_value());
  EXPECT_EQ((*j)->error, ErrorCode::kNone);
  EXPECT_EQ((*j)->generation_id, 1);
  EXPECT_EQ((*j)->leader, id);
  EXPECT_EQ((*j)->member_id, id);
  EXPECT_EQ((*j)->protocol_name, "range");
  ASSERT_EQ((*j)->members.size(), 1u);
  EXPECT_EQ((*j)->members[0].metadata, "meta-range");
  EXPECT_EQ(Describe("g").group_state, "CompletingRebalance");

  EXPECT_EQ(Heartbeat("g", id, 1), ErrorCode::kNone);
  auto s = Sync("g", id, 1, {{id, "A"}});
  ASSERT_TRUE(s->has_value());
  EXPECT_EQ((*s)->error, ErrorCode::kNone);
  EXPECT_EQ((*s)->assignment, "A");
  EXPECT_EQ((*s)->protocol_name, "range");
  EXPECT_EQ(Heartbeat("g", id, 1), ErrorCode::kNone);

  auto d = Describe("g");
  EXPECT_EQ(d.group_state, "Stable");
  EXPECT_EQ(d.protocol_type, "consumer");
  EXPECT_EQ(d.protocol_data, "range");
  ASSERT_EQ(d.members.size(), 1u);
  EXPECT_EQ(d.members[0].member_assignment, "A");
  EXPECT_EQ(d.members[0].client_host, "/127.0.0.1");

  // A follower-style rejoin with the same protocols in Stable would answer at once; the leader's rejoin
  // starts a new generation.
  auto j2 = Join("g", id);
  ASSERT_TRUE(j2->has_value());
  EXPECT_EQ((*j2)->generation_id, 2);
}

TEST_F(CoordinatorTest, JoinV3WithoutMemberIdJoinsInOneStep) {
  auto j = Join("g", "", Protocols({"range"}), 3);
  ASSERT_TRUE(j->has_value());
  EXPECT_EQ((*j)->error, ErrorCode::kNone);
  EXPECT_EQ((*j)->generation_id, 1);
  EXPECT_EQ((*j)->leader, (*j)->member_id);
}

TEST_F(CoordinatorTest, ThreeMembersRebalanceWhenOneLeaves) {
  int32_t gen = 0;
  auto ids = StableGroup("g", 3, &gen);
  EXPECT_EQ(gen, 1);
  for (const auto& id : ids) EXPECT_EQ(Heartbeat("g", id, gen), ErrorCode::kNone);
  auto d = Describe("g");
  ASSERT_EQ(d.members.size(), 3u);
  for (const auto& m : d.members) EXPECT_EQ(m.member_assignment, "assign-" + m.member_id);

  LeaveGroupRequest leave;
  leave.version = 1;
  leave.group_id = "g";
  leave.member_id = ids[1];
  EXPECT_EQ(c_->LeaveGroup(leave).error, ErrorCode::kNone);
  EXPECT_EQ(Describe("g").group_state, "PreparingRebalance");

  // The others learn of it from their heartbeat and rejoin.
  EXPECT_EQ(Heartbeat("g", ids[0], gen), ErrorCode::kRebalanceInProgress);
  EXPECT_EQ(Heartbeat("g", ids[2], gen), ErrorCode::kRebalanceInProgress);
  EXPECT_EQ(Heartbeat("g", ids[1], gen), ErrorCode::kUnknownMemberId);
  auto j2 = Join("g", ids[2]);
  EXPECT_FALSE(j2->has_value());  // waits for the leader
  auto j0 = Join("g", ids[0]);
  ASSERT_TRUE(j0->has_value());
  ASSERT_TRUE(j2->has_value());
  EXPECT_EQ((*j0)->generation_id, gen + 1);
  EXPECT_EQ((*j2)->generation_id, gen + 1);
  EXPECT_EQ((*j0)->leader, ids[0]);
  EXPECT_EQ((*j0)->members.size(), 2u);
  EXPECT_TRUE((*j2)->members.empty());

  // The follower's sync waits for the leader's.
  auto s2 = Sync("g", ids[2], gen + 1);
  EXPECT_FALSE(s2->has_value());
  EXPECT_EQ(Heartbeat("g", ids[2], gen + 1), ErrorCode::kNone);
  auto s0 = Sync("g", ids[0], gen + 1, {{ids[0], "x"}, {ids[2], "y"}, {ids[1], "gone"}});
  ASSERT_TRUE(s2->has_value());
  EXPECT_EQ((*s0)->assignment, "x");
  EXPECT_EQ((*s2)->assignment, "y");
  EXPECT_EQ(Describe("g").group_state, "Stable");

  // Both leave in one v3 request, with one unknown member beside them.
  LeaveGroupRequest batch;
  batch.version = 3;
  batch.group_id = "g";
  batch.members = {{ids[0], std::nullopt}, {"nobody", std::nullopt}, {ids[2], std::nullopt}};
  auto lr = c_->LeaveGroup(batch);
  EXPECT_EQ(lr.error, ErrorCode::kNone);
  ASSERT_EQ(lr.members.size(), 3u);
  EXPECT_EQ(lr.members[0].error, ErrorCode::kNone);
  EXPECT_EQ(lr.members[1].error, ErrorCode::kUnknownMemberId);
  EXPECT_EQ(lr.members[2].error, ErrorCode::kNone);
  EXPECT_EQ(Describe("g").group_state, "Empty");
  EXPECT_EQ(Describe("g").protocol_type, "consumer");
  EXPECT_EQ(Describe("g").members.size(), 0u);
}

TEST_F(CoordinatorTest, SessionTimeoutRemovesSilentMember) {
  int32_t gen = 0;
  auto ids = StableGroup("g", 2, &gen);
  // ids[0] heartbeats every 4 s; ids[1] stays silent past its 10 s session.
  for (int i = 0; i < 2; ++i) {
    Advance(4000);
    EXPECT_EQ(Heartbeat("g", ids[0], gen), ErrorCode::kNone);
  }
  EXPECT_EQ(Describe("g").group_state, "Stable");
  Advance(4000);  // 12 s since ids[1] was last heard of
  EXPECT_EQ(Describe("g").group_state, "PreparingRebalance");
  EXPECT_EQ(Heartbeat("g", ids[1], gen), ErrorCode::kUnknownMemberId);
  EXPECT_EQ(Heartbeat("g", ids[0], gen), ErrorCode::kRebalanceInProgress);
  auto j = Join("g", ids[0]);
  ASSERT_TRUE(j->has_value());
  EXPECT_EQ((*j)->generation_id, gen + 1);
  EXPECT_EQ((*j)->members.size(), 1u);
}

TEST_F(CoordinatorTest, RebalanceTimeoutDropsMemberThatDoesNotRejoin) {
  int32_t gen = 0;
  auto ids = StableGroup("g", 2, &gen);
  std::string newcomer = NewMemberId("g");
  auto jn = Join("g", newcomer);
  EXPECT_FALSE(jn->has_value());
  auto j0 = Join("g", ids[0]);
  EXPECT_FALSE(j0->has_value());  // ids[1] has not rejoined
  // ids[1] keeps heartbeating (so its session does not end) but never rejoins.
  for (int t = 0; t < kRebalance - 5000; t += 5000) {
    Advance(5000);
    EXPECT_EQ(Heartbeat("g", ids[1], gen), ErrorCode::kRebalanceInProgress);
    EXPECT_FALSE(j0->has_value());
  }
  Advance(5000);
  ASSERT_TRUE(j0->has_value());
  ASSERT_TRUE(jn->has_value());
  EXPECT_EQ((*j0)->generation_id, gen + 1);
  EXPECT_EQ((*j0)->members.size(), 2u);
  EXPECT_EQ(Heartbeat("g", ids[1], gen), ErrorCode::kUnknownMemberId);
  auto late = Join("g", ids[1]);
  ASSERT_TRUE(late->has_value());
  EXPECT_EQ((*late)->error, ErrorCode::kUnknownMemberId);
}

TEST_F(CoordinatorTest, MemberThatNeverSyncsIsRemovedAfterRebalanceTimeout) {
  std::string a = NewMemberId("g");
  std::string b = NewMemberId("g");
  auto ja = Join("g", a);
  auto jb = Join("g", b);
  ASSERT_TRUE(ja->has_value() && jb->has_value());
  int32_t gen = (*ja)->generation_id;
  auto sa = Sync("g", a, gen, {{a, "1"}, {b, "2"}});
  ASSERT_TRUE(sa->has_value());
  // b never sends SyncGroup but heartbeats.
  for (int t = 0; t < kRebalance; t += 5000) {
    EXPECT_EQ(Heartbeat("g", a, gen), ErrorCode::kNone);
    EXPECT_EQ(Heartbeat("g", b, gen), ErrorCode::kNone);
    EXPECT_EQ(Describe("g").group_state, "Stable");
    Advance(5000);
  }
  EXPECT_EQ(Describe("g").group_state, "PreparingRebalance");
  EXPECT_EQ(Heartbeat("g", b, gen), ErrorCode::kUnknownMemberId);
}

TEST_F(CoordinatorTest, FencingErrors) {
  int32_t gen = 0;
  auto ids = StableGroup("g", 1, &gen);
  EXPECT_EQ(Heartbeat("g", ids[0], gen + 1), ErrorCode::kIllegalGeneration);
  EXPECT_EQ(Heartbeat("g", "stranger", gen), ErrorCode::kUnknownMemberId);
  EXPECT_EQ(Heartbeat("nogroup", ids[0], gen), ErrorCode::kUnknownMemberId);
  EXPECT_EQ(Heartbeat("", ids[0], gen), ErrorCode::kInvalidGroupId);
  EXPECT_EQ((*Sync("g", ids[0], gen - 1))->error, ErrorCode::kIllegalGeneration);
  EXPECT_EQ((*Sync("g", "stranger", gen))->error, ErrorCode::kUnknownMemberId);
  EXPECT_EQ(CommitError(Commit("g", ids[0], gen - 1, "t", 0, 5)), ErrorCode::kIllegalGeneration);
  EXPECT_EQ(CommitError(Commit("g", "stranger", gen, "t", 0, 5)), ErrorCode::kUnknownMemberId);
  EXPECT_EQ(CommitError(Commit("g", "", -1, "t", 0, 5)), ErrorCode::kUnknownMemberId);  // group has members
  EXPECT_EQ(CommitError(Commit("nogroup", "m", 3, "t", 0, 5)), ErrorCode::kIllegalGeneration);

  // A known member with an unknown group, a join to a group that does not exist.
  auto j = Join("other", "made-up");
  ASSERT_TRUE(j->has_value());
  EXPECT_EQ((*j)->error, ErrorCode::kUnknownMemberId);

  // During a rebalance: sync gets REBALANCE_IN_PROGRESS; a commit of the current generation still counts.
  std::string b = NewMemberId("g");
  auto jb = Join("g", b);
  EXPECT_EQ((*Sync("g", ids[0], gen))->error, ErrorCode::kRebalanceInProgress);
  EXPECT_EQ(CommitError(Commit("g", ids[0], gen, "t", 0, 9)), ErrorCode::kNone);
  auto j0 = Join("g", ids[0]);
  ASSERT_TRUE(j0->has_value());
  // Completing the rebalance: commits wait for the assignment.
  EXPECT_EQ(CommitError(Commit("g", ids[0], gen + 1, "t", 0, 10)), ErrorCode::kRebalanceInProgress);

  // Bad timeouts.
  JoinGroupRequest bad;
  bad.group_id = "g";
  bad.session_timeout_ms = 10;
  bad.protocol_type = "consumer";
  bad.protocols = Protocols({"range"});
  std::optional<JoinGroupResponse> r;
  c_->JoinGroup(bad, [&](JoinGroupResponse x) { r = x; });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->error, ErrorCode::kInvalidSessionTimeout);
}

TEST_F(CoordinatorTest, ProtocolIsChosenByVoteAmongCommonOnes) {
  std::string a = NewMemberId("g"), b = NewMemberId("g"), c = NewMemberId("g");
  // Both are common; "range" comes first in the earliest member's list, but "roundrobin" has more votes.
  auto ja = Join("g", a, Protocols({"range", "roundrobin"}));
  auto jb = Join("g", b, Protocols({"roundrobin", "range"}));
  auto jc = Join("g", c, Protocols({"roundrobin", "range", "sticky"}));
  ASSERT_TRUE(ja->has_value() && jb->has_value() && jc->has_value());
  EXPECT_EQ((*ja)->protocol_name, "roundrobin");
  EXPECT_EQ((*ja)->members.size(), 3u);
  for (const auto& m : (*ja)->members) EXPECT_EQ(m.metadata, "meta-roundrobin");

  auto jx = Join("g", "", Protocols({"sticky"}));
  ASSERT_TRUE(jx->has_value());
  EXPECT_EQ((*jx)->error, ErrorCode::kInconsistentGroupProtocol);
  JoinGroupRequest other;
  other.group_id = "g";
  other.session_timeout_ms = kSession;
  other.protocol_type = "connect";
  other.protocols = Protocols({"roundrobin"});
  std::optional<JoinGroupResponse> r;
  c_->JoinGroup(other, [&](JoinGroupResponse x) { r = x; });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->error, ErrorCode::kInconsistentGroupProtocol);
}

TEST_F(CoordinatorTest, InitialRebalanceDelayWaitsForMoreMembers) {
  options_.initial_rebalance_delay_ms = 3000;
  Reopen();
  std::string a = NewMemberId("g");
  auto ja = Join("g", a);
  EXPECT_FALSE(ja->has_value());
  Advance(2000);
  std::string b = NewMemberId("g");
  auto jb = Join("g", b);
  EXPECT_FALSE(jb->has_value());
  Advance(1000);  // the first delay ends, but a member arrived during it: one more delay
  EXPECT_FALSE(ja->has_value());
  Advance(3000);
  ASSERT_TRUE(ja->has_value());
  ASSERT_TRUE(jb->has_value());
  EXPECT_EQ((*ja)->generation_id, 1);
  EXPECT_EQ((*ja)->members.size(), 2u);
}

TEST_F(CoordinatorTest, PendingMemberThatNeverJoinsExpires) {
  int32_t gen = 0;
  auto ids = StableGroup("g", 1, &gen);
  std::string ghost = NewMemberId("g");  // never joins with its id
  auto j0 = Join("g", ids[0]);           // leader rejoin: a rebalance that waits for the pending member
  EXPECT_FALSE(j0->has_value());
  Advance(kSession);
  ASSERT_TRUE(j0->has_value());
  EXPECT_EQ((*j0)->members.size(), 1u);
  auto late = Join("g", ghost);
  ASSERT_TRUE(late->has_value());
  EXPECT_EQ((*late)->error, ErrorCode::kUnknownMemberId);
}

TEST_F(CoordinatorTest, OffsetsCommitFetchAndSurviveRestart) {
  int32_t gen = 0;
  auto ids = StableGroup("g", 1, &gen);
  EXPECT_EQ(CommitError(Commit("g", ids[0], gen, "orders", 3, 1234, "hello")), ErrorCode::kNone);
  EXPECT_EQ(CommitError(Commit("g", ids[0], gen, "orders", 3, 1240, "again")), ErrorCode::kNone);
  EXPECT_EQ(CommitError(Commit("g", ids[0], gen, "audit", 0, 7)), ErrorCode::kNone);
  EXPECT_EQ(CommitError(Commit("g", ids[0], gen, "orders", 4, 1, std::string(5000, 'x'))),
            ErrorCode::kOffsetMetadataTooLarge);

  auto p = Fetch("g", "orders", 3);
  EXPECT_EQ(p.committed_offset, 1240);
  EXPECT_EQ(p.committed_leader_epoch, 7);
  EXPECT_EQ(p.metadata, "again");
  EXPECT_EQ(Fetch("g", "orders", 4).committed_offset, -1);
  EXPECT_EQ(Fetch("nogroup", "orders", 3).committed_offset, -1);

  OffsetFetchRequest all;
  all.group_id = "g";
  auto resp = c_->OffsetFetch(all);
  ASSERT_EQ(resp.topics.size(), 2u);
  EXPECT_EQ(resp.topics[0].name, "audit");
  EXPECT_EQ(resp.topics[1].name, "orders");
  ASSERT_EQ(resp.topics[1].partitions.size(), 1u);

  // Standalone commits (generation -1) to a group nobody joined.
  EXPECT_EQ(CommitError(Commit("simple", "", -1, "t", 0, 99)), ErrorCode::kNone);

  Reopen();
  EXPECT_EQ(Fetch("g", "orders", 3).committed_offset, 1240);
  EXPECT_EQ(Fetch("g", "orders", 3).metadata, "again");
  EXPECT_EQ(Fetch("simple", "t", 0).committed_offset, 99);
  // Membership is not kept across a restart: the member must rejoin.
  EXPECT_EQ(Heartbeat("g", ids[0], gen), ErrorCode::kUnknownMemberId);
  auto lg = c_->ListGroups({});
  ASSERT_EQ(lg.groups.size(), 2u);
  EXPECT_EQ(lg.groups[0].group_id, "g");
  EXPECT_EQ(lg.groups[0].group_state, "Empty");
}

TEST_F(CoordinatorTest, OffsetsOfEmptyGroupsExpireAfterRetention) {
  options_.offsets_retention_ms = 60'000;
  options_.offsets_retention_check_interval_ms = 10'000;
  Reopen();
  EXPECT_EQ(CommitError(Commit("simple", "", -1, "t", 0, 1)), ErrorCode::kNone);
  int32_t gen = 0;
  auto ids = StableGroup("live", 1, &gen);
  EXPECT_EQ(CommitError(Commit("live", ids[0], gen, "t", 0, 2)), ErrorCode::kNone);
  auto wait = [&](int seconds) {  // the live member heartbeats every 5 s meanwhile
    for (int i = 0; i < seconds / 5; ++i) {
      Advance(5000);
      EXPECT_EQ(Heartbeat("live", ids[0], gen), ErrorCode::kNone);
    }
  };
  wait(50);
  ASSERT_TRUE(c_->FlushOffsets().ok());
  EXPECT_EQ(Fetch("simple", "t", 0).committed_offset, 1);  // 50 s old
  wait(10);
  ASSERT_TRUE(c_->FlushOffsets().ok());
  EXPECT_EQ(Fetch("simple", "t", 0).committed_offset, -1);
  EXPECT_EQ(Fetch("live", "t", 0).committed_offset, 2);  // a group with members keeps its offsets
  wait(10);  // the next check removes the group that has neither members nor offsets
  ListGroupsRequest lr;
  auto lg = c_->ListGroups(lr);
  ASSERT_EQ(lg.groups.size(), 1u);
  EXPECT_EQ(lg.groups[0].group_id, "live");

  // Once the live group is empty, retention counts from when it became empty.
  LeaveGroupRequest leave;
  leave.version = 0;
  leave.group_id = "live";
  leave.member_id = ids[0];
  EXPECT_EQ(c_->LeaveGroup(leave).error, ErrorCode::kNone);
  Advance(50'000);
  ASSERT_TRUE(c_->FlushOffsets().ok());
  EXPECT_EQ(Fetch("live", "t", 0).committed_offset, 2);
  Advance(20'000);
  ASSERT_TRUE(c_->FlushOffsets().ok());
  EXPECT_EQ(Fetch("live", "t", 0).committed_offset, -1);
}

TEST_F(CoordinatorTest, StaticMemberRestartTakesOverWithoutRebalance) {
  auto j = Join("g", "", Protocols({"range"}), 5, "instance-1");
  ASSERT_TRUE(j->has_value());
  EXPECT_EQ((*j)->error, ErrorCode::kNone);  // static members skip MEMBER_ID_REQUIRED
  std::string old_id = (*j)->member_id;
  int32_t gen = (*j)->generation_id;
  ASSERT_EQ((*Sync("g", old_id, gen, {{old_id, "A"}}))->error, ErrorCode::kNone);

  // The process restarts and joins again without its member id.
  auto j2 = Join("g", "", Protocols({"range"}), 5, "instance-1");
  ASSERT_TRUE(j2->has_value());
  EXPECT_EQ((*j2)->error, ErrorCode::kNone);
  EXPECT_NE((*j2)->member_id, old_id);
  EXPECT_EQ((*j2)->generation_id, gen);  // no rebalance
  EXPECT_EQ(Describe("g").group_state, "Stable");
  EXPECT_EQ((*Sync("g", (*j2)->member_id, gen))->assignment, "A");
  EXPECT_EQ(Heartbeat("g", old_id, gen, "instance-1"), ErrorCode::kFencedInstanceId);
  EXPECT_EQ(Heartbeat("g", (*j2)->member_id, gen, "instance-1"), ErrorCode::kNone);

  // v3 leave by instance id alone.
  LeaveGroupRequest leave;
  leave.version = 3;
  leave.group_id = "g";
  leave.members = {{"", "instance-1"}};
  auto lr = c_->LeaveGroup(leave);
  EXPECT_EQ(lr.members.at(0).error, ErrorCode::kNone);
  EXPECT_EQ(Describe("g").group_state, "Empty");

  options_.allow_static_membership = false;
  Reopen();
  auto refused = Join("g", "", Protocols({"range"}), 5, "instance-1");
  ASSERT_TRUE(refused->has_value());
  EXPECT_EQ((*refused)->error, ErrorCode::kUnsupportedVersion);
}

TEST_F(CoordinatorTest, CallbacksRunOutsideLocksAndMayCallBack) {
  std::string a = NewMemberId("g");
  JoinGroupRequest r;
  r.group_id = "g";
  r.member_id = a;
  r.session_timeout_ms = kSession;
  r.protocol_type = "consumer";
  r.protocols = Protocols({"range"});
  bool synced = false;
  c_->JoinGroup(r, [&](JoinGroupResponse resp) {
    // Re-entering the coordinator from a callback must not deadlock.
    EXPECT_EQ(Heartbeat("g", a, resp.generation_id), ErrorCode::kNone);
    SyncGroupRequest s;
    s.group_id = "g";
    s.member_id = a;
    s.generation_id = resp.generation_id;
    s.assignments = {{a, "z"}};
    c_->SyncGroup(s, [&](SyncGroupResponse sr) {
      EXPECT_EQ(sr.assignment, "z");
      synced = true;
    });
  });
  EXPECT_TRUE(synced);
}

TEST_F(CoordinatorTest, ShutdownAnswersWaitingCalls) {
  int32_t gen = 0;
  auto ids = StableGroup("g", 1, &gen);
  std::string b = NewMemberId("g");
  auto jb = Join("g", b);
  EXPECT_FALSE(jb->has_value());
  c_->Shutdown();
  ASSERT_TRUE(jb->has_value());
  EXPECT_EQ((*jb)->error, ErrorCode::kNotCoordinator);
  EXPECT_EQ(Heartbeat("g", ids[0], gen), ErrorCode::kNotCoordinator);
  FindCoordinatorRequest f;
  f.key = "g";
  EXPECT_EQ(c_->FindCoordinator(f).result.error, ErrorCode::kCoordinatorNotAvailable);
}

TEST_F(CoordinatorTest, FindCoordinatorNamesThisBroker) {
  options_.node_id = 3;
  options_.host = "broker.example";
  options_.port = 19092;
  Reopen();
  FindCoordinatorRequest f;
  f.version = 2;
  f.key = "g";
  auto r = c_->FindCoordinator(f);
  EXPECT_EQ(r.result.error, ErrorCode::kNone);
  EXPECT_EQ(r.result.node_id, 3);
  EXPECT_EQ(r.result.host, "broker.example");
  EXPECT_EQ(r.result.port, 19092);
  f.version = 4;
  f.coordinator_keys = {"a", "b"};
  r = c_->FindCoordinator(f);
  ASSERT_EQ(r.coordinators.size(), 2u);
  EXPECT_EQ(r.coordinators[1].key, "b");
  EXPECT_EQ(r.coordinators[1].port, 19092);
  f.key_type = 1;
  EXPECT_EQ(c_->FindCoordinator(f).coordinators[0].error, ErrorCode::kInvalidRequest);
}

TEST_F(CoordinatorTest, ListGroupsFiltersByState) {
  int32_t gen = 0;
  StableGroup("b-stable", 1, &gen);
  EXPECT_EQ(CommitError(Commit("a-simple", "", -1, "t", 0, 1)), ErrorCode::kNone);
  ListGroupsRequest r;
  r.states_filter = {"stable"};
  auto lg = c_->ListGroups(r);
  ASSERT_EQ(lg.groups.size(), 1u);
  EXPECT_EQ(lg.groups[0].group_id, "b-stable");
  EXPECT_EQ(lg.groups[0].protocol_type, "consumer");
  r.states_filter.clear();
  EXPECT_EQ(c_->ListGroups(r).groups.size(), 2u);
  EXPECT_EQ(Describe("missing").group_state, "Dead");
  EXPECT_EQ(Describe("missing").error, ErrorCode::kNone);
}

TEST_F(CoordinatorTest, TickReportsNextDeadline) {
  int32_t gen = 0;
  StableGroup("g", 1, &gen);
  int64_t next = c_->Tick();
  EXPECT_EQ(next, clock_.MonotonicNanos() + int64_t{kSession} * 1'000'000);
}

}  // namespace
}  // namespace govern::streams::groups
