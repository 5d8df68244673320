// The C ABI of the policy engine (govern_policy.h): engines from text or signed bundles, hot swap,
// decisions into reusable result objects, an optional decision log, stats. Every entry point catches
// everything: no exception leaves this file.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bundle/bundle.h"
#include "bundle/slot.h"
#include "policy/capi/govern_policy.h"
#include "policy/capi/recorder.h"
#include "policy/cedar.h"

namespace {

using govern::Code;
using govern::Result;
using govern::Status;
namespace policy = govern::policy;
namespace bundle = govern::bundle;

constexpr std::string_view kKind = "policy";
constexpr std::string_view kPoliciesFile = "policies.cedar";
constexpr std::string_view kEntitiesFile = "entities.json";

// What decisions read: one policy set with its entities, published as a whole.
struct State {
  policy::PolicySet policies;
  policy::Entities entities;
  std::vector<std::string> ids;  // policies.id(i), for the decision log
  uint64_t version = 0;          // of the bundle; 0 when made from text
  std::string org;               // of the bundle
};
using StatePtr = std::shared_ptr<const State>;

Result<StatePtr> Compile(std::string_view policies_text, std::string_view entities_json, uint64_t version,
                         std::string org) {
  GOVERN_ASSIGN_OR_RETURN(policy::PolicySet policies, policy::PolicySet::Parse(policies_text));
  policy::Entities entities;
  if (!entities_json.empty()) {
    auto e = policy::Entities::FromJson(entities_json);
    // Entity errors are told apart from policy errors by the caller through this prefix.
    if (!e.ok()) return Status(Code::kFailedPrecondition, "entities: " + e.status().message());
    entities = std::move(*e);
  }
  auto s =
      std::make_shared<State>(State{std::move(policies), std::move(entities), {}, version, std::move(org)});
  s->ids.reserve(s->policies.size());
  for (size_t i = 0; i < s->policies.size(); ++i) s->ids.push_back(s->policies.id(i));
  return StatePtr(std::move(s));
}

using Slot = bundle::BundleSlot<StatePtr>;

Result<StatePtr> CompileBundle(const bundle::Bundle& b) {
  const std::string* policies = b.File(kPoliciesFile);
  if (policies == nullptr) return govern::InvalidArgument("the bundle has no " + std::string(kPoliciesFile));
  const std::string* entities = b.File(kEntitiesFile);
  auto s = Compile(*policies, entities ? std::string_view(*entities) : std::string_view(), b.version(),
                   b.manifest().org);
  if (!s.ok()) return govern::InvalidArgument(std::string(kPoliciesFile) + ": " + s.status().message());
  return s;
}

// Per-engine counters, sharded so that threads deciding at once do not share a cache line.
struct alignas(64) CounterShard {
  std::atomic<uint64_t> decisions{0};
  std::atomic<uint64_t> allowed{0};
  std::atomic<uint64_t> errors{0};
};
constexpr unsigned kShards = 16;

std::atomic<uint64_t> g_next_engine_uid{1};
std::atomic<unsigned> g_next_shard{0};

char* Dup(std::string_view s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p == nullptr) return nullptr;
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  return p;
}

int Fail(char** error, int code, std::string_view message) {
  if (error != nullptr) *error = Dup(message);
  return code;
}

// Runs `f` with every exception turned into an error code and message.
template <typename F>
int Guard(char** error, F&& f) noexcept {
  if (error != nullptr) *error = nullptr;
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return Fail(error, GOVERN_POLICY_ERR_NO_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return Fail(error, GOVERN_POLICY_ERR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return Fail(error, GOVERN_POLICY_ERR_INTERNAL, "internal error");
  }
}

Result<std::string> ReadFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Code::kNotFound, std::string("cannot open ") + path + ": " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return Status(Code::kNotFound, std::string("cannot read ") + path);
  return s.str();
}

}  // namespace

