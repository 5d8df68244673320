// The policy bundle server: configuration, signing keys, and the HTTP API over the store.
#include "services/policy/server.h"

#include <ctime>
#include <functional>
#include <nlohmann/json.hpp>

#include "base/log.h"
#include "db/connection.h"
#include "db/pool.h"
#include "net/http_server.h"
#include "net/problem.h"
#include "services/http_config.h"
#include "services/job_queue.h"
#include "services/policy/api_keys.h"
#include "services/policy/bundle_cache.h"
#include "services/policy/schema.h"
#include "services/policy/signing.h"
#include "services/policy/store.h"

namespace govern::policy_service {
namespace {

using json = nlohmann::json;

net::Response Problem(int status, std::string detail, const net::Request& req) {
  net::Response r = net::ProblemResponse(status, std::move(detail), req.path);
  if (status == 401) r.headers.Set("WWW-Authenticate", "Bearer");
  return r;
}

net::Response StatusProblem(const Status& s, const net::Request& req) {
  switch (s.code()) {
    case Code::kUnauthenticated:
      return Problem(401, s.message(), req);
    case Code::kPermissionDenied:
      return Problem(403, s.message(), req);
    case Code::kNotFound:
      return Problem(404, s.message(), req);
    case Code::kInvalidArgument:
      return Problem(400, s.message(), req);
    case Code::kUnavailable:
      return Problem(503, "the policy store is unavailable; retry later", req);
    default:
      return Problem(500, "internal error", req);
  }
}

// RFC 9110 If-None-Match: "*" or a list of (possibly weak) entity tags.
bool EtagMatches(std::string_view header, std::string_view etag) {
  size_t i = 0;
  while (i < header.size()) {
    while (i < header.size() && (header[i] == ' ' || header[i] == ',' || header[i] == '\t')) ++i;
    if (i >= header.size()) break;
    if (header[i] == '*') return true;
    if (header.compare(i, 2, "W/") == 0) i += 2;
    size_t end = header.find(',', i);
    std::string_view tag = header.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) tag.remove_suffix(1);
    if (tag == etag) return true;
    if (end == std::string_view::npos) break;
    i = end + 1;
  }
  return false;
}

class PolicyServer final : public services::Service {
 public:
  std::string_view name() const override { return "policy"; }
  std::string_view summary() const override {
    return "stores each organisation's Cedar policy set (versioned), serves signed bundles with ETags";
  }

  void DeclareConfig(config::Schema& s) const override {
    using config::Type;
    s.Add({.key = "policy.server.listen",
           .type = Type::kString,
           .default_value = "127.0.0.1:7720",
           .help = "Address of the policy bundle server's HTTP API (`PUT /v1/policy/set`, `GET "
                   "/v1/policy/bundle`). 0 picks a free port.",
           .validate = [](std::string_view v) { return services::ParseListen(v).status(); }});
    s.Add({.key = "policy.server.signing_key",
           .type = Type::kStringList,
           .default_value = "",
           .help =
               "Private key files (from `govern policy keygen`) that sign every bundle published; several "
               "sign with each (key rotation). Empty: a key generated once under "
               "`<data_dir>/policy/signing.key` (mode 0600; its public key beside it as signing.pub)."});
    s.Add({.key = "policy.server.max_set_bytes",
           .type = Type::kBytes,
           .default_value = "16MiB",
           .help = "Largest policy set request body (policies, entities, schema and limits together).",
           .min = 1024,
           .max = int64_t{30} << 20});
    s.Add({.key = "policy.server.workers",
           .type = Type::kInt,
           .default_value = "4",
           .help = "Threads answering requests that need PostgreSQL (publishing, fetching).",
           .min = 1,
           .max = 64});
    s.Add({.key = "policy.server.key_cache_ttl",
           .type = Type::kDuration,
           .default_value = "10s",
           .help = "How long the server trusts what it read about an API key (so a bundle poll answered "
                   "304 costs one database read); a revoked key stops working within this time. 0: ask "
                   "PostgreSQL on every request.",
           .min = 0,
           .max = 3'600'000});
  }

