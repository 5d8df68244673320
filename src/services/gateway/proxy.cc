#include "services/gateway/proxy.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>

#include "base/clock.h"
#include "base/log.h"
#include "gateway/anthropic.h"
#include "gateway/bedrock.h"
#include "gateway/chat_stream.h"
#include "gateway/dlp_responses.h"
#include "gateway/dlp_screen.h"
#include "gateway/gemini.h"
#include "gateway/json_util.h"
#include "gateway/openai.h"
#include "gateway/peek.h"
#include "gateway/responses_translate.h"
#include "gateway/sse.h"
#include "gateway/translate.h"
#include "gateway/usage_peek.h"
#include "net/http.h"
#include "services/gateway/bedrock_provider.h"
#include "services/gateway/governance.h"
#include "services/gateway/upstream.h"
#include "storage/wal.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

std::string_view FormatName(WireFormat f) { return f == WireFormat::kOpenAI ? "openai" : "anthropic"; }

// The client's API: the format's own (chat completions, messages), or the OpenAI Responses and
// embeddings APIs (as they are to OpenAI-format routes; Responses translated to Anthropic ones).
enum class Endpoint { kChat, kMessages, kResponses, kEmbeddings };

std::string_view EndpointName(Endpoint e) {
  switch (e) {
    case Endpoint::kChat:
      return "chat";
    case Endpoint::kMessages:
      return "messages";
    case Endpoint::kResponses:
      return "responses";
    case Endpoint::kEmbeddings:
      return "embeddings";
  }
  return "";
}

std::string_view EndpointPath(Endpoint e) {
  switch (e) {
    case Endpoint::kChat:
      return "/v1/chat/completions";
    case Endpoint::kMessages:
      return "/v1/messages";
    case Endpoint::kResponses:
      return "/v1/responses";
    case Endpoint::kEmbeddings:
      return "/v1/embeddings";
  }
  return "";
}

// A token bucket refilled continuously at `per_minute` per minute, holding at most `per_minute`.
// Take() may drive it below zero (tokens are debited after the answer), which holds later requests
// back until it refills.
class Bucket {
 public:
  explicit Bucket(int64_t per_minute) : rate_(per_minute), level_(static_cast<double>(per_minute)) {}
  bool HasRoom(SteadyClock::time_point now) {
    Refill(now);
    return rate_ <= 0 || level_ >= 1;
  }
  void Take(double n, SteadyClock::time_point now) {
    Refill(now);
    if (rate_ > 0) level_ -= n;
  }

 private:
  void Refill(SteadyClock::time_point now) {
    if (rate_ <= 0) return;
    if (last_ != SteadyClock::time_point{}) {
      double seconds = std::chrono::duration<double>(now - last_).count();
      level_ =
          std::min<double>(static_cast<double>(rate_), level_ + seconds * static_cast<double>(rate_) / 60.0);
    }
    last_ = now;
  }
  int64_t rate_;
  double level_;
  SteadyClock::time_point last_{};
};

struct KeyState {
  VirtualKeyConfig config;
  std::string key_id;  // VirtualKeyId(config.key), hashed once rather than per request
  Bucket requests;
  Bucket tokens;
  explicit KeyState(VirtualKeyConfig c)
      : config(std::move(c)),
        key_id(VirtualKeyId(config.key)),
        requests(config.requests_per_minute),
        tokens(config.tokens_per_minute) {}
};

std::string NewRequestId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  // "gwr_" and 24 hex digits: 64 random bits, then 32 more (as "%016llx%08llx" spelled them).
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "gwr_";
  id.resize(4 + 24);
  uint64_t a = rng(), b = rng() & 0xffffffffu;
  for (int i = 0; i < 16; ++i) id[4 + 15 - i] = kHex[(a >> (4 * i)) & 15];
  for (int i = 0; i < 8; ++i) id[4 + 16 + 7 - i] = kHex[(b >> (4 * i)) & 15];
  return id;
}

// The error body each SDK reads, for a status.
net::Response ErrorResponse(WireFormat f, int status, std::string_view message) {
  Json body;
  if (f == WireFormat::kOpenAI) {
    std::string_view type = "invalid_request_error", code;
    switch (status) {
      case 401:
        code = "invalid_api_key";
        break;
      case 404:
        code = "model_not_found";
        break;
      case 429:
        type = "rate_limit_exceeded";
        code = "rate_limit_exceeded";
        break;
      default:
        if (status >= 500) type = "api_error";
    }
    body = openai::ErrorJson(message, type, code);
  } else {
    std::string_view type = "invalid_request_error";
    switch (status) {
      case 401:
        type = "authentication_error";
        break;
      case 403:
        type = "permission_error";
        break;
      case 404:
        type = "not_found_error";
        break;
      case 413:
        type = "request_too_large";
        break;
      case 429:
        type = "rate_limit_error";
        break;
      case 529:
        type = "overloaded_error";
        break;
      default:
        if (status >= 500) type = "api_error";
    }
    body = anthropic::ErrorJson(type, message);
  }
  net::Response r(status, detail::Dump(body), "application/json");
  if (status == 429) r.headers.Set("Retry-After", "1");
  return r;
}

// The same error as an event inside a stream that has already started.
std::string StreamErrorEvent(WireFormat f, std::string_view message) {
  if (f == WireFormat::kOpenAI)
    return FormatSseEvent("", detail::Dump(openai::ErrorJson(message, "api_error")));
  return FormatSseEvent("error", detail::Dump(anthropic::ErrorJson("api_error", message)));
}

// The message of a provider's error body (either format), or the body itself.
std::string UpstreamErrorMessage(std::string_view body) {
  auto j = detail::ParseJson(body, "upstream error");
  if (j.ok() && j->is_object()) {
    auto it = j->find("error");
    if (it != j->end() && it->is_object()) {
      auto m = it->find("message");
      if (m != it->end() && m->is_string()) return m->get<std::string>();
    }
  }
  return std::string(body.substr(0, 512));
}

struct Meter {
  int64_t input = 0, output = 0, cached = 0;
  bool estimated = false;  // input estimated by the gateway (Gemini API embeddings)
  void Set(const openai::Usage& u) {
    input = u.prompt_tokens;
    output = u.completion_tokens;
    cached = u.cached_tokens;
  }
};

}  // namespace

namespace {

// detail::Dump's text for a string: printable ASCII as it is, anything else (escapes, UTF-8, invalid
// bytes replaced) through nlohmann's serializer.
void AppendJsonString(std::string& out, std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == '"' || c == '\\' || c >= 0x7f) {
      out += detail::Dump(Json(std::string(s)));
      return;
    }
  }
  out += '"';
  out += s;
  out += '"';
}

void AppendInt(std::string& out, int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

// The record's JSON object, written in nlohmann's order (keys sorted) and spelling, without a tree.
class RecordWriter {
 public:
  explicit RecordWriter(std::string& out) : out_(out) { out_ += '{'; }
  void End() { out_ += '}'; }
  void Key(std::string_view k) {
    if (!first_) out_ += ',';
    first_ = false;
    out_ += '"';
    out_ += k;
    out_ += "\":";
  }
  void Str(std::string_view k, std::string_view v) { Key(k), AppendJsonString(out_, v); }
  void Int(std::string_view k, int64_t v) { Key(k), AppendInt(out_, v); }
  void Bool(std::string_view k, bool v) { Key(k), out_ += v ? "true" : "false"; }
  // As nlohmann's serializer writes a double (its dump_float): null when not finite, else Grisu2.
  void Double(std::string_view k, double v) {
    Key(k);
    if (!std::isfinite(v)) {
      out_ += "null";
      return;
    }
    std::array<char, 64> buf;
    char* end = nlohmann::detail::to_chars(buf.data(), buf.data() + buf.size(), v);
    out_.append(buf.data(), end);
  }

 private:
  std::string& out_;
  bool first_ = true;
};

}  // namespace

std::string UsageRecordJson(const UsageRecord& r) {
  // The keys in sorted order, optional ones where they sort (as detail::Dump of an nlohmann object).
  std::string out;
  out.reserve(512);
  RecordWriter w(out);
  w.Str("api", r.api);
  // Routing: the deployment that answered and every attempt made (routing.h).
  if (!r.attempts.empty()) {
    w.Key("attempts");
    out += '[';
    for (size_t i = 0; i < r.attempts.size(); ++i) {
      const auto& a = r.attempts[i];
      if (i > 0) out += ',';
      RecordWriter aw(out);
      if (a.backoff_ms > 0) aw.Int("backoff_ms", a.backoff_ms);
      aw.Str("deployment", a.deployment);
      if (!a.error.empty()) aw.Str("error", a.error);
      aw.Str("model", a.model);
      aw.Int("status", a.status);
      aw.End();
    }
    out += ']';
  }
  w.Int("cached_tokens", r.cached_tokens);
  w.Str("client_format", r.client_format);
  w.Double("cost", r.cost);
  if (!r.decision.empty()) w.Str("decision", r.decision);
  if (!r.decision_reason.empty()) w.Str("decision_reason", r.decision_reason);
  if (!r.deployment.empty()) w.Str("deployment", r.deployment);
  if (!r.dlp_action.empty()) {
    w.Str("dlp_action", r.dlp_action);
    w.Key("dlp_rules");
    out += '[';
    for (size_t i = 0; i < r.dlp_rules.size(); ++i) {
      if (i > 0) out += ',';
      AppendJsonString(out, r.dlp_rules[i]);
    }
    out += ']';
  }
  if (!r.error.empty()) w.Str("error", r.error);
  w.Int("input_tokens", r.input_tokens);
  w.Str("key_id", r.key_id);
  w.Double("latency_ms", r.latency_ms);
  w.Str("model", r.model);
  w.Str("org", r.org);
  w.Int("output_tokens", r.output_tokens);
  if (!r.principal.empty()) w.Str("principal", r.principal);
  w.Str("request_id", r.request_id);
  w.Str("route", r.route);
  w.Int("status", r.status);
  w.Bool("stream", r.stream);
  w.Int("time_ns", r.time_ns);
  if (r.tokens_estimated) w.Bool("tokens_estimated", true);
  w.End();
  return out;
}

