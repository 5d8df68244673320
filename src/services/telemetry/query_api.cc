// The telemetry query HTTP API: parameter parsing, the worker threads that run queries off the event
// loop, redaction and the JSON answer.
#include "services/telemetry/query_api.h"

#include <charconv>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/log.h"
#include "base/thread_name.h"
#include "net/problem.h"
#include "services/telemetry/json_text.h"
#include "services/telemetry/ndjson.h"
#include "services/telemetry/query.h"

namespace govern::telemetry {
namespace {

Status BadParam(std::string_view name, std::string_view what) {
  return InvalidArgument(std::string(name) + ": " + std::string(what));
}

// RFC 3339, or an integer of unix nanoseconds.
Result<int64_t> ParseTime(std::string_view name, std::string_view v) {
  if (v.empty()) return BadParam(name, "empty");
  bool integer = true;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!(v[i] >= '0' && v[i] <= '9') && !(i == 0 && v[i] == '-' && v.size() > 1)) integer = false;
  }
  if (integer) {
    int64_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size()) return BadParam(name, "out of range");
    return n;
  }
  Result<int64_t> t = ParseRfc3339Nanos(v);
  if (!t.ok()) return BadParam(name, "not RFC 3339 or unix nanoseconds: " + t.status().message());
  return t;
}

int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::numeric_limits<int64_t>::min();
  return r;
}

net::Response Problem(int status, std::string detail, const std::string& path) {
  net::Response r = net::ProblemResponse(status, std::move(detail), path);
  if (status == 401) r.headers.Set("WWW-Authenticate", "Bearer");
  if (status == 503) r.headers.Set("Retry-After", "1");
  return r;
}

// Maps an error to its HTTP answer. Server-side failures are logged and answered without detail.
net::Response ErrorResponse(const Status& s, const std::string& path) {
  switch (s.code()) {
    case Code::kInvalidArgument:
      return Problem(400, s.message(), path);
    case Code::kUnauthenticated:
      return Problem(401, "missing, unknown or revoked bearer key", path);
    case Code::kPermissionDenied:
      return Problem(403, "the key does not have the query scope", path);
    case Code::kUnavailable:
    case Code::kDeadlineExceeded:
    case Code::kResourceExhausted:
      log::Warn("telemetry.query", "query unavailable", {{"error", s.ToString()}});
      return Problem(503, "the query store is unavailable; retry", path);
    default:
      log::Error("telemetry.query", "query failed", {{"error", s.ToString()}});
      return Problem(500, "internal error", path);
  }
}

// Fixed-size pool of threads with a bounded queue.
class Workers {
 public:
  Workers(int threads, size_t max_queued) : max_queued_(max_queued) {
    for (int i = 0; i < std::max(threads, 1); ++i)
      threads_.emplace_back([this] {
        NameThisThread("tel-query");
        Run();
      });
  }
  ~Workers() { Stop(); }
  // Lets running jobs finish, drops queued ones and joins. Idempotent; never from a worker thread.
  void Stop() {
    std::deque<std::function<void()>> dropped;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      dropped.swap(queue_);
    }
    cv_.notify_all();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
    // `dropped` goes here, on the stopping thread: jobs hold the API's state, which must not be
    // released on a worker that is being joined.
  }
  // False when the queue is full or the pool is stopping.
  bool Submit(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_ || queue_.size() >= max_queued_) return false;
      queue_.push_back(std::move(job));
    }
    cv_.notify_one();
    return true;
  }

 private:
  void Run() {
    while (true) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job();
    }
  }

  size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// A request travelling from the event loop through the key check to a worker. std::function needs
// copyable callables, and Request and Responder are move-only: they travel behind a shared_ptr.
struct Pending {
  net::Request req;
  net::Responder resp;
};

}  // namespace

