// Proxy: the AI gateway's request path. OpenAI Chat Completions (POST /v1/chat/completions), Anthropic
// Messages (POST /v1/messages), each streaming or not, the OpenAI Responses API (POST /v1/responses,
// streaming or not) and embeddings (POST /v1/embeddings), and the models list (GET /v1/models),
// forwarded to the provider that the request's model routes to. Responses and embeddings go to
// OpenAI-format routes byte for byte (metered from the answer's usage or the response.completed event);
// on an Anthropic-format route Responses are translated (gateway/responses_translate.h) and embeddings
// are a 400; on Gemini and Bedrock deployments Responses go through their chat adapters (Responses ->
// chat -> provider, and back chat -> Messages -> Responses) and embeddings through the provider's own
// API (Gemini batchEmbedContents, Bedrock InvokeModel for Titan and Cohere).
//
// Promises:
//  - Same-format requests are forwarded byte for byte (only stream_options.include_usage is added to
//    an OpenAI stream that lacks it, because the usage chunk is what meters a stream); answers and
//    streams are relayed as they come, chunk by chunk, with the client's back-pressure.
//  - Cross-format requests (an OpenAI client on an Anthropic route and the reverse) are translated
//    whole and stream event by event with the stateful translators of gateway/translate.h.
//  - Errors come in the shape the client's SDK reads: openai::ErrorJson or anthropic::ErrorJson, with
//    401 (missing or unknown key), 404 (unknown model), 429 (requests or tokens per minute over the
//    key's limit), 400 (bad body), 502 (the provider failed, answered 5xx or cut its answer). An error
//    after a stream has started is sent as the format's in-stream error event.
//  - The key, the route and the key's limits are checked on the server's event loop before any
//    provider work; a refused request costs no thread and no connection.
//  - Provider calls are asynchronous (UpstreamClient, upstream.h: pooled keep-alive connections,
//    connect/header/read timeouts, a request never sent twice once any byte of it may have reached the
//    provider). A provider that does not answer in time gives 504.
//  - A client that goes away mid-stream cancels the provider call (its connection is closed) at the
//    next event the provider sends; usage seen so far is still recorded (status 499). One that goes
//    away before any answer (a whole answer awaited, or a stream's head) is noticed when the server
//    sees its connection close (net::Responder::OnClose): the provider call is cancelled and the
//    request recorded with status 499.
//  - Every answer to a request that passed authentication carries its request id (the usage record's
//    request_id) in `x-request-id`, as OpenAI's API does.
//  - Exactly one usage record per request that passed authentication (UsageRecord), appended to the
//    WAL in ProxyConfig::wal_dir when set, and handed to ProxyConfig::on_record, before the response
//    completes (the last byte of a whole answer, the end of a stream). With
//    usage_durable_before_response the response completes only once the record is fdatasync'd;
//    otherwise the record is queued to the WAL first and written to its file within microseconds
//    (usually by the loop itself before the response completes, wal::Options::appender_writes; from
//    then on it survives a crash of the process) and synced within the WAL's buffered interval (5 ms):
//    see docs/gateway.md, "Usage records".
//
// Threads: handlers run on the server's event loops, and so do their provider calls, streams and
// records (the upstream client runs a call made on a server loop on that loop: no hand-off between
// threads); a call made off a server loop runs on the upstream client's own loops. The destructor ends
// the calls in flight (each recorded), waits for them, stops the client and flushes the WAL. Register()
// once, before the server starts.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "net/router.h"
#include "services/gateway/routing.h"
#include "services/gateway/upstream.h"
#include "services/gateway/work_times.h"

namespace govern::wal {
class Log;
}