// Every route as a model route: a one-provider route is one deployment, with no retry and no breaker.
static std::vector<ModelRouteConfig> AllRoutes(const ProxyConfig& c) {
  std::vector<ModelRouteConfig> all;
  for (const RouteConfig& r : c.routes) {
    ModelRouteConfig m;
    m.model = r.model;
    DeploymentConfig d;
    d.name = r.model;
    d.provider = r.format == WireFormat::kAnthropic ? Provider::kAnthropic : Provider::kOpenAI;
    d.base_url = r.base_url;
    d.api_key = r.api_key;
    d.stub_fault_headers = r.stub_fault_headers;
    m.deployments.push_back(std::move(d));
    all.push_back(std::move(m));
  }
  all.insert(all.end(), c.models.begin(), c.models.end());
  return all;
}

std::chrono::milliseconds LongestAnswerTime(const ProxyConfig& c) {
  return LongestWholeAnswer(AllRoutes(c), c.upstream.connect_timeout, c.upstream.connect_attempts,
                            c.upstream.header_timeout);
}

Result<ProxyConfig> ParseProxyConfig(std::string_view text) {
  GOVERN_ASSIGN_OR_RETURN(Json j, detail::ParseJson(text, "gateway config"));
  if (!j.is_object()) return InvalidArgument("gateway config: not an object");
  ProxyConfig c;
  if (auto it = j.find("routes"); it != j.end()) {
    if (!it->is_array()) return InvalidArgument("gateway config: routes must be an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& r = (*it)[i];
      std::string path = "routes[" + std::to_string(i) + "]";
      if (!r.is_object()) return InvalidArgument(path + " must be an object");
      if (r.contains("deployments")) {  // routing.h: deployments, retries, fallbacks, breaker
        GOVERN_ASSIGN_OR_RETURN(ModelRouteConfig model_route, ParseModelRoute(r, path));
        c.models.push_back(std::move(model_route));
        continue;
      }
      RouteConfig route;
      GOVERN_ASSIGN_OR_RETURN(route.model, detail::ReqString(r, "model", path));
      GOVERN_ASSIGN_OR_RETURN(route.base_url, detail::ReqString(r, "base_url", path));
      GOVERN_ASSIGN_OR_RETURN(auto format, detail::OptString(r, "format", path));
      if (!format || *format == "openai") {
        route.format = WireFormat::kOpenAI;
      } else if (*format == "anthropic") {
        route.format = WireFormat::kAnthropic;
      } else {
        return InvalidArgument(path + ".format must be openai or anthropic");
      }
      GOVERN_ASSIGN_OR_RETURN(auto key, detail::OptString(r, "api_key", path));
      route.api_key = key.value_or("");
      if (auto f = r.find("stub_fault_headers"); f != r.end()) {
        if (!f->is_boolean()) return InvalidArgument(path + ".stub_fault_headers must be true or false");
        route.stub_fault_headers = f->get<bool>();
      }
      while (!route.base_url.empty() && route.base_url.back() == '/') route.base_url.pop_back();
      c.routes.push_back(std::move(route));
    }
  }
  if (auto it = j.find("keys"); it != j.end()) {
    if (!it->is_array()) return InvalidArgument("gateway config: keys must be an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& k = (*it)[i];
      std::string path = "keys[" + std::to_string(i) + "]";
      if (!k.is_object()) return InvalidArgument(path + " must be an object");
      VirtualKeyConfig key;
      GOVERN_ASSIGN_OR_RETURN(key.key, detail::ReqString(k, "key", path));
      if (key.key.rfind("gvg_", 0) != 0) return InvalidArgument(path + ".key must start with gvg_");
      GOVERN_ASSIGN_OR_RETURN(key.org, detail::ReqString(k, "org", path));
      GOVERN_ASSIGN_OR_RETURN(auto rpm, detail::OptInt(k, "requests_per_minute", path));
      GOVERN_ASSIGN_OR_RETURN(auto tpm, detail::OptInt(k, "tokens_per_minute", path));
      key.requests_per_minute = rpm.value_or(0);
      key.tokens_per_minute = tpm.value_or(0);
      c.keys.push_back(std::move(key));
    }
  }
  if (auto it = j.find("prices"); it != j.end()) {
    if (!it->is_object()) return InvalidArgument("gateway config: prices must be an object");
    for (const auto& [model, p] : it->items()) {
      std::string path = "prices." + model;
      if (!p.is_object()) return InvalidArgument(path + " must be an object");
      PriceConfig price;
      GOVERN_ASSIGN_OR_RETURN(auto in, detail::OptNumber(p, "input", path));
      GOVERN_ASSIGN_OR_RETURN(auto out, detail::OptNumber(p, "output", path));
      GOVERN_ASSIGN_OR_RETURN(auto cached, detail::OptNumber(p, "cached_input", path));
      price.input = in.value_or(0);
      price.output = out.value_or(0);
      price.cached_input = cached.value_or(price.input);
      c.prices[model] = price;
    }
  }
  GOVERN_ASSIGN_OR_RETURN(auto wal_dir, detail::OptString(j, "wal_dir", "gateway config"));
  c.wal_dir = wal_dir.value_or("");
  GOVERN_ASSIGN_OR_RETURN(auto durable,
                          detail::OptBool(j, "usage_durable_before_response", "gateway config"));
  c.usage_durable_before_response = durable.value_or(false);
  if (auto it = j.find("upstream"); it != j.end()) {
    if (!it->is_object()) return InvalidArgument("gateway config: upstream must be an object");
    const Json& u = *it;
    auto millis = [&](const char* key, std::chrono::milliseconds& out) -> Status {
      GOVERN_ASSIGN_OR_RETURN(auto v, detail::OptInt(u, key, "upstream"));
      if (!v) return OkStatus();
      if (*v < 1) return InvalidArgument(std::string("upstream.") + key + " must be positive");
      out = std::chrono::milliseconds(*v);
      return OkStatus();
    };
    GOVERN_RETURN_IF_ERROR(millis("connect_timeout_ms", c.upstream.connect_timeout));
    GOVERN_RETURN_IF_ERROR(millis("header_timeout_ms", c.upstream.header_timeout));
    GOVERN_RETURN_IF_ERROR(millis("read_timeout_ms", c.upstream.read_timeout));
    GOVERN_RETURN_IF_ERROR(millis("idle_timeout_ms", c.upstream.idle_timeout));
    GOVERN_ASSIGN_OR_RETURN(auto idle, detail::OptInt(u, "max_idle_per_host", "upstream"));
    if (idle) {
      if (*idle < 0) return InvalidArgument("upstream.max_idle_per_host must not be negative");
      c.upstream.max_idle_per_host = static_cast<size_t>(*idle);
    }
    GOVERN_ASSIGN_OR_RETURN(auto threads, detail::OptInt(u, "threads", "upstream"));
    if (threads) {
      if (*threads < 1 || *threads > 256) return InvalidArgument("upstream.threads must be 1..256");
      c.upstream.threads = static_cast<int>(*threads);
    }
    GOVERN_ASSIGN_OR_RETURN(auto ca, detail::OptString(u, "ca_file", "upstream"));
    c.upstream.ca_file = ca.value_or("");
  }
  GOVERN_RETURN_IF_ERROR(ValidateRoutes(AllRoutes(c)));
  if (auto it = j.find("dlp"); it != j.end()) {
    GOVERN_ASSIGN_OR_RETURN(c.dlp, ParseDlpConfig(*it));
  }
  return c;
}

struct Exchange;

// A stream's DLP filter: chat and messages events (DlpStreamFilter), or the Responses API's
// (ResponsesDlpFilter, gateway/dlp_responses.h).
struct StreamDlp {
  std::unique_ptr<DlpStreamFilter> chat;
  std::unique_ptr<ResponsesDlpFilter> responses;
  bool Feed(const SseEvent& ev, std::vector<SseEvent>* out) {
    return chat ? chat->Feed(ev, out) : responses->Feed(ev, out);
  }
  bool Finish(std::vector<SseEvent>* out) { return chat ? chat->Finish(out) : responses->Finish(out); }
  const DlpReport& report() { return chat ? chat->report() : responses->report(); }
};

// Everything the handlers and exchanges share; Proxy::Impl is this (kept apart so that Exchange, outside
// Proxy, may name it).
struct ProxyCore : std::enable_shared_from_this<ProxyCore> {
  ProxyConfig config;  // routes, models, keys, prices and dlp: as at Create (reloads swap the parts below)
  // Swapped whole by Proxy::Reload: a plan keeps the table it was made from (routing.h).
  std::atomic<std::shared_ptr<RouteTable>> table;
  std::atomic<std::shared_ptr<const std::map<std::string, PriceConfig>>> prices;
  std::mutex reload_mu;  // one Reload at a time
  std::unique_ptr<wal::Log> wal;
  std::unique_ptr<UpstreamClient> upstream;

  std::mutex keys_mu;
  // Shared with the exchanges in flight on each key: a key a reload removed (or whose limits it changed)
  // lives until the last request that began on it ends.
  std::unordered_map<std::string, std::shared_ptr<KeyState>> keys;
  // Those removed keys, watched (not kept) for retired_key_states(); expired ones go at the next Reload.
  std::vector<std::weak_ptr<KeyState>> retired_keys;

  // Exchanges in flight (from the upstream call's start to their record), so the destructor can end
  // them: one parked on a slow client's back-pressure has no operation pending to cancel.
  std::mutex live_mu;
  std::condition_variable live_cv;
  bool stopping = false;
  std::unordered_map<Exchange*, std::shared_ptr<Exchange>> live;

  // Per-organisation DLP, swapped whole by Proxy::SetDlp; an exchange keeps the one it started with.
  std::atomic<std::shared_ptr<const DlpConfig>> dlp;

  // On the server's event loop: everything that can refuse a request, then the provider call.
  // `endpoint` kResponses / kEmbeddings: the OpenAI Responses and embeddings APIs (client kOpenAI).
  void Begin(WireFormat client, net::Request& req, net::Responder responder,
             std::optional<Endpoint> endpoint = std::nullopt);
  // Computes cost and latency, queues the record (WAL, on_record) and then runs `respond`: at once,
  // or once the record is durable with usage_durable_before_response.
  // `admission`: the budget reservations to settle with the cost, before the response completes.
  // `price_table`: the prices as the request began (a reload does not reprice requests in flight).
  // `handed`: set to when the record was queued and the response handed on (or left to the WAL's sync).
  void Commit(UsageRecord& r, const Meter& m, SteadyClock::time_point start, std::function<void()> respond,
              Admission* admission, const std::map<std::string, PriceConfig>& price_table,
              SteadyClock::time_point* handed = nullptr);
  // The gateway's own time per answered request (Proxy::TakeWorkTimes).
  WorkHistogram work_times;
  void Debit(KeyState* ks, const Meter& m) {
    std::lock_guard lock(keys_mu);
    ks->tokens.Take(static_cast<double>(m.input + m.output), SteadyClock::now());
  }
};

