// The audit HTTP API: authorisation, the append route into the Batcher, reads on the Api's threads.
#include "services/audit/api.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/log.h"
#include "db/pool.h"
#include "net/problem.h"
#include "services/audit/entry.h"
#include "services/audit/store.h"
#include "services/job_queue.h"

namespace govern::audit_service {
namespace {

using json = nlohmann::json;

// A few threads for the database work of reads, so that an event loop never waits on PostgreSQL.
// Bounded: Post refuses work beyond max_queued (the caller answers 503).
net::Response Problem(int status, std::string detail, const net::Request& req) {
  net::Response r = net::ProblemResponse(status, std::move(detail), req.path);
  if (status == 503) r.headers.Set("Retry-After", "1");
  return r;
}

// Maps a Status to its problem response. Database trouble becomes 503 without the database's words.
net::Response StatusProblem(const Status& s, const net::Request& req) {
  // A statement PostgreSQL refused (its errors carry the SQLSTATE) is the store's trouble, never the
  // caller's, whatever class it maps to.
  if (s.message().find("sqlstate ") != std::string::npos && s.code() != Code::kNotFound) {
    log::Warn("audit", "request failed", {{"path", req.path}, {"error", s.message()}});
    return Problem(503, "the audit store is unavailable; retry later", req);
  }
  switch (s.code()) {
    case Code::kInvalidArgument:
      return Problem(400, s.message(), req);
    case Code::kUnauthenticated:
      return Problem(401, s.message(), req);
    case Code::kPermissionDenied:
      return Problem(403, s.message(), req);
    case Code::kNotFound:
      return Problem(404, s.message(), req);
    case Code::kDataLoss:
      return Problem(500, s.message(), req);
    case Code::kResourceExhausted:  // the append queue is full: refused before anything was stored
      return Problem(503, "too many appends waiting; retry later with the same idempotency keys", req);
    case Code::kUnavailable:
      if (s.message().find("retry with the same idempotency keys") != std::string::npos) {
        return Problem(
            503, "the audit store could not commit this append; retry with the same idempotency keys", req);
      }
      [[fallthrough]];
    default:
      log::Warn("audit", "request failed", {{"path", req.path}, {"error", s.message()}});
      return Problem(503, "the audit store is unavailable; retry later", req);
  }
}

Result<int64_t> IntParam(const net::Request& req, std::string_view name, int64_t min, int64_t max,
                         std::optional<int64_t> dflt) {
  auto v = req.QueryParam(name);
  if (!v) {
    if (dflt) return *dflt;
    return InvalidArgument("query parameter '" + std::string(name) + "' is required");
  }
  int64_t out = 0;
  auto r = std::from_chars(v->data(), v->data() + v->size(), out);
  if (r.ec != std::errc() || r.ptr != v->data() + v->size() || out < min || out > max) {
    return InvalidArgument("query parameter '" + std::string(name) + "' must be an integer in " +
                           std::to_string(min) + ".." + std::to_string(max));
  }
  return out;
}

std::string WithCreated(const std::string& entry_json, bool created) {
  std::string out;
  out.reserve(entry_json.size() + 16);
  out += created ? "{\"created\":true," : "{\"created\":false,";
  out.append(entry_json, 1);
  return out;
}

std::string Hashes(const std::vector<audit::Hash>& hs) {
  json a = json::array();
  for (const audit::Hash& h : hs) a.push_back(audit::HashToHex(h));
  return a.dump();
}

}  // namespace

struct Api::Impl {
  db::Pool* pool;
  Batcher* batcher;
  service_keys::KeyCache* keys;
  const CheckpointSigner* signer;
  ApiOptions opt;
  const Clock* clock;
  std::unique_ptr<services::JobQueue> jobs;
  std::atomic<int> active_exports{0};

  using Then = std::function<void(net::Request&&, net::Responder, const std::string& org)>;