  std::vector<db::Migration> Migrations() const override { return policy_service::Migrations(); }

  Status Start(const services::Context& ctx) override {
    if (ctx.db == nullptr) return FailedPrecondition("policy needs PostgreSQL (policy sets live there)");
    const config::Config& cfg = *ctx.config;
    pool_ = ctx.db;
    clock_ = ctx.clock != nullptr ? ctx.clock : &Clock::Real();
    auto keys = LoadSigningKeys(cfg.GetStringList("policy.server.signing_key"), ctx.data_dir);
    if (!keys.ok()) return keys.status().WithContext("policy: signing keys");
    keys_ = std::move(*keys);
    for (const auto& k : keys_.keys) signers_.push_back(&k);
    json key_list = json::array();
    for (const auto& p : keys_.publics) {
      key_list.push_back({{"key_id", p.key_id()}, {"algorithm", "ed25519"}, {"public_key", p.Text()}});
      log::Info("policy", "signing bundles with key",
                {{"key_id", p.key_id()},
                 {"file", keys_.generated.empty() ? "configured" : keys_.generated},
                 {"public_key", p.Text()}});
    }
    keys_json_ = json{{"keys", key_list}}.dump();
    max_set_bytes_ = static_cast<size_t>(cfg.GetBytes("policy.server.max_set_bytes"));
    jobs_ = std::make_unique<services::JobQueue>(static_cast<int>(cfg.GetInt("policy.server.workers")), 1000);
    key_cache_ = std::make_unique<service_keys::KeyCache>(
        pool_, PolicyKeys(),
        service_keys::KeyCacheOptions{.ttl = cfg.GetDuration("policy.server.key_cache_ttl"),
                                      .clock = ctx.clock});

    GOVERN_ASSIGN_OR_RETURN(net::ServerConfig sc, services::MakeServerConfig(ctx, "policy.server"));
    net::Router router;
    router.Add(net::Method::kPut, "/v1/policy/set",
               [this](net::Request&& req, net::Responder r) {
                 Run(std::move(req), std::move(r), {kPublishScope},
                     [this](db::Connection& c, const std::string& org, const net::Request& q) {
                       return PublishSet(c, org, q);
                     });
               },
               {.max_body_bytes = max_set_bytes_, .name = "policy_set_put"});
    router.Add(net::Method::kGet, "/v1/policy/set",
               [this](net::Request&& req, net::Responder r) {
                 Run(std::move(req), std::move(r), {kPublishScope, kFetchScope},
                     [](db::Connection& c, const std::string& org, const net::Request& q) {
                       return GetSet(c, org, q);
                     });
               },
               {.name = "policy_set_get"});
    router.Add(net::Method::kGet, "/v1/policy/bundle",
               [this](net::Request&& req, net::Responder r) {
                 Run(std::move(req), std::move(r), {kFetchScope},
                     [this](db::Connection& c, const std::string& org, const net::Request& q) {
                       return GetBundle(c, org, q);
                     });
               },
               {.name = "policy_bundle_get"});
    router.AddSync(net::Method::kGet, "/v1/policy/keys",
                   [this](net::Request&) { return net::JsonResponse(keys_json_); }, {.name = "policy_keys"});
    router.AddSync(net::Method::kGet, "/v1/policy/keys/{key_id}",
                   [this](net::Request& req) {
                     for (const auto& p : keys_.publics) {
                       if (p.key_id() == req.Param("key_id")) return net::Response(200, p.Text());
                     }
                     return Problem(404, "no signing key with this id", req);
                   },
                   {.name = "policy_key"});
    server_ = std::make_unique<net::Server>(std::move(sc), std::move(router));
    GOVERN_RETURN_IF_ERROR(server_->Start().WithContext("policy: start HTTP server"));
    host_ = services::ParseListen(cfg.GetString("policy.server.listen"))->host;
    log::Info("policy", "bundle server listening",
              {{"address", services::FormatListen(host_, server_->port())}});
    return OkStatus();
  }