namespace govern::gateway {

struct Governance;  // governance.h: Govern tokens, policy, budgets
struct DlpConfig;   // gateway/dlp_screen.h

struct RouteConfig {
  std::string model;     // the model name clients send
  std::string base_url;  // "http://127.0.0.1:7760" (the API paths /v1/... are appended)
  WireFormat format = WireFormat::kOpenAI;
  std::string api_key;  // sent upstream (Authorization: Bearer, or x-api-key for Anthropic)
  // Pass the client's `x-stub-*` fault-injection headers upstream: only for a route to the model stub
  // (tests, benchmarks); a real provider never sees client headers it was not meant to get.
  bool stub_fault_headers = false;
};

struct VirtualKeyConfig {
  std::string key;  // "gvg_..."
  std::string org;
  int64_t requests_per_minute = 0;  // 0: no limit
  int64_t tokens_per_minute = 0;    // 0: no limit
};

// What names a virtual key in usage records and to policy (the principal Key:<id>): the first 16 hex
// digits of its SHA-256, so two keys never share an id (as two sharing a prefix did when the id was the
// key's first 12 characters) and the record reveals nothing of the key. Stable across versions.
std::string VirtualKeyId(std::string_view key);

// Prices in currency units per million tokens. Cached input tokens are billed at cached_input instead
// of input.
struct PriceConfig {
  double input = 0;
  double output = 0;
  double cached_input = 0;
};

struct UsageRecord {
  std::string request_id;
  int64_t time_ns = 0;  // wall-clock start
  std::string org;
  std::string key_id;  // VirtualKeyId(key), never the key
  std::string model;
  std::string route;  // base URL of the route taken; "" when none
  std::string client_format;
  std::string api;  // the client's API: chat, messages, responses, embeddings
  int status = 0;   // what the client was told (499: the client went away before the end)
  bool stream = false;
  int64_t input_tokens = 0;  // prompt tokens, including cached ones
  int64_t output_tokens = 0;
  int64_t cached_tokens = 0;
  bool tokens_estimated = false;  // input_tokens is the gateway's estimate (the provider gave no count)
  double cost = 0;
  double latency_ms = 0;
  std::string error;  // why it failed, "" on success
  // Routing (routing.h): the deployment that answered (the last one tried), and every attempt made.
  std::string deployment;
  struct Attempt {
    std::string model;  // the route's model (a fallback's name on a fallback)
    std::string deployment;
    int status = 0;  // the provider's status; 0: no answer (connect failed, timed out, cut)
    std::string error;
    int64_t backoff_ms = 0;  // waited before this attempt
  };
  std::vector<Attempt> attempts;
  // Governance (governance.h), when configured: who ("Key:<first 16 hex of the key's SHA-256>",
  // "Key:gvg_<key_id>" for a keys-service key, "Agent:cli_1", "User:usr_1"),
  // the policy or budget decision ("allow", "deny", "limit", "no_bundle", "budget_exhausted", ...) and
  // what determined it (policies, "limit:<id>", the budget's id).
  std::string principal;
  std::string decision;
  std::string decision_reason;
  // DLP (when the org's mode is not off): "none", "masked" or "blocked", and the rules that matched
  // (prompt and answer together), never the matched text.
  std::string dlp_action;
  std::vector<std::string> dlp_rules;
};
std::string UsageRecordJson(const UsageRecord& r);

struct ProxyConfig {
  std::vector<RouteConfig> routes;       // one provider per model (each a one-deployment route)
  std::vector<ModelRouteConfig> models;  // routes with deployments, retries, fallbacks, breakers
  std::vector<VirtualKeyConfig> keys;
  std::map<std::string, PriceConfig> prices;  // by model
  std::string wal_dir;                        // usage record WAL; empty: no WAL
  // Hold each response's completion until its usage record is fdatasync'd (costs the sync's latency
  // per request); false: the record is queued first and synced within the WAL's buffered interval.
  bool usage_durable_before_response = false;
  UpstreamOptions upstream;
  std::function<void(const UsageRecord&)> on_record;
  // Govern tokens, the policy check and budgets (governance.h); null: virtual keys only, no policy, no
  // budgets.
  std::shared_ptr<const Governance> governance;
  // Per-organisation DLP screening (the routes file's "dlp" object, see gateway/dlp_screen.h); null: off.
  std::shared_ptr<const DlpConfig> dlp;
};

// Reads {"routes":[{"model","base_url","format":"openai"|"anthropic","api_key"} or
// {"model","deployments":[...],"fallbacks","retry","breaker"} (routing.h, ParseModelRoute)],
// "keys":[{"key","org","requests_per_minute","tokens_per_minute"}],
// "prices":{"<model>":{"input","output","cached_input"}}, "wal_dir", "usage_durable_before_response",
// "upstream":{"connect_timeout_ms","header_timeout_ms","read_timeout_ms","idle_timeout_ms",
// "max_idle_per_host","threads","ca_file"}}. InvalidArgument naming the field.
Result<ProxyConfig> ParseProxyConfig(std::string_view json);
// The longest a whole answer can take through the config's routes, retries and fallbacks included
// (routing.h, LongestWholeAnswer): the server's handler timeout must be at least this.
std::chrono::milliseconds LongestAnswerTime(const ProxyConfig& config);

class Proxy {
 public:
  static Result<std::unique_ptr<Proxy>> Create(ProxyConfig config);
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  void Register(net::Router& router);

  // Replaces the DLP configuration (a reload): requests already started keep the one they began with.
  void SetDlp(std::shared_ptr<const DlpConfig> dlp);

  // A reload of the routes file (routes_reload.h): replaces the routes (deployments, retries, fallbacks,
  // breakers), virtual keys, prices and DLP with `next`'s, after checking all of it; on an error nothing
  // changes. Requests in flight finish on the routes and DLP they began with; deployments still there
  // keep their breaker state and calls in flight (RouteTable::Create); keys still there keep their
  // rate-limit buckets unless their limits changed; a removed key's requests in flight finish on it. Not
  // taken from `next`: wal_dir, upstream, on_record, governance, usage_durable_before_response (they need a
  // restart). Thread-safe.
  Status Reload(ProxyConfig next);

  // Key states a reload removed (or replaced, its limits changed) that requests in flight still hold,
  // for tests: each is freed when the last request that began on it ends. Thread-safe.
  size_t retired_key_states() const;

  // The provider client's counters (connections opened and reused, retries), for tests and metrics.
  UpstreamClient::Stats upstream_stats() const;
  // The routing table (breaker states and calls in flight per deployment), for tests and metrics; valid
  // until the next Reload.
  const RouteTable& route_table() const;

  // The gateway's own time per answered request (2xx, through a provider call) since the last call,
  // and starts over: from the handler's start to the provider request's write (less connection waits),
  // plus from each piece of the answer read to its bytes handed to the client (docs/gateway.md
  // "Measuring the overhead"). Thread-safe.
  WorkTimes TakeWorkTimes();

  // The usage record WAL (nullptr without ProxyConfig::wal_dir), for the usage shipper (usage_ship.h),
  // which must be stopped before the Proxy is destroyed (that closes the WAL).
  wal::Log* usage_wal() const;

 private:
  struct Impl;
  explicit Proxy(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace govern::gateway