  // Checks the key for the path's organisation and `scope`, then continues with `then` (on the
  // calling thread when the key is cached, else on a key cache thread).
  void Authorize(net::Request&& req, net::Responder out, std::string scope, Then then) {
    std::string org(req.Param("org"));
    if (Status s = service_keys::ValidateOrg(org); !s.ok()) return out.Send(Problem(400, s.message(), req));
    std::optional<std::string_view> bearer = net::BearerToken(req);
    if (!bearer) {
      return out.Send(Problem(401, "an API key is required (Authorization: Bearer gva_...)", req));
    }
    std::string_view key = *bearer;
    auto shared = std::make_shared<std::pair<net::Request, net::Responder>>(std::move(req), std::move(out));
    std::string key_copy(key);
    keys->Verify(key_copy, [shared, org, scope = std::move(scope),
                            then = std::move(then)](Result<service_keys::KeyIdentity> who) {
      net::Request& q = shared->first;
      net::Responder& r = shared->second;
      if (!who.ok()) {
        if (who.status().code() == Code::kUnauthenticated)
          return r.Send(Problem(401, who.status().message(), q));
        return r.Send(Problem(503, "the key store is unavailable; retry later", q));
      }
      if (who->org != org) return r.Send(Problem(403, "this key belongs to another organisation", q));
      if (who->scope != scope) {
        return r.Send(Problem(403, "this key has scope '" + who->scope + "'; this needs '" + scope + "'", q));
      }
      then(std::move(q), std::move(r), org);
    });
  }

  // Runs `body` on a read thread with a pooled connection.
  void Read(net::Request&& req, net::Responder out, const std::string& org,
            std::function<net::Response(db::Connection&, const std::string&, const net::Request&)> body) {
    auto shared = std::make_shared<std::pair<net::Request, net::Responder>>(std::move(req), std::move(out));
    bool posted = jobs->Post([this, shared, org, body = std::move(body)] {
      auto lease = pool->Checkout();
      if (!lease.ok())
        return shared->second.Send(
            Problem(503, "the audit store is unavailable; retry later", shared->first));
      shared->second.Send(body(**lease, org, shared->first));
    });
    if (!posted) shared->second.Send(Problem(503, "too many requests waiting; retry later", shared->first));
  }

  void Append(net::Request&& req, net::Responder out, const std::string& org) {
    ParseLimits limits{.max_details_bytes = opt.max_details_bytes,
                       .max_entries = opt.max_entries_per_request};
    auto header = req.headers.Get("Idempotency-Key");
    auto parsed = ParseAppendRequest(req.body, header, limits);
    if (!parsed.ok()) return out.Send(Problem(400, parsed.status().message(), req));
    bool batch = parsed->batch;
    auto shared = std::make_shared<std::pair<net::Request, net::Responder>>(std::move(req), std::move(out));
    batcher->Append(org, std::move(parsed->entries), [shared, batch](Result<AppendOutcome> r) {
      net::Request& q = shared->first;
      if (!r.ok()) return shared->second.Send(StatusProblem(r.status(), q));
      bool any_created = false;
      for (bool c : r->created) any_created = any_created || c;
      std::string body;
      if (!batch) {
        body = WithCreated(audit::FormatEntryLine(r->entries[0].entry), r->created[0]);
      } else {
        body = "{\"entries\":[";
        for (size_t i = 0; i < r->entries.size(); ++i) {
          if (i > 0) body += ',';
          body += WithCreated(audit::FormatEntryLine(r->entries[i].entry), r->created[i]);
        }
        body += "]}";
      }
      shared->second.Send(net::JsonResponse(std::move(body), any_created ? 201 : 200));
    });
  }

  static net::Response GetOne(db::Connection& c, const std::string& org, const net::Request& req) {
    int64_t seq = 0;
    std::string_view s = req.Param("seq");
    auto r = std::from_chars(s.data(), s.data() + s.size(), seq);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || seq < 1) {
      return Problem(400, "the sequence number must be a positive integer", req);
    }
    auto e = GetEntry(c, org, seq);
    if (!e.ok()) return StatusProblem(e.status(), req);
    return net::JsonResponse(audit::FormatEntryLine(e->entry));
  }