  std::vector<services::Endpoint> Endpoints() const override {
    if (!server_) return {};
    return {{"policy", "http", services::FormatListen(host_, server_->port())}};
  }

  void Stop() override {
    if (server_) server_->Stop();
    // Lookups still waiting answer 503; then the jobs they or earlier requests posted run out.
    if (key_cache_) key_cache_->Shutdown();
    if (jobs_) jobs_->Stop();
    server_.reset();
    key_cache_.reset();
    jobs_.reset();
  }

 private:
  using Body = std::function<net::Response(db::Connection&, const std::string& org, const net::Request&)>;

  // Checks the key (any of `scopes` will do) through the key cache (on this event loop when the answer
  // is cached, else on a cache thread), then runs `body` on a job thread with a pooled connection.
  void Run(net::Request&& req, net::Responder r, std::vector<std::string_view> scopes, Body body) {
    auto shared = std::make_shared<std::pair<net::Request, net::Responder>>(std::move(req), std::move(r));
    std::string_view key = net::BearerToken(shared->first).value_or(std::string_view{});
    if (key.empty()) {
      return shared->second.Send(
          Problem(401, "an API key is required (Authorization: Bearer gvp_...)", shared->first));
    }
    key_cache_->Verify(key, [this, shared, scopes = std::move(scopes),
                             body = std::move(body)](Result<service_keys::KeyIdentity> who) mutable {
      Result<std::string> org = OrgWithScope(who, scopes);
      if (!org.ok()) return shared->second.Send(StatusProblem(org.status(), shared->first));
      bool posted = jobs_->Post([this, shared, org = std::move(*org), body = std::move(body)] {
        net::Request& q = shared->first;
        net::Responder& out = shared->second;
        auto lease = pool_->Checkout();
        if (!lease.ok()) return out.Send(Problem(503, "the policy store is unavailable; retry later", q));
        out.Send(body(**lease, org, q));
      });
      if (!posted) shared->second.Send(Problem(503, "too many requests waiting; retry later", shared->first));
    });
  }

  net::Response PublishSet(db::Connection& c, const std::string& org, const net::Request& req) {
    auto parsed = ParseSourceJson(req.body);
    if (!parsed.ok()) return StatusProblem(parsed.status(), req);
    PolicySource src = std::move(*parsed);
    std::string entities;
    std::vector<SourceError> errors = Validate(src, &entities);
    if (!errors.empty()) {
      // 400 when a file does not parse; 422 when every file parses but does not conform to the schema.
      bool malformed = false;
      json list = json::array();
      std::string detail;
      for (const SourceError& e : errors) {
        malformed = malformed || !e.schema_violation;
        json item = {{"file", e.file}, {"message", e.message}};
        if (e.line > 0) {
          item["line"] = e.line;
          item["column"] = e.column;
        }
        list.push_back(item);
        if (!detail.empty()) detail += "; ";
        detail += e.file + (e.line > 0 ? ":" + std::to_string(e.line) + ":" + std::to_string(e.column) : "") +
                  ": " + e.message;
      }
      int status = malformed ? 400 : 422;
      json p = {{"type", "about:blank"},
                {"title", malformed ? "Bad Request" : "Unprocessable Content"},
                {"status", status},
                {"detail", (malformed ? "the policy set is not valid: "
                                      : "the policy set does not conform to its schema: ") +
                               detail},
                {"instance", req.path},
                {"errors", list}};
      return net::Response(status, p.dump(), "application/problem+json");
    }
    src.entities = std::move(entities);  // as the engine reads them with the schema (store.h Validate)
    int64_t now = clock_->UnixMicros() / 1000000;
    auto published = Publish(c, org, src, signers_, now);
    if (!published.ok()) {
      log::Warn("policy", "publish failed", {{"org", org}, {"error", published.status().message()}});
      return StatusProblem(published.status(), req);
    }
    if (!published->unchanged) {
      bundles_.Invalidate(org);
      log::Info("policy", "published", {{"org", org}, {"version", published->version}});
    }
    json out = {{"org", org},
                {"version", published->version},
                {"etag", "\"" + published->digest + "\""},
                {"unchanged", published->unchanged}};
    return net::JsonResponse(out.dump(), published->unchanged ? 200 : 201);
  }

