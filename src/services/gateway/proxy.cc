#include "services/gateway/proxy.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>

#include "base/log.h"
#include "gateway/anthropic.h"
#include "gateway/json_util.h"
#include "gateway/openai.h"
#include "gateway/peek.h"
#include "gateway/sse.h"
#include "gateway/translate.h"
#include "net/http.h"
#include "services/gateway/upstream.h"
#include "storage/wal.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

std::string_view FormatName(WireFormat f) { return f == WireFormat::kOpenAI ? "openai" : "anthropic"; }

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
  Bucket requests;
  Bucket tokens;
  explicit KeyState(VirtualKeyConfig c)
      : config(std::move(c)), requests(config.requests_per_minute), tokens(config.tokens_per_minute) {}
};

std::string NewRequestId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[40];
  std::snprintf(buf, sizeof buf, "gwr_%016llx%08llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng() & 0xffffffffu));
  return buf;
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
  void Set(const openai::Usage& u) {
    input = u.prompt_tokens;
    output = u.completion_tokens;
    cached = u.cached_tokens;
  }
};

}  // namespace

std::string UsageRecordJson(const UsageRecord& r) {
  Json j = {{"request_id", r.request_id},
            {"time_ns", r.time_ns},
            {"org", r.org},
            {"key_id", r.key_id},
            {"model", r.model},
            {"route", r.route},
            {"client_format", r.client_format},
            {"status", r.status},
            {"stream", r.stream},
            {"input_tokens", r.input_tokens},
            {"output_tokens", r.output_tokens},
            {"cached_tokens", r.cached_tokens},
            {"cost", r.cost},
            {"latency_ms", r.latency_ms}};
  if (!r.error.empty()) j["error"] = r.error;
  return detail::Dump(j);
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
  return c;
}

struct Exchange;

// Everything the handlers and exchanges share; Proxy::Impl is this (kept apart so that Exchange, outside
// Proxy, may name it).
struct ProxyCore : std::enable_shared_from_this<ProxyCore> {
  ProxyConfig config;
  std::unordered_map<std::string, RouteConfig> routes;
  std::unique_ptr<wal::Log> wal;
  std::unique_ptr<UpstreamClient> upstream;

  std::mutex keys_mu;
  std::unordered_map<std::string, std::unique_ptr<KeyState>> keys;

  // Exchanges in flight (from the upstream call's start to their record), so the destructor can end
  // them: one parked on a slow client's back-pressure has no operation pending to cancel.
  std::mutex live_mu;
  std::condition_variable live_cv;
  bool stopping = false;
  std::unordered_map<Exchange*, std::shared_ptr<Exchange>> live;

  // On the server's event loop: everything that can refuse a request, then the provider call.
  void Begin(WireFormat client, net::Request& req, net::Responder responder);
  // Computes cost and latency, queues the record (WAL, on_record) and then runs `respond`: at once,
  // or once the record is durable with usage_durable_before_response.
  void Commit(UsageRecord& r, const Meter& m, SteadyClock::time_point start, std::function<void()> respond);
  void Debit(KeyState* ks, const Meter& m) {
    std::lock_guard lock(keys_mu);
    ks->tokens.Take(static_cast<double>(m.input + m.output), SteadyClock::now());
  }
};

struct Proxy::Impl : ProxyCore {};

// One proxied request from the provider call's start to its usage record. Every method after Start
// runs on the call's loop (the upstream client's), so the state needs no lock.
struct Exchange : std::enable_shared_from_this<Exchange> {
  std::shared_ptr<ProxyCore> impl;
  WireFormat client = WireFormat::kOpenAI;
  const RouteConfig* route = nullptr;
  net::Responder responder;
  UsageRecord rec;
  Meter meter;
  SteadyClock::time_point start;
  KeyState* ks = nullptr;
  bool stream_requested = false;
  bool include_usage = false;
  std::shared_ptr<UpstreamCall> call;
  bool finished = false;

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

  void Start(UpstreamRequest up) {
    bool stopping;
    {
      std::lock_guard lock(impl->live_mu);
      stopping = impl->stopping;
      if (!stopping) {
        call = impl->upstream->NewCall(std::move(up));
        impl->live.emplace(this, shared_from_this());
      }
    }
    // Outside the lock: Fail ends in Done, which takes live_mu itself.
    if (stopping) return Fail(503, "the gateway is stopping");
    auto self = shared_from_this();
    call->Start([self](Status st) { self->OnHead(st); });
  }

