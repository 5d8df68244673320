// GroupCoordinator (see coordinator.h): the classic group state machine, after Kafka's GroupCoordinator,
// with explicit timers fired by Tick() instead of a purgatory.
#include "streams/groups/coordinator.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <climits>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <vector>

#include "base/log.h"

namespace govern::streams::groups {

std::string_view ErrorName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kUnknownServerError:
      return "UNKNOWN_SERVER_ERROR";
    case ErrorCode::kNone:
      return "NONE";
    case ErrorCode::kUnknownTopicOrPartition:
      return "UNKNOWN_TOPIC_OR_PARTITION";
    case ErrorCode::kOffsetMetadataTooLarge:
      return "OFFSET_METADATA_TOO_LARGE";
    case ErrorCode::kCoordinatorLoadInProgress:
      return "COORDINATOR_LOAD_IN_PROGRESS";
    case ErrorCode::kCoordinatorNotAvailable:
      return "COORDINATOR_NOT_AVAILABLE";
    case ErrorCode::kNotCoordinator:
      return "NOT_COORDINATOR";
    case ErrorCode::kIllegalGeneration:
      return "ILLEGAL_GENERATION";
    case ErrorCode::kInconsistentGroupProtocol:
      return "INCONSISTENT_GROUP_PROTOCOL";
    case ErrorCode::kInvalidGroupId:
      return "INVALID_GROUP_ID";
    case ErrorCode::kUnknownMemberId:
      return "UNKNOWN_MEMBER_ID";
    case ErrorCode::kInvalidSessionTimeout:
      return "INVALID_SESSION_TIMEOUT";
    case ErrorCode::kRebalanceInProgress:
      return "REBALANCE_IN_PROGRESS";
    case ErrorCode::kInvalidCommitOffsetSize:
      return "INVALID_COMMIT_OFFSET_SIZE";
    case ErrorCode::kTopicAuthorizationFailed:
      return "TOPIC_AUTHORIZATION_FAILED";
    case ErrorCode::kGroupAuthorizationFailed:
      return "GROUP_AUTHORIZATION_FAILED";
    case ErrorCode::kUnsupportedVersion:
      return "UNSUPPORTED_VERSION";
    case ErrorCode::kInvalidRequest:
      return "INVALID_REQUEST";
    case ErrorCode::kKafkaStorageError:
      return "KAFKA_STORAGE_ERROR";
    case ErrorCode::kNonEmptyGroup:
      return "NON_EMPTY_GROUP";
    case ErrorCode::kGroupIdNotFound:
      return "GROUP_ID_NOT_FOUND";
    case ErrorCode::kMemberIdRequired:
      return "MEMBER_ID_REQUIRED";
    case ErrorCode::kGroupMaxSizeReached:
      return "GROUP_MAX_SIZE_REACHED";
    case ErrorCode::kFencedInstanceId:
      return "FENCED_INSTANCE_ID";
  }
  return "UNKNOWN_ERROR_CODE";
}

namespace {

constexpr std::string_view kCoordinatorComponent = "streams.groups";

enum class State { kEmpty, kPreparingRebalance, kCompletingRebalance, kStable };

std::string_view StateName(State s) {
  switch (s) {
    case State::kEmpty:
      return "Empty";
    case State::kPreparingRebalance:
      return "PreparingRebalance";
    case State::kCompletingRebalance:
      return "CompletingRebalance";
    case State::kStable:
      return "Stable";
  }
  return "Dead";
}

struct Member {
  std::string id;
  std::optional<std::string> instance_id;
  std::string client_id;
  std::string client_host;
  int32_t session_timeout_ms = 0;
  int32_t rebalance_timeout_ms = 0;
  std::vector<JoinGroupProtocol> protocols;
  std::string assignment;
  GroupCoordinator::JoinDone awaiting_join;
  GroupCoordinator::SyncDone awaiting_sync;
  int64_t heartbeat_deadline_ms = 0;
  uint64_t join_order = 0;