  static net::Response SearchEntries(db::Connection& c, const std::string& org, const net::Request& req) {
    SearchQuery q;
    q.actor = req.QueryParam("actor").value_or("");
    q.action = req.QueryParam("action").value_or("");
    auto limit = IntParam(req, "limit", 1, 1000, 100);
    if (!limit.ok()) return StatusProblem(limit.status(), req);
    q.limit = static_cast<int>(*limit);
    for (const char* name : {"since", "until"}) {
      if (auto t = req.QueryParam(name)) {
        auto micros = ParseRfc3339Micros(*t);
        if (!micros.ok())
          return Problem(400, std::string("'") + name + "': " + micros.status().message(), req);
        (std::string_view(name) == "since" ? q.since_micros : q.until_micros) = *micros;
      }
    }
    if (req.QueryParam("before_seq")) {
      auto b = IntParam(req, "before_seq", 1, INT64_MAX, std::nullopt);
      if (!b.ok()) return StatusProblem(b.status(), req);
      q.before_seq = *b;
    }
    if (q.actor.size() > audit::kMaxActorBytes || q.action.size() > audit::kMaxActionBytes)
      return Problem(400, "actor or action too long", req);
    auto head = GetHead(c, org);
    if (!head.ok()) return StatusProblem(head.status(), req);
    auto page = Search(c, org, q);
    if (!page.ok()) return StatusProblem(page.status(), req);
    std::string body = "{\"entries\":[";
    for (size_t i = 0; i < page->entries.size(); ++i) {
      if (i > 0) body += ',';
      body += audit::FormatEntryLine(page->entries[i].entry);
    }
    body += "]";
    if (page->next_before_seq) body += ",\"next_before_seq\":" + std::to_string(*page->next_before_seq);
    body += "}";
    return net::JsonResponse(std::move(body));
  }

  // The export, streamed: written as PostgreSQL is read (pages from one snapshot), waiting whenever the
  // client is export_buffer_bytes behind. A failure before the first line is a problem response; after
  // it, the body is cut short (no terminating chunk), which the client sees as an incomplete export.
  void ExportStream(net::Request&& req, net::Responder out, const std::string& org) {
    int max = opt.max_exports > 0 ? opt.max_exports : std::max(1, opt.read_threads / 2);
    if (active_exports.fetch_add(1) >= max) {
      active_exports.fetch_sub(1);
      return out.Send(Problem(503, "too many exports running; retry later", req));
    }
    auto shared = std::make_shared<std::pair<net::Request, net::Responder>>(std::move(req), std::move(out));
    bool posted = jobs->Post([this, shared, org] {
      RunExport(shared->first, std::move(shared->second), org);
      active_exports.fetch_sub(1);
    });
    if (!posted) {
      active_exports.fetch_sub(1);
      shared->second.Send(Problem(503, "too many requests waiting; retry later", shared->first));
    }
  }

  void RunExport(const net::Request& req, net::Responder out, const std::string& org) {
    auto lease = pool->Checkout();
    if (!lease.ok()) return out.Send(Problem(503, "the audit store is unavailable; retry later", req));
    ApiOptions::ExportStats stats;
    net::BodyStream stream;
    bool started = false;
    std::string buf;
    Status s = Export(
        **lease, org,
        [&](std::string_view line) -> Status {
          if (!started) {
            started = true;
            stream =
                out.Stream(net::Response(200, "", "application/x-ndjson"),
                           {.max_buffered_bytes = opt.export_buffer_bytes,
                            .flush_bytes = std::min<size_t>(64 * 1024, opt.export_buffer_bytes / 2 + 1)});
          }
          // Back-pressure: the snapshot waits for the client (a client that stops reading is cut off
          // by the server's write timeout, which closes the stream and ends this).
          while (!stream.writable()) {
            if (stream.closed()) return Cancelled("the client went away");
            stream.WaitWritable(std::chrono::seconds(1));
          }
          buf.assign(line);
          buf.push_back('\n');
          if (!stream.Write(buf)) return Cancelled("the client went away");
          ++stats.lines;
          stats.bytes += buf.size();
          return OkStatus();
        },
        opt.export_page_entries, &stats.pages);
    stats.peak_buffered = stream.peak_buffered();
    if (!started) {
      // Nothing was sent yet: an ordinary answer (404 for an unknown organisation, 503 ...).
      out.Send(s.ok() ? net::Response(200, "", "application/x-ndjson") : StatusProblem(s, req));
    } else if (s.ok()) {
      stream.Finish();
      stats.completed = true;
    } else {
      if (s.code() != Code::kCancelled) {
        log::Warn("audit", "export failed mid-way", {{"org", org}, {"error", s.message()}});
      }
      stream.Abort();
    }
    if (opt.on_export) opt.on_export(stats);
  }