struct Proxy::Impl : ProxyCore {};

// One proxied request from the provider call's start to its usage record. Every method after Start
// runs on the call's loop (the server loop the request came in on, upstream.h), so the state needs no
// lock.
struct Exchange : std::enable_shared_from_this<Exchange> {
  std::shared_ptr<ProxyCore> impl;
  WireFormat client = WireFormat::kOpenAI;
  // kResponses and kEmbeddings: see OnWholeOpenAIApi, TranslateResponses.
  Endpoint endpoint = Endpoint::kChat;
  const RouteConfig* route = nullptr;
  net::Responder responder;
  UsageRecord rec;
  Meter meter;
  SteadyClock::time_point start;
  // The gateway's own time ("gateway work only", Proxy::TakeWorkTimes): the answering attempt's time up
  // to its provider request's write, plus each piece of the answer from read to handed on.
  SteadyClock::time_point attempt_began{};  // the handler's start for the first attempt
  SteadyClock::time_point piece_read{};     // an answer's piece being worked on; unset: none
  SteadyClock::duration work{};
  bool work_counted = false;     // the answering attempt's request was written
  std::shared_ptr<KeyState> ks;  // keeps a key a reload removes alive until this request ends
  Admission admission;           // governance: the policy decision and budget reservations
  bool stream_requested = false;
  bool include_usage = false;
  std::shared_ptr<UpstreamCall> call;  // the attempt in flight; set under impl->live_mu (Start)
  bool client_left = false;            // guarded by impl->live_mu: the client went away (OnClose)
  std::string build_error;             // the last deployment that could not take the request (Attempt)
  int build_error_status = 400;
  bool finished = false;

  // Routing (routing.h): the request's attempts. `route` points at attempt_route, the deployment tried.
  std::optional<RoutePlan> plan;
  AttemptTarget target;
  RouteConfig attempt_route;
  std::string client_body;  // kept for another attempt
  RequestPeek peek;
  std::string anthropic_version;
  std::vector<std::pair<std::string, std::string>> fault_headers;  // x-stub-*
  int64_t backoff_ms = 0;                                          // before the next attempt
  int last_status = 0;  // what the client gets if no attempt is left
  std::string last_error;
  // A Gemini or Bedrock deployment's stream (SSE, event-stream frames), as OpenAI chunks.
  std::unique_ptr<StreamToChatBase> to_chat;

  // A relayed stream.
  net::BodyStream stream;
  SseParser parser;
  std::vector<SseEvent> events;
  std::unique_ptr<MessagesToChatStream> from_anthropic;
  ChatToMessagesStream from_openai;
  bool complete = false;  // the provider's end marker was seen
  // OpenAI streams carry usage only in their last chunk: for a stream cut before it, the content
  // chunks seen stand in for output tokens (providers send about one token per chunk).
  int64_t streamed_chunks = 0;
  std::string out;

  // The prices as the request began: Commit charges from these, whatever a reload swapped in since.
  std::shared_ptr<const std::map<std::string, PriceConfig>> prices;

  // DLP screening (docs/gateway.md, "DLP"): the org's profile, what it did, a stream's filter.
  std::shared_ptr<const DlpConfig> dlp_config;
  const DlpProfile* dlp = nullptr;  // null: off
  DlpReport dlp_report;
  std::unique_ptr<StreamDlp> dlp_filter;
  std::vector<SseEvent> screened;

  // A block: 400 in the client SDK's error shape (code dlp_blocked), naming the rules only.
  void FailDlp(std::string_view what) {
    if (finished) return;
    std::string message = DlpBlockMessage(what, dlp_report);
    rec.status = 400;
    rec.error = message;
    Json body = client == WireFormat::kOpenAI
                    ? openai::ErrorJson(message, "invalid_request_error", "dlp_blocked")
                    : anthropic::ErrorJson("invalid_request_error", message);
    auto r = std::make_shared<net::Response>(400, detail::Dump(body), "application/json");
    r->headers.Set("x-request-id", rec.request_id);
    auto responder_ptr = std::make_shared<net::Responder>(std::move(responder));
    Done([r, responder_ptr] { responder_ptr->Send(std::move(*r)); });
  }

  // A whole answer (provider format, 2xx): screened before it is relayed. False when blocked (answered).
  bool ScreenAnswer(std::string& body) {
    if (dlp == nullptr || endpoint == Endpoint::kEmbeddings) return true;  // vectors: no text
    auto j = detail::ParseJson(body, "upstream answer");
    if (!j.ok()) {  // never relayed unscreened
      Fail(502, "upstream answer unreadable: " + j.status().message());
      return false;
    }
    // A Gemini or Bedrock answer is a chat completion here (translated to Responses after screening).
    bool changed = route->format == WireFormat::kAnthropic ? ScreenAnthropicMessages(*dlp, *j, &dlp_report)
                   : endpoint == Endpoint::kResponses && !Translated()
                       ? ScreenResponsesAnswer(*dlp, *j, &dlp_report)
                       : ScreenOpenAIChat(*dlp, *j, &dlp_report);
    if (dlp_report.blocked) {
      FailDlp("response");
      return false;
    }
    if (changed) body = detail::Dump(*j);
    return true;
  }

  // Stream events (provider format) through the filter, then on as before. False when blocked: the
  // released text and the format's error event are written, the provider call is cancelled.
  bool ScreenEvents(const std::vector<SseEvent>& in, bool finish) {
    screened.clear();
    bool ok = true;
    for (const SseEvent& ev : in) {
      if (!(ok = dlp_filter->Feed(ev, &screened))) break;
    }
    if (ok && finish) ok = dlp_filter->Finish(&screened);
    for (const SseEvent& ev : screened) {
      if (RelayAsIs()) AppendSseEvent(out, ev.event, ev.data);
      Translate(ev);
    }
    if (ok) return true;
    call->Cancel();
    dlp_report.Merge(dlp_filter->report());
    std::string message = DlpBlockMessage("response", dlp_report);
    rec.status = 400;
    rec.error = message;
    if (endpoint == Endpoint::kResponses) {
      out += ResponsesDlpBlockEvent(message, responses_seq + 1);
    } else if (client == WireFormat::kOpenAI) {
      AppendSseEvent(out, "",
                     detail::Dump(openai::ErrorJson(message, "invalid_request_error", "dlp_blocked")));
    } else {
      AppendSseEvent(out, "error", detail::Dump(anthropic::ErrorJson("invalid_request_error", message)));
    }
    Write(out);
    EndStream();
    return false;
  }

  void Start(UpstreamRequest up) {
    bool stopping, left;
    {
      std::lock_guard lock(impl->live_mu);
      stopping = impl->stopping;
      left = client_left;
      if (!stopping && !left) {
        call = impl->upstream->NewCall(std::move(up));
        impl->live.emplace(this, shared_from_this());
      }
    }
    // Outside the lock: Fail ends in Done, which takes live_mu itself.
    if (stopping) return Fail(503, "the gateway is stopping");
    if (left) return Fail(499, "client went away before the answer");
    auto self = shared_from_this();
    call->Start([self](Status st) { self->OnHead(st); });
  }

  // Ends the exchange: the one place a record is made.
  void Done(std::function<void()> respond) {
    finished = true;
    FinishAttempt();
    if (dlp != nullptr) {
      if (dlp_filter) dlp_report.Merge(dlp_filter->report());
      rec.dlp_action = std::string(dlp_report.action());
      rec.dlp_rules = dlp_report.rules;
    }
    if (ks) impl->Debit(ks.get(), meter);
    const auto commit_began = SteadyClock::now();
    SteadyClock::time_point handed = commit_began;
    impl->Commit(rec, meter, start, std::move(respond), &admission, *prices, &handed);
    if (work_counted && rec.status >= 200 && rec.status < 300) {
      work += handed - (piece_read != SteadyClock::time_point{} ? piece_read : commit_began);
      impl->work_times.Add(work);
    }
    std::shared_ptr<Exchange> keep;  // this may be the last reference
    std::lock_guard lock(impl->live_mu);
    if (auto it = impl->live.find(this); it != impl->live.end()) {
      keep = std::move(it->second);
      impl->live.erase(it);
      impl->live_cv.notify_all();
    }
  }

  void Fail(int status, std::string message) {
    if (finished) return;
    rec.status = status;
    rec.error = message;
    auto r = std::make_shared<net::Response>(ErrorResponse(client, status, message));
    r->headers.Set("x-request-id", rec.request_id);
    auto responder_ptr = std::make_shared<net::Responder>(std::move(responder));
    Done([r, responder_ptr] { responder_ptr->Send(std::move(*r)); });
  }

  // A governance refusal (policy, budget), in the response RefusalResponse made.
  void Refuse(net::Response r) {
    if (finished) return;
    rec.status = admission.status;
    rec.error = admission.message;
    auto rp = std::make_shared<net::Response>(std::move(r));
    rp->headers.Set("x-request-id", rec.request_id);
    auto responder_ptr = std::make_shared<net::Responder>(std::move(responder));
    Done([rp, responder_ptr] { responder_ptr->Send(std::move(*rp)); });
  }

  void Respond(int status, std::string body) {
    if (finished) return;
    rec.status = status;
    auto r = std::make_shared<net::Response>(status, std::move(body), "application/json");
    r->headers.Set("x-request-id", rec.request_id);
    auto responder_ptr = std::make_shared<net::Responder>(std::move(responder));
    Done([r, responder_ptr] { responder_ptr->Send(std::move(*r)); });
  }

  // The client closed its connection before any answer (net::Responder::OnClose): record 499 and close
  // the provider's connection, so it stops working on an answer nobody will read. A stream that began
  // meanwhile notices the client at its next write instead.
  void ClientLeftEarly() {
    if (finished || !responder.pending()) return;
    Fail(499, "client went away before the answer");  // first: the cancelled call's callback sees finished
    call->Cancel();
  }