  static net::Response GetSet(db::Connection& c, const std::string& org, const net::Request& req) {
    uint64_t version = 0;
    if (auto v = req.QueryParam("version")) {
      try {
        size_t used = 0;
        version = std::stoull(*v, &used);
        if (used != v->size() || version == 0) throw std::invalid_argument("version");
      } catch (const std::exception&) {
        return Problem(400, "version must be a positive integer", req);
      }
    }
    auto stored = Read(c, org, version, /*with_bundle=*/false);
    if (!stored.ok()) return StatusProblem(stored.status(), req);
    json out = {{"org", org},
                {"version", stored->version},
                {"etag", "\"" + stored->digest + "\""},
                {"created", stored->created_at},
                {"signed_by", stored->signed_by},
                {"policies", stored->source.policies},
                {"entities", stored->source.entities}};
    out["schema"] = stored->source.schema ? json(*stored->source.schema) : json(nullptr);
    out["limits"] = stored->source.limits ? json(*stored->source.limits) : json(nullptr);
    // As published: a JSON policy set as its object, links as text (store.h PolicySource).
    if (stored->source.policies_json) out["policies"] = json::parse(stored->source.policies);
    out["links"] = stored->source.links ? json(*stored->source.links) : json(nullptr);
    return net::JsonResponse(out.dump());
  }

  // The latest version's number and digest come from PostgreSQL on every fetch (one indexed row, and
  // what makes replicas agree); its bytes from the cache when this server has read them before.
  net::Response GetBundle(db::Connection& c, const std::string& org, const net::Request& req) {
    auto head = Latest(c, org);
    if (!head.ok()) return StatusProblem(head.status(), req);
    std::string etag = "\"" + head->digest + "\"";
    if (auto inm = req.headers.Get("If-None-Match"); inm && EtagMatches(*inm, etag)) {
      net::Response r;
      r.status = 304;
      r.headers.Set("ETag", etag);
      r.headers.Set("X-Govern-Bundle-Version", std::to_string(head->version));
      return r;
    }
    std::shared_ptr<const std::string> bytes = bundles_.Get(org, head->version);
    if (!bytes) {
      auto stored = Read(c, org, head->version, /*with_bundle=*/true);
      if (!stored.ok()) return StatusProblem(stored.status(), req);
      bytes = std::make_shared<const std::string>(std::move(stored->bundle));
      bundles_.Put(org, head->version, bytes);
    }
    net::Response r(200, *bytes, "application/gzip");
    r.headers.Set("ETag", etag);
    r.headers.Set("X-Govern-Bundle-Version", std::to_string(head->version));
    r.headers.Set("Cache-Control", "no-cache");
    return r;
  }

  db::Pool* pool_ = nullptr;
  const Clock* clock_ = nullptr;
  SigningKeys keys_;
  std::vector<const bundle::SigningKey*> signers_;
  std::string keys_json_;
  size_t max_set_bytes_ = 0;
  // Each organisation's current bundle bytes (bundle_cache.h); 64 MiB holds thousands of organisations'
  // bundles, and a miss costs one row read.
  BundleCache bundles_{size_t{64} << 20};
  std::unique_ptr<services::JobQueue> jobs_;
  // Verifies presented keys (api_keys.h); shut down after the server, before the jobs.
  std::unique_ptr<service_keys::KeyCache> key_cache_;
  std::unique_ptr<net::Server> server_;
  std::string host_;
};

}  // namespace

std::unique_ptr<services::Service> NewPolicyServer() { return std::make_unique<PolicyServer>(); }

}  // namespace govern::policy_service
