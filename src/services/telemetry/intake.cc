// Intake: POST /v1/logs (OTLP/HTTP) and POST /v1/events (NDJSON) into the write-ahead log.
#include "services/telemetry/intake.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cctype>

#include "base/ascii.h"
#include "net/problem.h"
#include "services/telemetry/api_keys.h"
#include "services/telemetry/json_text.h"
#include "services/telemetry/ndjson.h"
#include "services/telemetry/otlp_json.h"
#include "services/telemetry/otlp_proto.h"
#include "services/telemetry/record.h"

namespace govern::telemetry {
namespace {

enum class Kind { kLogs, kEvents };
// The encoding of an OTLP request, which its reply mirrors. kNone: not OTLP (NDJSON route) or an
// unsupported content type (errors then go out as protobuf, OTLP's default encoding).
enum class Encoding { kProto, kJson, kNdjson, kUnsupported };

// google.rpc.Code values for OTLP error bodies.
constexpr int kRpcInvalidArgument = 3;
constexpr int kRpcResourceExhausted = 8;
constexpr int kRpcInternal = 13;
constexpr int kRpcUnavailable = 14;
constexpr int kRpcUnauthenticated = 16;

std::string_view MediaType(std::string_view content_type) {
  return TrimAscii(content_type.substr(0, content_type.find(';')));
}

Encoding EncodingOf(Kind kind, const net::Request& req) {
  std::string_view type = MediaType(req.headers.Get("Content-Type").value_or(""));
  if (kind == Kind::kLogs) {
    if (net::EqualsIgnoreCase(type, "application/x-protobuf")) return Encoding::kProto;
    if (net::EqualsIgnoreCase(type, "application/json")) return Encoding::kJson;
    return Encoding::kUnsupported;
  }
  if (net::EqualsIgnoreCase(type, "application/x-ndjson") ||
      net::EqualsIgnoreCase(type, "application/ndjson")) {
    return Encoding::kNdjson;
  }
  return Encoding::kUnsupported;
}

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// google.rpc.Status {1 code, 2 message} in the request's encoding.
net::Response OtlpStatus(Encoding enc, int http_status, int rpc_code, std::string_view message) {
  if (enc == Encoding::kJson) {
    std::string body = "{\"code\":" + std::to_string(rpc_code) + ",\"message\":";
    internal::AppendJsonString(body, message);
    body += "}";
    return net::Response(http_status, std::move(body), "application/json");
  }
  std::string body;
  body.push_back(0x08);
  PutVarint(&body, static_cast<uint64_t>(rpc_code));
  body.push_back(0x12);
  PutVarint(&body, message.size());
  body.append(message);
  return net::Response(http_status, std::move(body), "application/x-protobuf");
}

// ExportLogsServiceResponse: empty on full success, partial_success {1 rejected, 2 message} otherwise.
net::Response OtlpSuccess(Encoding enc, int64_t rejected, std::string_view message) {
  if (enc == Encoding::kJson) {
    std::string body = "{}";
    if (rejected > 0) {
      body = "{\"partialSuccess\":{\"rejectedLogRecords\":\"" + std::to_string(rejected) +
             "\",\"errorMessage\":";
      internal::AppendJsonString(body, message);
      body += "}}";
    }
    return net::Response(200, std::move(body), "application/json");
  }
  std::string body;
  if (rejected > 0) {
    std::string inner;
    inner.push_back(0x08);
    PutVarint(&inner, static_cast<uint64_t>(rejected));
    inner.push_back(0x12);
    PutVarint(&inner, message.size());
    inner.append(message);
    body.push_back(0x0a);
    PutVarint(&body, inner.size());
    body += inner;
  }
  return net::Response(200, std::move(body), "application/x-protobuf");
}

net::Response EventsSuccess(std::span<const Event> events) {
  std::string body = "{\"accepted\":" + std::to_string(events.size()) + ",\"ids\":[";
  body.reserve(body.size() + events.size() * 68 + 2);
  for (size_t i = 0; i < events.size(); ++i) {
    if (i > 0) body.push_back(',');
    internal::AppendJsonString(body, events[i].id);
  }
  body += "]}";
  return net::Response(200, std::move(body), "application/json");
}

// One request on its way through intake. Shared by the callbacks it passes through (KeyCache, WAL).
struct Call {
  Kind kind;
  Encoding enc;
  net::Request req;
  net::Responder resp;
  net::Response success;  // built before the append, so the WAL's sync thread only sends it
  size_t events = 0;
};

}  // namespace

struct Intake::Impl {
  IntakeOptions opt;
  IntakeDeps deps;
  const Clock* clock;
  std::unique_ptr<net::MetricsRegistry> own_metrics;
  net::Counter* events_accepted;
  net::Counter* batches_accepted;
  net::Counter* records_rejected;
  net::Counter* events_refused;
  std::atomic<uint64_t> requests_refused{0};
  net::MetricsRegistry* metrics;