  // The proxy is stopping: end now, whatever the call is doing.
  void Abandon() {
    if (finished) return;
    if (call) call->Cancel();
    rec.error = "the gateway is stopping";
    if (!responder.pending()) {  // the stream began: it ends with the format's error event
      rec.status = 503;
      Write(ErrorEvent(rec.error));
      return EndStream();
    }
    Fail(503, rec.error);
  }

  void OnHead(Status st) {
    if (finished) return;
    if (MaybeRetry(st)) return;
    if (!st.ok()) {
      if (st.code() == Code::kDeadlineExceeded) return Fail(504, "upstream: " + st.message());
      if (st.code() == Code::kCancelled) return Fail(503, "the gateway is stopping");
      return Fail(502, "upstream: " + st.message());
    }
    work += call->request_write_began() - attempt_began - call->connect_wait();
    work_counted = true;
    int up_status = call->status();
    bool up_is_stream =
        call->headers().Get("Content-Type").value_or("").find("text/event-stream") != std::string_view::npos;
    if (target.provider == Provider::kBedrock) up_is_stream = BedrockIsStream();
    if (up_status < 200 || up_status >= 300 || !stream_requested || !up_is_stream) {
      auto self = shared_from_this();
      call->ReadAll(64u << 20, [self](Result<std::string> body) { self->OnWhole(std::move(body)); });
      return;
    }
    net::Response head = net::SseResponseHead();
    head.headers.Set("x-request-id", rec.request_id);
    stream = responder.Stream(std::move(head));
    rec.status = 200;
    if (dlp != nullptr) {
      dlp_filter = std::make_unique<StreamDlp>();
      if (endpoint == Endpoint::kResponses && route->format == WireFormat::kOpenAI && !Translated()) {
        dlp_filter->responses = std::make_unique<ResponsesDlpFilter>(*dlp);
      } else {  // an Anthropic provider's events (a Gemini or Bedrock one's chat chunks) are screened
                // before their translation to Responses
        dlp_filter->chat = std::make_unique<DlpStreamFilter>(*dlp, route->format == WireFormat::kAnthropic);
      }
    }
    if (route->format == WireFormat::kAnthropic && client == WireFormat::kOpenAI)
      from_anthropic = std::make_unique<MessagesToChatStream>(include_usage, rec.time_ns / 1000000000);
    Pump();
  }

  // ---- Routing (routing.h; docs/gateway.md "Routing"): one attempt per deployment tried. ----

  // Ends the current attempt for the breaker, judged by what the client was told.
  void FinishAttempt() {
    if (!plan) return;
    if (!rec.attempts.empty() && rec.attempts.back().error.empty() && !rec.error.empty() &&
        (rec.status == 429 || rec.status >= 500))
      rec.attempts.back().error = rec.error;
    Outcome o = Outcome::kSuccess;
    if (rec.status == 499 || rec.error == "the gateway is stopping") {
      o = Outcome::kNeutral;
    } else if (rec.status == 429 || rec.status >= 500) {
      o = Outcome::kFailure;
    }
    plan->Finish(o);
  }

  // The next attempt: a deployment from the plan, its body (translated when its format differs from
  // the client's, its model name set when it differs) and its headers.
  void Attempt() {
    if (finished) return;
    std::string why;
    auto next = plan->Next(&why);
    if (!next) {
      if (last_status != 0) return Fail(last_status, last_error);
      // 502 when the gateway itself could not authenticate (expired AWS credentials), else 400.
      if (!build_error.empty()) return Fail(build_error_status, build_error);
      return Fail(503, why);
    }
    target = std::move(*next);
    attempt_route = RouteConfig{target.model, target.base_url, target.format, "", target.stub_fault_headers};
    route = &attempt_route;
    rec.route = target.base_url;
    rec.deployment = target.deployment;
    rec.attempts.push_back({target.model, target.deployment, 0, "", backoff_ms});
    attempt_began = rec.attempts.size() == 1 ? start : SteadyClock::now();
    auto up = BuildRequest();
    if (!up.ok()) {
      // This deployment cannot take the request (an API its provider does not serve, a body its format
      // cannot express): nothing was sent, so the next one is tried; a 400 only if none could.
      plan->Finish(Outcome::kNeutral);
      rec.attempts.back().error = up.status().message();
      build_error = up.status().message();
      build_error_status = up.status().code() == Code::kUnavailable ? 502 : 400;
      // AWS credentials unavailable: the details (files, endpoints) stay in the log and the record.
      if (build_error_status == 502 && target.provider == Provider::kBedrock)
        build_error = "the gateway's AWS credentials for deployment " + target.deployment +
                      " are unavailable (expired or not fetched yet); see the gateway log";
      return Attempt();
    }
    Start(std::move(*up));
  }

  Result<UpstreamRequest> BuildRequest() {
    const bool openai_api = endpoint == Endpoint::kResponses || endpoint == Endpoint::kEmbeddings;
    if (Translated()) {  // Gemini, Bedrock: chat, messages and Responses as chat; embeddings their own
      if (endpoint == Endpoint::kEmbeddings)
        return target.provider == Provider::kGemini ? BuildGeminiEmbeddings() : BuildBedrockEmbeddings();
      return target.provider == Provider::kGemini ? BuildGeminiRequest() : BuildBedrockRequest();
    }
    UpstreamRequest up;
    up.url = target.url;
    const WireFormat format = target.format;
    if (openai_api) {
      GOVERN_RETURN_IF_ERROR(OpenAIApiBody(up));
    } else if (client == format) {
      if (client == WireFormat::kOpenAI && peek.stream && !include_usage) {
        GOVERN_ASSIGN_OR_RETURN(up.body, WithIncludeUsage(client_body, peek));
      } else {
        up.body = ClientBodyForAttempt();
      }
    } else if (client == WireFormat::kOpenAI) {
      GOVERN_ASSIGN_OR_RETURN(auto chat, openai::ParseChatRequest(client_body));
      GOVERN_ASSIGN_OR_RETURN(auto msgs, ChatToMessagesRequest(chat));
      up.body = detail::Dump(anthropic::ToJson(msgs));
    } else {
      GOVERN_ASSIGN_OR_RETURN(auto msgs, anthropic::ParseMessagesRequest(client_body));
      GOVERN_ASSIGN_OR_RETURN(auto chat, MessagesToChatRequest(msgs));
      up.body = detail::Dump(openai::ToJson(chat));
    }
    // The provider's model name: the deployment's own, or the fallback model's.
    std::string model = !target.upstream_model.empty() ? target.upstream_model : target.model;
    // Azure's Responses API is not under a deployment: the body's model names it.
    if (target.provider == Provider::kAzure && endpoint == Endpoint::kResponses)
      model = target.azure_deployment;
    if (model != peek.model) {
      GOVERN_ASSIGN_OR_RETURN(Json j, detail::ParseJson(up.body, "request"));
      j["model"] = model;
      up.body = detail::Dump(j);
    }
    up.headers.Set("Content-Type", "application/json");
    for (const auto& [name, value] : target.auth.fields()) up.headers.Set(name, value);
    if (format == WireFormat::kAnthropic)
      up.headers.Set("anthropic-version", anthropic_version.empty() ? "2023-06-01" : anthropic_version);
    if (peek.stream) up.headers.Set("Accept", "text/event-stream");
    if (target.stub_fault_headers) {
      for (const auto& [name, value] : fault_headers) up.headers.Set(name, value);
    }
    up.connect_timeout = target.connect_timeout;
    up.header_timeout = target.header_timeout;
    up.read_timeout = target.read_timeout;
    return up;
  }

  // The client's bytes for this attempt: moved on the last attempt (no copy on one-provider routes),
  // copied while another attempt may need them.
  std::string ClientBodyForAttempt() {
    if (plan->attempts() >= plan->max_attempts()) return std::move(client_body);
    return client_body;
  }

  // The Responses and embeddings APIs: the client's bytes to an OpenAI-format deployment (the API's path
  // in place of the chat path in its URL; Azure's Responses URL is its resource's), Responses translated
  // for an Anthropic one; a deployment that does not serve the API is a 400 naming it (Attempt). Gemini
  // and Bedrock never get here (BuildRequest).
  Status OpenAIApiBody(UpstreamRequest& up) {
    const bool responses = endpoint == Endpoint::kResponses;
    const std::string api = responses ? "Responses" : "embeddings";
    auto refuse = [&] {
      return InvalidArgument("the model `" + peek.model + "` does not serve the " + api +
                             " API (deployment " + target.deployment + " is " +
                             std::string(ProviderName(target.provider)) + ")");
    };
    switch (target.provider) {
      case Provider::kAnthropic: {
        if (!responses) return refuse();
        GOVERN_ASSIGN_OR_RETURN(auto parsed, openai::ParseResponsesRequest(client_body));
        GOVERN_ASSIGN_OR_RETURN(auto msgs, ResponsesToMessagesRequest(parsed));
        up.body = detail::Dump(anthropic::ToJson(msgs));
        return OkStatus();
      }
      case Provider::kAzure:
        if (responses) {  // the resource's Responses URL (routing.cc), the client's bytes
          up.url = target.responses_url;
          up.body = ClientBodyForAttempt();
          return OkStatus();
        }
        [[fallthrough]];
      case Provider::kOpenAI:
      case Provider::kOpenAICompatible: {
        constexpr std::string_view kChat = "/chat/completions";
        size_t at = target.url.rfind(kChat);
        if (at == std::string::npos) return refuse();
        up.url = target.url.substr(0, at) + std::string(EndpointPath(endpoint)).substr(3) +  // drop "/v1"
                 target.url.substr(at + kChat.size());
        up.body = ClientBodyForAttempt();
        return OkStatus();
      }
      case Provider::kGemini:
      case Provider::kBedrock:
        return refuse();
    }
    return refuse();
  }

  // A Gemini or Bedrock deployment's request as a chat completion: the client's own, an Anthropic
  // client's translated, or a Responses client's (gateway/responses_translate.h).
  Result<openai::ChatRequest> ClientChat() {
    if (endpoint == Endpoint::kResponses) {
      GOVERN_ASSIGN_OR_RETURN(auto parsed, openai::ParseResponsesRequest(client_body));
      return ResponsesToChatRequest(parsed);
    }
    if (client == WireFormat::kOpenAI) return openai::ParseChatRequest(client_body);
    GOVERN_ASSIGN_OR_RETURN(auto msgs, anthropic::ParseMessagesRequest(client_body));
    return MessagesToChatRequest(msgs);
  }

