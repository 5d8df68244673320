// The C ABI of the policy engine (govern_policy.h): engines from text or signed bundles, hot swap,
// decisions into reusable result objects, an optional decision log, stats. Every entry point catches
// everything: no exception leaves this file.
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
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
#include "policy/extensions.h"
#include "policy/limits.h"

namespace {

using govern::Code;
using govern::Result;
using govern::Status;
namespace policy = govern::policy;
namespace bundle = govern::bundle;

constexpr std::string_view kKind = "policy";
constexpr std::string_view kPoliciesFile = "policies.cedar";
constexpr std::string_view kEntitiesFile = "entities.json";
constexpr std::string_view kLimitsFile = "limits.json";
// Template links beside policies.cedar, or a Cedar JSON policy set instead of it (Decider::FromFiles).
constexpr std::string_view kLinksFile = "links.json";
constexpr std::string_view kPoliciesJsonFile = "policies.json";

// What decisions read: one bundle's policies, entities and limits (a Decider), published as a whole.
struct State {
  policy::Decider decider;
  std::vector<std::string> ids;  // policies.id(i), for the decision log
  uint64_t version = 0;          // of the bundle; 0 when made from text
  std::string org;               // of the bundle
};
using StatePtr = std::shared_ptr<const State>;

// `counters` is the engine's one table of limit counters, shared by every version it loads: a bundle swap
// keeps each limit's counters while its id stays (docs/policy-extensions.md), so a swap refills no budget.
// Errors name the file ("policies.cedar: ...", "entities.json: ...", "limits.json: ...").
Result<StatePtr> Compile(const std::map<std::string, std::string>& files, uint64_t version, std::string org,
                         std::shared_ptr<policy::LimitCounters> counters) {
  policy::LimitOptions options;
  options.counters = std::move(counters);
  GOVERN_ASSIGN_OR_RETURN(policy::Decider decider, policy::Decider::FromFiles(files, options));
  auto s = std::make_shared<State>(State{std::move(decider), {}, version, std::move(org)});
  const policy::PolicySet& ps = s->decider.policies();
  s->ids.reserve(ps.size());
  for (size_t i = 0; i < ps.size(); ++i) s->ids.push_back(ps.id(i));
  return StatePtr(std::move(s));
}

using Slot = bundle::BundleSlot<StatePtr>;

Result<StatePtr> CompileBundle(const bundle::Bundle& b, std::shared_ptr<policy::LimitCounters> counters) {
  std::map<std::string, std::string> files;
  for (std::string_view name : {kPoliciesFile, kEntitiesFile, kLimitsFile, kLinksFile, kPoliciesJsonFile}) {
    if (const std::string* f = b.File(name)) files.emplace(std::string(name), *f);
  }
  auto s = Compile(files, b.version(), b.manifest().org, std::move(counters));
  if (!s.ok()) return govern::InvalidArgument(s.status().message());
  return s;
}

// Per-engine counters, sharded so that threads deciding at once do not share a cache line.
struct alignas(64) CounterShard {
  std::atomic<uint64_t> decisions{0};
  std::atomic<uint64_t> allowed{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> approval{0};
  std::atomic<uint64_t> limited{0};
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
  // The limit counters of every version this engine loads (see Compile).
  const std::shared_ptr<policy::LimitCounters> counters = std::make_shared<policy::LimitCounters>();
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
  // Builds each request in place, reusing its storage: no JSON document and, after the first few
  // decisions, no allocation (the result is one thread's at a time, so this is that thread's builder).
  policy::RequestBuilder builder;
  policy::Outcome outcome;
  // A typed request (govern_policy_request_*): its uids, and its context as JSON text for the decision
  // log, written alongside the builder. One frame per open record or set.
  struct Frame {
    bool first = true;
    bool set = false;
  };
  bool typed_open = false;
  std::string typed_uids[6];
  std::string typed_json;
  std::vector<Frame> typed_frames;
  const char* typed_error = nullptr;  // a NULL argument given to a setter (static text)
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
  engine->slot = std::make_unique<Slot>(
      std::move(trust), std::move(options),
      [counters = engine->counters](const bundle::Bundle& b) { return CompileBundle(b, counters); });
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
  r->outcome.limit = policy::Outcome::kNoLimit;
  r->outcome.limit_error.clear();
  r->decision_id[0] = '\0';
  r->message.assign(message);
  if (engine != nullptr) engine->shards[r->shard].errors.fetch_add(1, std::memory_order_relaxed);
  return code;
}

// Decides the request in r->builder (built and checked) and records it; `uids` are the six uid parts.
int DecideBuilt(govern_policy_engine* engine, govern_policy_result* r, const State* st,
                const std::string_view (&uids)[6], std::string_view context) {
  const policy::RequestBuilder& b = r->builder;
  st->decider.Decide(b, &r->outcome);
  const policy::Outcome& o = r->outcome;
  int decision = o.decision == policy::Decision::kAllow              ? GOVERN_POLICY_ALLOW
                 : o.decision == policy::Decision::kApprovalRequired ? GOVERN_POLICY_APPROVAL_REQUIRED
                                                                     : GOVERN_POLICY_DENY;
  std::string_view limit_id;
  if (o.limit != policy::Outcome::kNoLimit) limit_id = st->decider.limits().id(static_cast<size_t>(o.limit));
  r->bundle_version = st->version;
  r->decision_id[0] = '\0';
  if (auto* rec = engine->recorder.load(std::memory_order_acquire)) {
    govern::policy::capi::DecisionFacts f;
    f.principal_type = uids[0];
    f.principal_id = uids[1];
    f.action_type = uids[2];
    f.action_id = uids[3];
    f.resource_type = uids[4];
    f.resource_id = uids[5];
    f.decision = decision;
    f.reason = &o.reason;
    f.errors = &o.errors;
    f.limit_id = limit_id;
    f.limit_error = o.limit_error;
    f.ids = &st->ids;
    f.bundle_version = st->version;
    f.organisation = st->org;
    f.context_json = context;
    Status s = rec->Record(f, r->decision_id);
    if (!s.ok())
      return DecideFailed(engine, r, GOVERN_POLICY_ERR_RECORD, "decision not recorded: " + s.ToString());
  }
  r->decision = decision;
  r->message.clear();
  CounterShard& c = engine->shards[r->shard];
  c.decisions.fetch_add(1, std::memory_order_relaxed);
  if (decision == GOVERN_POLICY_ALLOW) c.allowed.fetch_add(1, std::memory_order_relaxed);
  if (decision == GOVERN_POLICY_APPROVAL_REQUIRED) c.approval.fetch_add(1, std::memory_order_relaxed);
  if (!limit_id.empty()) c.limited.fetch_add(1, std::memory_order_relaxed);
  return GOVERN_POLICY_OK;
}

// Appends `v` as a JSON string.
void AppendJsonString(std::string_view v, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  // Runs that need no escape are appended whole.
  size_t run = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    auto c = static_cast<unsigned char>(v[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(v.data() + run, i - run);
    run = i + 1;
    char ch = v[i];
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(ch);
    } else if (c < 0x20) {
      out->append("\\u00");
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
    }
  }
  out->append(v.data() + run, v.size() - run);
  out->push_back('"');
}

// Checks a typed setter's call and writes the separator and key of a new member to the JSON text.
int TypedMember(govern_policy_result* r, const char* key) {
  if (!r->typed_open) return GOVERN_POLICY_ERR_STATE;
  if (r->typed_frames.empty()) {  // closed one too many: the builder reports it at decide
    return GOVERN_POLICY_OK;
  }
  govern_policy_result::Frame& f = r->typed_frames.back();
  if (!f.first) r->typed_json.push_back(',');
  f.first = false;
  if (!f.set) {
    if (key == nullptr) {
      r->typed_error = "a context key is NULL";
      return GOVERN_POLICY_ERR_INVALID_ARGUMENT;
    }
    AppendJsonString(key, &r->typed_json);
    r->typed_json.push_back(':');
  }
  return GOVERN_POLICY_OK;
}

template <typename F>
int TypedSet(govern_policy_result* r, const char* key, F&& f) noexcept {
  if (r == nullptr) return GOVERN_POLICY_ERR_INVALID_ARGUMENT;
  try {
    int rc = TypedMember(r, key);
    if (rc != GOVERN_POLICY_OK) return rc;
    return f(key ? std::string_view(key) : std::string_view());
  } catch (...) {
    r->typed_error = "out of memory";
    return GOVERN_POLICY_ERR_NO_MEMORY;
  }
}

// The decision log's JSON for an extension value: {"__extn":{"fn":F,"arg":TEXT}}.
void AppendExtnJson(const char* fn, std::string_view text, std::string* out) {
  out->append("{\"__extn\":{\"fn\":\"");
  out->append(fn);
  out->append("\",\"arg\":");
  AppendJsonString(text, out);
  out->append("}}");
}

// Milliseconds since the epoch as Cedar's datetime text, "YYYY-MM-DDTHH:MM:SS.mmmZ" (proleptic
// Gregorian calendar, days-to-civil after Howard Hinnant's algorithm).
std::string DatetimeText(int64_t millis) {
  int64_t ms = millis % 1000;
  int64_t secs = millis / 1000;
  if (ms < 0) {
    ms += 1000;
    secs -= 1;
  }
  int64_t days = secs / 86400;
  int64_t sod = secs % 86400;
  if (sod < 0) {
    sod += 86400;
    days -= 1;
  }
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = yoe + era * 400;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int64_t d = doy - (153 * mp + 2) / 5 + 1;
  int64_t m = mp < 10 ? mp + 3 : mp - 9;
  if (m <= 2) y += 1;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%03lldZ",
                static_cast<long long>(y), static_cast<long long>(m), static_cast<long long>(d),
                static_cast<long long>(sod / 3600), static_cast<long long>(sod / 60 % 60),
                static_cast<long long>(sod % 60), static_cast<long long>(ms));
  return buf;
}

// An extension value from its constructor's text (govern_policy_request_ip and the like).
int TypedExtension(govern_policy_result* r, const char* key, const char* fn, const char* text) noexcept {
  return TypedSet(r, key, [&](std::string_view k) {
    if (text == nullptr) {
      r->typed_error = "an extension value (text) is NULL";
      return int{GOVERN_POLICY_ERR_INVALID_ARGUMENT};
    }
    std::string_view v(text);
    AppendExtnJson(fn, v, &r->typed_json);
    switch (fn[1]) {
      case 'p':
        r->builder.Ip(k, v);
        break;
      case 'e':
        r->builder.Decimal(k, v);
        break;
      case 'a':
        r->builder.Datetime(k, v);
        break;
      default:
        r->builder.Duration(k, v);
        break;
    }
    return int{GOVERN_POLICY_OK};
  });
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
    case GOVERN_POLICY_ERR_LIMITS:
      return "limits";
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

int govern_policy_engine_from_text_with_limits(const char* policies, const char* entities_json,
                                               const char* limits_json, govern_policy_engine** out,
                                               char** error) {
  return Guard(error, [&] {
    if (out == nullptr) return Fail(error, GOVERN_POLICY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = nullptr;
    if (policies == nullptr) return Fail(error, GOVERN_POLICY_ERR_INVALID_ARGUMENT, "policies is NULL");
    std::map<std::string, std::string> files;
    files.emplace(std::string(kPoliciesFile), policies);
    if (entities_json != nullptr && *entities_json != '\0')
      files.emplace(std::string(kEntitiesFile), entities_json);
    if (limits_json != nullptr && *limits_json != '\0') files.emplace(std::string(kLimitsFile), limits_json);
    auto engine = std::make_unique<govern_policy_engine>();
    auto s = Compile(files, 0, "", engine->counters);
    if (!s.ok()) {
      // Decider::FromFiles names the file first.
      const std::string m = s.status().message();
      int code = m.rfind(kEntitiesFile, 0) == 0 ? GOVERN_POLICY_ERR_ENTITIES
                 : m.rfind(kLimitsFile, 0) == 0 ? GOVERN_POLICY_ERR_LIMITS
                                                : GOVERN_POLICY_ERR_POLICY;
      return Fail(error, code, m);
    }
    engine->Publish(std::move(*s));
    *out = engine.release();
    return int{GOVERN_POLICY_OK};
  });
}

int govern_policy_engine_from_text(const char* policies, const char* entities_json,
                                   govern_policy_engine** out, char** error) {
  return govern_policy_engine_from_text_with_limits(policies, entities_json, nullptr, out, error);
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
    std::string_view context = context_json ? std::string_view(context_json) : std::string_view();
    policy::RequestBuilder& b = r->builder;
    b.Reset()
        .Principal(principal_type, principal_id)
        .Action(action_type, action_id)
        .Resource(resource_type, resource_id);
    if (Status s = b.ContextJson(context); !s.ok())
      return DecideFailed(engine, r, GOVERN_POLICY_ERR_REQUEST, s.message());
    if (Status s = b.status(); !s.ok())
      return DecideFailed(engine, r, GOVERN_POLICY_ERR_REQUEST, s.message());
    const std::string_view uids[6] = {principal_type, principal_id,  action_type,
                                      action_id,      resource_type, resource_id};
    return DecideBuilt(engine, r, st, uids, context);
  } catch (const std::bad_alloc&) {
    return DecideFailed(engine, r, GOVERN_POLICY_ERR_NO_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return DecideFailed(engine, r, GOVERN_POLICY_ERR_INTERNAL, e.what());
  } catch (...) {
    return DecideFailed(engine, r, GOVERN_POLICY_ERR_INTERNAL, "internal error");
  }
}

int govern_policy_request_begin(govern_policy_result* r, const char* principal_type, const char* principal_id,
                                const char* action_type, const char* action_id, const char* resource_type,
                                const char* resource_id) {
  if (r == nullptr) return GOVERN_POLICY_ERR_INVALID_ARGUMENT;
  try {
    r->typed_open = true;
    r->typed_error = nullptr;
    r->typed_json.assign("{");
    r->typed_frames.assign(1, govern_policy_result::Frame{});
    const char* parts[6] = {principal_type, principal_id, action_type, action_id, resource_type, resource_id};
    for (int i = 0; i < 6; ++i) {
      if (parts[i] == nullptr) {
        r->typed_error = "an entity type or id is NULL";
        return GOVERN_POLICY_ERR_INVALID_ARGUMENT;
      }
      r->typed_uids[i].assign(parts[i]);
    }
    r->builder.Reset()
        .Principal(r->typed_uids[0], r->typed_uids[1])
        .Action(r->typed_uids[2], r->typed_uids[3])
        .Resource(r->typed_uids[4], r->typed_uids[5]);
    return GOVERN_POLICY_OK;
  } catch (...) {
    r->typed_error = "out of memory";
    return GOVERN_POLICY_ERR_NO_MEMORY;
  }
}

int govern_policy_request_string(govern_policy_result* r, const char* key, const char* value) {
  return TypedSet(r, key, [&](std::string_view k) {
    if (value == nullptr) {
      r->typed_error = "a string value is NULL";
      return int{GOVERN_POLICY_ERR_INVALID_ARGUMENT};
    }
    std::string_view v(value);
    AppendJsonString(v, &r->typed_json);
    r->builder.String(k, v);
    return int{GOVERN_POLICY_OK};
  });
}

int govern_policy_request_long(govern_policy_result* r, const char* key, int64_t value) {
  return TypedSet(r, key, [&](std::string_view k) {
    char buf[24];
    auto end = std::to_chars(buf, buf + sizeof buf, value).ptr;
    r->typed_json.append(buf, static_cast<size_t>(end - buf));
    r->builder.Long(k, value);
    return int{GOVERN_POLICY_OK};
  });
}

int govern_policy_request_bool(govern_policy_result* r, const char* key, int value) {
  return TypedSet(r, key, [&](std::string_view k) {
    r->typed_json.append(value ? "true" : "false");
    r->builder.Bool(k, value != 0);
    return int{GOVERN_POLICY_OK};
  });
}

int govern_policy_request_ip(govern_policy_result* r, const char* key, const char* text) {
  return TypedExtension(r, key, "ip", text);
}
int govern_policy_request_decimal(govern_policy_result* r, const char* key, const char* text) {
  return TypedExtension(r, key, "decimal", text);
}
int govern_policy_request_datetime(govern_policy_result* r, const char* key, const char* text) {
  return TypedExtension(r, key, "datetime", text);
}
int govern_policy_request_duration(govern_policy_result* r, const char* key, const char* text) {
  return TypedExtension(r, key, "duration", text);
}

int govern_policy_request_decimal_scaled(govern_policy_result* r, const char* key, int64_t ten_thousandths) {
  return TypedSet(r, key, [&](std::string_view k) {
    AppendExtnJson("decimal", policy::DecimalToString(ten_thousandths), &r->typed_json);
    r->builder.DecimalScaled(k, ten_thousandths);
    return int{GOVERN_POLICY_OK};
  });
}

int govern_policy_request_datetime_millis(govern_policy_result* r, const char* key, int64_t millis) {
  return TypedSet(r, key, [&](std::string_view k) {
    AppendExtnJson("datetime", DatetimeText(millis), &r->typed_json);
    r->builder.DatetimeMillis(k, millis);
    return int{GOVERN_POLICY_OK};
  });
}

int govern_policy_request_duration_millis(govern_policy_result* r, const char* key, int64_t millis) {
  return TypedSet(r, key, [&](std::string_view k) {
    char buf[32];
    auto end = std::to_chars(buf, buf + sizeof buf, millis).ptr;
    std::string text(buf, static_cast<size_t>(end - buf));
    text += "ms";
    AppendExtnJson("duration", text, &r->typed_json);
    r->builder.DurationMillis(k, millis);
    return int{GOVERN_POLICY_OK};
  });
}

int govern_policy_request_entity(govern_policy_result* r, const char* key, const char* type, const char* id) {
  return TypedSet(r, key, [&](std::string_view k) {
    if (type == nullptr || id == nullptr) {
      r->typed_error = "an entity type or id is NULL";
      return int{GOVERN_POLICY_ERR_INVALID_ARGUMENT};
    }
    r->typed_json.append("{\"__entity\":{\"type\":");
    AppendJsonString(type, &r->typed_json);
    r->typed_json.append(",\"id\":");
    AppendJsonString(id, &r->typed_json);
    r->typed_json.append("}}");
    r->builder.Entity(k, type, id);
    return int{GOVERN_POLICY_OK};
  });
}

int govern_policy_request_begin_record(govern_policy_result* r, const char* key) {
  return TypedSet(r, key, [&](std::string_view k) {
    r->typed_json.push_back('{');
    r->typed_frames.push_back({true, false});
    r->builder.BeginRecord(k);
    return int{GOVERN_POLICY_OK};
  });
}

int govern_policy_request_begin_set(govern_policy_result* r, const char* key) {
  return TypedSet(r, key, [&](std::string_view k) {
    r->typed_json.push_back('[');
    r->typed_frames.push_back({true, true});
    r->builder.BeginSet(k);
    return int{GOVERN_POLICY_OK};
  });
}

int govern_policy_request_end(govern_policy_result* r) {
  if (r == nullptr) return GOVERN_POLICY_ERR_INVALID_ARGUMENT;
  if (!r->typed_open) return GOVERN_POLICY_ERR_STATE;
  // The top frame (the context itself) is closed by govern_policy_decide_request; an End too many is
  // left to the builder, which reports it at decide.
  if (r->typed_frames.size() > 1) {
    r->typed_json.push_back(r->typed_frames.back().set ? ']' : '}');
    r->typed_frames.pop_back();
  }
  r->builder.End();
  return GOVERN_POLICY_OK;
}

int govern_policy_decide_request(govern_policy_engine* engine, govern_policy_result* r) {
  if (r == nullptr) return GOVERN_POLICY_ERR_INVALID_ARGUMENT;
  try {
    if (engine == nullptr)
      return DecideFailed(engine, r, GOVERN_POLICY_ERR_INVALID_ARGUMENT, "engine is NULL");
    if (!r->typed_open) {
      return DecideFailed(engine, r, GOVERN_POLICY_ERR_STATE,
                          "no request begun (govern_policy_request_begin), or it was decided already");
    }
    r->typed_open = false;
    if (r->typed_error != nullptr)
      return DecideFailed(engine, r, GOVERN_POLICY_ERR_INVALID_ARGUMENT, r->typed_error);
    if (Status s = r->builder.status(); !s.ok())
      return DecideFailed(engine, r, GOVERN_POLICY_ERR_REQUEST, s.message());
    r->typed_json.push_back('}');
    const State* st = Current(engine, r);
    const std::string_view uids[6] = {r->typed_uids[0], r->typed_uids[1], r->typed_uids[2],
                                      r->typed_uids[3], r->typed_uids[4], r->typed_uids[5]};
    return DecideBuilt(engine, r, st, uids, r->typed_json);
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
  for (const auto& [k, v] : r->state->decider.policies().annotations(r->outcome.reason[i])) {
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

const char* govern_policy_result_limit(const govern_policy_result* r) {
  if (r == nullptr || !r->state || r->outcome.limit == policy::Outcome::kNoLimit) return nullptr;
  return r->state->decider.limits().id(static_cast<size_t>(r->outcome.limit)).c_str();
}

const char* govern_policy_result_limit_error(const govern_policy_result* r) {
  if (r == nullptr || r->outcome.limit_error.empty()) return nullptr;
  return r->outcome.limit_error.c_str();
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
        return engine->state.load()->decider.policies().size();
      case GOVERN_POLICY_STAT_ENTITIES:
        return engine->state.load()->decider.entities().size();
      case GOVERN_POLICY_STAT_LIMITS:
        return engine->state.load()->decider.limits().size();
      case GOVERN_POLICY_STAT_APPROVAL_REQUIRED:
        return sum(&CounterShard::approval);
      case GOVERN_POLICY_STAT_LIMITED:
        return sum(&CounterShard::limited);
      case GOVERN_POLICY_STAT_LIMIT_COUNTERS:
        return engine->counters->size();
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