Result<ParsedQuery> ParseQueryParams(const std::vector<std::pair<std::string, std::string>>& params,
                                     int64_t now_ns, const QueryApiOptions& options) {
  ParsedQuery p;
  EventQuery& q = p.query;
  q.limit = options.default_limit;
  std::optional<int64_t> from, to;
  bool seen_type = false, seen_order = false, seen_limit = false;
  auto once = [](bool* seen, std::string_view name) -> Status {
    if (*seen) return BadParam(name, "given more than once");
    *seen = true;
    return OkStatus();
  };
  for (const auto& [name, value] : params) {
    if (name == "from" || name == "to") {
      std::optional<int64_t>& slot = name == "from" ? from : to;
      if (slot) return BadParam(name, "given more than once");
      GOVERN_ASSIGN_OR_RETURN(slot, ParseTime(name, value));
    } else if (name == "type") {
      GOVERN_RETURN_IF_ERROR(once(&seen_type, name));
      if (value.empty() || value.size() > 256) return BadParam(name, "must be 1 to 256 bytes");
      q.type = value;
    } else if (name == "attr") {
      if (q.attributes.size() >= options.max_attribute_filters) {
        return BadParam(name, "more than " + std::to_string(options.max_attribute_filters) + " filters");
      }
      size_t colon = value.find(':');
      if (colon == std::string::npos || colon == 0) {
        return BadParam(name, "must be key:json_value (attr=http.status:200, attr=method:\"GET\")");
      }
      Attribute a{value.substr(0, colon), value.substr(colon + 1)};
      auto parsed = nlohmann::json::parse(a.value_json, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_discarded()) {
        return BadParam(name, "the value of \"" + a.key + "\" is not JSON (a string needs quotes: \"GET\")");
      }
      q.attributes.push_back(std::move(a));
    } else if (name == "order") {
      GOVERN_RETURN_IF_ERROR(once(&seen_order, name));
      if (value == "newest") {
        q.newest_first = true;
      } else if (value == "oldest") {
        q.newest_first = false;
      } else {
        return BadParam(name, "must be newest or oldest");
      }
    } else if (name == "limit") {
      GOVERN_RETURN_IF_ERROR(once(&seen_limit, name));
      size_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > options.max_limit) {
        return BadParam(name, "must be an integer from 1 to " + std::to_string(options.max_limit));
      }
      q.limit = n;
    } else if (name == "cursor") {
      if (p.cursor) return BadParam(name, "given more than once");
      if (value.empty()) return BadParam(name, "empty");
      p.cursor = value;
    } else {
      return BadParam(name, "unknown parameter (from, to, type, attr, order, limit, cursor)");
    }
  }
  const int64_t window = options.default_window.count();
  p.time_range_given = from || to;
  if (to) {
    q.to_ns = *to;
    q.from_ns = from ? *from : SaturatingSub(*to, window);
  } else {
    q.from_ns = from ? *from : SaturatingSub(now_ns, window);
    // No upper bound: events stamped slightly ahead of this clock still show up.
    q.to_ns = std::numeric_limits<int64_t>::max();
  }
  if (q.from_ns >= q.to_ns) return BadParam("from", "must be before to");
  return p;
}

void AppendEventJson(const RedactedEvent& r, std::string* out) {
  const Event& e = r.stored.event;
  auto str = [&](std::string_view name, const std::string& v, uint32_t field) {
    out->append(",\"").append(name).append("\":");
    if (r.null_fields & field) {
      out->append("null");
    } else {
      internal::AppendJsonString(*out, v);
    }
  };
  auto attrs = [&](std::string_view name, const std::string& object) {
    out->append(",\"").append(name).append("\":").append(object.empty() ? "{}" : object);
  };
  out->append("{\"id\":");
  internal::AppendJsonString(*out, e.id);
  out->append(",\"time\":\"").append(FormatRfc3339Nanos(e.time_unix_nanos));
  out->append("\",\"time_unix_nano\":\"").append(std::to_string(e.time_unix_nanos));
  out->append("\",\"observed_time_unix_nano\":\"").append(std::to_string(e.observed_unix_nanos)).append("\"");
  str("type", e.type, RedactedEvent::kType);
  str("severity_text", e.severity_text, RedactedEvent::kSeverityText);
  out->append(",\"severity_number\":").append(std::to_string(e.severity_number));
  out->append(",\"body\":");
  if (e.body_kind == BodyKind::kNone || (r.null_fields & RedactedEvent::kBody)) {
    out->append("null");
  } else if (e.body_kind == BodyKind::kString) {
    internal::AppendJsonString(*out, e.body);
  } else {
    out->append(e.body.empty() ? "null" : e.body);
  }
  attrs("attributes", r.attributes_json);
  attrs("resource_attributes", r.resource_attributes_json);
  str("service_name", e.service_name, RedactedEvent::kServiceName);
  str("scope_name", e.scope_name, RedactedEvent::kScopeName);
  str("scope_version", e.scope_version, RedactedEvent::kScopeVersion);
  str("trace_id", e.trace_id_hex, 0);
  str("span_id", e.span_id_hex, 0);
  out->append(",\"flags\":").append(std::to_string(e.flags));
  out->append(",\"dropped_attributes_count\":").append(std::to_string(e.dropped_attributes_count));
  out->append(",\"redacted\":").append(r.redacted ? "true" : "false");
  out->push_back('}');
}