  bool Translated() const {
    return target.provider == Provider::kGemini || target.provider == Provider::kBedrock;
  }
  // The provider's stream goes to the client as it came (same format; not a translated Responses one).
  bool RelayAsIs() const {
    return client == route->format && !(endpoint == Endpoint::kResponses && Translated());
  }

  // Gemini (gateway/gemini.h): the request as an OpenAI one, then as generateContent.
  Result<UpstreamRequest> BuildGeminiRequest() {
    GOVERN_ASSIGN_OR_RETURN(openai::ChatRequest chat, ClientChat());
    GOVERN_ASSIGN_OR_RETURN(Json body, gemini::FromChatRequest(chat));
    UpstreamRequest up;
    up.body = detail::Dump(body);
    up.url = peek.stream ? target.stream_url : target.url;
    up.headers.Set("Content-Type", "application/json");
    for (const auto& [name, value] : target.auth.fields()) up.headers.Set(name, value);
    if (peek.stream) up.headers.Set("Accept", "text/event-stream");
    AttemptOptions(up);
    return up;
  }

  // A Gemini whole answer as an OpenAI one (false: the exchange already failed).
  bool GeminiWhole(std::string& body) {
    int up_status = call->status();
    if (up_status < 200 || up_status >= 300) {
      Fail(up_status >= 500 ? 502 : up_status, "upstream: " + UpstreamErrorMessage(body));
      return false;
    }
    if (endpoint == Endpoint::kEmbeddings) {
      auto emb = gemini::ToEmbeddingsResponse(body, rec.model, embed_inputs, embed_estimate);
      if (!emb.ok()) {
        Fail(502, "upstream answer unreadable: " + emb.status().message());
        return false;
      }
      emb->base64 = embed_base64;
      meter.estimated = emb->tokens_estimated;  // metered from the answer's usage (OnWholeOpenAIApi)
      body = openai::EmbeddingsBody(*emb);
      return true;
    }
    auto resp = gemini::ToChatResponse(body, rec.model, rec.time_ns / 1000000000);
    if (!resp.ok()) {
      Fail(502, "upstream answer unreadable: " + resp.status().message());
      return false;
    }
    body = detail::Dump(openai::ToJson(*resp));
    return true;
  }

  // ---- AWS Bedrock (gw-bedrock; gateway/bedrock.h, bedrock_provider.h): as Gemini, an OpenAI request
  // sent as a Converse body, signed afresh at each attempt; answers and event-stream frames come back
  // as OpenAI ones. ----

  Result<UpstreamRequest> BuildBedrockRequest() {
    GOVERN_ASSIGN_OR_RETURN(openai::ChatRequest chat, ClientChat());
    GOVERN_ASSIGN_OR_RETURN(UpstreamRequest up, BedrockRequest(*target.bedrock, chat, peek.stream,
                                                               Clock::Real().UnixMicros()));
    AttemptOptions(up);
    return up;
  }

  bool BedrockIsStream() {
    return stream_requested &&
           call->headers().Get("Content-Type").value_or("").find("application/vnd.amazon.eventstream") !=
               std::string_view::npos;
  }

  // A Bedrock whole answer as an OpenAI one (false: the exchange already failed).
  bool BedrockWhole(std::string& body) {
    int up_status = call->status();
    if (up_status < 200 || up_status >= 300) {
      std::string type(call->headers().Get("x-amzn-ErrorType").value_or(""));
      type = type.substr(0, type.find(':'));
      Fail(BedrockClientStatus(up_status),
           "upstream: " + (type.empty() ? "" : type + ": ") + bedrock::ErrorMessage(body));
      return false;
    }
    if (endpoint == Endpoint::kEmbeddings) return BedrockEmbeddingsAnswer(body);
    auto resp = bedrock::ToChatResponse(body, rec.model, rec.time_ns / 1000000000);
    if (!resp.ok()) {
      Fail(502, "upstream answer unreadable: " + resp.status().message());
      return false;
    }
    body = detail::Dump(openai::ToJson(*resp));
    return true;
  }

  // ---- Embeddings on Gemini (batchEmbedContents) and Bedrock (InvokeModel: Titan, Cohere) ----

  size_t embed_inputs = 0;    // how many vectors the client asked for
  bool embed_base64 = false;  // encoding_format base64: little-endian float32, written by the gateway
  bedrock::EmbeddingModel embed_model = bedrock::EmbeddingModel::kTitanV2;
  std::vector<std::string> embed_bodies;  // Bedrock: the InvokeModel bodies (Titan: one per input)
  size_t embed_next = 0;                  // the next of them to send
  int64_t embed_estimate = 0;             // Gemini: the tokens metered when the answer has no count
  openai::EmbeddingsResponse embed_out;   // Bedrock: the vectors and tokens so far (this attempt)
  // Bedrock: the input tokens of every InvokeModel call answered, over all attempts. A retry rebuilds
  // embed_out, but the calls already answered were billed: they stay metered, success or failure.
  int64_t embed_billed = 0;

  Result<openai::EmbeddingsRequest> ClientEmbeddings() {
    GOVERN_ASSIGN_OR_RETURN(auto req, openai::ParseEmbeddingsRequest(client_body));
    if (!req.encoding_format.empty() && req.encoding_format != "float" && req.encoding_format != "base64")
      return InvalidArgument("encoding_format must be float or base64");
    embed_inputs = req.input.size() + req.input_tokens.size();
    embed_base64 = req.encoding_format == "base64";
    return req;
  }

  void AttemptOptions(UpstreamRequest& up) {
    if (target.stub_fault_headers) {  // unsigned: only the stub reads them
      for (const auto& [name, value] : fault_headers) up.headers.Set(name, value);
    }
    up.connect_timeout = target.connect_timeout;
    up.header_timeout = target.header_timeout;
    up.read_timeout = target.read_timeout;
  }

  Result<UpstreamRequest> BuildGeminiEmbeddings() {
    GOVERN_ASSIGN_OR_RETURN(auto req, ClientEmbeddings());
    UpstreamRequest up;
    // t.url is .../models/{model}:generateContent: the same model, the embeddings method.
    up.url = target.url.substr(0, target.url.rfind(':')) + ":batchEmbedContents";
    std::string_view path_model(up.url);
    path_model = path_model.substr(path_model.rfind("/models/") + 8);
    path_model = path_model.substr(0, path_model.rfind(':'));
    GOVERN_ASSIGN_OR_RETURN(Json body, gemini::FromEmbeddingsRequest(req, path_model));
    embed_estimate = gemini::EstimateEmbeddingTokens(req);
    up.body = detail::Dump(body);
    up.headers.Set("Content-Type", "application/json");
    for (const auto& [name, value] : target.auth.fields()) up.headers.Set(name, value);
    AttemptOptions(up);
    return up;
  }

  Result<UpstreamRequest> BuildBedrockEmbeddings() {
    GOVERN_ASSIGN_OR_RETURN(auto req, ClientEmbeddings());
    GOVERN_ASSIGN_OR_RETURN(embed_model, bedrock::EmbeddingModelOf(target.bedrock->model_id));
    GOVERN_ASSIGN_OR_RETURN(
        embed_bodies, bedrock::FromEmbeddingsRequest(req, embed_model, target.bedrock->cohere_input_type));
    embed_next = 0;
    embed_out = openai::EmbeddingsResponse{};
    embed_out.model = rec.model;
    embed_out.base64 = embed_base64;
    return NextBedrockInvoke();
  }

  Result<UpstreamRequest> NextBedrockInvoke() {
    GOVERN_ASSIGN_OR_RETURN(UpstreamRequest up,
                            BedrockInvokeRequest(*target.bedrock, std::move(embed_bodies[embed_next++]),
                                                 Clock::Real().UnixMicros()));
    AttemptOptions(up);
    return up;
  }

  // One InvokeModel answer (2xx): its vectors kept; Titan's next input sent (false), or, after the last,
  // the OpenAI answer in `body` (true). False also when the exchange failed.
  bool BedrockEmbeddingsAnswer(std::string& body) {
    const bool cohere =
        embed_model == bedrock::EmbeddingModel::kCohere || embed_model == bedrock::EmbeddingModel::kCohereV4;
    // The texts the answered call sent: Titan one; Cohere its batch of at most 96 (embed_next is past it).
    const size_t sent = cohere ? std::min(bedrock::kCohereMaxTexts,
                                          embed_inputs - (embed_next - 1) * bedrock::kCohereMaxTexts)
                               : 1;
    auto tokens = bedrock::AppendEmbeddings(body, embed_model, sent, embed_out);
    if (!tokens.ok()) {
      Fail(502, "upstream answer unreadable: " + tokens.status().message());
      return false;
    }
    int64_t n = *tokens;
    if (n < 0) {  // Cohere: Bedrock's header counts the input tokens
      n = 0;
      if (auto h = call->headers().Get("X-Amzn-Bedrock-Input-Token-Count")) {
        int64_t v = 0;
        auto [p, ec] = std::from_chars(h->data(), h->data() + h->size(), v);
        if (ec == std::errc() && p == h->data() + h->size() && v >= 0) n = v;
      }
    }
    embed_out.prompt_tokens += n;
    embed_out.total_tokens = embed_out.prompt_tokens;
    embed_billed += n;
    meter.input = embed_billed;
    if (embed_next < embed_bodies.size()) {
      auto up = NextBedrockInvoke();
      if (!up.ok()) {
        Fail(500, "bedrock request: " + up.status().message());
        return false;
      }
      // Started from the loop, not inside the finished call's own callback.
      auto self = shared_from_this();
      auto next = std::make_shared<UpstreamRequest>(std::move(*up));
      call->Post([self, next] {
        if (!self->finished) self->Start(std::move(*next));
      });
      return false;
    }
    body = openai::EmbeddingsBody(embed_out);
    return true;
  }