  static net::Response Inclusion(db::Connection& c, const std::string& org, const net::Request& req) {
    auto seq = IntParam(req, "seq", 1, INT64_MAX, std::nullopt);
    if (!seq.ok()) return StatusProblem(seq.status(), req);
    std::optional<int64_t> dflt;
    if (!req.QueryParam("size")) {
      auto head = GetHead(c, org);
      if (!head.ok()) return StatusProblem(head.status(), req);
      dflt = head->size;
    }
    auto size = IntParam(req, "size", 1, INT64_MAX, dflt);
    if (!size.ok()) return StatusProblem(size.status(), req);
    auto proof = InclusionProofFor(c, org, static_cast<uint64_t>(*seq), static_cast<uint64_t>(*size));
    if (!proof.ok()) return StatusProblem(proof.status(), req);
    return net::JsonResponse(
        "{\"seq\":" + std::to_string(*seq) + ",\"leaf_index\":" + std::to_string(*seq - 1) +
        ",\"size\":" + std::to_string(*size) + ",\"leaf_hash\":\"" + audit::HashToHex(proof->leaf) +
        "\",\"root\":\"" + audit::HashToHex(proof->root) + "\",\"proof\":" + Hashes(proof->proof) + "}");
  }

  static net::Response Consistency(db::Connection& c, const std::string& org, const net::Request& req) {
    auto old_size = IntParam(req, "old", 1, INT64_MAX, std::nullopt);
    if (!old_size.ok()) return StatusProblem(old_size.status(), req);
    auto new_size = IntParam(req, "new", 1, INT64_MAX, std::nullopt);
    if (!new_size.ok()) return StatusProblem(new_size.status(), req);
    auto proof =
        ConsistencyProofFor(c, org, static_cast<uint64_t>(*old_size), static_cast<uint64_t>(*new_size));
    if (!proof.ok()) return StatusProblem(proof.status(), req);
    return net::JsonResponse(
        "{\"old\":" + std::to_string(*old_size) + ",\"new\":" + std::to_string(*new_size) +
        ",\"old_root\":\"" + audit::HashToHex(proof->old_root) + "\",\"new_root\":\"" +
        audit::HashToHex(proof->new_root) + "\",\"proof\":" + Hashes(proof->proof) + "}");
  }

  static std::string CheckpointJson(const StoredCheckpoint& cp) {
    return json{{"origin", cp.checkpoint.origin},
                {"size", cp.checkpoint.size},
                {"root", audit::HashToHex(cp.checkpoint.root)},
                {"chain_head", audit::HashToHex(cp.checkpoint.chain_head)},
                {"time", audit::FormatTime(cp.checkpoint.time_us)},
                {"note", cp.note}}
        .dump();
  }
};

Api::Api(db::Pool* pool, Batcher* batcher, service_keys::KeyCache* keys, const CheckpointSigner* signer,
         ApiOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->pool = pool;
  impl_->batcher = batcher;
  impl_->keys = keys;
  impl_->signer = signer;
  impl_->opt = std::move(options);
  impl_->clock = impl_->opt.clock != nullptr ? impl_->opt.clock : &Clock::Real();
  impl_->jobs = std::make_unique<services::JobQueue>(impl_->opt.read_threads, impl_->opt.max_queued_reads);
}

Api::~Api() = default;