  net::Counter& Refused(std::string_view reason) {
    return metrics->AddCounter("telemetry_intake_requests_refused_total",
                               "Intake requests answered with an error, by reason.",
                               {{"reason", std::string(reason)}});
  }
  net::Counter* refused_unauthenticated;
  net::Counter* refused_media_type;
  net::Counter* refused_bad_request;
  net::Counter* refused_too_large;
  net::Counter* refused_lag;
  net::Counter* refused_disk_full;
  net::Counter* refused_busy;
  net::Counter* refused_internal;

  void Init() {
    metrics = deps.metrics;
    if (metrics == nullptr) {
      own_metrics = std::make_unique<net::MetricsRegistry>();
      metrics = own_metrics.get();
    }
    events_accepted = &metrics->AddCounter("telemetry_intake_events_accepted_total",
                                           "Events acknowledged (durable in the write-ahead log).");
    batches_accepted = &metrics->AddCounter("telemetry_intake_batches_accepted_total",
                                            "Requests whose events were acknowledged.");
    records_rejected = &metrics->AddCounter("telemetry_intake_records_rejected_total",
                                            "OTLP log records left out as unusable (partial success).");
    events_refused = &metrics->AddCounter("telemetry_intake_events_refused_total",
                                          "Decoded events refused because they could not be made durable "
                                          "(disk full, queue full, log failed); the sender retries them.");
    refused_unauthenticated = &Refused("unauthenticated");
    refused_media_type = &Refused("unsupported_media_type");
    refused_bad_request = &Refused("bad_request");
    refused_too_large = &Refused("too_large");
    refused_lag = &Refused("ingest_lag");
    refused_disk_full = &Refused("disk_full");
    refused_busy = &Refused("busy");
    refused_internal = &Refused("internal");
  }

  // Sends an error in the route's error format (google.rpc.Status for OTLP, problem+json for NDJSON).
  void Fail(Call& c, net::Counter* why, int status, int rpc_code, std::string_view message,
            int retry_after_seconds = 0) {
    why->Inc();
    requests_refused.fetch_add(1, std::memory_order_relaxed);
    net::Response r = c.kind == Kind::kLogs ? OtlpStatus(c.enc, status, rpc_code, message)
                                            : net::ProblemResponse(status, std::string(message), c.req.path);
    if (retry_after_seconds > 0) r.headers.Set("Retry-After", std::to_string(retry_after_seconds));
    if (status == 401) r.headers.Set("WWW-Authenticate", "Bearer");
    c.resp.Send(std::move(r));
  }

  void Handle(Kind kind, net::Request&& req, net::Responder resp) {
    auto c = std::make_shared<Call>();
    c->kind = kind;
    c->enc = EncodingOf(kind, req);
    c->req = std::move(req);
    c->resp = std::move(resp);
    std::optional<std::string_view> bearer = net::BearerToken(c->req);
    if (!bearer) {
      Fail(*c, refused_unauthenticated, 401, kRpcUnauthenticated,
           "missing API key: send 'Authorization: Bearer <ingest key>'");
      return;
    }
    std::string_view key = *bearer;
    VerifyKey(*deps.keys, key, kIngestScope, [this, c](Result<std::string> org) {
      if (!org.ok()) {
        if (org.status().code() == Code::kUnavailable) {
          Fail(*c, refused_busy, 503, kRpcUnavailable, "API keys cannot be checked right now; retry later",
               opt.retry_after_busy_seconds);
        } else {
          Fail(*c, refused_unauthenticated, 401, kRpcUnauthenticated, org.status().message());
        }
        return;
      }
      Process(c, *org);
    });
  }