  // A piece of a Gemini stream or a ConverseStream answer as OpenAI chunk events (false: nothing to
  // relay yet, or it failed). At the end (an empty piece): what the stream still owes if it finished
  // (Gemini: the usage chunk and [DONE]; Bedrock: [DONE] when it ended without its metadata event).
  bool ToChatPiece(std::string& piece) {
    if (!to_chat) {
      const int64_t created = rec.time_ns / 1000000000;
      if (target.provider == Provider::kGemini) {
        to_chat = std::make_unique<gemini::StreamToChat>(rec.model, created);
      } else {
        to_chat = std::make_unique<bedrock::StreamToChat>(rec.model, created);
      }
    }
    std::string converted;
    if (piece.empty()) {
      to_chat->Finish(converted);
      piece = std::move(converted);
      return true;
    }
    if (Status s = to_chat->Feed(piece, converted); !s.ok()) {
      call->Cancel();
      rec.status = 502;
      rec.error = "upstream stream unreadable: " + s.message();
      Write(StreamErrorEvent(client, rec.error));
      EndStream();
      return false;
    }
    if (converted.empty()) {
      Pump();
      return false;
    }
    piece = std::move(converted);
    return true;
  }

  // Whether the failed or refused attempt goes on to another: only before any byte went to the client,
  // and only when the provider cannot be working on it (nothing was sent) or said it did not (an
  // answered 429/5xx, which is not billed). True: the exchange carries on elsewhere.
  bool MaybeRetry(const Status& st) {
    if (!plan) return false;
    if (!st.ok()) {
      if (st.code() == Code::kCancelled || call->request_sent()) return false;
      rec.attempts.back().error = st.message();
      if (!plan->HasNext()) return false;  // fails as it would have (no pause before the answer)
      last_status = st.code() == Code::kDeadlineExceeded ? 504 : 502;
      last_error = "upstream: " + st.message();
      plan->Finish(Outcome::kFailure);
      Retry();
      return true;
    }
    int up_status = call->status();
    rec.attempts.back().status = up_status;
    const auto& codes = plan->retry().on_status;
    if (std::find(codes.begin(), codes.end(), up_status) == codes.end() || !plan->HasNext()) return false;
    // The provider's Retry-After (whole seconds) lengthens the backoff, up to max_backoff.
    int64_t retry_after_ms = 0;
    if (auto ra = call->headers().Get("Retry-After")) {
      int64_t seconds = 0;
      auto [p, ec] = std::from_chars(ra->data(), ra->data() + ra->size(), seconds);
      if (ec == std::errc() && p == ra->data() + ra->size() && seconds > 0 && seconds < 86400)
        retry_after_ms = seconds * 1000;
    }
    // Read the (small) error answer, so its message is recorded and the connection can be pooled.
    auto self = shared_from_this();
    call->ReadAll(64 << 10, [self, up_status, retry_after_ms](Result<std::string> body) {
      if (self->finished) return;
      std::string message = body.ok() ? UpstreamErrorMessage(*body) : body.status().message();
      self->rec.attempts.back().error = message;
      self->last_status = up_status >= 500 ? 502 : up_status;
      self->last_error = "upstream: " + message;
      self->plan->Finish(Outcome::kFailure);
      self->Retry(std::chrono::milliseconds(retry_after_ms));
    });
    return true;
  }

  void Retry(std::chrono::milliseconds retry_after = std::chrono::milliseconds(0)) {
    auto delay = std::max(plan->NextBackoff(), std::min(retry_after, plan->retry().max_backoff));
    backoff_ms = delay.count();
    // A call that never got a loop (its URL did not parse) has no timer to wait on: go on at once.
    if (delay.count() == 0 || !call->has_loop()) return Attempt();
    auto self = shared_from_this();
    call->PostAfter(delay, [self] { self->Attempt(); });
  }

  void OnWhole(Result<std::string> body) {
    if (finished) return;
    piece_read = SteadyClock::now();
    if (!body.ok()) {
      if (body.status().code() == Code::kDeadlineExceeded)
        return Fail(504, "upstream: " + body.status().message());
      return Fail(502, "upstream answer cut: " + body.status().message());
    }
    if (target.provider == Provider::kGemini && !GeminiWhole(*body)) return;
    if (target.provider == Provider::kBedrock && !BedrockWhole(*body)) return;
    int up_status = call->status();
    if (up_status < 200 || up_status >= 300) {
      std::string message = UpstreamErrorMessage(*body);
      int status = up_status >= 500 ? 502 : up_status;
      if (client == route->format && up_status < 500) {
        rec.error = message;
        return Respond(status, std::move(*body));
      }
      return Fail(status, "upstream: " + message);
    }
    if (endpoint == Endpoint::kResponses || endpoint == Endpoint::kEmbeddings)
      return OnWholeOpenAIApi(std::move(*body));
    if (!ScreenAnswer(*body)) return;  // DLP
    std::string out_body;
    if (route->format == WireFormat::kOpenAI && client == route->format && dlp == nullptr) {
      // Relayed byte for byte: only its frame is checked and its usage read (simdjson, no tree). With
      // DLP on, the full parse below refuses message shapes the screen does not read (object content or
      // arguments), as it did before the peek.
      auto usage = PeekChatUsage(*body);
      if (!usage.ok()) return Fail(502, "upstream answer unreadable: " + usage.status().message());
      if (*usage) meter.Set(**usage);
      out_body = std::move(*body);
    } else if (route->format == WireFormat::kOpenAI) {
      auto resp = openai::ParseChatResponse(*body);
      if (!resp.ok()) return Fail(502, "upstream answer unreadable: " + resp.status().message());
      if (resp->usage) meter.Set(*resp->usage);
      out_body = client == route->format ? std::move(*body)
                                         : detail::Dump(anthropic::ToJson(ChatToMessagesResponse(*resp)));
    } else {
      auto resp = anthropic::ParseMessagesResponse(*body);
      if (!resp.ok()) return Fail(502, "upstream answer unreadable: " + resp.status().message());
      meter.Set(ChatUsageFrom(resp->usage));
      int64_t created = rec.time_ns / 1000000000;
      out_body = client == route->format
                     ? std::move(*body)
                     : detail::Dump(openai::ToJson(MessagesToChatResponse(*resp, created)));
    }
    Respond(200, std::move(out_body));
  }

  // A piece of the answer has been worked on: its time counts (work) up to now.
  void PieceHandedOn() {
    if (piece_read == SteadyClock::time_point{}) return;
    work += SteadyClock::now() - piece_read;
    piece_read = {};
  }

  bool Write(std::string_view bytes) {
    if (bytes.empty()) return true;
    PieceHandedOn();
    if (!stream.Write(bytes)) return false;
    stream.Flush();
    return true;
  }

  void Pump() {
    PieceHandedOn();  // a piece that gave no bytes to write
    auto self = shared_from_this();
    call->Read([self](Result<std::string> piece) { self->OnPiece(std::move(piece)); });
  }

  void ClientGone() {
    call->Cancel();
    rec.status = 499;
    rec.error = "client went away";
    EndStream();
  }

  void EndStream() {
    if (finished) return;
    if (meter.output == 0) meter.output = streamed_chunks;
    auto s = std::make_shared<net::BodyStream>(std::move(stream));
    // The error event (if any) tells the SDK; the body itself is complete.
    Done([s] { s->Finish(); });
  }

  void OnPiece(Result<std::string> piece) {
    if (finished) return;
    piece_read = SteadyClock::now();
    const bool translated = target.provider == Provider::kGemini || target.provider == Provider::kBedrock;
    if (translated && piece.ok() && !ToChatPiece(*piece)) return;
    if (!piece.ok() || piece->empty()) {
      if (!piece.ok()) {
        if (piece.status().code() == Code::kCancelled) {
          if (stream.closed()) return ClientGone();
          rec.status = 503;
          rec.error = "the gateway is stopping";
        } else {
          rec.status = piece.status().code() == Code::kDeadlineExceeded ? 504 : 502;
          rec.error = "upstream stream cut: " + piece.status().message();
        }
      } else if (!complete) {
        rec.status = 502;
        rec.error = "upstream stream ended without its end marker";
      }
      if (dlp_filter && rec.status != 499) {  // DLP: release the screened tail still held
        out.clear();
        if (!ScreenEvents({}, true)) return;
        Write(out);
      }
      if (client == WireFormat::kAnthropic && route->format == WireFormat::kOpenAI &&
          !from_openai.finished() && rec.status == 200) {
        std::vector<anthropic::StreamEvent> evs;
        from_openai.Finish(evs);
        out.clear();
        for (const auto& e : evs) AppendSseEvent(out, e.name(), detail::Dump(anthropic::ToJson(e)));
        Write(out);
      }
      if (rec.status != 200) Write(ErrorEvent(rec.error));
      return EndStream();
    }
    out.clear();
    if (RelayAsIs() && !dlp_filter) out = *piece;
    events.clear();
    if (Status s = parser.Feed(*piece, events); !s.ok()) {
      call->Cancel();
      rec.status = 502;
      rec.error = "upstream stream unreadable: " + s.message();
      Write(ErrorEvent(rec.error));
      return EndStream();
    }
    if (dlp_filter) {
      if (!ScreenEvents(events, false)) return;  // DLP block: the stream has ended
    } else {
      for (const SseEvent& ev : events) Translate(ev);
    }
    if (!Write(out)) return ClientGone();
    if (stream.writable()) return Pump();
    // Back-pressure: the next piece is read only once the client took enough of this one.
    auto self = shared_from_this();
    stream.OnWritable([self] {
      self->call->Post([self] {
        if (self->finished) return;
        if (self->stream.closed()) return self->ClientGone();
        self->Pump();
      });
    });
  }

  void Translate(const SseEvent& ev) {
    if (endpoint == Endpoint::kResponses) return TranslateResponses(ev);
    if (route->format == WireFormat::kOpenAI) {
      if (ev.IsDone()) {
        complete = true;
        if (client == WireFormat::kAnthropic) {
          std::vector<anthropic::StreamEvent> evs;
          from_openai.Finish(evs);
          for (const auto& e : evs) AppendSseEvent(out, e.name(), detail::Dump(anthropic::ToJson(e)));
        }
        return;
      }
      auto chunk = openai::ParseChatChunk(ev.data);
      if (!chunk.ok()) {
        // An in-stream error object ends the stream; anything else unknown is relayed as is when the
        // formats match.
        auto j = detail::ParseJson(ev.data, "event");
        if (j.ok() && j->is_object() && j->contains("error")) {
          complete = true;
          if (client == WireFormat::kAnthropic)
            out += StreamErrorEvent(client, UpstreamErrorMessage(ev.data));
        }
        return;
      }
      if (chunk->usage) meter.Set(*chunk->usage);
      for (const auto& c : chunk->choices) {
        if (c.content || !c.tool_calls.empty()) ++streamed_chunks;
      }
      if (client == WireFormat::kAnthropic) {
        std::vector<anthropic::StreamEvent> evs;
        from_openai.Feed(*chunk, evs);
        for (const auto& e : evs) AppendSseEvent(out, e.name(), detail::Dump(anthropic::ToJson(e)));
      }
    } else {
      auto sev = anthropic::ParseStreamEvent(ev.data);
      if (!sev.ok()) return;
      if (sev->type == anthropic::StreamEvent::Type::kMessageStop ||
          sev->type == anthropic::StreamEvent::Type::kError)
        complete = true;
      if (!from_anthropic) {
        // Same format: usage read through a translator whose output is dropped.
        from_anthropic = std::make_unique<MessagesToChatStream>(false, 0);
      }
      std::vector<openai::Json> chunks;
      from_anthropic->Feed(*sev, chunks);
      meter.Set(from_anthropic->usage());
      if (client == WireFormat::kOpenAI) {
        for (const auto& c : chunks) AppendSseEvent(out, "", detail::Dump(c));
        if (from_anthropic->done()) out += kSseDone;
      }
    }
  }

