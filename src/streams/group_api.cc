// The consumer-group APIs on the broker (see group_api.h). Field layouts follow Kafka's message
// definitions (clients/src/main/resources/common/message/*Request.json / *Response.json).
#include "streams/group_api.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/log.h"
#include "streams/security.h"
#include "streams/wire.h"

namespace govern::streams {

namespace g = groups;

namespace groupwire {
namespace {

Status Malformed(std::string_view what) {
  return InvalidArgument(std::string("malformed ") + std::string(what));
}

// The whole body must be consumed: trailing bytes mean we misread the version's layout.
template <typename T>
Result<T> Finish(const Reader& r, T value, std::string_view what) {
  if (!r.ok() || r.remaining() != 0) return Malformed(what);
  return value;
}

std::optional<std::string> Opt(std::optional<std::string_view> s) {
  return s ? std::optional<std::string>(std::string(*s)) : std::nullopt;
}

int16_t Code(g::ErrorCode e) { return static_cast<int16_t>(e); }

}  // namespace

Result<g::FindCoordinatorRequest> DecodeFindCoordinator(std::string_view body, int16_t version) {
  Reader r(body);
  g::FindCoordinatorRequest q;
  q.version = version;
  q.key = std::string(r.String());
  if (version >= 1) q.key_type = r.Int8();
  return Finish(r, std::move(q), "FindCoordinator");
}

Result<g::JoinGroupRequest> DecodeJoinGroup(std::string_view body, int16_t version) {
  Reader r(body);
  g::JoinGroupRequest q;
  q.version = version;
  q.group_id = std::string(r.String());
  q.session_timeout_ms = r.Int32();
  q.rebalance_timeout_ms = version >= 1 ? r.Int32() : q.session_timeout_ms;
  q.member_id = std::string(r.String());
  if (version >= 5) q.group_instance_id = Opt(r.NullableString());
  q.protocol_type = std::string(r.String());
  int32_t n = r.ArrayCount(6);
  if (n < 0) return Malformed("JoinGroup: null protocols");
  for (int32_t i = 0; i < n && r.ok(); i++) {
    g::JoinGroupProtocol p;
    p.name = std::string(r.String());
    auto meta = r.NullableBytes();
    p.metadata = meta ? std::string(*meta) : std::string();
    q.protocols.push_back(std::move(p));
  }
  return Finish(r, std::move(q), "JoinGroup");
}

Result<g::SyncGroupRequest> DecodeSyncGroup(std::string_view body, int16_t version) {
  Reader r(body);
  g::SyncGroupRequest q;
  q.version = version;
  q.group_id = std::string(r.String());
  q.generation_id = r.Int32();
  q.member_id = std::string(r.String());
  if (version >= 3) q.group_instance_id = Opt(r.NullableString());
  int32_t n = r.ArrayCount(6);
  if (n < 0) return Malformed("SyncGroup: null assignments");
  for (int32_t i = 0; i < n && r.ok(); i++) {
    g::SyncGroupAssignment a;
    a.member_id = std::string(r.String());
    auto bytes = r.NullableBytes();
    a.assignment = bytes ? std::string(*bytes) : std::string();
    q.assignments.push_back(std::move(a));
  }
  return Finish(r, std::move(q), "SyncGroup");
}

Result<g::HeartbeatRequest> DecodeHeartbeat(std::string_view body, int16_t version) {
  Reader r(body);
  g::HeartbeatRequest q;
  q.version = version;
  q.group_id = std::string(r.String());
  q.generation_id = r.Int32();
  q.member_id = std::string(r.String());
  if (version >= 3) q.group_instance_id = Opt(r.NullableString());
  return Finish(r, std::move(q), "Heartbeat");
}

Result<g::LeaveGroupRequest> DecodeLeaveGroup(std::string_view body, int16_t version) {
  Reader r(body);
  g::LeaveGroupRequest q;
  q.version = version;
  q.group_id = std::string(r.String());
  if (version < 3) {
    q.member_id = std::string(r.String());
  } else {
    int32_t n = r.ArrayCount(4);
    if (n < 0) return Malformed("LeaveGroup: null members");
    for (int32_t i = 0; i < n && r.ok(); i++) {
      g::LeaveGroupMember m;
      m.member_id = std::string(r.String());
      m.group_instance_id = Opt(r.NullableString());
      q.members.push_back(std::move(m));
    }
  }
  return Finish(r, std::move(q), "LeaveGroup");
}

Result<g::OffsetCommitRequest> DecodeOffsetCommit(std::string_view body, int16_t version) {
  Reader r(body);
  g::OffsetCommitRequest q;
  q.version = version;
  q.group_id = std::string(r.String());
  if (version >= 1) {
    q.generation_id = r.Int32();
    q.member_id = std::string(r.String());
  }
  if (version >= 7) q.group_instance_id = Opt(r.NullableString());
  if (version >= 2 && version <= 4) q.retention_time_ms = r.Int64();
  int32_t nt = r.ArrayCount(6);
  if (nt < 0) return Malformed("OffsetCommit: null topics");
  for (int32_t i = 0; i < nt && r.ok(); i++) {
    g::OffsetCommitTopic t;
    t.name = std::string(r.String());
    int32_t np = r.ArrayCount(14);
    if (np < 0) return Malformed("OffsetCommit: null partitions");
    for (int32_t j = 0; j < np && r.ok(); j++) {
      g::OffsetCommitPartition p;
      p.partition_index = r.Int32();
      p.committed_offset = r.Int64();
      if (version >= 6) p.committed_leader_epoch = r.Int32();
      if (version == 1) p.commit_timestamp = r.Int64();
      p.committed_metadata = Opt(r.NullableString());
      t.partitions.push_back(std::move(p));
    }
    q.topics.push_back(std::move(t));
  }
  return Finish(r, std::move(q), "OffsetCommit");
}

Result<g::OffsetFetchRequest> DecodeOffsetFetch(std::string_view body, int16_t version) {
  Reader r(body);
  g::OffsetFetchRequest q;
  q.version = version;
  q.group_id = std::string(r.String());
  int32_t nt = r.ArrayCount(6);
  if (nt < 0) {
    if (version < 2) return Malformed("OffsetFetch: null topics before v2");
  } else {
    std::vector<g::OffsetFetchTopic> topics;
    for (int32_t i = 0; i < nt && r.ok(); i++) {
      g::OffsetFetchTopic t;
      t.name = std::string(r.String());
      int32_t np = r.ArrayCount(4);
      if (np < 0) return Malformed("OffsetFetch: null partitions");
      for (int32_t j = 0; j < np && r.ok(); j++) t.partition_indexes.push_back(r.Int32());
      topics.push_back(std::move(t));
    }
    q.topics = std::move(topics);
  }
  return Finish(r, std::move(q), "OffsetFetch");
}

Result<g::DescribeGroupsRequest> DecodeDescribeGroups(std::string_view body, int16_t version) {
  Reader r(body);
  g::DescribeGroupsRequest q;
  q.version = version;
  int32_t n = r.ArrayCount(2);
  if (n < 0) return Malformed("DescribeGroups: null groups");
  for (int32_t i = 0; i < n && r.ok(); i++) q.groups.emplace_back(r.String());
  if (version >= 3) q.include_authorized_operations = r.Bool();
  return Finish(r, std::move(q), "DescribeGroups");
}

Result<g::ListGroupsRequest> DecodeListGroups(std::string_view body, int16_t version) {
  Reader r(body);
  g::ListGroupsRequest q;
  q.version = version;
  return Finish(r, std::move(q), "ListGroups");
}

std::string Encode(const g::FindCoordinatorResponse& x, int16_t version) {
  Writer w;
  const g::FindCoordinatorResult& c = x.result;
  if (version >= 1) w.Int32(0);
  w.Int16(Code(c.error));
  if (version >= 1)
    w.NullableString(c.error_message.empty() ? std::nullopt
                                             : std::optional<std::string_view>(c.error_message));
  w.Int32(c.node_id);
  w.String(c.host);
  w.Int32(c.port);
  return std::move(w.str());
}

std::string Encode(const g::JoinGroupResponse& x, int16_t version) {
  Writer w;
  if (version >= 2) w.Int32(0);
  w.Int16(Code(x.error));
  w.Int32(x.generation_id);
  w.String(x.protocol_name);
  w.String(x.leader);
  w.String(x.member_id);
  w.ArrayCount(static_cast<int32_t>(x.members.size()));
  for (const auto& m : x.members) {
    w.String(m.member_id);
    if (version >= 5) w.NullableString(m.group_instance_id);
    w.NullableBytes(m.metadata);
  }
  return std::move(w.str());
}

std::string Encode(const g::SyncGroupResponse& x, int16_t version) {
  Writer w;
  if (version >= 1) w.Int32(0);
  w.Int16(Code(x.error));
  w.NullableBytes(x.assignment);
  return std::move(w.str());
}

std::string Encode(const g::HeartbeatResponse& x, int16_t version) {
  Writer w;
  if (version >= 1) w.Int32(0);
  w.Int16(Code(x.error));
  return std::move(w.str());
}

std::string Encode(const g::LeaveGroupResponse& x, int16_t version) {
  Writer w;
  if (version >= 1) w.Int32(0);
  w.Int16(Code(x.error));
  if (version >= 3) {
    w.ArrayCount(static_cast<int32_t>(x.members.size()));
    for (const auto& m : x.members) {
      w.String(m.member_id);
      w.NullableString(m.group_instance_id);
      w.Int16(Code(m.error));
    }
  }
  return std::move(w.str());
}

std::string Encode(const g::OffsetCommitResponse& x, int16_t version) {
  Writer w;
  if (version >= 3) w.Int32(0);
  w.ArrayCount(static_cast<int32_t>(x.topics.size()));
  for (const auto& t : x.topics) {
    w.String(t.name);
    w.ArrayCount(static_cast<int32_t>(t.partitions.size()));
    for (const auto& p : t.partitions) {
      w.Int32(p.partition_index);
      w.Int16(Code(p.error));
    }
  }
  return std::move(w.str());
}

std::string Encode(const g::OffsetFetchResponse& x, int16_t version) {
  Writer w;
  if (version >= 3) w.Int32(0);
  w.ArrayCount(static_cast<int32_t>(x.topics.size()));
  for (const auto& t : x.topics) {
    w.String(t.name);
    w.ArrayCount(static_cast<int32_t>(t.partitions.size()));
    for (const auto& p : t.partitions) {
      w.Int32(p.partition_index);
      w.Int64(p.committed_offset);
      if (version >= 5) w.Int32(p.committed_leader_epoch);
      w.NullableString(p.metadata);
      // Before v2 there is no top-level error: a group-wide error goes on every partition.
      w.Int16(Code(version < 2 && p.error == g::ErrorCode::kNone ? x.error : p.error));
    }
  }
  if (version >= 2) w.Int16(Code(x.error));
  return std::move(w.str());
}

std::string Encode(const g::DescribeGroupsResponse& x, int16_t version) {
  Writer w;
  if (version >= 1) w.Int32(0);
  w.ArrayCount(static_cast<int32_t>(x.groups.size()));
  for (const auto& gr : x.groups) {
    w.Int16(Code(gr.error));
    w.String(gr.group_id);
    w.String(gr.group_state);
    w.String(gr.protocol_type);
    w.String(gr.protocol_data);
    w.ArrayCount(static_cast<int32_t>(gr.members.size()));
    for (const auto& m : gr.members) {
      w.String(m.member_id);
      if (version >= 4) w.NullableString(m.group_instance_id);
      w.String(m.client_id);
      w.String(m.client_host);
      w.NullableBytes(m.member_metadata);
      w.NullableBytes(m.member_assignment);
    }
    // authorized_operations is not computed: INT32_MIN is the protocol's "not provided".
    if (version >= 3) w.Int32(INT32_MIN);
  }
  return std::move(w.str());
}

std::string Encode(const g::ListGroupsResponse& x, int16_t version) {
  Writer w;
  if (version >= 1) w.Int32(0);
  w.Int16(Code(x.error));
  w.ArrayCount(static_cast<int32_t>(x.groups.size()));
  for (const auto& gr : x.groups) {
    w.String(gr.group_id);
    w.String(gr.protocol_type);
  }
  return std::move(w.str());
}

}  // namespace groupwire

struct GroupApi::Impl {
  Broker* broker = nullptr;
  std::shared_ptr<g::GroupCoordinator> coordinator;
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  bool shut = false;
  std::thread ticker;