  // Ends the exchange: the one place a record is made.
  void Done(std::function<void()> respond) {
    finished = true;
    if (ks) impl->Debit(ks, meter);
    impl->Commit(rec, meter, start, std::move(respond));
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
      Write(StreamErrorEvent(client, rec.error));
      return EndStream();
    }
    Fail(503, rec.error);
  }

  void OnHead(Status st) {
    if (finished) return;
    if (!st.ok()) {
      if (st.code() == Code::kDeadlineExceeded) return Fail(504, "upstream: " + st.message());
      if (st.code() == Code::kCancelled) return Fail(503, "the gateway is stopping");
      return Fail(502, "upstream: " + st.message());
    }
    int up_status = call->status();
    bool up_is_stream =
        call->headers().Get("Content-Type").value_or("").find("text/event-stream") != std::string_view::npos;
    if (up_status < 200 || up_status >= 300 || !stream_requested || !up_is_stream) {
      auto self = shared_from_this();
      call->ReadAll(64u << 20, [self](Result<std::string> body) { self->OnWhole(std::move(body)); });
      return;
    }
    net::Response head = net::SseResponseHead();
    head.headers.Set("x-request-id", rec.request_id);
    stream = responder.Stream(std::move(head));
    rec.status = 200;
    if (route->format == WireFormat::kAnthropic && client == WireFormat::kOpenAI)
      from_anthropic = std::make_unique<MessagesToChatStream>(include_usage, rec.time_ns / 1000000000);
    Pump();
  }

  void OnWhole(Result<std::string> body) {
    if (finished) return;
    if (!body.ok()) {
      if (body.status().code() == Code::kDeadlineExceeded)
        return Fail(504, "upstream: " + body.status().message());
      return Fail(502, "upstream answer cut: " + body.status().message());
    }
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
    std::string out_body;
    if (route->format == WireFormat::kOpenAI) {
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

  bool Write(std::string_view bytes) {
    if (bytes.empty()) return true;
    if (!stream.Write(bytes)) return false;
    stream.Flush();
    return true;
  }

  void Pump() {
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
      if (client == WireFormat::kAnthropic && route->format == WireFormat::kOpenAI &&
          !from_openai.finished() && rec.status == 200) {
        std::vector<anthropic::StreamEvent> evs;
        from_openai.Finish(evs);
        out.clear();
        for (const auto& e : evs) AppendSseEvent(out, e.name(), detail::Dump(anthropic::ToJson(e)));
        Write(out);
      }
      if (rec.status != 200) Write(StreamErrorEvent(client, rec.error));
      return EndStream();
    }
    out.clear();
    if (client == route->format) out = *piece;
    events.clear();
    if (Status s = parser.Feed(*piece, events); !s.ok()) {
      call->Cancel();
      rec.status = 502;
      rec.error = "upstream stream unreadable: " + s.message();
      Write(StreamErrorEvent(client, rec.error));
      return EndStream();
    }
    for (const SseEvent& ev : events) Translate(ev);
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
};

Proxy::Proxy(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Proxy>> Proxy::Create(ProxyConfig config) {
  auto impl = std::make_shared<Impl>();
  for (const auto& r : config.routes) {
    if (!impl->routes.emplace(r.model, r).second)
      return InvalidArgument("gateway: model routed twice: " + r.model);
  }
  for (const auto& k : config.keys) {
    if (!impl->keys.emplace(k.key, std::make_unique<KeyState>(k)).second)
      return InvalidArgument("gateway: virtual key listed twice");
  }
  if (!config.wal_dir.empty()) {
    wal::Options o;
    o.default_durability = wal::Durability::kBuffered;
    o.preallocate = false;
    GOVERN_ASSIGN_OR_RETURN(impl->wal, wal::Log::Open(config.wal_dir, o));
  }
  GOVERN_ASSIGN_OR_RETURN(impl->upstream, UpstreamClient::Create(config.upstream));
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

UpstreamClient::Stats Proxy::upstream_stats() const { return impl_->upstream->stats(); }

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
  router.AddSync(net::Method::kGet, "/v1/models", [impl](net::Request& req) {
    auto token = net::BearerToken(req);
    std::optional<std::string_view> key = token;
    if (!key) key = req.headers.Get("x-api-key");
    {
      std::lock_guard lock(impl->keys_mu);
      if (!key || !impl->keys.contains(std::string(*key)))
        return ErrorResponse(WireFormat::kOpenAI, 401, "missing or unknown API key");
    }
    std::vector<openai::Model> models;
    for (const auto& r : impl->config.routes) models.push_back({r.model, 0, "govern"});
    return net::Response(200, detail::Dump(openai::ModelsListJson(models)), "application/json");
  });
}

void ProxyCore::Commit(UsageRecord& r, const Meter& m, SteadyClock::time_point start,
                       std::function<void()> respond) {
  r.input_tokens = m.input;
  r.output_tokens = m.output;
  r.cached_tokens = m.cached;
  if (auto it = config.prices.find(r.model); it != config.prices.end()) {
    const PriceConfig& p = it->second;
    int64_t uncached = std::max<int64_t>(0, m.input - m.cached);
    r.cost = (static_cast<double>(uncached) * p.input + static_cast<double>(m.cached) * p.cached_input +
              static_cast<double>(m.output) * p.output) /
             1e6;
  }
  r.latency_ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
  if (config.on_record) config.on_record(r);
  if (!wal) return respond();
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
    return;
  }
  wal->AppendAsync(
      line,
      [](Result<uint64_t> seq) {
        if (!seq.ok())
          log::Error("gateway", "usage record not written", {{"error", seq.status().ToString()}});
      },
      wal::Durability::kBuffered);
  respond();
}

void ProxyCore::Begin(WireFormat client, net::Request& req, net::Responder responder) {
  auto start = SteadyClock::now();
  auto ex = std::make_shared<Exchange>();
  ex->start = start;
  ex->client = client;
  UsageRecord& rec = ex->rec;
  rec.request_id = NewRequestId();
  rec.time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  rec.client_format = std::string(FormatName(client));

  // Authentication: a virtual key as either SDK sends it.
  std::optional<std::string_view> key = net::BearerToken(req);
  if (!key) key = req.headers.Get("x-api-key");
  KeyState* ks = nullptr;
  {
    std::lock_guard lock(keys_mu);
    if (key) {
      auto it = keys.find(std::string(*key));
      if (it != keys.end()) ks = it->second.get();
    }
    if (ks == nullptr) {
      responder.Send(ErrorResponse(client, 401, "missing or unknown API key"));
      return;  // unauthenticated: not recorded (nothing to attribute it to)
    }
    rec.org = ks->config.org;
    rec.key_id = ks->config.key.substr(0, 12);
  }
  // From here every answer goes through the exchange, so it is recorded exactly once.
  ex->impl = shared_from_this();
  ex->responder = std::move(responder);
  {
    std::lock_guard lock(keys_mu);
    auto now = SteadyClock::now();
    if (!ks->requests.HasRoom(now) || !ks->tokens.HasRoom(now)) {
      return ex->Fail(429, "rate limit reached for this key");
    }
    ks->requests.Take(1, now);
  }
  ex->ks = ks;

  auto peek = PeekRequest(req.body);
  if (!peek.ok()) return ex->Fail(400, peek.status().message());
  rec.model = peek->model;
  rec.stream = peek->stream;
  ex->stream_requested = peek->stream;
  auto route_it = routes.find(peek->model);
  if (route_it == routes.end()) return ex->Fail(404, "the model `" + peek->model + "` does not exist");
  const RouteConfig& route = route_it->second;
  ex->route = &route;
  rec.route = route.base_url;

  // The upstream body: the client's bytes when the formats match, else a translation.
  UpstreamRequest up;
  ex->include_usage = peek->include_usage.value_or(false);
  if (client == route.format) {
    if (client == WireFormat::kOpenAI && peek->stream && !ex->include_usage) {
      auto body = WithIncludeUsage(req.body, *peek);
      if (!body.ok()) return ex->Fail(400, body.status().message());
      up.body = std::move(*body);
    } else {
      up.body = std::move(req.body);
    }
  } else if (client == WireFormat::kOpenAI) {
    auto chat = openai::ParseChatRequest(req.body);
    if (!chat.ok()) return ex->Fail(400, chat.status().message());
    auto msgs = ChatToMessagesRequest(*chat);
    if (!msgs.ok()) return ex->Fail(400, msgs.status().message());
    up.body = detail::Dump(anthropic::ToJson(*msgs));
  } else {
    auto msgs = anthropic::ParseMessagesRequest(req.body);
    if (!msgs.ok()) return ex->Fail(400, msgs.status().message());
    auto chat = MessagesToChatRequest(*msgs);
    if (!chat.ok()) return ex->Fail(400, chat.status().message());
    up.body = detail::Dump(openai::ToJson(*chat));
  }
  up.headers.Set("Content-Type", "application/json");
  if (route.format == WireFormat::kOpenAI) {
    up.url = route.base_url + "/v1/chat/completions";
    if (!route.api_key.empty()) up.headers.Set("Authorization", "Bearer " + route.api_key);
  } else {
    up.url = route.base_url + "/v1/messages";
    up.headers.Set("x-api-key", route.api_key);
    auto version = req.headers.Get("anthropic-version");
    up.headers.Set("anthropic-version", version ? *version : "2023-06-01");
  }
  if (peek->stream) up.headers.Set("Accept", "text/event-stream");
  // Fault-injection headers of the model stub pass through on stub routes, so tests can make it fail.
  for (const auto& [name, value] : req.headers.fields()) {
    if (!route.stub_fault_headers) break;
    if (name.size() > 7 && net::EqualsIgnoreCase(std::string_view(name).substr(0, 7), "x-stub-"))
      up.headers.Set(name, value);
  }
  // A client that leaves before its answer cancels the provider call (and is recorded 499). Run on the
  // server's loop after Begin returned, so ex->call is set unless the proxy was stopping.
  ex->responder.OnClose([weak = std::weak_ptr<Exchange>(ex)] {
    if (auto e = weak.lock(); e && e->call) e->call->Post([e] { e->ClientLeftEarly(); });
  });
  ex->Start(std::move(up));
}

}  // namespace govern::gateway