struct govern_policy_engine {
  const uint64_t uid = g_next_engine_uid.fetch_add(1, std::memory_order_relaxed);
  // Bumped after each publication of `state`; results compare it to their cached copy.
  std::atomic<uint64_t> generation{1};
  std::atomic<StatePtr> state;
  std::unique_ptr<Slot> slot;  // bundle engines only
  std::mutex swap_mu;          // serialises swaps, so `state` follows the slot's order

  std::mutex log_mu;  // serialises open_log
  std::unique_ptr<govern::policy::capi::Recorder> recorder_owner;
  std::atomic<govern::policy::capi::Recorder*> recorder{nullptr};

  CounterShard shards[kShards];

  void Publish(StatePtr s) {
    state.store(std::move(s), std::memory_order_release);
    generation.fetch_add(1, std::memory_order_release);
  }
};

struct govern_policy_result {
  uint64_t engine_uid = 0;
  uint64_t generation = 0;
  StatePtr state;  // what the borrowed strings point into
  policy::EntityRef principal, action, resource;
  policy::Outcome outcome;
  int decision = GOVERN_POLICY_DENY;
  uint64_t bundle_version = 0;
  std::string message;
  char decision_id[37] = {};
  unsigned shard = g_next_shard.fetch_add(1, std::memory_order_relaxed) % kShards;
};

namespace {

int BundleEngine(const char* const* key_files, size_t n_keys, const char* expected_org,
                 std::string_view archive, govern_policy_engine** out, char** error) {
  bundle::TrustStore trust;
  for (size_t i = 0; i < n_keys; ++i) {
    if (key_files[i] == nullptr)
      return Fail(error, GOVERN_POLICY_ERR_INVALID_ARGUMENT, "trusted key file is NULL");
    auto text = ReadFile(key_files[i]);
    if (!text.ok()) return Fail(error, GOVERN_POLICY_ERR_IO, text.status().message());
    Status s = trust.AddText(*text);
    if (!s.ok())
      return Fail(error, GOVERN_POLICY_ERR_INVALID_ARGUMENT, std::string(key_files[i]) + ": " + s.message());
  }
  bundle::VerifyOptions options;
  options.expected_kind = std::string(kKind);
  if (expected_org != nullptr) options.expected_org = expected_org;
  auto engine = std::make_unique<govern_policy_engine>();
  engine->slot = std::make_unique<Slot>(std::move(trust), std::move(options), CompileBundle);
  bundle::Verdict v = engine->slot->Offer(archive);
  if (!v.ok()) return Fail(error, GOVERN_POLICY_ERR_BUNDLE_REFUSED, v.ToString());
  engine->Publish(engine->slot->Load()->value);
  *out = engine.release();
  return GOVERN_POLICY_OK;
}

int Swap(govern_policy_engine* engine, std::string_view archive, char** error) {
  if (!engine->slot) {
    return Fail(error, GOVERN_POLICY_ERR_NOT_SUPPORTED,
                "this engine was made from text; only bundle engines swap");
  }
  std::lock_guard<std::mutex> lock(engine->swap_mu);
  uint64_t before = engine->slot->stats().accepted;
  bundle::Verdict v = engine->slot->Offer(archive);
  if (!v.ok()) return Fail(error, GOVERN_POLICY_ERR_BUNDLE_REFUSED, v.ToString());
  if (engine->slot->stats().accepted != before) engine->Publish(engine->slot->Load()->value);
  return GOVERN_POLICY_OK;
}

// The state `result` should decide with: its cached one unless the engine published another since.
const State* Current(govern_policy_engine* engine, govern_policy_result* r) {
  uint64_t g = engine->generation.load(std::memory_order_acquire);
  if (r->engine_uid != engine->uid || r->generation != g || !r->state) {
    r->state = engine->state.load(std::memory_order_acquire);
    r->engine_uid = engine->uid;
    r->generation = g;
  }
  return r->state.get();
}

int DecideFailed(govern_policy_engine* engine, govern_policy_result* r, int code, std::string_view message) {
  r->decision = GOVERN_POLICY_DENY;
  r->outcome.reason.clear();
  r->outcome.errors.clear();
  r->decision_id[0] = '\0';
  r->message.assign(message);
  if (engine != nullptr) engine->shards[r->shard].errors.fetch_add(1, std::memory_order_relaxed);
  return code;
}

}  // namespace