  void TickLoop() {
    const Clock& clock = Clock::Real();
    std::unique_lock<std::mutex> lock(mu);
    while (!stopping) {
      lock.unlock();
      int64_t next = coordinator->Tick();
      int64_t now = clock.MonotonicNanos();
      lock.lock();
      int64_t wait_ns = std::clamp<int64_t>(next == INT64_MAX ? INT64_MAX : next - now, 1000000, 100000000);
      cv.wait_for(lock, std::chrono::nanoseconds(wait_ns), [this] { return stopping; });
    }
  }
};

namespace {

// Registers one API whose answer is ready at once; `call` gets the request too (for the ACL checks).
template <typename Decode, typename Call>
ApiSpec Immediate(int16_t max_version, Decode decode, Call call) {
  ApiSpec spec;
  spec.min_version = 0;
  spec.max_version = max_version;
  spec.handler = [decode, call](const Request& req, Respond respond) {
    int16_t v = req.header.api_version;
    auto q = decode(req.header.body, v);
    if (!q.ok()) return respond(Reply::Close());
    respond(Reply::Send(groupwire::Encode(call(req, *q), v)));
  };
  return spec;
}

// The ACL checks of docs/streams-security.md ("Consumer groups"), made before the coordinator sees a
// request. Without BrokerOptions::security everything is allowed.
class Gate {
 public:
  explicit Gate(const Broker* broker) : broker_(broker) {}
  bool Allowed(const Request& req, AclOp op, ResourceType type, std::string_view name) const {
    const auto& sec = broker_->options().security;
    return !sec || sec->Allowed(*req.session, op, type, name);
  }
  bool Group(const Request& req, AclOp op, std::string_view group) const {
    return Allowed(req, op, ResourceType::kGroup, group);
  }
  bool Topic(const Request& req, AclOp op, std::string_view topic) const {
    return Allowed(req, op, ResourceType::kTopic, topic);
  }

