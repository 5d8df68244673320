// The group APIs over real sockets with hand-built frames: a member joins (MEMBER_ID_REQUIRED, then a
// generation), syncs, heartbeats, commits and fetches offsets, shows up in DescribeGroups and ListGroups,
// and leaves; a request pipelined behind a waiting JoinGroup is answered after it, in order; offsets
// survive a restart; a malformed body closes only its connection; every advertised version decodes; with
// an Authorizer, groups and topics the principal may not use are refused in each API's error fields.
#include "streams/group_api.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <thread>
#include <tuple>

#include "streams/security.h"
#include "streams/wire.h"

namespace govern::streams {
namespace {

namespace fs = std::filesystem;

class Client {
 public:
  explicit Client(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    timeval tv{20, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Client() { ::close(fd_); }
  void Send(int16_t key, int16_t version, int32_t corr, std::string_view body) {
    Writer w;
    w.Int32(0);
    w.Int16(key);
    w.Int16(version);
    w.Int32(corr);
    w.NullableString("gtest");
    w.Raw(body);
    w.PatchInt32(0, static_cast<int32_t>(w.size() - 4));
    ASSERT_EQ(::send(fd_, w.str().data(), w.size(), MSG_NOSIGNAL), static_cast<ssize_t>(w.size()));
  }
  // The next response body after the correlation id (checked), or nullopt when closed.
  std::optional<std::string> Receive(int32_t corr) {
    char size[4];
    if (!ReadAll(size, 4)) return std::nullopt;
    std::string body(LoadBe32(size), '\0');
    if (!ReadAll(body.data(), body.size())) return std::nullopt;
    EXPECT_EQ(static_cast<int32_t>(LoadBe32(body.data())), corr);
    return body.substr(4);
  }

 private:
  bool ReadAll(char* p, size_t n) {
    while (n > 0) {
      ssize_t r = ::recv(fd_, p, n, 0);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
  int fd_;
};

std::string JoinBody(std::string_view group, std::string_view member) {
  Writer w;
  w.String(group);
  w.Int32(10000);  // session
  w.Int32(10000);  // rebalance
  w.String(member);
  w.NullableString(std::nullopt);  // group instance id
  w.String("consumer");
  w.ArrayCount(1);
  w.String("range");
  w.NullableBytes("sub");
  return w.str();
}

struct JoinResult {
  int16_t error;
  int32_t generation;
  std::string leader, member;
  int32_t members;
};
JoinResult ParseJoin(std::string_view body) {
  Reader r(body);
  r.Int32();
  JoinResult j;
  j.error = r.Int16();
  j.generation = r.Int32();
  r.String();
  j.leader = std::string(r.String());
  j.member = std::string(r.String());
  j.members = r.ArrayCount();
  for (int i = 0; i < j.members; i++) {
    r.String();
    r.NullableString();
    r.NullableBytes();
  }
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.remaining(), 0u);
  return j;
}

class GroupApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("group-api-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    StartBroker();
  }
  void TearDown() override {
    StopBroker();
    fs::remove_all(dir_);
  }
  void StartBroker() {
    BrokerOptions o;
    o.listen_port = 0;
    o.data_dir = dir_.string();
    o.security = security_;
    broker_ = std::make_unique<Broker>(o);
    groups::CoordinatorOptions g;
    g.initial_rebalance_delay_ms = 0;
    auto api = GroupApi::Attach(*broker_, g);
    ASSERT_TRUE(api.ok()) << api.status().ToString();
    api_ = std::move(*api);
    ASSERT_TRUE(broker_->Start().ok());
    // The topics the tests commit to (OffsetCommit answers UNKNOWN_TOPIC_OR_PARTITION for others).
    for (const char* t : {"t", "u"}) {
      if (!broker_->Partition(t, 0)) {
        ASSERT_TRUE(broker_->CreateTopic(t, 1).ok());
      }
    }
  }
  void StopBroker() {
    if (api_) api_->Shutdown();
    if (broker_) broker_->Stop();
    api_.reset();
    broker_.reset();
  }
  // Joins a one-member group: first answer MEMBER_ID_REQUIRED, then generation 1.
  std::string Join(Client& c, std::string_view group) {
    c.Send(api::kJoinGroup, 5, 1, JoinBody(group, ""));
    auto first = ParseJoin(*c.Receive(1));
    EXPECT_EQ(first.error, 79);
    c.Send(api::kJoinGroup, 5, 2, JoinBody(group, first.member));
    auto second = ParseJoin(*c.Receive(2));
    EXPECT_EQ(second.error, 0);
    EXPECT_EQ(second.leader, first.member);
    EXPECT_EQ(second.members, 1);
    EXPECT_EQ(second.generation, 1);
    return second.member;
  }
  // Waits (bounded) until the coordinator shows `group` in `state`: another connection's request has been
  // served.
  void WaitForState(const std::string& group, const std::string& state) {
    for (int i = 0; i < 2000; i++) {
      groups::DescribeGroupsRequest q;
      q.groups = {group};
      if (api_->coordinator().DescribeGroups(q).groups[0].group_state == state) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    FAIL() << group << " never reached " << state;
  }
  std::string CommitBody(std::string_view group, int32_t gen, std::string_view member, int64_t offset) {
    Writer w;
    w.String(group);
    w.Int32(gen);
    w.String(member);
    w.NullableString(std::nullopt);
    w.ArrayCount(1);
    w.String("t");
    w.ArrayCount(1);
    w.Int32(0);
    w.Int64(offset);
    w.Int32(-1);
    w.NullableString("meta");
    return w.str();
  }
  int64_t FetchOffset(Client& c, std::string_view group, int32_t corr) {
    Writer w;
    w.String(group);
    w.ArrayCount(1);
    w.String("t");
    w.ArrayCount(1);
    w.Int32(0);
    c.Send(api::kOffsetFetch, 5, corr, w.str());
    auto body = c.Receive(corr);
    EXPECT_TRUE(body);
    Reader r(*body);
    r.Int32();
    EXPECT_EQ(r.ArrayCount(), 1);
    EXPECT_EQ(r.String(), "t");
    EXPECT_EQ(r.ArrayCount(), 1);
    EXPECT_EQ(r.Int32(), 0);
    int64_t off = r.Int64();
    r.Int32();
    r.NullableString();
    EXPECT_EQ(r.Int16(), 0);
    EXPECT_EQ(r.Int16(), 0);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.remaining(), 0u);
    return off;
  }

  fs::path dir_;
  std::shared_ptr<const Security> security_;  // set before StartBroker; null: no ACLs
  std::unique_ptr<Broker> broker_;
  std::unique_ptr<GroupApi> api_;
};

TEST_F(GroupApiTest, OneMemberLifecycle) {
  Client c(broker_->port());
  {
    Writer w;
    w.String("g1");
    w.Int8(0);
    c.Send(api::kFindCoordinator, 2, 10, w.str());
    auto body = c.Receive(10);
    ASSERT_TRUE(body);
    Reader r(*body);
    r.Int32();
    EXPECT_EQ(r.Int16(), 0);
    r.NullableString();
    EXPECT_EQ(r.Int32(), 0);
    EXPECT_EQ(r.String(), "127.0.0.1");
    EXPECT_EQ(r.Int32(), broker_->port());
    EXPECT_EQ(r.remaining(), 0u);
  }
  std::string member = Join(c, "g1");
  {
    Writer w;
    w.String("g1");
    w.Int32(1);
    w.String(member);
    w.NullableString(std::nullopt);
    w.ArrayCount(1);
    w.String(member);
    w.NullableBytes("assignment-bytes");
    c.Send(api::kSyncGroup, 3, 3, w.str());
    auto body = c.Receive(3);
    ASSERT_TRUE(body);
    Reader r(*body);
    r.Int32();
    EXPECT_EQ(r.Int16(), 0);
    EXPECT_EQ(r.NullableBytes(), "assignment-bytes");
    EXPECT_EQ(r.remaining(), 0u);
  }
  {
    Writer w;
    w.String("g1");
    w.Int32(1);
    w.String(member);
    w.NullableString(std::nullopt);
    c.Send(api::kHeartbeat, 3, 4, w.str());
    auto body = c.Receive(4);
    ASSERT_TRUE(body);
    Reader r(*body);
    r.Int32();
    EXPECT_EQ(r.Int16(), 0);
  }
  c.Send(api::kOffsetCommit, 7, 5, CommitBody("g1", 1, member, 42));
  {
    auto body = c.Receive(5);
    ASSERT_TRUE(body);
    Reader r(*body);
    r.Int32();
    EXPECT_EQ(r.ArrayCount(), 1);
    EXPECT_EQ(r.String(), "t");
    EXPECT_EQ(r.ArrayCount(), 1);
    EXPECT_EQ(r.Int32(), 0);
    EXPECT_EQ(r.Int16(), 0);
  }
  // A commit with a wrong generation is fenced.
  c.Send(api::kOffsetCommit, 7, 6, CommitBody("g1", 7, member, 43));
  {
    auto body = c.Receive(6);
    ASSERT_TRUE(body);
    Reader r(*body);
    r.Int32();
    r.ArrayCount();
    r.String();
    r.ArrayCount();
    r.Int32();
    EXPECT_EQ(r.Int16(), 22);
  }
  EXPECT_EQ(FetchOffset(c, "g1", 7), 42);
  {
    Writer w;
    w.ArrayCount(1);
    w.String("g1");
    w.Bool(false);
    c.Send(api::kDescribeGroups, 4, 8, w.str());
    auto body = c.Receive(8);
    ASSERT_TRUE(body);
    Reader r(*body);
    r.Int32();
    EXPECT_EQ(r.ArrayCount(), 1);
    EXPECT_EQ(r.Int16(), 0);
    EXPECT_EQ(r.String(), "g1");
    EXPECT_EQ(r.String(), "Stable");
    EXPECT_EQ(r.String(), "consumer");
    EXPECT_EQ(r.String(), "range");
    EXPECT_EQ(r.ArrayCount(), 1);
    EXPECT_EQ(r.String(), member);
    r.NullableString();
    EXPECT_EQ(r.String(), "gtest");
    EXPECT_EQ(r.String(), "/127.0.0.1");
    EXPECT_EQ(r.NullableBytes(), "sub");
    EXPECT_EQ(r.NullableBytes(), "assignment-bytes");
    EXPECT_EQ(r.Int32(), INT32_MIN);
    EXPECT_EQ(r.remaining(), 0u);
  }
  {
    c.Send(api::kListGroups, 2, 9, "");
    auto body = c.Receive(9);
    ASSERT_TRUE(body);
    Reader r(*body);
    r.Int32();
    EXPECT_EQ(r.Int16(), 0);
    EXPECT_EQ(r.ArrayCount(), 1);
    EXPECT_EQ(r.String(), "g1");
    EXPECT_EQ(r.String(), "consumer");
    EXPECT_EQ(r.remaining(), 0u);
  }
  {
    Writer w;
    w.String("g1");
    w.ArrayCount(1);
    w.String(member);
    w.NullableString(std::nullopt);
    c.Send(api::kLeaveGroup, 3, 11, w.str());
    auto body = c.Receive(11);
    ASSERT_TRUE(body);
    Reader r(*body);
    r.Int32();
    EXPECT_EQ(r.Int16(), 0);
    EXPECT_EQ(r.ArrayCount(), 1);
    EXPECT_EQ(r.String(), member);
    r.NullableString();
    EXPECT_EQ(r.Int16(), 0);
  }
  // Offsets outlive the broker.
  StopBroker();
  StartBroker();
  Client c2(broker_->port());
  EXPECT_EQ(FetchOffset(c2, "g1", 1), 42);
}

// DeleteTopics removes every group's committed offsets of the deleted topic (as Kafka does), durably:
// gone before the answer, still gone after a restart and when the topic is created again; other
// topics' offsets stay.
TEST_F(GroupApiTest, DeleteTopicsDropsCommittedOffsets) {
  ASSERT_TRUE(broker_->CreateTopic("keep", 1).ok());
  auto commit = [&](const std::string& group, const std::string& topic, int32_t partition, int64_t offset) {
    groups::OffsetCommitRequest q;
    q.group_id = group;
    q.generation_id = -1;  // standalone
    q.topics = {{topic, {{partition, offset}}}};
    std::promise<groups::OffsetCommitResponse> done;
    api_->coordinator().OffsetCommit(q, [&done](groups::OffsetCommitResponse r) { done.set_value(r); });
    auto r = done.get_future().get();
    ASSERT_EQ(r.topics.size(), 1u);
    EXPECT_EQ(r.topics[0].partitions[0].error, groups::ErrorCode::kNone);
  };
  commit("g1", "t", 0, 11);
  commit("g1", "t", 1, 12);
  commit("g1", "keep", 0, 13);
  commit("g2", "t", 0, 21);
  Client c(broker_->port());
  EXPECT_EQ(FetchOffset(c, "g1", 1), 11);
  EXPECT_EQ(FetchOffset(c, "g2", 2), 21);

  Writer w;
  w.ArrayCount(1);
  w.String("t");
  w.Int32(5000);
  c.Send(20, 1, 3, w.str());  // DeleteTopics v1
  auto body = c.Receive(3);
  ASSERT_TRUE(body);
  Reader r(*body);
  r.Int32();
  ASSERT_EQ(r.ArrayCount(), 1);
  EXPECT_EQ(r.String(), "t");
  EXPECT_EQ(r.Int16(), 0);
  // Answered: the offsets are gone, from every group; g2 had nothing else and is left without offsets.
  EXPECT_EQ(FetchOffset(c, "g1", 4), -1);
  EXPECT_EQ(FetchOffset(c, "g2", 5), -1);
  EXPECT_FALSE(api_->coordinator().offsets().Get("g1", {"t", 1}).has_value());
  EXPECT_FALSE(api_->coordinator().offsets().HasOffsets("g2"));
  ASSERT_TRUE(api_->coordinator().offsets().Get("g1", {"keep", 0}).has_value());
  // A commit to the deleted topic is refused with UNKNOWN_TOPIC_OR_PARTITION and stores nothing.
  c.Send(api::kOffsetCommit, 7, 6, CommitBody("g2", -1, "", 99));
  auto refused = c.Receive(6);
  ASSERT_TRUE(refused);
  Reader rr(*refused);
  rr.Int32();
  ASSERT_EQ(rr.ArrayCount(), 1);
  EXPECT_EQ(rr.String(), "t");
  ASSERT_EQ(rr.ArrayCount(), 1);
  EXPECT_EQ(rr.Int32(), 0);
  EXPECT_EQ(rr.Int16(), 3);
  EXPECT_FALSE(api_->coordinator().offsets().HasOffsets("g2"));
  // Durably: after a restart too (StartBroker creates "t" again: a topic of the same name starts without
  // the old offsets).
  StopBroker();
  StartBroker();
  Client c2(broker_->port());
  EXPECT_EQ(FetchOffset(c2, "g1", 1), -1);
  EXPECT_FALSE(api_->coordinator().offsets().Get("g1", {"t", 1}).has_value());
  EXPECT_FALSE(api_->coordinator().offsets().HasOffsets("g2"));
  auto kept = api_->coordinator().offsets().Get("g1", {"keep", 0});
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->offset, 13);
}

// A second member's JoinGroup waits for the first member to rejoin; a ListGroups pipelined behind it on
// the same connection is answered only after it, in request order.
TEST_F(GroupApiTest, WaitingJoinKeepsRequestOrder) {
  Client a(broker_->port()), b(broker_->port());
  std::string ma = Join(a, "g2");
  b.Send(api::kJoinGroup, 5, 1, JoinBody("g2", ""));
  std::string mb = ParseJoin(*b.Receive(1)).member;
  b.Send(api::kJoinGroup, 5, 2, JoinBody("g2", mb));
  b.Send(api::kListGroups, 2, 3, "");
  WaitForState("g2", "PreparingRebalance");
  // The first member learns of the rebalance and rejoins; then both answers come, b's in order.
  {
    Writer w;
    w.String("g2");
    w.Int32(1);
    w.String(ma);
    w.NullableString(std::nullopt);
    a.Send(api::kHeartbeat, 3, 20, w.str());
    auto body = a.Receive(20);
    ASSERT_TRUE(body);
    Reader r(*body);
    r.Int32();
    EXPECT_EQ(r.Int16(), 27);  // REBALANCE_IN_PROGRESS
  }
  a.Send(api::kJoinGroup, 5, 21, JoinBody("g2", ma));
  auto ja = ParseJoin(*a.Receive(21));
  EXPECT_EQ(ja.error, 0);
  EXPECT_EQ(ja.generation, 2);
  EXPECT_EQ(ja.members, 2);
  auto jb = ParseJoin(*b.Receive(2));
  EXPECT_EQ(jb.error, 0);
  EXPECT_EQ(jb.generation, 2);
  EXPECT_TRUE(b.Receive(3).has_value());
}

TEST_F(GroupApiTest, MalformedBodyClosesOnlyThatConnection) {
  Client bad(broker_->port()), good(broker_->port());
  bad.Send(api::kJoinGroup, 5, 1, "\x00\x05gr");
  EXPECT_FALSE(bad.Receive(1).has_value());
  good.Send(api::kListGroups, 0, 2, "");
  EXPECT_TRUE(good.Receive(2).has_value());
}

TEST_F(GroupApiTest, ShutdownAnswersWaitingJoin) {
  Client a(broker_->port()), b(broker_->port());
  std::string ma = Join(a, "g3");
  b.Send(api::kJoinGroup, 5, 1, JoinBody("g3", ""));
  std::string mb = ParseJoin(*b.Receive(1)).member;
  b.Send(api::kJoinGroup, 5, 2, JoinBody("g3", mb));
  WaitForState("g3", "PreparingRebalance");  // b's join is waiting for a
  api_->Shutdown();
  auto jb = ParseJoin(*b.Receive(2));
  EXPECT_EQ(jb.error, 16);  // NOT_COORDINATOR
}

// Two-topic commit body (v7): partition 0 of `t1` and of `t2`.
std::string CommitTwo(std::string_view group, int32_t gen, std::string_view member, std::string_view t1,
                      std::string_view t2) {
  Writer w;
  w.String(group);
  w.Int32(gen);
  w.String(member);
  w.NullableString(std::nullopt);
  w.ArrayCount(2);
  for (std::string_view t : {t1, t2}) {
    w.String(t);
    w.ArrayCount(1);
    w.Int32(0);
    w.Int64(5);
    w.Int32(-1);
    w.NullableString("m");
  }
  return w.str();
}

// Group id, generation 1, member and a null instance id: a Heartbeat v3 body and the head of SyncGroup v3.
std::string GroupGenMember(std::string_view group, std::string_view member) {
  Writer w;
  w.String(group);
  w.Int32(1);
  w.String(member);
  w.NullableString(std::nullopt);
  return w.str();
}

// With an Authorizer, the group APIs check the group (and OffsetCommit/OffsetFetch each topic) before the
// coordinator sees the request, and answer in each API's own error fields. The unauthenticated connection
// acts as User:ANONYMOUS: it may read every group but "no" (denied everything) and "hidden" (denied
// Describe, so it can join but not find, describe, list or fetch offsets), and read topic "t" only.
TEST_F(GroupApiTest, AclsOnGroupsAndTopics) {
  StopBroker();
  auto authz = Authorizer::Parse(R"(
allow User:ANONYMOUS read group:*
deny  User:ANONYMOUS all group:no
deny  User:ANONYMOUS describe group:hidden
allow User:ANONYMOUS read topic:t
)");
  ASSERT_TRUE(authz.ok()) << authz.status().ToString();
  security_ = std::make_shared<Security>(SecurityOptions{.authorizer = *authz});
  StartBroker();
  Client c(broker_->port());
  auto find = [&](std::string_view group, int32_t corr) {
    Writer w;
    w.String(group);
    w.Int8(0);
    c.Send(api::kFindCoordinator, 2, corr, w.str());
    auto body = c.Receive(corr);
    EXPECT_TRUE(body);
    Reader r(*body);
    r.Int32();
    int16_t error = r.Int16();
    r.NullableString();
    int32_t node = r.Int32();
    r.String();
    r.Int32();
    EXPECT_EQ(r.remaining(), 0u);
    return error == 0 ? node : -1000 - error;
  };
  EXPECT_EQ(find("ok", 10), 0);
  EXPECT_EQ(find("no", 11), -1030);
  EXPECT_EQ(find("hidden", 12), -1030);

  // JoinGroup, SyncGroup, Heartbeat, LeaveGroup on "no": 30 in the error field.
  c.Send(api::kJoinGroup, 5, 13, JoinBody("no", ""));
  auto jn = ParseJoin(*c.Receive(13));
  EXPECT_EQ(jn.error, 30);
  EXPECT_EQ(jn.generation, -1);
  {
    Writer w;
    w.Raw(GroupGenMember("no", "m"));
    w.ArrayCount(0);
    c.Send(api::kSyncGroup, 3, 14, w.str());
    auto body1 = c.Receive(14);
    ASSERT_TRUE(body1);
    Reader r(*body1);
    r.Int32();
    EXPECT_EQ(r.Int16(), 30);
    EXPECT_EQ(r.NullableBytes(), "");
    EXPECT_EQ(r.remaining(), 0u);
  }
  {
    c.Send(api::kHeartbeat, 3, 15, GroupGenMember("no", "m"));
    auto body2 = c.Receive(15);
    ASSERT_TRUE(body2);
    Reader r(*body2);
    r.Int32();
    EXPECT_EQ(r.Int16(), 30);
    EXPECT_EQ(r.remaining(), 0u);
  }
  {
    Writer w;
    w.String("no");
    w.ArrayCount(1);
    w.String("m");
    w.NullableString(std::nullopt);
    c.Send(api::kLeaveGroup, 3, 16, w.str());
    auto body3 = c.Receive(16);
    ASSERT_TRUE(body3);
    Reader r(*body3);
    r.Int32();
    EXPECT_EQ(r.Int16(), 30);
    EXPECT_EQ(r.ArrayCount(), 0);
    EXPECT_EQ(r.remaining(), 0u);
  }
  // Read on a group is enough to join it; "hidden" too.
  std::string member = Join(c, "ok");
  {
    Writer w;
    w.Raw(GroupGenMember("ok", member));
    w.ArrayCount(1);
    w.String(member);
    w.NullableBytes("a");
    c.Send(api::kSyncGroup, 3, 17, w.str());
    auto body = c.Receive(17);
    ASSERT_TRUE(body);
    Reader r(*body);
    r.Int32();
    EXPECT_EQ(r.Int16(), 0);
  }
  {
    Client h(broker_->port());
    Join(h, "hidden");
  }

  // OffsetCommit: the denied group answers 30 on every partition; in "ok", topic "u" gets 29 and "t" is
  // committed.
  auto commit = [&](std::string_view group, int32_t corr) {
    c.Send(api::kOffsetCommit, 7, corr, CommitTwo(group, 1, member, "t", "u"));
    auto body4 = c.Receive(corr);
    if (!body4) return std::vector<std::pair<std::string, int16_t>>{};
    Reader r(*body4);
    r.Int32();
    std::vector<std::pair<std::string, int16_t>> out;
    int32_t nt = r.ArrayCount();
    for (int32_t i = 0; i < nt; i++) {
      std::string name(r.String());
      EXPECT_EQ(r.ArrayCount(), 1);
      EXPECT_EQ(r.Int32(), 0);
      out.emplace_back(name, r.Int16());
    }
    EXPECT_EQ(r.remaining(), 0u);
    return out;
  };
  using Errors = std::vector<std::pair<std::string, int16_t>>;
  EXPECT_EQ(commit("no", 20), (Errors{{"t", 30}, {"u", 30}}));
  EXPECT_EQ(commit("ok", 21), (Errors{{"t", 0}, {"u", 29}}));
  // Only "t" was stored.
  groups::OffsetFetchRequest all;
  all.group_id = "ok";
  auto stored = api_->coordinator().OffsetFetch(all);
  ASSERT_EQ(stored.topics.size(), 1u);
  EXPECT_EQ(stored.topics[0].name, "t");
  // An offset for "u" committed behind the ACLs' back: OffsetFetch of everything leaves it out.
  {
    groups::OffsetCommitRequest q;
    q.group_id = "ok";
    q.generation_id = 1;
    q.member_id = member;
    q.topics = {{"u", {{0, 9}}}};
    std::promise<groups::OffsetCommitResponse> done;
    api_->coordinator().OffsetCommit(q, [&done](groups::OffsetCommitResponse r) { done.set_value(r); });
    auto r = done.get_future().get();
    ASSERT_EQ(r.topics.size(), 1u);
    EXPECT_EQ(r.topics[0].partitions[0].error, groups::ErrorCode::kNone);
  }

  // OffsetFetch v5 of named topics: "t" has its offset, "u" gets 29; for groups without Describe the
  // top-level error is 30 (v5) or every partition's (v1).
  auto fetch = [&](std::string_view group, int16_t version, bool named, int32_t corr) {
    Writer w;
    w.String(group);
    if (named) {
      w.ArrayCount(2);
      for (std::string_view t : {"t", "u"}) {
        w.String(t);
        w.ArrayCount(1);
        w.Int32(0);
      }
    } else {
      w.ArrayCount(-1);
    }
    c.Send(api::kOffsetFetch, version, corr, w.str());
    auto body5 = c.Receive(corr);
    if (!body5) return std::vector<std::tuple<std::string, int64_t, int16_t>>{};
    Reader r(*body5);
    if (version >= 3) r.Int32();
    std::vector<std::tuple<std::string, int64_t, int16_t>> out;
    int32_t nt = r.ArrayCount();
    for (int32_t i = 0; i < nt; i++) {
      std::string name(r.String());
      EXPECT_EQ(r.ArrayCount(), 1);
      EXPECT_EQ(r.Int32(), 0);
      int64_t off = r.Int64();
      if (version >= 5) r.Int32();
      r.NullableString();
      out.emplace_back(name, off, r.Int16());
    }
    int16_t top = version >= 2 ? r.Int16() : 0;
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.remaining(), 0u);
    out.emplace_back("top", 0, top);
    return out;
  };
  using Fetched = std::vector<std::tuple<std::string, int64_t, int16_t>>;
  EXPECT_EQ(fetch("ok", 5, true, 30), (Fetched{{"t", 5, 0}, {"u", -1, 29}, {"top", 0, 0}}));
  EXPECT_EQ(fetch("ok", 5, false, 31), (Fetched{{"t", 5, 0}, {"top", 0, 0}}));
  EXPECT_EQ(fetch("hidden", 5, true, 32), (Fetched{{"top", 0, 30}}));
  EXPECT_EQ(fetch("no", 1, true, 33), (Fetched{{"t", -1, 30}, {"u", -1, 30}, {"top", 0, 0}}));