struct QueryApi::Impl {
  db::Pool* pool;
  ArchiveReader* archive;
  QueryApiOptions options;
  DlpPolicyCache policies;
  Workers workers;

  Impl(db::Pool* p, ArchiveReader* a, QueryApiOptions o)
      : pool(p),
        archive(a),
        options(o),
        policies(o.clock, o.policy_recheck),
        workers(o.workers, o.max_queued) {}

  Result<std::shared_ptr<const dlp::RuleSet>> Rules(const std::string& org) {
    GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease conn, pool->Checkout());
    return policies.Get(*conn, org);
  }

  Result<std::string> Events(const EventQuery& q) {
    GOVERN_ASSIGN_OR_RETURN(std::shared_ptr<const dlp::RuleSet> rules, Rules(q.org));
    GOVERN_ASSIGN_OR_RETURN(QueryPage page, RunQuery(pool, archive, q));
    std::string body = "{\"events\":[";
    body.reserve(page.events.size() * 700 + 64);
    for (size_t i = 0; i < page.events.size(); ++i) {
      if (i > 0) body.push_back(',');
      AppendEventJson(RedactEvent(*rules, std::move(page.events[i])), &body);
    }
    body.append("],\"next_cursor\":");
    if (page.next) {
      body.push_back('"');
      body.append(EncodeCursor(q, *page.next));
      body.push_back('"');
    } else {
      body.append("null");
    }
    body.push_back('}');
    return body;
  }

  Result<std::string> GetPolicy(const std::string& org) {
    GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease conn, pool->Checkout());
    GOVERN_ASSIGN_OR_RETURN(std::optional<std::string> stored, GetDlpPolicy(*conn, org));
    if (stored) return *stored;
    std::string shown = DlpPolicyJson(dlp::Policy{}, false);
    shown.pop_back();
    return shown + ",\"updated_at\":null}";
  }

  Result<std::string> PutPolicy(const std::string& org, const std::string& body) {
    GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease conn, pool->Checkout());
    Result<std::string> stored = SetDlpPolicy(*conn, org, body);
    policies.Invalidate(org);
    return stored;
  }

  Result<std::string> DeletePolicy(const std::string& org) {
    GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease conn, pool->Checkout());
    GOVERN_ASSIGN_OR_RETURN(bool deleted, DeleteDlpPolicy(*conn, org));
    policies.Invalidate(org);
    return std::string("{\"deleted\":") + (deleted ? "true" : "false") + "}";
  }

  // Runs `work` on a worker and answers with its JSON (or its error); 503 when the queue is full.
  void Dispatch(const std::shared_ptr<Pending>& p, std::function<Result<std::string>()> work) {
    bool queued = workers.Submit([p, work = std::move(work)] {
      Result<std::string> body = work();
      if (body.ok()) {
        p->resp.Send(net::JsonResponse(std::move(body).value()));
      } else {
        p->resp.Send(ErrorResponse(body.status(), p->req.path));
      }
    });
    if (!queued) p->resp.Send(Problem(503, "too many queries waiting; retry", p->req.path));
  }
};

QueryApi::QueryApi(db::Pool* pool, ArchiveReader* archive, QueryApiOptions options)
    : impl_(std::make_shared<Impl>(pool, archive, options)) {}

QueryApi::~QueryApi() {
  // Jobs hold the Impl: stop them here so the last reference is never released on a worker thread.
  impl_->workers.Stop();
}

DlpPolicyCache& QueryApi::policies() { return impl_->policies; }