extern "C" {

uint32_t govern_policy_abi_version(void) { return GOVERN_POLICY_ABI_VERSION; }

const char* govern_policy_error_name(int code) {
  switch (code) {
    case GOVERN_POLICY_OK:
      return "ok";
    case GOVERN_POLICY_ERR_INVALID_ARGUMENT:
      return "invalid_argument";
    case GOVERN_POLICY_ERR_POLICY:
      return "policy";
    case GOVERN_POLICY_ERR_ENTITIES:
      return "entities";
    case GOVERN_POLICY_ERR_REQUEST:
      return "request";
    case GOVERN_POLICY_ERR_BUNDLE_REFUSED:
      return "bundle_refused";
    case GOVERN_POLICY_ERR_IO:
      return "io";
    case GOVERN_POLICY_ERR_NOT_SUPPORTED:
      return "not_supported";
    case GOVERN_POLICY_ERR_RECORD:
      return "record";
    case GOVERN_POLICY_ERR_STATE:
      return "state";
    case GOVERN_POLICY_ERR_NO_MEMORY:
      return "no_memory";
    case GOVERN_POLICY_ERR_INTERNAL:
      return "internal";
    default:
      return "unknown";
  }
}

const char* govern_policy_decision_name(int decision) {
  switch (decision) {
    case GOVERN_POLICY_DENY:
      return "deny";
    case GOVERN_POLICY_ALLOW:
      return "allow";
    case GOVERN_POLICY_APPROVAL_REQUIRED:
      return "approval_required";
    default:
      return "unknown";
  }
}

void govern_policy_string_free(char* s) { std::free(s); }

int govern_policy_engine_from_text(const char* policies, const char* entities_json,
                                   govern_policy_engine** out, char** error) {
  return Guard(error, [&] {
    if (out == nullptr) return Fail(error, GOVERN_POLICY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = nullptr;
    if (policies == nullptr) return Fail(error, GOVERN_POLICY_ERR_INVALID_ARGUMENT, "policies is NULL");
    auto s = Compile(policies, entities_json ? entities_json : "", 0, "");
    if (!s.ok()) {
      bool entities = s.status().code() == Code::kFailedPrecondition;
      return Fail(error, entities ? GOVERN_POLICY_ERR_ENTITIES : GOVERN_POLICY_ERR_POLICY,
                  s.status().message());
    }
    auto engine = std::make_unique<govern_policy_engine>();
    engine->Publish(std::move(*s));
    *out = engine.release();
    return int{GOVERN_POLICY_OK};
  });
}

int govern_policy_engine_from_bundle_file(const char* const* trusted_key_files, size_t n_keys,
                                          const char* expected_org, const char* bundle_path,
                                          govern_policy_engine** out, char** error) {
  return Guard(error, [&] {
    if (out == nullptr) return Fail(error, GOVERN_POLICY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = nullptr;
    if (trusted_key_files == nullptr || n_keys == 0 || bundle_path == nullptr) {
      return Fail(error, GOVERN_POLICY_ERR_INVALID_ARGUMENT,
                  "give at least one trusted key file and a bundle path");
    }
    auto archive = ReadFile(bundle_path);
    if (!archive.ok()) return Fail(error, GOVERN_POLICY_ERR_IO, archive.status().message());
    return BundleEngine(trusted_key_files, n_keys, expected_org, *archive, out, error);
  });
}

int govern_policy_engine_from_bundle_bytes(const char* const* trusted_key_files, size_t n_keys,
                                           const char* expected_org, const void* bundle_bytes,
                                           size_t bundle_len, govern_policy_engine** out, char** error) {
  return Guard(error, [&] {
    if (out == nullptr) return Fail(error, GOVERN_POLICY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = nullptr;
    if (trusted_key_files == nullptr || n_keys == 0 || (bundle_bytes == nullptr && bundle_len != 0)) {
      return Fail(error, GOVERN_POLICY_ERR_INVALID_ARGUMENT,
                  "give at least one trusted key file and the bundle");
    }
    std::string_view archive(static_cast<const char*>(bundle_bytes), bundle_len);
    return BundleEngine(trusted_key_files, n_keys, expected_org, archive, out, error);
  });
}

int govern_policy_engine_swap_bundle_bytes(govern_policy_engine* engine, const void* bundle_bytes,
                                           size_t bundle_len, char** error) {
  return Guard(error, [&] {
    if (engine == nullptr || (bundle_bytes == nullptr && bundle_len != 0)) {
      return Fail(error, GOVERN_POLICY_ERR_INVALID_ARGUMENT, "engine or bundle is NULL");
    }
    return Swap(engine, std::string_view(static_cast<const char*>(bundle_bytes), bundle_len), error);
  });
}

int govern_policy_engine_swap_bundle_file(govern_policy_engine* engine, const char* bundle_path,
                                          char** error) {
  return Guard(error, [&] {
    if (engine == nullptr || bundle_path == nullptr) {
      return Fail(error, GOVERN_POLICY_ERR_INVALID_ARGUMENT, "engine or bundle path is NULL");
    }
    auto archive = ReadFile(bundle_path);
    if (!archive.ok()) return Fail(error, GOVERN_POLICY_ERR_IO, archive.status().message());
    return Swap(engine, *archive, error);
  });
}

void govern_policy_engine_free(govern_policy_engine* engine) {
  try {
    delete engine;
  } catch (...) {  // a destructor that throws would terminate anyway; keep it inside the library
  }
}

int govern_policy_engine_open_log(govern_policy_engine* engine, const char* dir, int mode, int context,
                                  const char* organisation, char** error) {
  return Guard(error, [&] {
    if (engine == nullptr || dir == nullptr || dir[0] == '\0') {
      return Fail(error, GOVERN_POLICY_ERR_INVALID_ARGUMENT, "engine or dir is NULL or empty");
    }
    if (mode != GOVERN_POLICY_LOG_BUFFERED && mode != GOVERN_POLICY_LOG_DURABLE) {
      return Fail(error, GOVERN_POLICY_ERR_INVALID_ARGUMENT, "unknown log mode " + std::to_string(mode));
    }
    if (context != GOVERN_POLICY_CONTEXT_HASH && context != GOVERN_POLICY_CONTEXT_FULL &&
        context != GOVERN_POLICY_CONTEXT_NONE) {
      return Fail(error, GOVERN_POLICY_ERR_INVALID_ARGUMENT,
                  "unknown context kind " + std::to_string(context));
    }
    std::lock_guard<std::mutex> lock(engine->log_mu);
    if (engine->recorder_owner) {
      return Fail(error, GOVERN_POLICY_ERR_STATE, "this engine already records to a decision log");
    }
    auto r = govern::policy::capi::Recorder::Open(dir, mode, context, organisation ? organisation : "");
    if (!r.ok()) {
      int code = r.status().code() == Code::kInvalidArgument ? GOVERN_POLICY_ERR_INVALID_ARGUMENT
                                                             : GOVERN_POLICY_ERR_IO;
      return Fail(error, code, "decision log " + std::string(dir) + ": " + r.status().message());
    }
    engine->recorder_owner = std::move(*r);
    engine->recorder.store(engine->recorder_owner.get(), std::memory_order_release);
    return int{GOVERN_POLICY_OK};
  });
}

int govern_policy_engine_flush_log(govern_policy_engine* engine, char** error) {
  return Guard(error, [&] {
    if (engine == nullptr) return Fail(error, GOVERN_POLICY_ERR_INVALID_ARGUMENT, "engine is NULL");
    auto* rec = engine->recorder.load(std::memory_order_acquire);
    if (rec == nullptr) return int{GOVERN_POLICY_OK};
    Status s = rec->Flush();
    return s.ok() ? int{GOVERN_POLICY_OK} : Fail(error, GOVERN_POLICY_ERR_RECORD, s.message());
  });
}

govern_policy_result* govern_policy_result_new(void) { return new (std::nothrow) govern_policy_result(); }

void govern_policy_result_free(govern_policy_result* result) { delete result; }

int govern_policy_decide(govern_policy_engine* engine, govern_policy_result* r, const char* principal_type,
                         const char* principal_id, const char* action_type, const char* action_id,
                         const char* resource_type, const char* resource_id, const char* context_json) {
  if (r == nullptr) return GOVERN_POLICY_ERR_INVALID_ARGUMENT;
  try {
    if (engine == nullptr || principal_type == nullptr || principal_id == nullptr || action_type == nullptr ||
        action_id == nullptr || resource_type == nullptr || resource_id == nullptr) {
      return DecideFailed(engine, r, GOVERN_POLICY_ERR_INVALID_ARGUMENT,
                          "engine or an entity type or id is NULL");
    }
    const State* st = Current(engine, r);
    r->principal.type.assign(principal_type);
    r->principal.id.assign(principal_id);
    r->action.type.assign(action_type);
    r->action.id.assign(action_id);
    r->resource.type.assign(resource_type);
    r->resource.id.assign(resource_id);
    std::string_view context = context_json ? std::string_view(context_json) : std::string_view();
    auto request = policy::Request::Make(r->principal, r->action, r->resource, context);
    if (!request.ok()) return DecideFailed(engine, r, GOVERN_POLICY_ERR_REQUEST, request.status().message());
    policy::Authorize(st->policies, st->entities, *request, &r->outcome);
    bool allow = r->outcome.decision == policy::Decision::kAllow;
    r->bundle_version = st->version;
    r->decision_id[0] = '\0';
    if (auto* rec = engine->recorder.load(std::memory_order_acquire)) {
      govern::policy::capi::DecisionFacts f;
      f.principal_type = principal_type;
      f.principal_id = principal_id;
      f.action_type = action_type;
      f.action_id = action_id;
      f.resource_type = resource_type;
      f.resource_id = resource_id;
      f.allow = allow;
      f.reason = &r->outcome.reason;
      f.errors = &r->outcome.errors;
      f.ids = &st->ids;
      f.bundle_version = st->version;
      f.organisation = st->org;
      f.context_json = context;
      Status s = rec->Record(f, r->decision_id);
      if (!s.ok())
        return DecideFailed(engine, r, GOVERN_POLICY_ERR_RECORD, "decision not recorded: " + s.ToString());
    }
    r->decision = allow ? GOVERN_POLICY_ALLOW : GOVERN_POLICY_DENY;
    r->message.clear();
    CounterShard& c = engine->shards[r->shard];
    c.decisions.fetch_add(1, std::memory_order_relaxed);
    if (allow) c.allowed.fetch_add(1, std::memory_order_relaxed);
    return GOVERN_POLICY_OK;
  } catch (const std::bad_alloc&) {
    return DecideFailed(engine, r, GOVERN_POLICY_ERR_NO_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return DecideFailed(engine, r, GOVERN_POLICY_ERR_INTERNAL, e.what());
  } catch (...) {
    return DecideFailed(engine, r, GOVERN_POLICY_ERR_INTERNAL, "internal error");
  }
}

int govern_policy_result_decision(const govern_policy_result* r) {
  return r ? r->decision : GOVERN_POLICY_DENY;
}

size_t govern_policy_result_reason_count(const govern_policy_result* r) {
  return r ? r->outcome.reason.size() : 0;
}

const char* govern_policy_result_reason(const govern_policy_result* r, size_t i) {
  if (r == nullptr || i >= r->outcome.reason.size() || !r->state) return nullptr;
  return r->state->ids[r->outcome.reason[i]].c_str();
}

const char* govern_policy_result_reason_annotation(const govern_policy_result* r, size_t i, const char* key) {
  if (r == nullptr || key == nullptr || i >= r->outcome.reason.size() || !r->state) return nullptr;
  for (const auto& [k, v] : r->state->policies.annotations(r->outcome.reason[i])) {
    if (k == key) return v.c_str();
  }
  return nullptr;
}

size_t govern_policy_result_error_count(const govern_policy_result* r) {
  return r ? r->outcome.errors.size() : 0;
}

const char* govern_policy_result_error_policy(const govern_policy_result* r, size_t i) {
  if (r == nullptr || i >= r->outcome.errors.size() || !r->state) return nullptr;
  return r->state->ids[r->outcome.errors[i].first].c_str();
}

const char* govern_policy_result_error_message(const govern_policy_result* r, size_t i) {
  if (r == nullptr || i >= r->outcome.errors.size()) return nullptr;
  return r->outcome.errors[i].second.c_str();
}

const char* govern_policy_result_message(const govern_policy_result* r) {
  return r ? r->message.c_str() : "";
}

uint64_t govern_policy_result_bundle_version(const govern_policy_result* r) {
  return r ? r->bundle_version : 0;
}

const char* govern_policy_result_decision_id(const govern_policy_result* r) {
  return r ? r->decision_id : "";
}

uint64_t govern_policy_engine_stat(const govern_policy_engine* engine, int stat) {
  if (engine == nullptr) return 0;
  try {
    auto sum = [&](std::atomic<uint64_t> CounterShard::*field) {
      uint64_t n = 0;
      for (const CounterShard& s : engine->shards) n += (s.*field).load(std::memory_order_relaxed);
      return n;
    };
    auto slot_stats = [&] { return engine->slot ? engine->slot->stats() : Slot::Stats{}; };
    auto log_stats = [&] {
      auto* rec = engine->recorder.load(std::memory_order_acquire);
      return rec ? rec->GetStats() : govern::policy::capi::Recorder::Stats{};
    };
    switch (stat) {
      case GOVERN_POLICY_STAT_DECISIONS:
        return sum(&CounterShard::decisions);
      case GOVERN_POLICY_STAT_ALLOWED:
        return sum(&CounterShard::allowed);
      case GOVERN_POLICY_STAT_DECIDE_ERRORS:
        return sum(&CounterShard::errors);
      case GOVERN_POLICY_STAT_BUNDLE_VERSION:
        return engine->state.load()->version;
      case GOVERN_POLICY_STAT_BUNDLES_ACCEPTED:
        return slot_stats().accepted;
      case GOVERN_POLICY_STAT_BUNDLES_REFUSED:
        return slot_stats().refused;
      case GOVERN_POLICY_STAT_BUNDLES_UNCHANGED:
        return slot_stats().unchanged;
      case GOVERN_POLICY_STAT_LOG_RECORDED:
        return log_stats().recorded;
      case GOVERN_POLICY_STAT_LOG_SYNCED:
        return log_stats().synced;
      case GOVERN_POLICY_STAT_LOG_FAILED:
        return log_stats().failed;
      case GOVERN_POLICY_STAT_LOG_REFUSED:
        return log_stats().refused;
      case GOVERN_POLICY_STAT_LOG_PENDING_BYTES:
        return log_stats().pending_bytes;
      case GOVERN_POLICY_STAT_POLICIES:
        return engine->state.load()->policies.size();
      case GOVERN_POLICY_STAT_ENTITIES:
        return engine->state.load()->entities.size();
      default:
        return 0;
    }
  } catch (...) {
    return 0;
  }
}

char* govern_policy_engine_last_refusal(const govern_policy_engine* engine) {
  if (engine == nullptr || !engine->slot) return nullptr;
  try {
    Slot::Stats s = engine->slot->stats();
    return s.last_error.empty() ? nullptr : Dup(s.last_error);
  } catch (...) {
    return nullptr;
  }
}

}  // extern "C"