  void Process(const std::shared_ptr<Call>& c, const std::string& org) {
    const int64_t now_ns = clock->UnixMicros() * 1000;
    // Refuse before doing any work when ingest is behind: the data would only wait in the WAL longer.
    if (deps.oldest_unstored_received_ns) {
      int64_t oldest = deps.oldest_unstored_received_ns();
      if (oldest > 0 && now_ns - oldest > std::chrono::nanoseconds(opt.max_ingest_lag).count()) {
        Fail(*c, refused_lag, 429, kRpcResourceExhausted,
             "ingest is behind (the oldest unstored batch is " +
                 std::to_string((now_ns - oldest) / 1'000'000) + " ms old); retry later",
             opt.retry_after_lag_seconds);
        return;
      }
    }
    if (c->enc == Encoding::kUnsupported) {
      std::string type(c->req.headers.Get("Content-Type").value_or("(none)"));
      Fail(*c, refused_media_type, 415, kRpcInvalidArgument,
           "unsupported Content-Type '" + type.substr(0, 100) + "': use " +
               (c->kind == Kind::kLogs ? "application/x-protobuf or application/json"
                                       : "application/x-ndjson"));
      return;
    }
    std::string inflated;
    std::string_view body = c->req.body;
    if (auto ce = c->req.headers.Get("Content-Encoding");
        ce && !ce->empty() && !net::EqualsIgnoreCase(*ce, "identity")) {
      if (!net::EqualsIgnoreCase(MediaType(*ce), "gzip")) {
        Fail(*c, refused_media_type, 415, kRpcInvalidArgument,
             "unsupported Content-Encoding '" + std::string(ce->substr(0, 100)) + "': use gzip or none");
        return;
      }
      auto r = InflateGzip(body, opt.max_batch_bytes);
      if (!r.ok()) {
        if (r.status().code() == Code::kResourceExhausted) {
          Fail(*c, refused_too_large, 413, kRpcInvalidArgument, r.status().message());
        } else {
          Fail(*c, refused_bad_request, 400, kRpcInvalidArgument, r.status().message());
        }
        return;
      }
      inflated = std::move(*r);
      body = inflated;
    }

    Result<DecodedBatch> decoded = InvalidArgument("unreachable");
    switch (c->enc) {
      case Encoding::kProto:
        decoded = DecodeOtlpLogsProto(body, org, {.max_records = static_cast<int64_t>(opt.max_batch_events)});
        break;
      case Encoding::kJson:
        decoded = DecodeOtlpLogsJson(body, org, {.max_records = static_cast<int64_t>(opt.max_batch_events)});
        break;
      default:
        decoded = DecodeNdjson(body, org, {.max_events = opt.max_batch_events});
        break;
    }
    if (!decoded.ok()) {
      Fail(*c, refused_bad_request, 400, kRpcInvalidArgument, decoded.status().message());
      return;
    }
    std::vector<Event>& events = decoded->events;
    // PostgreSQL cannot hold a NUL character: refuse such events here, not as a poison record later.
    // OTLP rejects the record (partial success); an NDJSON batch is refused whole, as for any bad line.
    for (size_t i = 0; i < events.size(); ++i) {
      std::string why = UnstorableReason(events[i]);
      if (why.empty()) continue;
      if (c->kind != Kind::kLogs) {
        Fail(*c, refused_bad_request, 400, kRpcInvalidArgument, "event " + std::to_string(i + 1) + ": " + why);
        return;
      }
      if (decoded->rejected_message.empty()) decoded->rejected_message = "log record: " + why;
      ++decoded->rejected;
      events.erase(events.begin() + static_cast<ptrdiff_t>(i));
      --i;
    }
    AssignMissingIds(events);
    for (Event& e : events) {
      if (e.time_unix_nanos == 0) e.time_unix_nanos = now_ns;
    }
    if (decoded->rejected > 0) records_rejected->Inc(static_cast<uint64_t>(decoded->rejected));
    c->success = c->kind == Kind::kLogs ? OtlpSuccess(c->enc, decoded->rejected, decoded->rejected_message)
                                        : EventsSuccess(events);
    if (events.empty()) {
      c->resp.Send(std::move(c->success));
      return;
    }
    auto records = SplitIntoRecords(events, now_ns, opt.max_record_bytes);
    if (!records.ok()) {
      Fail(*c, refused_too_large, 413, kRpcInvalidArgument, records.status().message());
      return;
    }
    c->events = events.size();
    std::vector<std::string_view> views(records->begin(), records->end());
    // The callback runs on the WAL's sync thread (or here, on an immediate error): it only sends.
    deps.log->AppendBatchAsync(
        views,
        [this, c](Result<uint64_t> seq) {
          if (seq.ok()) {
            events_accepted->Inc(c->events);
            batches_accepted->Inc();
            c->resp.Send(std::move(c->success));
            return;
          }
          events_refused->Inc(c->events);
          const Status& s = seq.status();
          switch (s.code()) {
            case Code::kResourceExhausted:
              Fail(*c, refused_disk_full, 503, kRpcUnavailable,
                   "the write-ahead log's disk is full; nothing of this batch was kept; retry later",
                   opt.retry_after_disk_full_seconds);
              break;
            case Code::kInvalidArgument:
              Fail(*c, refused_too_large, 413, kRpcInvalidArgument, s.message());
              break;
            default:  // Unavailable (queue full, closing), FailedPrecondition (a failed sync)
              Fail(*c, s.code() == Code::kUnavailable ? refused_busy : refused_internal, 503, kRpcUnavailable,
                   "the write-ahead log cannot take this batch now (" + s.message() +
                       "); nothing of it was kept; retry later",
                   opt.retry_after_busy_seconds);
              break;
          }
        },
        opt.durability);
  }
};

Intake::Intake(IntakeOptions options, IntakeDeps deps) : impl_(std::make_unique<Impl>()) {
  impl_->opt = options;
  impl_->deps = std::move(deps);
  impl_->clock = impl_->deps.clock != nullptr ? impl_->deps.clock : &Clock::Real();
  impl_->Init();
}

Intake::~Intake() = default;

void Intake::AddRoutes(net::Router& router) {
  Impl* impl = impl_.get();
  net::RouteOptions logs{
      .cls = net::RequestClass::kNormal, .max_body_bytes = impl->opt.max_batch_bytes, .name = "otlp_logs"};
  router.Add(
      net::Method::kPost, "/v1/logs",
      [impl](net::Request&& req, net::Responder resp) {
        impl->Handle(Kind::kLogs, std::move(req), std::move(resp));
      },
      logs);
  net::RouteOptions events{
      .cls = net::RequestClass::kNormal, .max_body_bytes = impl->opt.max_batch_bytes, .name = "events"};
  router.Add(
      net::Method::kPost, "/v1/events",
      [impl](net::Request&& req, net::Responder resp) {
        impl->Handle(Kind::kEvents, std::move(req), std::move(resp));
      },
      events);
}

Intake::Stats Intake::GetStats() const {
  return {impl_->events_accepted->Value(), impl_->batches_accepted->Value(), impl_->records_rejected->Value(),
          impl_->requests_refused.load(std::memory_order_relaxed)};
}

Result<std::string> InflateGzip(std::string_view body, size_t limit) {
  z_stream zs{};
  // 16 + MAX_WBITS: gzip wrapper only (RFC 1952), not raw or zlib streams.
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return Internal("gzip: cannot initialise zlib");
  std::string out;
  out.resize(std::min<size_t>(limit, std::max<size_t>(body.size() * 4, 64 * 1024)) + 1);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  zs.avail_in = static_cast<uInt>(body.size());
  size_t produced = 0;
  Status status;
  for (;;) {
    if (produced == out.size()) {
      if (out.size() > limit) {
        status = ResourceExhausted("request body inflates to more than " + std::to_string(limit) + " bytes");
        break;
      }
      out.resize(std::min(out.size() * 2, limit + 1));
    }
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    zs.avail_out = static_cast<uInt>(out.size() - produced);
    int rc = inflate(&zs, Z_NO_FLUSH);
    produced = out.size() - zs.avail_out;
    if (produced > limit) {
      status = ResourceExhausted("request body inflates to more than " + std::to_string(limit) + " bytes");
      break;
    }
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      // Another gzip member follows (concatenated members are one body, RFC 1952 section 2.2).
      if (inflateReset(&zs) != Z_OK) {
        status = InvalidArgument("gzip: cannot read the next member");
        break;
      }
      continue;
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      status = InvalidArgument("gzip: body ends before the compressed stream does");
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      status =
          InvalidArgument(std::string("gzip: malformed body: ") + (zs.msg != nullptr ? zs.msg : "error"));
      break;
    }
  }
  inflateEnd(&zs);
  if (!status.ok()) return status;
  out.resize(produced);
  return out;
}

Result<std::vector<std::string>> SplitIntoRecords(std::span<const Event> events, int64_t received_unix_nanos,
                                                  size_t max_record_bytes) {
  // Version byte and the two varints in front of the events, at their largest.
  constexpr size_t kHeader = 1 + 10 + 10;
  std::vector<std::string> out;
  size_t start = 0;
  while (start < events.size()) {
    size_t size = kHeader;
    size_t end = start;
    while (end < events.size()) {
      size_t one = EncodedEventSize(events[end]);
      if (size + one > max_record_bytes) break;
      size += one;
      ++end;
    }
    if (end == start) {
      return InvalidArgument(
          "event " + std::to_string(start) + " is " + std::to_string(EncodedEventSize(events[start])) +
          " bytes encoded, over the write-ahead log's record limit of " + std::to_string(max_record_bytes));
    }
    std::string rec;
    EncodeRecord(events.subspan(start, end - start), received_unix_nanos, &rec);
    out.push_back(std::move(rec));
    start = end;
  }
  return out;
}

}  // namespace govern::telemetry