void QueryApi::Register(net::Router& router, KeyVerifier verify) {
  // Authenticates, then hands the organisation and the request to `next` (on whatever thread the
  // verifier answers on; `next` must not block: it parses and dispatches to a worker).
  auto authed = [verify](std::function<void(std::shared_ptr<Pending>, std::string org)> next) {
    return [verify, next](net::Request&& req, net::Responder resp) {
      auto p = std::make_shared<Pending>(Pending{std::move(req), std::move(resp)});
      std::optional<std::string_view> key = net::BearerToken(p->req);
      if (!key) {
        p->resp.Send(Problem(401, "Authorization: Bearer <query key> required", p->req.path));
        return;
      }
      verify(*key, [p, next](Result<std::string> org) {
        if (!org.ok()) {
          p->resp.Send(ErrorResponse(org.status(), p->req.path));
          return;
        }
        next(p, std::move(org).value());
      });
    };
  };
  std::weak_ptr<Impl> weak = impl_;
  // Handlers hold the Impl weakly: a request arriving after the QueryApi is gone gets 503, not a crash.
  auto with_impl = [weak](const std::shared_ptr<Pending>& p) -> std::shared_ptr<Impl> {
    std::shared_ptr<Impl> impl = weak.lock();
    if (!impl) p->resp.Send(Problem(503, "shutting down", p->req.path));
    return impl;
  };

  router.Add(net::Method::kGet, "/v1/query/events",
             authed([with_impl](std::shared_ptr<Pending> p, std::string org) {
               std::shared_ptr<Impl> impl = with_impl(p);
               if (!impl) return;
               int64_t now_ns = impl->options.clock->UnixMicros() * 1000;
               Result<ParsedQuery> parsed = ParseQueryParams(p->req.QueryParams(), now_ns, impl->options);
               if (!parsed.ok()) {
                 p->resp.Send(ErrorResponse(parsed.status(), p->req.path));
                 return;
               }
               EventQuery q = std::move(parsed->query);
               q.org = std::move(org);
               if (parsed->cursor) {
                 Status st = ApplyCursor(*parsed->cursor, parsed->time_range_given, &q);
                 if (!st.ok()) {
                   p->resp.Send(ErrorResponse(st, p->req.path));
                   return;
                 }
               }
               Impl* raw = impl.get();
               raw->Dispatch(p, [impl, q = std::move(q)] { return impl->Events(q); });
             }),
             {.cls = net::RequestClass::kNormal, .name = "query_events"});

  router.Add(net::Method::kGet, "/v1/query/dlp-policy",
             authed([with_impl](std::shared_ptr<Pending> p, std::string org) {
               std::shared_ptr<Impl> impl = with_impl(p);
               if (!impl) return;
               Impl* raw = impl.get();
               raw->Dispatch(p, [impl, org] { return impl->GetPolicy(org); });
             }),
             {.cls = net::RequestClass::kNormal, .name = "query_dlp_policy_get"});

  router.Add(net::Method::kPut, "/v1/query/dlp-policy",
             authed([with_impl](std::shared_ptr<Pending> p, std::string org) {
               std::shared_ptr<Impl> impl = with_impl(p);
               if (!impl) return;
               std::optional<std::string_view> ct = p->req.headers.Get("Content-Type");
               if (ct && ct->substr(0, ct->find(';')) != "application/json") {
                 p->resp.Send(Problem(415, "Content-Type must be application/json", p->req.path));
                 return;
               }
               Impl* raw = impl.get();
               raw->Dispatch(p, [impl, org, p] { return impl->PutPolicy(org, p->req.body); });
             }),
             {.cls = net::RequestClass::kNormal,
              .max_body_bytes = kMaxDlpPolicyBytes,
              .name = "query_dlp_policy_put"});

  router.Add(net::Method::kDelete, "/v1/query/dlp-policy",
             authed([with_impl](std::shared_ptr<Pending> p, std::string org) {
               std::shared_ptr<Impl> impl = with_impl(p);
               if (!impl) return;
               Impl* raw = impl.get();
               raw->Dispatch(p, [impl, org] { return impl->DeletePolicy(org); });
             }),
             {.cls = net::RequestClass::kNormal, .name = "query_dlp_policy_delete"});
}

}  // namespace govern::telemetry