  const std::string* Metadata(const std::string& protocol) const {
    for (const auto& p : protocols)
      if (p.name == protocol) return &p.metadata;
    return nullptr;
  }
  bool Matches(const std::vector<JoinGroupProtocol>& other) const {
    if (other.size() != protocols.size()) return false;
    for (size_t i = 0; i < other.size(); ++i)
      if (other[i].name != protocols[i].name || other[i].metadata != protocols[i].metadata) return false;
    return true;
  }
};

struct Group {
  std::mutex mu;
  std::string id;
  State state = State::kEmpty;
  bool removed = false;  // taken out of the map; a caller that locked it looks it up again
  int32_t generation = 0;
  std::string protocol_type;
  std::string protocol;
  std::string leader;
  std::map<std::string, Member> members;
  std::map<std::string, int64_t> pending_members;     // KIP-394: member id -> deadline
  std::map<std::string, std::string> static_members;  // group.instance.id -> member id
  std::set<std::string> pending_sync;                 // members yet to send SyncGroup this generation
  int64_t sync_deadline_ms = 0;
  int64_t join_deadline_ms = 0;
  bool initial_delay = false;
  int64_t initial_remaining_ms = 0;
  bool new_member_added = false;
  int64_t empty_since_wall_ms = 0;
  uint64_t next_join_order = 0;
  int inflight_commits = 0;
};

// Callbacks collected under a group's lock and run after it is released.
using Deferred = std::vector<std::function<void()>>;

void Reply(Deferred& d, GroupCoordinator::JoinDone cb, JoinGroupResponse r) {
  if (cb) d.push_back([cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
}
void Reply(Deferred& d, GroupCoordinator::SyncDone cb, SyncGroupResponse r) {
  if (cb) d.push_back([cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
}
JoinGroupResponse JoinError(ErrorCode e, std::string member_id) {
  JoinGroupResponse r;
  r.error = e;
  r.member_id = std::move(member_id);
  return r;
}
SyncGroupResponse SyncError(ErrorCode e) {
  SyncGroupResponse r;
  r.error = e;
  return r;
}
void Run(Deferred& d) {
  for (auto& f : d) f();
  d.clear();
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

struct GroupCoordinator::Impl {
  CoordinatorOptions opt;
  const Clock* clock = nullptr;
  std::unique_ptr<OffsetStore> store;
  mutable std::mutex map_mu;
  std::map<std::string, std::shared_ptr<Group>> groups;
  std::atomic<bool> shut_down{false};
  std::mutex rng_mu;
  std::mt19937_64 rng;
  std::mutex expiry_mu;
  int64_t next_expiry_check_ms = 0;

  int64_t NowMs() const { return clock->MonotonicNanos() / 1'000'000; }
  int64_t WallMs() const { return clock->UnixMicros() / 1000; }

  // ---- the set of groups ----
  struct Locked {
    std::shared_ptr<Group> g;
    std::unique_lock<std::mutex> lock;
  };
  std::shared_ptr<Group> NewGroup(const std::string& id) const {
    auto g = std::make_shared<Group>();
    g->id = id;
    g->empty_since_wall_ms = WallMs();
    return g;
  }
  Locked Acquire(const std::string& id, bool create) {
    for (;;) {
      std::shared_ptr<Group> g;
      {
        std::lock_guard l(map_mu);
        auto it = groups.find(id);
        if (it != groups.end()) {
          g = it->second;
        } else if (create) {
          g = NewGroup(id);
          groups.emplace(id, g);
        }
      }
      if (!g) return {};
      std::unique_lock l(g->mu);
      if (g->removed) continue;
      return {std::move(g), std::move(l)};
    }
  }
  Locked AcquireConst(const std::string& id) const { return const_cast<Impl*>(this)->Acquire(id, false); }
  std::vector<std::shared_ptr<Group>> AllGroups() const {
    std::lock_guard l(map_mu);
    std::vector<std::shared_ptr<Group>> out;
    for (const auto& [_, g] : groups) out.push_back(g);
    return out;
  }

  std::string NewMemberId(const std::string& prefix) {
    std::lock_guard l(rng_mu);
    static const char* hex = "0123456789abcdef";
    std::string id = prefix + "-";
    for (int i = 0; i < 2; ++i) {
      uint64_t v = rng();
      for (int j = 0; j < 16; ++j) id += hex[(v >> (4 * j)) & 0xf];
    }
    return id;
  }

  // ---- group helpers (caller holds g.mu) ----
  std::vector<Member*> InJoinOrder(Group& g) {
    std::vector<Member*> out;
    for (auto& [_, m] : g.members) out.push_back(&m);
    std::sort(out.begin(), out.end(), [](Member* a, Member* b) { return a->join_order < b->join_order; });
    return out;
  }
  // Protocol names every member supports, in the order of the earliest-joined member's preference.
  std::vector<std::string> Candidates(Group& g) {
    auto ms = InJoinOrder(g);
    std::vector<std::string> out;
    if (ms.empty()) return out;
    for (const auto& p : ms[0]->protocols) {
      bool all = std::all_of(ms.begin(), ms.end(), [&](Member* m) { return m->Metadata(p.name) != nullptr; });
      if (all) out.push_back(p.name);
    }
    return out;
  }
  bool SupportsProtocols(Group& g, const JoinGroupRequest& r) {
    if (r.protocol_type.empty() || r.protocols.empty()) return false;
    if (g.members.empty()) return true;
    if (r.protocol_type != g.protocol_type) return false;
    auto c = Candidates(g);
    return std::any_of(r.protocols.begin(), r.protocols.end(), [&](const JoinGroupProtocol& p) {
      return std::find(c.begin(), c.end(), p.name) != c.end();
    });
  }
  // Each member votes for its most preferred candidate; most votes wins, ties by candidate order.
  std::string SelectProtocol(Group& g) {
    auto c = Candidates(g);
    std::map<std::string, int> votes;
    for (auto& [_, m] : g.members) {
      for (const auto& p : m.protocols) {
        if (std::find(c.begin(), c.end(), p.name) != c.end()) {
          ++votes[p.name];
          break;
        }
      }
    }
    std::string best;
    int best_votes = -1;
    for (const auto& name : c) {
      if (votes[name] > best_votes) {
        best = name;
        best_votes = votes[name];
      }
    }
    return best;
  }
  int32_t MaxRebalanceTimeout(Group& g) {
    int32_t t = 0;
    for (auto& [_, m] : g.members) t = std::max(t, m.rebalance_timeout_ms);
    return t;
  }
  bool AllJoined(Group& g) {
    if (!g.pending_members.empty()) return false;
    return std::all_of(g.members.begin(), g.members.end(),
                       [](auto& kv) { return bool(kv.second.awaiting_join); });
  }
  bool FencedStatic(Group& g, const std::optional<std::string>& instance_id, const std::string& member_id) {
    if (!instance_id) return false;
    auto it = g.static_members.find(*instance_id);
    return it != g.static_members.end() && it->second != member_id;
  }
  JoinGroupResponse CurrentJoinResponse(Group& g, const Member& m, bool with_members) {
    JoinGroupResponse r;
    r.generation_id = g.generation;
    r.protocol_type = g.protocol_type;
    r.protocol_name = g.protocol;
    r.leader = g.leader;
    r.member_id = m.id;
    if (with_members) {
      for (Member* o : InJoinOrder(g)) {
        const std::string* md = o->Metadata(g.protocol);
        r.members.push_back({o->id, o->instance_id, md ? *md : std::string()});
      }
    }
    return r;
  }

  void ResetAssignments(Group& g, ErrorCode e, Deferred& d) {
    for (auto& [_, m] : g.members) {
      m.assignment.clear();
      if (m.awaiting_sync) Reply(d, std::move(m.awaiting_sync), SyncError(e));
      m.awaiting_sync = nullptr;
    }
  }

  void PrepareRebalance(Group& g, Deferred& d) {
    if (g.state == State::kCompletingRebalance) ResetAssignments(g, ErrorCode::kRebalanceInProgress, d);
    g.pending_sync.clear();
    g.sync_deadline_ms = 0;
    int64_t now = NowMs();
    int32_t timeout = MaxRebalanceTimeout(g);
    if (g.state == State::kEmpty && opt.initial_rebalance_delay_ms > 0) {
      int64_t delay = std::min<int64_t>(opt.initial_rebalance_delay_ms, timeout);
      g.initial_delay = true;
      g.initial_remaining_ms = std::max<int64_t>(timeout - delay, 0);
      g.new_member_added = false;
      g.join_deadline_ms = now + delay;
    } else {
      g.initial_delay = false;
      g.join_deadline_ms = now + timeout;
    }
    log::Debug(kCoordinatorComponent, "preparing rebalance",
               {{"group", g.id}, {"from", StateName(g.state)}, {"generation", g.generation}});
    g.state = State::kPreparingRebalance;
    TryCompleteJoin(g, d);
  }
  void MaybePrepareRebalance(Group& g, Deferred& d) {
    if (g.state == State::kStable || g.state == State::kCompletingRebalance || g.state == State::kEmpty)
      PrepareRebalance(g, d);
  }
  void TryCompleteJoin(Group& g, Deferred& d) {
    if (g.state == State::kPreparingRebalance && !g.initial_delay && AllJoined(g)) CompleteJoin(g, d);
  }

  void CompleteJoin(Group& g, Deferred& d) {
    // Dynamic members that did not rejoin in time are out; static ones stay until their session ends.
    std::vector<std::string> gone;
    for (auto& [id, m] : g.members)
      if (!m.awaiting_join && !m.instance_id) gone.push_back(id);
    for (const auto& id : gone) EraseMember(g, id, d);
    g.initial_delay = false;
    g.join_deadline_ms = 0;
    int64_t now = NowMs();
    if (g.members.empty()) {
      ++g.generation;
      g.protocol.clear();
      g.leader.clear();  // the protocol type stays, so an empty consumer group still lists as "consumer"
      g.state = State::kEmpty;
      g.empty_since_wall_ms = WallMs();
      return;
    }
    auto order = InJoinOrder(g);
    bool any_joined =
        std::any_of(order.begin(), order.end(), [](Member* m) { return bool(m->awaiting_join); });
    if (!any_joined) {
      // Only static members that have not rejoined: wait another round for them or their session end.
      g.join_deadline_ms = now + MaxRebalanceTimeout(g);
      return;
    }
    auto leader = g.members.find(g.leader);
    if (leader == g.members.end() || !leader->second.awaiting_join) {
      for (Member* m : order) {
        if (m->awaiting_join) {
          g.leader = m->id;
          break;
        }
      }
    }
    ++g.generation;
    g.protocol = SelectProtocol(g);
    g.state = State::kCompletingRebalance;
    g.pending_sync.clear();
    for (Member* m : order) {
      g.pending_sync.insert(m->id);
      if (!m->awaiting_join) continue;
      Reply(d, std::move(m->awaiting_join), CurrentJoinResponse(g, *m, m->id == g.leader));
      m->awaiting_join = nullptr;
      m->heartbeat_deadline_ms = now + m->session_timeout_ms;
    }
    g.sync_deadline_ms = now + MaxRebalanceTimeout(g);
    log::Debug(kCoordinatorComponent, "join round complete",
               {{"group", g.id},
                {"generation", g.generation},
                {"protocol", g.protocol},
                {"leader", g.leader},
                {"members", g.members.size()}});
  }

  // Takes a member out without changing the group's state; answers its waiting calls.
  void EraseMember(Group& g, const std::string& id, Deferred& d, ErrorCode e = ErrorCode::kUnknownMemberId) {
    auto it = g.members.find(id);
    if (it == g.members.end()) return;
    Member& m = it->second;
    if (m.awaiting_join) Reply(d, std::move(m.awaiting_join), JoinError(e, id));
    if (m.awaiting_sync) Reply(d, std::move(m.awaiting_sync), SyncError(e));
    if (m.instance_id) {
      auto s = g.static_members.find(*m.instance_id);
      if (s != g.static_members.end() && s->second == id) g.static_members.erase(s);
    }
    g.pending_sync.erase(id);
    g.members.erase(it);
    if (g.leader == id) {
      auto order = InJoinOrder(g);
      g.leader = order.empty() ? std::string() : order[0]->id;
    }
  }
  void RemoveMemberAndUpdateGroup(Group& g, const std::string& id, Deferred& d) {
    EraseMember(g, id, d);
    switch (g.state) {
      case State::kStable:
      case State::kCompletingRebalance:
        PrepareRebalance(g, d);
        break;
      case State::kPreparingRebalance:
        TryCompleteJoin(g, d);
        break;
      case State::kEmpty:
        break;
    }
  }

  void AddMemberAndRebalance(Group& g, const std::string& id, const JoinGroupRequest& r,
                             int32_t rebalance_timeout, JoinDone done, Deferred& d) {
    Member m;
    m.id = id;
    m.instance_id = r.group_instance_id;
    m.client_id = r.client_id;
    m.client_host = r.client_host;
    m.session_timeout_ms = r.session_timeout_ms;
    m.rebalance_timeout_ms = rebalance_timeout;
    m.protocols = r.protocols;
    m.awaiting_join = std::move(done);
    m.join_order = g.next_join_order++;
    if (g.members.empty()) g.protocol_type = r.protocol_type;
    if (g.leader.empty()) g.leader = id;
    if (r.group_instance_id) g.static_members[*r.group_instance_id] = id;
    g.members.emplace(id, std::move(m));
    if (g.state == State::kPreparingRebalance && g.initial_delay) g.new_member_added = true;
    MaybePrepareRebalance(g, d);
    TryCompleteJoin(g, d);
  }

  void UpdateMemberAndRebalance(Group& g, Member& m, const JoinGroupRequest& r, int32_t rebalance_timeout,
                                JoinDone done, Deferred& d) {
    if (m.awaiting_join)
      Reply(d, std::move(m.awaiting_join), JoinError(ErrorCode::kRebalanceInProgress, m.id));
    m.protocols = r.protocols;
    m.session_timeout_ms = r.session_timeout_ms;
    m.rebalance_timeout_ms = rebalance_timeout;
    m.client_id = r.client_id;
    m.client_host = r.client_host;
    m.awaiting_join = std::move(done);
    MaybePrepareRebalance(g, d);
    TryCompleteJoin(g, d);
  }

  // A static member rejoining without its member id (a restarted process): it takes over the old
  // member's place under a new id, and the old id is fenced.
  void ReplaceStaticMember(Group& g, const std::string& old_id, const JoinGroupRequest& r,
                           int32_t rebalance_timeout, JoinDone done, Deferred& d) {
    Member m = std::move(g.members.at(old_id));
    g.members.erase(old_id);
    if (m.awaiting_join)
      Reply(d, std::move(m.awaiting_join), JoinError(ErrorCode::kFencedInstanceId, old_id));
    if (m.awaiting_sync) Reply(d, std::move(m.awaiting_sync), SyncError(ErrorCode::kFencedInstanceId));
    m.awaiting_join = nullptr;
    m.awaiting_sync = nullptr;
    bool same = m.Matches(r.protocols);
    std::string new_id = NewMemberId(*r.group_instance_id);
    m.id = new_id;
    g.static_members[*r.group_instance_id] = new_id;
    if (g.leader == old_id) g.leader = new_id;
    if (g.pending_sync.erase(old_id)) g.pending_sync.insert(new_id);
    Member& nm = g.members.emplace(new_id, std::move(m)).first->second;
    if (g.state == State::kStable && same) {
      nm.client_id = r.client_id;
      nm.client_host = r.client_host;
      nm.session_timeout_ms = r.session_timeout_ms;
      nm.rebalance_timeout_ms = rebalance_timeout;
      nm.heartbeat_deadline_ms = NowMs() + nm.session_timeout_ms;
      Reply(d, std::move(done), CurrentJoinResponse(g, nm, nm.id == g.leader));
      return;
    }
    if (g.state == State::kCompletingRebalance) PrepareRebalance(g, d);
    UpdateMemberAndRebalance(g, nm, r, rebalance_timeout, std::move(done), d);
  }

  void Join(Group& g, const JoinGroupRequest& r, int32_t rebalance_timeout, JoinDone done, Deferred& d) {
    const bool is_static = r.group_instance_id.has_value();
    if (r.member_id.empty()) {
      if (!SupportsProtocols(g, r)) {
        Reply(d, std::move(done), JoinError(ErrorCode::kInconsistentGroupProtocol, ""));
        return;
      }
      if (is_static) {
        auto it = g.static_members.find(*r.group_instance_id);
        if (it != g.static_members.end()) {
          ReplaceStaticMember(g, it->second, r, rebalance_timeout, std::move(done), d);
          return;
        }
      }
      if (g.members.size() + g.pending_members.size() >= static_cast<size_t>(opt.max_group_size)) {
        Reply(d, std::move(done), JoinError(ErrorCode::kGroupMaxSizeReached, ""));
        return;
      }
      std::string id = NewMemberId(is_static ? *r.group_instance_id : r.client_id);
      if (r.version >= 4 && !is_static) {
        // KIP-394: the member learns its id first, so a retried join cannot leave a ghost member.
        g.pending_members[id] = NowMs() + r.session_timeout_ms;
        Reply(d, std::move(done), JoinError(ErrorCode::kMemberIdRequired, id));
        return;
      }
      AddMemberAndRebalance(g, id, r, rebalance_timeout, std::move(done), d);
      return;
    }

    if (is_static) {
      auto it = g.static_members.find(*r.group_instance_id);
      if (it == g.static_members.end()) {
        Reply(d, std::move(done), JoinError(ErrorCode::kUnknownMemberId, r.member_id));
        return;
      }
      if (it->second != r.member_id) {
        Reply(d, std::move(done), JoinError(ErrorCode::kFencedInstanceId, r.member_id));
        return;
      }
    }
    if (auto p = g.pending_members.find(r.member_id); p != g.pending_members.end()) {
      if (!SupportsProtocols(g, r)) {
        Reply(d, std::move(done), JoinError(ErrorCode::kInconsistentGroupProtocol, r.member_id));
        return;
      }
      g.pending_members.erase(p);
      AddMemberAndRebalance(g, r.member_id, r, rebalance_timeout, std::move(done), d);
      return;
    }
    auto it = g.members.find(r.member_id);
    if (it == g.members.end()) {
      Reply(d, std::move(done), JoinError(ErrorCode::kUnknownMemberId, r.member_id));
      return;
    }
    if (!SupportsProtocols(g, r)) {
      Reply(d, std::move(done), JoinError(ErrorCode::kInconsistentGroupProtocol, r.member_id));
      return;
    }
    Member& m = it->second;
    switch (g.state) {
      case State::kPreparingRebalance:
        UpdateMemberAndRebalance(g, m, r, rebalance_timeout, std::move(done), d);
        break;
      case State::kCompletingRebalance:
        if (m.Matches(r.protocols)) {
          // A retried join of the round just completed: answer it again.
          Reply(d, std::move(done), CurrentJoinResponse(g, m, m.id == g.leader));
        } else {
          UpdateMemberAndRebalance(g, m, r, rebalance_timeout, std::move(done), d);
        }
        break;
      case State::kStable:
        if (m.id == g.leader || !m.Matches(r.protocols)) {
          // The leader rejoins to make a new assignment (e.g. topics changed): rebalance.
          UpdateMemberAndRebalance(g, m, r, rebalance_timeout, std::move(done), d);
        } else {
          m.heartbeat_deadline_ms = NowMs() + m.session_timeout_ms;
          Reply(d, std::move(done), CurrentJoinResponse(g, m, false));
        }
        break;
      case State::kEmpty:
        Reply(d, std::move(done), JoinError(ErrorCode::kUnknownMemberId, r.member_id));
        break;
    }
  }

  int64_t TickGroup(Group& g, int64_t now, Deferred& d) {
    bool pending_expired = false;
    for (auto it = g.pending_members.begin(); it != g.pending_members.end();) {
      if (it->second <= now) {
        it = g.pending_members.erase(it);
        pending_expired = true;
      } else {
        ++it;
      }
    }
    if (pending_expired) TryCompleteJoin(g, d);

    if (g.state == State::kPreparingRebalance && g.join_deadline_ms != 0 && now >= g.join_deadline_ms) {
      if (g.initial_delay && g.new_member_added && g.initial_remaining_ms > 0) {
        int64_t delay = std::min<int64_t>(opt.initial_rebalance_delay_ms, g.initial_remaining_ms);
        g.initial_remaining_ms -= delay;
        g.new_member_added = false;
        g.join_deadline_ms = now + delay;
      } else {
        CompleteJoin(g, d);
      }
    }

    // A member waiting for its JoinGroup or SyncGroup answer is bounded by the join or sync deadline
    // instead of its session (Kafka's shouldKeepAlive).
    std::vector<std::string> expired;
    for (auto& [id, m] : g.members)
      if (!m.awaiting_join && !m.awaiting_sync && m.heartbeat_deadline_ms <= now) expired.push_back(id);
    for (const auto& id : expired) {
      if (!g.members.count(id)) continue;
      log::Info(kCoordinatorComponent, "member session expired", {{"group", g.id}, {"member", id}});
      RemoveMemberAndUpdateGroup(g, id, d);
    }

    if ((g.state == State::kCompletingRebalance || g.state == State::kStable) && g.sync_deadline_ms != 0 &&
        now >= g.sync_deadline_ms) {
      g.sync_deadline_ms = 0;
      std::vector<std::string> slow(g.pending_sync.begin(), g.pending_sync.end());
      for (const auto& id : slow) {
        if (!g.members.count(id)) continue;
        log::Info(kCoordinatorComponent, "member did not sync in time", {{"group", g.id}, {"member", id}});
        RemoveMemberAndUpdateGroup(g, id, d);
      }
    }
    return NextDeadline(g);
  }

  int64_t NextDeadline(Group& g) {
    int64_t next = INT64_MAX;
    for (auto& [_, t] : g.pending_members) next = std::min(next, t);
    if (g.state == State::kPreparingRebalance && g.join_deadline_ms != 0)
      next = std::min(next, g.join_deadline_ms);
    if (g.sync_deadline_ms != 0 && !g.pending_sync.empty()) next = std::min(next, g.sync_deadline_ms);
    for (auto& [_, m] : g.members)
      if (!m.awaiting_join && !m.awaiting_sync) next = std::min(next, m.heartbeat_deadline_ms);
    return next;
  }

  void ExpireOffsets() {
    int64_t wall = WallMs();
    for (const auto& gp : AllGroups()) {
      bool remove = false;
      {
        std::lock_guard l(gp->mu);
        if (gp->removed || gp->state != State::kEmpty || !gp->members.empty()) continue;
        auto offsets = store->GetGroup(gp->id);
        std::vector<TopicPartition> expired;
        for (const auto& [tp, v] : offsets) {
          bool gone = v.expire_timestamp_ms >= 0
                          ? wall >= v.expire_timestamp_ms
                          : wall - std::max(v.commit_timestamp_ms, gp->empty_since_wall_ms) >=
                                opt.offsets_retention_ms;
          if (gone) expired.push_back(tp);
        }
        if (!expired.empty()) {
          log::Info(kCoordinatorComponent, "expiring offsets",
                    {{"group", gp->id}, {"partitions", expired.size()}});
          store->Delete(gp->id, std::move(expired), nullptr);
        }
        remove = offsets.empty() && gp->pending_members.empty() && gp->inflight_commits == 0;
      }
      if (!remove) continue;
      // Remove an empty group without offsets; map lock first, then the group's, as everywhere.
      std::lock_guard ml(map_mu);
      std::lock_guard gl(gp->mu);
      if (gp->removed || gp->state != State::kEmpty || !gp->members.empty() || !gp->pending_members.empty() ||
          gp->inflight_commits != 0 || store->HasOffsets(gp->id))
        continue;
      gp->removed = true;
      groups.erase(gp->id);
    }
  }
};

GroupCoordinator::GroupCoordinator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

GroupCoordinator::~GroupCoordinator() {
  Shutdown();
  impl_->store.reset();  // completes queued commits, whose callbacks still reach their groups
}

Result<std::unique_ptr<GroupCoordinator>> GroupCoordinator::Open(CoordinatorOptions options) {
  if (options.data_dir.empty()) return InvalidArgument("streams groups: data_dir is required");
  auto impl = std::make_unique<Impl>();
  impl->opt = options;
  impl->clock = options.clock ? options.clock : &Clock::Real();
  uint64_t seed = options.random_seed;
  if (seed == 0) {
    std::random_device rd;
    seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  impl->rng.seed(seed);
  GOVERN_ASSIGN_OR_RETURN(impl->store, OffsetStore::Open(options.data_dir, options.store));
  for (const auto& id : impl->store->Groups()) impl->groups.emplace(id, impl->NewGroup(id));
  impl->next_expiry_check_ms = impl->NowMs() + options.offsets_retention_check_interval_ms;
  return std::unique_ptr<GroupCoordinator>(new GroupCoordinator(std::move(impl)));
}

FindCoordinatorResponse GroupCoordinator::FindCoordinator(const FindCoordinatorRequest& request) const {
  auto one = [&](const std::string& key) {
    FindCoordinatorResult r;
    r.key = key;
    if (request.key_type != 0) {
      r.error = ErrorCode::kInvalidRequest;
      r.error_message = "transactions are not supported";
    } else if (impl_->shut_down) {
      r.error = ErrorCode::kCoordinatorNotAvailable;
      r.error_message = "the coordinator is shutting down";
    } else {
      r.node_id = impl_->opt.node_id;
      r.host = impl_->opt.host;
      r.port = impl_->opt.port;
    }
    return r;
  };
  FindCoordinatorResponse resp;
  if (request.version >= 4) {
    for (const auto& k : request.coordinator_keys) resp.coordinators.push_back(one(k));
  } else {
    resp.result = one(request.key);
    resp.result.key.clear();
  }
  return resp;
}

void GroupCoordinator::JoinGroup(JoinGroupRequest request, JoinDone done) {
  Deferred d;
  const auto& o = impl_->opt;
  int32_t rebalance_timeout = request.version == 0 || request.rebalance_timeout_ms < 0
                                  ? request.session_timeout_ms
                                  : request.rebalance_timeout_ms;
  if (request.group_id.empty()) {
    Reply(d, std::move(done), JoinError(ErrorCode::kInvalidGroupId, request.member_id));
  } else if (request.session_timeout_ms < o.min_session_timeout_ms ||
             request.session_timeout_ms > o.max_session_timeout_ms) {
    Reply(d, std::move(done), JoinError(ErrorCode::kInvalidSessionTimeout, request.member_id));
  } else if (request.group_instance_id && !o.allow_static_membership) {
    Reply(d, std::move(done), JoinError(ErrorCode::kUnsupportedVersion, request.member_id));
  } else {
    auto lk = impl_->Acquire(request.group_id, request.member_id.empty());
    if (!lk.g) {
      Reply(d, std::move(done), JoinError(ErrorCode::kUnknownMemberId, request.member_id));
    } else if (impl_->shut_down) {
      Reply(d, std::move(done), JoinError(ErrorCode::kNotCoordinator, request.member_id));
    } else {
      impl_->Join(*lk.g, request, rebalance_timeout, std::move(done), d);
    }
  }
  Run(d);
}

void GroupCoordinator::SyncGroup(SyncGroupRequest request, SyncDone done) {
  Deferred d;
  auto fail = [&](ErrorCode e) { Reply(d, std::move(done), SyncError(e)); };
  if (request.group_id.empty()) {
    fail(ErrorCode::kInvalidGroupId);
  } else if (auto lk = impl_->Acquire(request.group_id, false); !lk.g) {
    fail(ErrorCode::kUnknownMemberId);
  } else {
    Group& g = *lk.g;
    auto it = g.members.find(request.member_id);
    if (impl_->shut_down) {
      fail(ErrorCode::kNotCoordinator);
    } else if (impl_->FencedStatic(g, request.group_instance_id, request.member_id)) {
      fail(ErrorCode::kFencedInstanceId);
    } else if (it == g.members.end()) {
      fail(ErrorCode::kUnknownMemberId);
    } else if (request.generation_id != g.generation) {
      fail(ErrorCode::kIllegalGeneration);
    } else if ((request.protocol_type && *request.protocol_type != g.protocol_type) ||
               (request.protocol_name && *request.protocol_name != g.protocol)) {
      fail(ErrorCode::kInconsistentGroupProtocol);
    } else if (g.state == State::kEmpty) {
      fail(ErrorCode::kUnknownMemberId);
    } else if (g.state == State::kPreparingRebalance) {
      fail(ErrorCode::kRebalanceInProgress);
    } else {
      Member& m = it->second;
      int64_t now = impl_->NowMs();
      g.pending_sync.erase(m.id);
      if (g.pending_sync.empty()) g.sync_deadline_ms = 0;
      m.heartbeat_deadline_ms = now + m.session_timeout_ms;
      auto answer = [&](const Member& to) {
        SyncGroupResponse r;
        r.protocol_type = g.protocol_type;
        r.protocol_name = g.protocol;
        r.assignment = to.assignment;
        return r;
      };
      if (g.state == State::kStable) {
        Reply(d, std::move(done), answer(m));
      } else {  // CompletingRebalance
        if (m.awaiting_sync) Reply(d, std::move(m.awaiting_sync), SyncError(ErrorCode::kRebalanceInProgress));
        m.awaiting_sync = std::move(done);
        if (m.id == g.leader) {
          for (auto& [id, other] : g.members) other.assignment.clear();
          for (const auto& a : request.assignments) {
            auto t = g.members.find(a.member_id);
            if (t != g.members.end()) t->second.assignment = a.assignment;
          }
          g.state = State::kStable;
          for (auto& [id, other] : g.members) {
            if (!other.awaiting_sync) continue;
            Reply(d, std::move(other.awaiting_sync), answer(other));
            other.awaiting_sync = nullptr;
            other.heartbeat_deadline_ms = now + other.session_timeout_ms;
          }
          log::Debug(kCoordinatorComponent, "group stable", {{"group", g.id}, {"generation", g.generation}});
        }
      }
    }
  }
  Run(d);
}

HeartbeatResponse GroupCoordinator::Heartbeat(const HeartbeatRequest& request) {
  HeartbeatResponse r;
  if (request.group_id.empty()) {
    r.error = ErrorCode::kInvalidGroupId;
    return r;
  }
  auto lk = impl_->Acquire(request.group_id, false);
  if (!lk.g) {
    r.error = ErrorCode::kUnknownMemberId;
    return r;
  }
  Group& g = *lk.g;
  auto it = g.members.find(request.member_id);
  if (impl_->shut_down) {
    r.error = ErrorCode::kNotCoordinator;
  } else if (impl_->FencedStatic(g, request.group_instance_id, request.member_id)) {
    r.error = ErrorCode::kFencedInstanceId;
  } else if (g.state == State::kEmpty || it == g.members.end()) {
    r.error = ErrorCode::kUnknownMemberId;
  } else if (request.generation_id != g.generation) {
    r.error = ErrorCode::kIllegalGeneration;
  } else {
    it->second.heartbeat_deadline_ms = impl_->NowMs() + it->second.session_timeout_ms;
    if (g.state == State::kPreparingRebalance) r.error = ErrorCode::kRebalanceInProgress;
  }
  return r;
}

LeaveGroupResponse GroupCoordinator::LeaveGroup(const LeaveGroupRequest& request) {
  LeaveGroupResponse resp;
  std::vector<LeaveGroupMember> leaving = request.members;
  if (request.version < 3) leaving = {LeaveGroupMember{request.member_id, std::nullopt}};
  Deferred d;
  if (request.group_id.empty()) {
    resp.error = ErrorCode::kInvalidGroupId;
  } else if (auto lk = impl_->Acquire(request.group_id, false); !lk.g) {
    for (const auto& m : leaving)
      resp.members.push_back({m.member_id, m.group_instance_id, ErrorCode::kUnknownMemberId});
  } else if (impl_->shut_down) {
    resp.error = ErrorCode::kNotCoordinator;
  } else {
    Group& g = *lk.g;
    for (const auto& lm : leaving) {
      LeaveGroupMemberResult res{lm.member_id, lm.group_instance_id, ErrorCode::kNone};
      std::string id = lm.member_id;
      if (lm.group_instance_id) {
        auto s = g.static_members.find(*lm.group_instance_id);
        if (s == g.static_members.end()) {
          res.error = ErrorCode::kUnknownMemberId;
        } else if (!id.empty() && s->second != id) {
          res.error = ErrorCode::kFencedInstanceId;
        } else {
          id = s->second;
        }
      }
      if (res.error == ErrorCode::kNone) {
        if (g.members.count(id)) {
          log::Debug(kCoordinatorComponent, "member left", {{"group", g.id}, {"member", id}});
          impl_->RemoveMemberAndUpdateGroup(g, id, d);
        } else if (g.pending_members.erase(id)) {
          impl_->TryCompleteJoin(g, d);
        } else {
          res.error = ErrorCode::kUnknownMemberId;
        }
      }
      resp.members.push_back(std::move(res));
    }
  }
  Run(d);
  if (request.version < 3) {
    if (resp.error == ErrorCode::kNone && !resp.members.empty()) resp.error = resp.members[0].error;
    resp.members.clear();
  }
  return resp;
}

void GroupCoordinator::OffsetCommit(OffsetCommitRequest request, CommitDone done) {
  OffsetCommitResponse resp;
  for (const auto& t : request.topics) {
    OffsetCommitTopicResult tr;
    tr.name = t.name;
    for (const auto& p : t.partitions) tr.partitions.push_back({p.partition_index, ErrorCode::kNone});
    resp.topics.push_back(std::move(tr));
  }
  auto fail_all = [&](ErrorCode e) {
    for (auto& t : resp.topics)
      for (auto& p : t.partitions) p.error = e;
    done(std::move(resp));
  };
  if (request.group_id.empty()) return fail_all(ErrorCode::kInvalidGroupId);

  auto lk = impl_->Acquire(request.group_id, request.generation_id < 0);
  ErrorCode err = ErrorCode::kNone;
  if (!lk.g) {
    err = ErrorCode::kIllegalGeneration;  // an unknown group with a generation: a commit from the past
  } else {
    Group& g = *lk.g;
    auto it = g.members.find(request.member_id);
    if (impl_->shut_down) {
      err = ErrorCode::kNotCoordinator;
    } else if (impl_->FencedStatic(g, request.group_instance_id, request.member_id)) {
      err = ErrorCode::kFencedInstanceId;
    } else if (request.generation_id < 0 && g.state == State::kEmpty) {
      // A standalone commit: the group only uses the coordinator to store offsets.
    } else if (it == g.members.end()) {
      err = ErrorCode::kUnknownMemberId;
    } else if (request.generation_id != g.generation) {
      err = ErrorCode::kIllegalGeneration;
    } else if (g.state == State::kCompletingRebalance) {
      err = ErrorCode::kRebalanceInProgress;
    } else {
      it->second.heartbeat_deadline_ms = impl_->NowMs() + it->second.session_timeout_ms;
    }
  }
  if (err != ErrorCode::kNone) {
    lk.lock = {};
    return fail_all(err);
  }

  int64_t wall = impl_->WallMs();
  std::vector<std::pair<TopicPartition, OffsetValue>> commits;
  for (size_t ti = 0; ti < request.topics.size(); ++ti) {
    for (size_t pi = 0; pi < request.topics[ti].partitions.size(); ++pi) {
      const auto& p = request.topics[ti].partitions[pi];
      std::string md = p.committed_metadata.value_or("");
      if (md.size() > static_cast<size_t>(impl_->opt.max_metadata_bytes) ||
          request.topics[ti].name.size() > 0xffff) {
        resp.topics[ti].partitions[pi].error = ErrorCode::kOffsetMetadataTooLarge;
        continue;
      }
      OffsetValue v;
      v.offset = p.committed_offset;
      v.leader_epoch = p.committed_leader_epoch;
      v.metadata = std::move(md);
      v.commit_timestamp_ms = wall;
      v.expire_timestamp_ms = request.retention_time_ms > 0 ? wall + request.retention_time_ms : -1;
      commits.emplace_back(TopicPartition{request.topics[ti].name, p.partition_index}, std::move(v));
    }
  }
  if (commits.empty()) {
    lk.lock = {};
    done(std::move(resp));
    return;
  }
  std::shared_ptr<Group> g = lk.g;
  ++g->inflight_commits;
  lk.lock = {};
  auto dropped = impl_->opt.topic_exists ? std::make_shared<std::set<std::string>>() : nullptr;
  impl_->store->Commit(
      request.group_id, std::move(commits),
      [g, dropped, resp = std::move(resp), done = std::move(done)](Status s) mutable {
        {
          std::lock_guard l(g->mu);
          --g->inflight_commits;
        }
        for (auto& t : resp.topics)
          for (auto& p : t.partitions) {
            if (p.error != ErrorCode::kNone) continue;
            if (dropped && dropped->count(t.name))
              p.error = ErrorCode::kUnknownTopicOrPartition;  // deleted while this commit was on its way
            else if (!s.ok())
              p.error = ErrorCode::kCoordinatorNotAvailable;
          }
        done(std::move(resp));
      },
      impl_->opt.topic_exists, dropped);
}

OffsetFetchResponse GroupCoordinator::OffsetFetch(const OffsetFetchRequest& request) const {
  OffsetFetchResponse resp;
  ErrorCode top = ErrorCode::kNone;
  if (request.group_id.empty()) top = ErrorCode::kInvalidGroupId;
  if (impl_->shut_down) top = ErrorCode::kNotCoordinator;
  auto fill = [](OffsetFetchPartition& p, const std::optional<OffsetValue>& v) {
    p.committed_offset = v ? v->offset : -1;
    p.committed_leader_epoch = v ? v->leader_epoch : -1;
    p.metadata = v ? v->metadata : std::string();
  };
  if (!request.topics) {
    if (top == ErrorCode::kNone) {
      for (const auto& [tp, v] : impl_->store->GetGroup(request.group_id)) {
        if (resp.topics.empty() || resp.topics.back().name != tp.topic) resp.topics.push_back({tp.topic, {}});
        OffsetFetchPartition p;
        p.partition_index = tp.partition;
        fill(p, v);
        resp.topics.back().partitions.push_back(std::move(p));
      }
    }
  } else {
    auto all = top == ErrorCode::kNone ? impl_->store->GetGroup(request.group_id)
                                       : std::map<TopicPartition, OffsetValue>{};
    for (const auto& t : *request.topics) {
      OffsetFetchTopicResult tr;
      tr.name = t.name;
      for (int32_t idx : t.partition_indexes) {
        OffsetFetchPartition p;
        p.partition_index = idx;
        auto it = all.find(TopicPartition{t.name, idx});
        fill(p, it == all.end() ? std::nullopt : std::optional<OffsetValue>(it->second));
        p.error = top;  // v0-v1 have no top-level error
        tr.partitions.push_back(std::move(p));
      }
      resp.topics.push_back(std::move(tr));
    }
  }
  resp.error = top;
  return resp;
}

DescribeGroupsResponse GroupCoordinator::DescribeGroups(const DescribeGroupsRequest& request) const {
  DescribeGroupsResponse resp;
  for (const auto& id : request.groups) {
    DescribedGroup dg;
    dg.group_id = id;
    dg.group_state = "Dead";
    if (impl_->shut_down) {
      dg.error = ErrorCode::kNotCoordinator;
    } else if (id.empty()) {
      dg.error = ErrorCode::kInvalidGroupId;
    } else if (auto lk = impl_->AcquireConst(id); lk.g) {
      Group& g = *lk.g;
      dg.group_state = std::string(StateName(g.state));
      dg.protocol_type = g.protocol_type;
      if (g.state == State::kStable) dg.protocol_data = g.protocol;
      for (Member* m : impl_->InJoinOrder(g)) {
        DescribedGroupMember dm;
        dm.member_id = m->id;
        dm.group_instance_id = m->instance_id;
        dm.client_id = m->client_id;
        dm.client_host = m->client_host;
        if (g.state == State::kStable) {
          const std::string* md = m->Metadata(g.protocol);
          dm.member_metadata = md ? *md : std::string();
          dm.member_assignment = m->assignment;
        }
        dg.members.push_back(std::move(dm));
      }
    }
    resp.groups.push_back(std::move(dg));
  }
  return resp;
}

ListGroupsResponse GroupCoordinator::ListGroups(const ListGroupsRequest& request) const {
  ListGroupsResponse resp;
  if (impl_->shut_down) {
    resp.error = ErrorCode::kCoordinatorNotAvailable;
    return resp;
  }
  std::set<std::string> filter;
  for (const auto& s : request.states_filter) filter.insert(Lower(s));
  for (const auto& g : impl_->AllGroups()) {
    std::lock_guard l(g->mu);
    if (g->removed) continue;
    std::string state(StateName(g->state));
    if (!filter.empty() && !filter.count(Lower(state))) continue;
    resp.groups.push_back({g->id, g->protocol_type, state});
  }
  return resp;
}

int64_t GroupCoordinator::Tick() {
  int64_t now = impl_->NowMs();
  int64_t next = INT64_MAX;
  for (const auto& g : impl_->AllGroups()) {
    Deferred d;
    {
      std::lock_guard l(g->mu);
      if (!g->removed) next = std::min(next, impl_->TickGroup(*g, now, d));
    }
    Run(d);
  }
  bool expire = false;
  {
    std::lock_guard l(impl_->expiry_mu);
    if (now >= impl_->next_expiry_check_ms) {
      impl_->next_expiry_check_ms = now + impl_->opt.offsets_retention_check_interval_ms;
      expire = true;
    }
    next = std::min(next, impl_->next_expiry_check_ms);
  }
  if (expire) impl_->ExpireOffsets();
  if (next == INT64_MAX || next > INT64_MAX / 1'000'000) return INT64_MAX;
  return next * 1'000'000;
}

void GroupCoordinator::Shutdown() {
  if (impl_->shut_down.exchange(true)) return;
  for (const auto& g : impl_->AllGroups()) {
    Deferred d;
    {
      std::lock_guard l(g->mu);
      for (auto& [id, m] : g->members) {
        if (m.awaiting_join) Reply(d, std::move(m.awaiting_join), JoinError(ErrorCode::kNotCoordinator, id));
        if (m.awaiting_sync) Reply(d, std::move(m.awaiting_sync), SyncError(ErrorCode::kNotCoordinator));
        m.awaiting_join = nullptr;
        m.awaiting_sync = nullptr;
      }
    }
    Run(d);
  }
}

void GroupCoordinator::DeleteTopicOffsets(std::vector<std::string> topics, std::function<void(Status)> done) {
  impl_->store->DeleteTopics(std::move(topics), std::move(done));
}

Status GroupCoordinator::FlushOffsets() { return impl_->store->Flush(); }

const OffsetStore& GroupCoordinator::offsets() const { return *impl_->store; }

}  // namespace govern::streams::groups