  // ---- The OpenAI Responses and embeddings APIs (same-format pass-through, metered) ----

  // The in-stream error event in the client's API.
  std::string ErrorEvent(std::string_view message) {
    if (endpoint == Endpoint::kResponses) return ResponsesStreamErrorEvent(message, responses_seq + 1);
    return StreamErrorEvent(client, message);
  }

  // A whole 2xx Responses or embeddings answer: relayed as it came, metered from its usage (translated
  // from an Anthropic provider's message).
  void OnWholeOpenAIApi(std::string body) {
    if (!ScreenAnswer(body)) return;  // DLP (in the provider's format)
    if (route->format == WireFormat::kAnthropic) {
      auto resp = anthropic::ParseMessagesResponse(body);
      if (!resp.ok()) return Fail(502, "upstream answer unreadable: " + resp.status().message());
      meter.Set(ChatUsageFrom(resp->usage));
      return Respond(
          200, detail::Dump(openai::ToJson(MessagesToResponsesResponse(*resp, rec.time_ns / 1000000000))));
    }
    if (endpoint == Endpoint::kResponses && Translated()) {  // Gemini, Bedrock: a chat completion here
      auto resp = openai::ParseChatResponse(body);
      if (!resp.ok()) return Fail(502, "upstream answer unreadable: " + resp.status().message());
      if (resp->usage) meter.Set(*resp->usage);
      return Respond(200,
                     detail::Dump(openai::ToJson(ChatToResponsesResponse(*resp, rec.time_ns / 1000000000))));
    }
    // Bedrock embeddings: metered call by call (BedrockEmbeddingsAnswer), retried attempts included.
    if (endpoint == Endpoint::kEmbeddings && target.provider == Provider::kBedrock)
      return Respond(200, std::move(body));
    auto usage = endpoint == Endpoint::kResponses ? PeekResponsesUsage(body) : PeekEmbeddingsUsage(body);
    if (!usage.ok()) return Fail(502, "upstream answer unreadable: " + usage.status().message());
    if (*usage) meter.Set(**usage);
    Respond(200, std::move(body));
  }

  // A Responses stream event (relayed byte for byte by OnPiece): usage from response.completed (or
  // incomplete / failed), the end at a terminal event, output deltas counted for a stream cut short.
  void TranslateResponses(const SseEvent& ev) {
    if (route->format == WireFormat::kAnthropic) return TranslateMessagesToResponses(ev);
    if (Translated()) return TranslateChatToResponses(ev);
    auto p = PeekResponsesEvent(ev.data);
    if (!p.ok()) return;
    if (p->sequence_number) responses_seq = *p->sequence_number;
    if (p->usage) meter.Set(*p->usage);
    if (p->output_delta) ++streamed_chunks;
    if (p->terminal) {
      complete = true;
      if (!p->error.empty()) rec.error = "upstream: " + p->error;
    }
  }
  int64_t responses_seq = -1;  // the last sequence_number relayed

  // An Anthropic provider's stream event, translated to Responses events for the client.
  void TranslateMessagesToResponses(const SseEvent& ev) {
    auto sev = anthropic::ParseStreamEvent(ev.data);
    if (!sev.ok()) return;
    if (!to_responses) to_responses = std::make_unique<MessagesToResponsesStream>(rec.time_ns / 1000000000);
    std::vector<openai::Json> evs;
    to_responses->Feed(*sev, evs);
    for (const auto& e : evs) {
      AppendSseEvent(out, detail::StrField(e, "type"), detail::Dump(e));
      if (detail::StrField(e, "type").ends_with(".delta")) ++streamed_chunks;
    }
    responses_seq = to_responses->last_sequence();
    meter.Set(to_responses->usage());
    if (to_responses->done()) {
      complete = true;
      if (to_responses->failed()) rec.error = "upstream: " + sev->error_message;
    }
  }
  std::unique_ptr<MessagesToResponsesStream> to_responses;

  // A Gemini or Bedrock stream (as chat chunks, ToChatPiece) translated to Responses events.
  void TranslateChatToResponses(const SseEvent& ev) {
    if (!chat_to_responses)
      chat_to_responses = std::make_unique<ChatToResponsesStream>(rec.time_ns / 1000000000);
    std::vector<openai::Json> evs;
    if (ev.IsDone()) {
      chat_to_responses->Finish(evs);
    } else {
      auto chunk = openai::ParseChatChunk(ev.data);
      if (!chunk.ok()) return;
      if (chunk->usage) meter.Set(*chunk->usage);
      chat_to_responses->Feed(*chunk, evs);
      if (chat_to_responses->failed()) rec.error = "upstream: " + UpstreamErrorMessage(ev.data);
    }
    for (const auto& e : evs) {
      AppendSseEvent(out, detail::StrField(e, "type"), detail::Dump(e));
      if (detail::StrField(e, "type").ends_with(".delta")) ++streamed_chunks;
    }
    responses_seq = chat_to_responses->last_sequence();
    if (chat_to_responses->done()) complete = true;
  }
  std::unique_ptr<ChatToResponsesStream> chat_to_responses;
};