 private:
  const Broker* broker_;
};

constexpr g::ErrorCode kGroupDenied = g::ErrorCode::kGroupAuthorizationFailed;
constexpr g::ErrorCode kTopicDenied = g::ErrorCode::kTopicAuthorizationFailed;

// Every partition of the request answered with `error` (OffsetCommit has no group-level error field).
g::OffsetCommitResponse CommitAll(const g::OffsetCommitRequest& q, g::ErrorCode error) {
  g::OffsetCommitResponse r;
  for (const auto& t : q.topics) {
    g::OffsetCommitTopicResult tr;
    tr.name = t.name;
    for (const auto& p : t.partitions) tr.partitions.push_back({p.partition_index, error});
    r.topics.push_back(std::move(tr));
  }
  return r;
}

// OffsetFetch partitions answered with `error` and no offset (Kafka's INVALID_OFFSET, NO_METADATA).
g::OffsetFetchTopicResult FetchDenied(const g::OffsetFetchTopic& t, g::ErrorCode error) {
  g::OffsetFetchTopicResult tr;
  tr.name = t.name;
  for (int32_t idx : t.partition_indexes) {
    g::OffsetFetchPartition p;
    p.partition_index = idx;
    p.metadata = std::string();
    p.error = error;
    tr.partitions.push_back(std::move(p));
  }
  return tr;
}

g::OffsetFetchResponse OffsetFetch(g::GroupCoordinator& c, const Gate& gate, const Request& req,
                                   const g::OffsetFetchRequest& q) {
  if (!gate.Group(req, AclOp::kDescribe, q.group_id)) {
    // v2+ carries the group error at the top; before v2 it goes on every requested partition.
    g::OffsetFetchResponse r;
    r.error = kGroupDenied;
    if (q.version < 2 && q.topics)
      for (const auto& t : *q.topics) r.topics.push_back(FetchDenied(t, kGroupDenied));
    return r;
  }
  if (!q.topics) {
    // Every committed offset: topics the principal may not describe are left out (as Kafka does).
    g::OffsetFetchResponse r = c.OffsetFetch(q);
    std::erase_if(r.topics, [&](const g::OffsetFetchTopicResult& t) {
      return !gate.Topic(req, AclOp::kDescribe, t.name);
    });
    return r;
  }
  std::vector<bool> allowed;
  std::vector<g::OffsetFetchTopic> kept;
  for (const auto& t : *q.topics) {
    allowed.push_back(gate.Topic(req, AclOp::kDescribe, t.name));
    if (allowed.back()) kept.push_back(t);
  }
  // The topics are gathered apart: clearing the copied optional in place trips GCC 12's
  // -Wmaybe-uninitialized at -O2 (a false positive, fatal under -Werror).
  g::OffsetFetchRequest permitted = q;
  permitted.topics = std::move(kept);
  g::OffsetFetchResponse got = c.OffsetFetch(permitted);
  // The coordinator answers the named topics in request order: merge back by position.
  g::OffsetFetchResponse r;
  r.error = got.error;
  size_t next = 0;
  for (size_t i = 0; i < q.topics->size(); i++) {
    if (!allowed[i])
      r.topics.push_back(FetchDenied((*q.topics)[i], kTopicDenied));
    else if (next < got.topics.size())
      r.topics.push_back(std::move(got.topics[next++]));
  }
  return r;
}

g::DescribeGroupsResponse DescribeGroups(g::GroupCoordinator& c, const Gate& gate, const Request& req,
                                         const g::DescribeGroupsRequest& q) {
  std::vector<bool> allowed;
  g::DescribeGroupsRequest permitted = q;
  permitted.groups.clear();
  for (const auto& group : q.groups) {
    allowed.push_back(gate.Group(req, AclOp::kDescribe, group));
    if (allowed.back()) permitted.groups.push_back(group);
  }
  g::DescribeGroupsResponse got;
  if (!permitted.groups.empty()) got = c.DescribeGroups(permitted);
  // The coordinator answers in request order: merge back by position.
  g::DescribeGroupsResponse r;
  size_t next = 0;
  for (size_t i = 0; i < q.groups.size(); i++) {
    if (!allowed[i]) {
      g::DescribedGroup d;
      d.error = kGroupDenied;
      d.group_id = q.groups[i];
      r.groups.push_back(std::move(d));
    } else if (next < got.groups.size()) {
      r.groups.push_back(std::move(got.groups[next++]));
    }
  }
  return r;
}

g::ListGroupsResponse ListGroups(g::GroupCoordinator& c, const Gate& gate, const Request& req,
                                 const g::ListGroupsRequest& q) {
  g::ListGroupsResponse r = c.ListGroups(q);
  // As in Kafka, Describe on the cluster shows every group; otherwise only the describable ones.
  if (gate.Allowed(req, AclOp::kDescribe, ResourceType::kCluster, "")) return r;
  std::erase_if(r.groups,
                [&](const g::ListedGroup& lg) { return !gate.Group(req, AclOp::kDescribe, lg.group_id); });
  return r;
}

}  // namespace

Result<std::unique_ptr<GroupApi>> GroupApi::Attach(Broker& broker, g::CoordinatorOptions options) {
  const BrokerOptions& bo = broker.options();
  if (options.data_dir.empty()) options.data_dir = bo.data_dir + "/groups";
  options.node_id = bo.node_id;
  options.host = bo.advertised_host;
  // A commit checked against the topics on arrival is checked again as it is queued (in the offsets'
  // order), so one racing DeleteTopics never puts a deleted topic's offset back.
  Broker* owner = &broker;
  if (!options.topic_exists)
    options.topic_exists = [owner](const std::string& topic) {
      return owner->Partition(topic, 0) != nullptr;
    };
  GOVERN_ASSIGN_OR_RETURN(auto coordinator, g::GroupCoordinator::Open(std::move(options)));
  auto impl = std::make_shared<Impl>();
  impl->broker = &broker;
  impl->coordinator = std::shared_ptr<g::GroupCoordinator>(std::move(coordinator));
  std::shared_ptr<g::GroupCoordinator> c = impl->coordinator;
  Broker* b = &broker;
  Gate gate(b);
  // A deleted topic's committed offsets go with it (Kafka does the same), before DeleteTopics answers.
  // When they could not be dropped the broker keeps the topics and answers KAFKA_STORAGE_ERROR.
  broker.OnTopicsDeleted([c](std::vector<std::string> topics, std::function<void(Status)> done) {
    c->DeleteTopicOffsets(std::move(topics), [done = std::move(done)](Status s) { done(std::move(s)); });
  });

  broker.RegisterApi(api::kFindCoordinator,
                     Immediate(2, groupwire::DecodeFindCoordinator,
                               [c, b, gate](const Request& req, const g::FindCoordinatorRequest& q) {
                                 if (q.key_type == 0 && !gate.Group(req, AclOp::kDescribe, q.key)) {
                                   g::FindCoordinatorResponse denied;
                                   denied.result.error = kGroupDenied;
                                   return denied;
                                 }
                                 auto r = c->FindCoordinator(q);
                                 // The port is known only once the broker is listening.
                                 if (r.result.error == g::ErrorCode::kNone) {
                                   r.result.node_id = b->options().node_id;
                                   r.result.host = b->options().advertised_host;
                                   r.result.port = b->port();
                                 }
                                 return r;
                               }));
  broker.RegisterApi(api::kHeartbeat, Immediate(3, groupwire::DecodeHeartbeat,
                                                [c, gate](const Request& req, const g::HeartbeatRequest& q) {
                                                  if (!gate.Group(req, AclOp::kRead, q.group_id))
                                                    return g::HeartbeatResponse{kGroupDenied};
                                                  return c->Heartbeat(q);
                                                }));
  broker.RegisterApi(
      api::kLeaveGroup,
      Immediate(3, groupwire::DecodeLeaveGroup, [c, gate](const Request& req, const g::LeaveGroupRequest& q) {
        // v3+: the group-level error, no member results.
        if (!gate.Group(req, AclOp::kRead, q.group_id)) return g::LeaveGroupResponse{kGroupDenied, {}};
        return c->LeaveGroup(q);
      }));
  broker.RegisterApi(api::kOffsetFetch,
                     Immediate(5, groupwire::DecodeOffsetFetch,
                               [c, gate](const Request& req, const g::OffsetFetchRequest& q) {
                                 return OffsetFetch(*c, gate, req, q);
                               }));
  broker.RegisterApi(api::kDescribeGroups,
                     Immediate(4, groupwire::DecodeDescribeGroups,
                               [c, gate](const Request& req, const g::DescribeGroupsRequest& q) {
                                 return DescribeGroups(*c, gate, req, q);
                               }));
  broker.RegisterApi(
      api::kListGroups,
      Immediate(2, groupwire::DecodeListGroups, [c, gate](const Request& req, const g::ListGroupsRequest& q) {
        return ListGroups(*c, gate, req, q);
      }));

  ApiSpec join;
  join.max_version = 5;
  join.pause_reading = true;
  join.handler = [c, gate](const Request& req, Respond respond) {
    int16_t v = req.header.api_version;
    auto q = groupwire::DecodeJoinGroup(req.header.body, v);
    if (!q.ok()) return respond(Reply::Close());
    if (!gate.Group(req, AclOp::kRead, q->group_id)) {
      g::JoinGroupResponse denied;
      denied.error = kGroupDenied;
      denied.member_id = q->member_id;
      return respond(Reply::Send(groupwire::Encode(denied, v)));
    }
    q->client_id = req.header.client_id ? std::string(*req.header.client_id) : std::string();
    q->client_host = "/" + req.client_host;
    c->JoinGroup(std::move(*q), [v, respond = std::move(respond)](g::JoinGroupResponse r) {
      respond(Reply::Send(groupwire::Encode(r, v)));
    });
  };
  broker.RegisterApi(api::kJoinGroup, std::move(join));

  ApiSpec sync;
  sync.max_version = 3;
  sync.pause_reading = true;
  sync.handler = [c, gate](const Request& req, Respond respond) {
    int16_t v = req.header.api_version;
    auto q = groupwire::DecodeSyncGroup(req.header.body, v);
    if (!q.ok()) return respond(Reply::Close());
    if (!gate.Group(req, AclOp::kRead, q->group_id)) {
      g::SyncGroupResponse denied;
      denied.error = kGroupDenied;
      return respond(Reply::Send(groupwire::Encode(denied, v)));
    }
    c->SyncGroup(std::move(*q), [v, respond = std::move(respond)](g::SyncGroupResponse r) {
      respond(Reply::Send(groupwire::Encode(r, v)));
    });
  };
  broker.RegisterApi(api::kSyncGroup, std::move(sync));

  ApiSpec commit;
  commit.max_version = 7;
  commit.pause_reading = true;
  commit.handler = [c, b, gate](const Request& req, Respond respond) {
    int16_t v = req.header.api_version;
    auto q = groupwire::DecodeOffsetCommit(req.header.body, v);
    if (!q.ok()) return respond(Reply::Close());
    if (!gate.Group(req, AclOp::kRead, q->group_id))
      return respond(Reply::Send(groupwire::Encode(CommitAll(*q, kGroupDenied), v)));
    // Topics the principal may not read are answered 29 here, topics the broker does not have 3 (as
    // Kafka does; a deleted topic's offsets are not put back); the rest go to the coordinator.
    g::OffsetCommitRequest original = *q;
    std::vector<g::ErrorCode> refused;  // per topic: kNone (sent on) or the answer
    q->topics.clear();
    for (const auto& t : original.topics) {
      refused.push_back(!gate.Topic(req, AclOp::kRead, t.name) ? kTopicDenied
                        : !b->Partition(t.name, 0)             ? g::ErrorCode::kUnknownTopicOrPartition
                                                               : g::ErrorCode::kNone);
      if (refused.back() == g::ErrorCode::kNone) q->topics.push_back(t);
    }
    // Every partition of the request, answered with its topic's refusal (or kNone, filled in below).
    auto answers = [](const g::OffsetCommitRequest& asked, const std::vector<g::ErrorCode>& codes) {
      g::OffsetCommitResponse all = CommitAll(asked, g::ErrorCode::kNone);
      for (size_t i = 0; i < all.topics.size(); i++)
        for (auto& p : all.topics[i].partitions) p.error = codes[i];
      return all;
    };
    if (q->topics.size() == original.topics.size()) {
      c->OffsetCommit(std::move(*q), [v, respond = std::move(respond)](g::OffsetCommitResponse r) {
        respond(Reply::Send(groupwire::Encode(r, v)));
      });
      return;
    }
    if (q->topics.empty()) return respond(Reply::Send(groupwire::Encode(answers(original, refused), v)));
    c->OffsetCommit(std::move(*q), [v, answers, original = std::move(original), refused = std::move(refused),
                                    respond = std::move(respond)](g::OffsetCommitResponse got) {
      // The coordinator answers in request order: merge back by position.
      g::OffsetCommitResponse all = answers(original, refused);
      size_t next = 0;
      for (size_t i = 0; i < all.topics.size(); i++)
        if (refused[i] == g::ErrorCode::kNone && next < got.topics.size())
          all.topics[i] = std::move(got.topics[next++]);
      respond(Reply::Send(groupwire::Encode(all, v)));
    });
  };
  broker.RegisterApi(api::kOffsetCommit, std::move(commit));

  Impl* raw = impl.get();
  impl->ticker = std::thread([raw] { raw->TickLoop(); });
  return std::unique_ptr<GroupApi>(new GroupApi(std::move(impl)));
}

GroupApi::GroupApi(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

GroupApi::~GroupApi() { Shutdown(); }

void GroupApi::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->shut) return;
    impl_->shut = true;
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->ticker.joinable()) impl_->ticker.join();
  impl_->coordinator->Shutdown();
  Status s = impl_->coordinator->FlushOffsets();
  if (!s.ok()) log::Warn("streams", "group offsets at shutdown", {{"error", s.ToString()}});
}

g::GroupCoordinator& GroupApi::coordinator() { return *impl_->coordinator; }

}  // namespace govern::streams