  // DescribeGroups: 30 for each group without Describe, the others described, in request order.
  {
    Writer w;
    w.ArrayCount(3);
    w.String("hidden");
    w.String("ok");
    w.String("no");
    w.Bool(false);
    c.Send(api::kDescribeGroups, 4, 40, w.str());
    auto body6 = c.Receive(40);
    ASSERT_TRUE(body6);
    Reader r(*body6);
    r.Int32();
    ASSERT_EQ(r.ArrayCount(), 3);
    std::vector<std::tuple<int16_t, std::string, std::string>> got;
    for (int i = 0; i < 3; i++) {
      int16_t error = r.Int16();
      std::string id(r.String());
      std::string state(r.String());
      r.String();
      r.String();
      int32_t nm = r.ArrayCount();
      for (int32_t j = 0; j < nm; j++) {
        r.String();
        r.NullableString();
        r.String();
        r.String();
        r.NullableBytes();
        r.NullableBytes();
      }
      r.Int32();
      got.emplace_back(error, id, state);
    }
    EXPECT_EQ(r.remaining(), 0u);
    using Described = std::vector<std::tuple<int16_t, std::string, std::string>>;
    EXPECT_EQ(got, (Described{{30, "hidden", ""}, {0, "ok", "Stable"}, {30, "no", ""}}));
  }
  // ListGroups: "hidden" exists but is left out.
  {
    EXPECT_EQ(api_->coordinator().ListGroups({}).groups.size(), 2u);
    c.Send(api::kListGroups, 2, 41, "");
    auto body7 = c.Receive(41);
    ASSERT_TRUE(body7);
    Reader r(*body7);
    r.Int32();
    EXPECT_EQ(r.Int16(), 0);
    ASSERT_EQ(r.ArrayCount(), 1);
    EXPECT_EQ(r.String(), "ok");
    EXPECT_EQ(r.String(), "consumer");
    EXPECT_EQ(r.remaining(), 0u);
  }
}

// Every version's layout decodes what that version's encoder would send, with nothing left over.
TEST(GroupWireTest, EveryVersionDecodes) {
  for (int16_t v = 0; v <= 7; v++) {
    Writer w;
    w.String("g");
    if (v >= 1) {
      w.Int32(3);
      w.String("m");
    }
    if (v >= 7) w.NullableString("inst");
    if (v >= 2 && v <= 4) w.Int64(1000);
    w.ArrayCount(1);
    w.String("t");
    w.ArrayCount(1);
    w.Int32(2);
    w.Int64(99);
    if (v >= 6) w.Int32(5);
    if (v == 1) w.Int64(123);
    w.NullableString(std::nullopt);
    auto q = groupwire::DecodeOffsetCommit(w.str(), v);
    ASSERT_TRUE(q.ok()) << v;
    EXPECT_EQ(q->topics[0].partitions[0].committed_offset, 99);
    EXPECT_EQ(q->topics[0].partitions[0].committed_leader_epoch, v >= 6 ? 5 : -1);
    EXPECT_EQ(q->retention_time_ms, v >= 2 && v <= 4 ? 1000 : -1);
    EXPECT_FALSE(groupwire::DecodeOffsetCommit(w.str() + "x", v).ok());
  }
  for (int16_t v = 0; v <= 5; v++) {
    Writer w;
    w.String("g");
    w.Int32(6000);
    if (v >= 1) w.Int32(9000);
    w.String("");
    if (v >= 5) w.NullableString(std::nullopt);
    w.String("consumer");
    w.ArrayCount(0);
    auto q = groupwire::DecodeJoinGroup(w.str(), v);
    ASSERT_TRUE(q.ok()) << v;
    EXPECT_EQ(q->rebalance_timeout_ms, v >= 1 ? 9000 : 6000);
  }
  Writer leave;
  leave.String("g");
  leave.String("m");
  EXPECT_EQ(groupwire::DecodeLeaveGroup(leave.str(), 2)->member_id, "m");
  Writer fetch;
  fetch.String("g");
  fetch.ArrayCount(-1);
  EXPECT_FALSE(groupwire::DecodeOffsetFetch(fetch.str(), 1).ok());
  EXPECT_FALSE(groupwire::DecodeOffsetFetch(fetch.str(), 2)->topics.has_value());
}

}  // namespace
}  // namespace govern::streams