Proxy::Proxy(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Proxy>> Proxy::Create(ProxyConfig config) {
  auto impl = std::make_shared<Impl>();
  GOVERN_ASSIGN_OR_RETURN(auto table, RouteTable::Create(AllRoutes(config)));
  impl->table.store(std::move(table));
  impl->prices.store(std::make_shared<const std::map<std::string, PriceConfig>>(config.prices));
  for (const auto& k : config.keys) {
    if (!impl->keys.emplace(k.key, std::make_shared<KeyState>(k)).second)
      return InvalidArgument("gateway: virtual key listed twice");
  }
  if (!config.wal_dir.empty()) {
    wal::Options o;
    o.default_durability = wal::Durability::kBuffered;
    o.preallocate = false;
    // A usage record is written by the loop that makes it (one pwrite) rather than by waking the WAL's
    // sync thread for each one: no thread switch per request, and it is in the file (safe from a crash
    // of the process) before the response completes.
    o.appender_writes = true;
    GOVERN_ASSIGN_OR_RETURN(impl->wal, wal::Log::Open(config.wal_dir, o));
  }
  GOVERN_ASSIGN_OR_RETURN(impl->upstream, UpstreamClient::Create(config.upstream));
  impl->dlp.store(config.dlp ? config.dlp : std::make_shared<const DlpConfig>());
  impl->config = std::move(config);
  return std::unique_ptr<Proxy>(new Proxy(std::move(impl)));
}

Proxy::~Proxy() {
  Impl& s = *impl_;
  std::vector<std::shared_ptr<Exchange>> live;
  {
    std::lock_guard lock(s.live_mu);
    s.stopping = true;
    for (auto& [raw, ex] : s.live) live.push_back(ex);
  }
  // Each exchange ends on its own loop (recorded); one whose loop drops the task (the client already
  // stopping) cannot happen here, the client stops below.
  for (auto& ex : live) {
    ex->call->Post([ex] { ex->Abandon(); });
  }
  live.clear();
  {
    std::unique_lock lock(s.live_mu);
    s.live_cv.wait(lock, [&] { return s.live.empty(); });
  }
  s.upstream.reset();
  // The routes registered with a server share impl_ and may outlive the Proxy (they answer 503 once
  // stopping), so the WAL is closed here rather than with the last reference.
  if (s.wal) (void)s.wal->Flush();
  s.wal.reset();
}

void Proxy::SetDlp(std::shared_ptr<const DlpConfig> dlp) {
  impl_->dlp.store(dlp ? std::move(dlp) : std::make_shared<const DlpConfig>());
}

// A reload (routes_reload.h): everything is checked before anything is swapped.
Status Proxy::Reload(ProxyConfig next) {
  Impl& s = *impl_;
  std::lock_guard reload(s.reload_mu);
  std::set<std::string_view> seen;
  for (const auto& k : next.keys) {
    if (!seen.insert(k.key).second) return InvalidArgument("gateway: virtual key listed twice");
  }
  GOVERN_ASSIGN_OR_RETURN(auto table, RouteTable::Create(AllRoutes(next), s.table.load().get()));
  {
    // Keys still listed keep their rate-limit buckets unless their limits changed.
    std::lock_guard lock(s.keys_mu);
    std::unordered_map<std::string, std::shared_ptr<KeyState>> keys;
    for (const auto& k : next.keys) {
      auto it = s.keys.find(k.key);
      if (it != s.keys.end() && it->second->config.requests_per_minute == k.requests_per_minute &&
          it->second->config.tokens_per_minute == k.tokens_per_minute) {
        it->second->config.org = k.org;
        keys.emplace(k.key, std::move(it->second));
        s.keys.erase(it);
      } else {
        keys.emplace(k.key, std::make_shared<KeyState>(k));
      }
    }
    std::erase_if(s.retired_keys, [](const std::weak_ptr<KeyState>& w) { return w.expired(); });
    // Dropped here unless a request in flight holds it (Exchange::ks).
    for (auto& [key, state] : s.keys) {
      if (state.use_count() > 1) s.retired_keys.push_back(state);
    }
    s.keys = std::move(keys);
  }
  s.table.store(std::move(table));
  s.prices.store(std::make_shared<const std::map<std::string, PriceConfig>>(std::move(next.prices)));
  s.dlp.store(next.dlp ? std::move(next.dlp) : std::make_shared<const DlpConfig>());
  return OkStatus();
}

size_t Proxy::retired_key_states() const {
  std::lock_guard lock(impl_->keys_mu);
  return std::count_if(impl_->retired_keys.begin(), impl_->retired_keys.end(),
                       [](const std::weak_ptr<KeyState>& w) { return !w.expired(); });
}

UpstreamClient::Stats Proxy::upstream_stats() const { return impl_->upstream->stats(); }

WorkTimes Proxy::TakeWorkTimes() { return impl_->work_times.Take(); }

const RouteTable& Proxy::route_table() const { return *impl_->table.load(); }
wal::Log* Proxy::usage_wal() const { return impl_->wal.get(); }

void Proxy::Register(net::Router& router) {
  std::shared_ptr<Impl> impl = impl_;
  auto handler = [impl](WireFormat f) {
    return [impl, f](net::Request&& req, net::Responder responder) {
      impl->Begin(f, req, std::move(responder));
    };
  };
  net::RouteOptions options;
  options.max_body_bytes = 32 * 1024 * 1024;
  router.Add(net::Method::kPost, "/v1/chat/completions", handler(WireFormat::kOpenAI), options);
  router.Add(net::Method::kPost, "/v1/messages", handler(WireFormat::kAnthropic), options);
  // The OpenAI Responses and embeddings APIs (Responses also translated to Anthropic-format routes).
  for (Endpoint e : {Endpoint::kResponses, Endpoint::kEmbeddings}) {
    router.Add(
        net::Method::kPost, std::string(EndpointPath(e)),
        [impl, e](net::Request&& req, net::Responder responder) {
          impl->Begin(WireFormat::kOpenAI, req, std::move(responder), e);
        },
        options);
  }
  router.AddSync(net::Method::kGet, "/v1/models", [impl](net::Request& req) {
    auto token = net::BearerToken(req);
    std::optional<std::string_view> key = token;
    if (!key) key = req.headers.Get("x-api-key");
    {
      std::lock_guard lock(impl->keys_mu);
      bool known = key && impl->keys.contains(std::string(*key));
      if (!known && key && impl->config.governance)
        known = AuthenticateToken(*impl->config.governance, *key).ok();
      if (!known) return ErrorResponse(WireFormat::kOpenAI, 401, "missing or unknown API key");
    }
    std::vector<openai::Model> models;
    auto table = impl->table.load();
    for (const auto& r : table->routes()) models.push_back({r.model, 0, "govern"});
    return net::Response(200, detail::Dump(openai::ModelsListJson(models)), "application/json");
  });
}

void ProxyCore::Commit(UsageRecord& r, const Meter& m, SteadyClock::time_point start,
                       std::function<void()> respond, Admission* admission,
                       const std::map<std::string, PriceConfig>& price_table,
                       SteadyClock::time_point* handed) {
  r.input_tokens = m.input;
  r.output_tokens = m.output;
  r.cached_tokens = m.cached;
  r.tokens_estimated = m.estimated;
  // Priced as the model that answered: a fallback's price, not the requested model's.
  const std::string& priced = r.attempts.empty() ? r.model : r.attempts.back().model;
  if (auto it = price_table.find(priced); it != price_table.end()) {
    const PriceConfig& p = it->second;
    int64_t uncached = std::max<int64_t>(0, m.input - m.cached);
    r.cost = (static_cast<double>(uncached) * p.input + static_cast<double>(m.cached) * p.cached_input +
              static_cast<double>(m.output) * p.output) /
             1e6;
  }
  r.latency_ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
  if (admission && config.governance) Settle(*config.governance, *admission, r.cost);
  if (config.on_record) config.on_record(r);
  if (!wal) {
    if (handed) *handed = SteadyClock::now();
    return respond();
  }
  std::string line = UsageRecordJson(r);
  if (config.usage_durable_before_response) {
    // The WAL's sync thread completes the response (Responder and BodyStream are thread-safe).
    wal->AppendAsync(
        line,
        [respond = std::move(respond)](Result<uint64_t> seq) {
          if (!seq.ok())
            log::Error("gateway", "usage record not written", {{"error", seq.status().ToString()}});
          respond();
        },
        wal::Durability::kSync);
    if (handed) *handed = SteadyClock::now();
    return;
  }
  wal->AppendAsync(
      line,
      [](Result<uint64_t> seq) {
        if (!seq.ok())
          log::Error("gateway", "usage record not written", {{"error", seq.status().ToString()}});
      },
      wal::Durability::kBuffered);
  if (handed) *handed = SteadyClock::now();
  respond();
}

void ProxyCore::Begin(WireFormat client, net::Request& req, net::Responder responder,
                      std::optional<Endpoint> endpoint) {
  auto start = SteadyClock::now();
  auto ex = std::make_shared<Exchange>();
  ex->start = start;
  ex->prices = prices.load();
  ex->client = client;
  ex->endpoint = endpoint.value_or(client == WireFormat::kOpenAI ? Endpoint::kChat : Endpoint::kMessages);
  UsageRecord& rec = ex->rec;
  rec.request_id = NewRequestId();
  rec.time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  rec.client_format = std::string(FormatName(client));
  rec.api = std::string(EndpointName(ex->endpoint));

  // Authentication: a virtual key as either SDK sends it.
  std::optional<std::string_view> key = net::BearerToken(req);
  if (!key) key = req.headers.Get("x-api-key");
  std::shared_ptr<KeyState> ks;
  Caller caller;  // for governance
  {
    std::lock_guard lock(keys_mu);
    if (key) {
      auto it = keys.find(std::string(*key));
      if (it != keys.end()) ks = it->second;
    }
    if (ks != nullptr) {
      rec.org = ks->config.org;
      rec.key_id = ks->key_id;
      if (config.governance) caller = KeyCaller(ks->config);
    }
  }
  if (ks == nullptr) {
    // Not a virtual key: a Govern access token, when governance accepts them.
    std::string why = "missing or unknown API key";
    if (key && config.governance) {
      auto c = AuthenticateToken(*config.governance, *key);
      if (c.ok()) {
        caller = std::move(*c);
      } else {
        why = c.status().message();
      }
    }
    if (caller.principal_type.empty()) {
      responder.Send(ErrorResponse(client, 401, why));
      return;  // unauthenticated: not recorded (nothing to attribute it to)
    }
    rec.org = caller.org;
  }
  if (!caller.principal_type.empty()) rec.principal = caller.Name();
  // From here every answer goes through the exchange, so it is recorded exactly once.
  ex->impl = shared_from_this();
  ex->responder = std::move(responder);
  if (ks != nullptr) {
    std::lock_guard lock(keys_mu);
    auto now = SteadyClock::now();
    if (!ks->requests.HasRoom(now) || !ks->tokens.HasRoom(now)) {
      return ex->Fail(429, "rate limit reached for this key");
    }
    ks->requests.Take(1, now);
  }
  ex->ks = std::move(ks);

  auto peek = PeekRequest(req.body);
  if (!peek.ok()) return ex->Fail(400, peek.status().message());
  if (ex->endpoint == Endpoint::kEmbeddings) peek->stream = false;  // the API has no stream
  rec.model = peek->model;
  rec.stream = peek->stream;
  ex->stream_requested = peek->stream;
  auto plan = table.load()->Plan(peek->model);
  if (!plan) return ex->Fail(404, "the model `" + peek->model + "` does not exist");
  // Routing (routing.h): what every attempt needs; Attempt() picks a deployment and builds its request.
  ex->plan.emplace(std::move(*plan));
  // Governance: the policy decision, then budgets; a refusal is recorded with its decision.
  if (config.governance) {
    ex->admission = Admit(*config.governance, caller, client, peek->model, peek->stream, req.body.size());
    rec.decision = ex->admission.decision;
    rec.decision_reason = ex->admission.decision_reason;
    if (!ex->admission.ok) return ex->Refuse(RefusalResponse(client, ex->admission));
  }

  // DLP: the prompt, screened per the org before anything reaches the provider.
  ex->dlp_config = dlp.load();
  if (const DlpProfile& profile = ex->dlp_config->For(rec.org); profile.mode != DlpMode::kOff) {
    ex->dlp = &profile;
    auto j = detail::ParseJson(req.body, "request body");
    if (!j.ok()) return ex->Fail(400, j.status().message());
    DlpReport* report = &ex->dlp_report;
    bool changed = ex->endpoint == Endpoint::kResponses    ? ScreenResponsesRequest(profile, *j, report)
                   : ex->endpoint == Endpoint::kEmbeddings ? ScreenEmbeddingsRequest(profile, *j, report)
                   : client == WireFormat::kOpenAI         ? ScreenOpenAIChat(profile, *j, report)
                                                           : ScreenAnthropicMessages(profile, *j, report);
    if (ex->dlp_report.blocked) return ex->FailDlp("request");
    if (changed) {
      req.body = detail::Dump(*j);
      peek = PeekRequest(req.body);
      if (!peek.ok()) return ex->Fail(400, peek.status().message());
    }
  }
  ex->include_usage = peek->include_usage.value_or(false);
  ex->peek = std::move(*peek);
  ex->client_body = std::move(req.body);
  if (auto version = req.headers.Get("anthropic-version")) ex->anthropic_version = std::string(*version);
  // Fault-injection headers of the model stub pass through on stub routes, so tests can make it fail.
  for (const auto& [name, value] : req.headers.fields()) {
    if (name.size() > 7 && net::EqualsIgnoreCase(std::string_view(name).substr(0, 7), "x-stub-"))
      ex->fault_headers.emplace_back(name, value);
  }
  // A client that leaves before its answer cancels the provider call in flight (and is recorded 499).
  // Registered before the first attempt can answer (the Responder is not touched from two threads).
  // The callback runs on the server's loop; the call it reads, and the flag that stops a later attempt
  // (a retry or fallback after a backoff) from starting, are guarded by live_mu (Start). Cancelling runs
  // on the call's loop, where the exchange's own steps for that call run.
  ex->responder.OnClose([weak = std::weak_ptr<Exchange>(ex)] {
    auto e = weak.lock();
    if (!e) return;
    std::shared_ptr<UpstreamCall> current;
    {
      std::lock_guard lock(e->impl->live_mu);
      e->client_left = true;
      current = e->call;
    }
    if (current) current->Post([e] { e->ClientLeftEarly(); });
  });
  ex->Attempt();
}

}  // namespace govern::gateway