void Api::AddRoutes(net::Router& router) {
  Impl* m = impl_.get();
  auto read = [m](auto fn) {
    return [m, fn](net::Request&& req, net::Responder out) {
      m->Authorize(std::move(req), std::move(out), "read",
                   [m, fn](net::Request&& q, net::Responder r, const std::string& org) {
                     m->Read(std::move(q), std::move(r), org, fn);
                   });
    };
  };
  router.Add(net::Method::kPost, "/v1/audit/{org}/entries",
             [m](net::Request&& req, net::Responder out) {
               m->Authorize(std::move(req), std::move(out), "append",
                            [m](net::Request&& q, net::Responder r, const std::string& org) {
                              m->Append(std::move(q), std::move(r), org);
                            });
             },
             // Appends bound themselves (kOwnBound) instead of going through the adaptive latency limit:
             // group commit gets faster as more appends wait, while the limit would shrink its window as
             // their latency rises and shed most of them. The bounds: max_appends_in_flight requests (the
             // server answers 503 + Retry-After beyond it) and the Batcher's queue of entries
             // (BatcherOptions::max_queued: 503 + Retry-After).
             {.cls = net::RequestClass::kOwnBound,
              .max_body_bytes = m->opt.max_body_bytes,
              .name = "audit_append",
              .max_in_flight = m->opt.max_appends_in_flight,
              .retry_after_seconds = 1});
  // One entry by seq: a primary-key read, typically a writer checking what it was just acknowledged:
  // interactive, so it keeps headroom when appends load the server (searches and exports stay normal).
  router.Add(net::Method::kGet, "/v1/audit/{org}/entries/{seq}", read(&Impl::GetOne),
             {.cls = net::RequestClass::kInteractive, .name = "audit_entry"});
  router.Add(net::Method::kGet, "/v1/audit/{org}/entries", read(&Impl::SearchEntries),
             {.name = "audit_search"});
  // Bulk: it gives way first under load; it holds its admission slot only until the head is sent
  // (then max_exports bounds it).
  router.Add(net::Method::kGet, "/v1/audit/{org}/export",
             [m](net::Request&& req, net::Responder out) {
               m->Authorize(std::move(req), std::move(out), "read",
                            [m](net::Request&& q, net::Responder r, const std::string& org) {
                              m->ExportStream(std::move(q), std::move(r), org);
                            });
             },
             {.cls = net::RequestClass::kBulk, .name = "audit_export"});
  router.Add(net::Method::kGet, "/v1/audit/{org}/proof/inclusion", read(&Impl::Inclusion),
             {.name = "audit_proof_inclusion"});
  router.Add(net::Method::kGet, "/v1/audit/{org}/proof/consistency", read(&Impl::Consistency),
             {.name = "audit_proof_consistency"});
  router.Add(net::Method::kGet, "/v1/audit/{org}/checkpoints/latest",
             read([](db::Connection& c, const std::string& org, const net::Request& q) {
               auto cp = LatestCheckpoint(c, org);
               if (!cp.ok()) return StatusProblem(cp.status(), q);
               return net::JsonResponse(Impl::CheckpointJson(*cp));
             }),
             {.name = "audit_checkpoint_latest"});
  router.Add(net::Method::kPost, "/v1/audit/{org}/checkpoints",
             [m](net::Request&& req, net::Responder out) {
               m->Authorize(std::move(req), std::move(out), "append",
                            [m](net::Request&& q, net::Responder r, const std::string& org) {
                              m->Read(std::move(q), std::move(r), org,
                                      [m](db::Connection& c, const std::string& o, const net::Request& rq) {
                                        auto cp = MakeCheckpoint(c, o, *m->signer, m->clock->UnixMicros());
                                        if (!cp.ok()) return StatusProblem(cp.status(), rq);
                                        if (m->opt.on_checkpoint)
                                          m->opt.on_checkpoint(o, cp->checkpoint.size, cp->note);
                                        return net::JsonResponse(Impl::CheckpointJson(*cp),
                                                                 cp->created ? 201 : 200);
                                      });
                            });
             },
             {.name = "audit_checkpoint_make"});
  router.AddSync(net::Method::kGet, "/v1/audit/checkpoint-key",
                 [m](net::Request&) {
                   return net::JsonResponse(
                       json{{"verifier_key", m->signer->verifier_key()}, {"algorithm", "ed25519"}}.dump());
                 },
                 {.name = "audit_checkpoint_key"});
}

}  // namespace govern::audit_service
