#include "generator.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <utility>
#include <vector>

#include "services/telemetry/proto_writer.h"

namespace govern::telemetry::benchgen {
namespace {

constexpr const char* kOrgs[] = {"org_acme", "org_globex", "org_initech", "org_umbrella", "org_hooli"};
// service, its scope (instrumentation library) and version
struct Service {
  const char* name;
  const char* scope;
  const char* version;
};
constexpr Service kGatewayServices[] = {{"llm-gateway", "govern.gateway", "1.8.2"},
                                        {"llm-gateway-canary", "govern.gateway", "1.9.0-rc1"}};
constexpr Service kAgentServices[] = {
    {"support-triage", "agent-sdk.python", "0.14.3"}, {"checkout-assistant", "agent-sdk.python", "0.14.3"},
    {"code-reviewer", "agent-sdk.node", "2.3.1"},     {"data-analyst", "agent-sdk.python", "0.13.9"},
    {"ops-copilot", "agent-sdk.go", "1.2.0"},         {"invoice-extractor", "agent-sdk.node", "2.3.1"}};
constexpr const char* kRegions[] = {"eu-west-1", "us-east-1", "eu-central-1"};
struct Model {
  const char* provider;
  const char* name;
  double usd_per_1k_in, usd_per_1k_out;
};
constexpr Model kModels[] = {{"openai", "gpt-4o-mini", 0.00015, 0.0006},
                             {"anthropic", "claude-3-5-sonnet", 0.003, 0.015},
                             {"openai", "gpt-4.1", 0.002, 0.008},
                             {"meta", "llama-3.1-70b-instruct", 0.00059, 0.00079},
                             {"mistral", "mistral-large-2411", 0.002, 0.006}};
struct Tool {
  const char* name;
  const char* action;
};
constexpr Tool kTools[] = {{"sql", "query"},          {"http", "get"},         {"vector_store", "search"},
                           {"fs", "read_file"},       {"ticketing", "update"}, {"email", "send"},
                           {"shell", "run"},          {"calendar", "create"},  {"git", "diff"},
                           {"crm", "lookup_contact"}, {"payments", "refund"},  {"browser", "open_url"}};
constexpr const char* kOutcomes[] = {"ok", "ok", "ok", "ok", "ok", "ok", "ok", "timeout", "error", "denied"};
constexpr const char* kPolicies[] = {"pii-egress",       "spend-limit", "tool-allowlist",
                                     "prompt-injection", "rate-limit",  "data-residency"};
constexpr const char* kDecisions[] = {"allow", "allow", "allow", "allow", "allow", "allow", "redact", "deny"};
constexpr const char* kRoutes[] = {"/v1/chat/completions", "/v1/chat/completions", "/v1/chat/completions",
                                   "/v1/embeddings", "/v1/responses"};

std::string Quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}
std::string Int(int64_t v) { return std::to_string(v); }
std::string Num(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

void Add(std::vector<Attribute>* attrs, std::string key, std::string value_json) {
  attrs->push_back(Attribute{std::move(key), std::move(value_json)});
}

std::string Rfc3339(int64_t nanos) {
  std::time_t secs = static_cast<std::time_t>(nanos / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(nanos % 1'000'000'000));
  return buf;
}

// OTLP AnyValue bytes for an attribute's compact JSON text (the kinds the generator writes).
std::string AnyValueFromJson(std::string_view v) {
  using namespace protowire;  // NOLINT(google-build-using-namespace)
  if (!v.empty() && v.front() == '"') {
    std::string s;
    for (size_t i = 1; i + 1 < v.size(); ++i) {
      if (v[i] == '\\' && i + 2 < v.size()) ++i;
      s.push_back(v[i]);
    }
    return LenField(1, s);
  }
  if (v == "true" || v == "false") return VarintField(2, v == "true" ? 1 : 0);
  if (v.find_first_of(".eE") == std::string_view::npos) {
    int64_t i = 0;
    std::from_chars(v.data(), v.data() + v.size(), i);
    return VarintField(3, static_cast<uint64_t>(i));
  }
  double d = 0;
  std::from_chars(v.data(), v.data() + v.size(), d);
  return DoubleField(4, d);
}

std::string HexToBytes(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    auto nib = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    out.push_back(static_cast<char>(nib(hex[i]) << 4 | nib(hex[i + 1])));
  }
  return out;
}

std::string Attributes(const std::vector<Attribute>& attrs, uint32_t field) {
  std::string out;
  for (const Attribute& a : attrs)
    out += protowire::LenField(field, protowire::KeyValue(a.key, AnyValueFromJson(a.value_json)));
  return out;
}

std::string LogRecord(const Event& e) {
  using namespace protowire;  // NOLINT(google-build-using-namespace)
  std::string r = Fixed64Field(1, static_cast<uint64_t>(e.time_unix_nanos));
  r += VarintField(2, static_cast<uint64_t>(e.severity_number));
  r += LenField(3, e.severity_text);
  if (e.body_kind == BodyKind::kString) r += LenField(5, StringValue(e.body));
  r += Attributes(e.attributes, 6);
  if (e.flags != 0) r += Fixed32Field(8, e.flags);
  if (!e.trace_id_hex.empty()) r += LenField(9, HexToBytes(e.trace_id_hex));
  if (!e.span_id_hex.empty()) r += LenField(10, HexToBytes(e.span_id_hex));
  if (e.observed_unix_nanos != 0) r += Fixed64Field(11, static_cast<uint64_t>(e.observed_unix_nanos));
  if (!e.type.empty() && e.type != "log") r += LenField(12, e.type);
  return r;
}

}  // namespace

Generator::Generator(GeneratorOptions options)
    : options_(std::move(options)),
      state_(options_.seed * 0x9e3779b97f4a7c15ULL + options_.stream * 0xbf58476d1ce4e5b9ULL + 1),
      time_ns_(options_.start_unix_nanos) {}

uint64_t Generator::Rand() {  // splitmix64: fixed across platforms and standard libraries
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

size_t Generator::Skewed(size_t n) {
  // The minimum of two uniform draws: index 0 about twice as likely as the average, the last rare.
  return std::min(Below(n), Below(n));
}

std::string Generator::Hex(int digits) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(static_cast<size_t>(digits));
  uint64_t bits = 0;
  for (int i = 0; i < digits; ++i) {
    if (i % 16 == 0) bits = Rand();
    out.push_back(kHex[bits & 15]);
    bits >>= 4;
  }
  return out;
}

void Generator::Next(Event* e) {
  *e = Event{};
  ++count_;
  // Exponential inter-arrival at the configured rate.
  const double u = (static_cast<double>(Rand() >> 11) + 0.5) / 9007199254740992.0;
  time_ns_ += static_cast<int64_t>(-std::log(u) * 1e9 / options_.events_per_second);
  e->time_unix_nanos = time_ns_;
  e->observed_unix_nanos = e->time_unix_nanos + 200'000 + static_cast<int64_t>(Below(3'000'000));
  e->org = options_.org.empty() ? kOrgs[Skewed(5)] : options_.org;
  // A trace covers a few consecutive events (a request and the tool calls it leads to).
  if (trace_left_ <= 0) {
    trace_ = Hex(32);
    trace_left_ = 1 + static_cast<int>(Below(6));
  }
  --trace_left_;
  e->trace_id_hex = trace_;
  e->span_id_hex = Hex(16);
  e->flags = 1;  // sampled
  char request_id[40];
  std::snprintf(request_id, sizeof request_id, "req_%04x%012llx", options_.stream & 0xffff,
                static_cast<unsigned long long>((count_ * 0x5851f42d4c957f2dULL) & 0xffffffffffffULL));
  const std::string agent = "agt_" + std::string(kAgentServices[Skewed(6)].name).substr(0, 4) + "_" +
                            std::to_string(10 + Skewed(30));
  const char* region = kRegions[Skewed(3)];
  const uint64_t kind = Below(100);
  const Service* svc;
  auto& a = e->attributes;
  char body[400];
  e->severity_text = "INFO";
  e->severity_number = 9;
  if (kind < 40 || kind >= 95) {  // gateway: a model call (or, 5%, an upstream error)
    svc = &kGatewayServices[Below(10) == 0 ? 1 : 0];
    const Model& m = kModels[Skewed(5)];
    const int64_t in = 150 + static_cast<int64_t>(Below(6000));
    const int64_t out = 10 + static_cast<int64_t>(Below(900));
    const double cost = std::round((in * m.usd_per_1k_in + out * m.usd_per_1k_out) / 1000 * 1e6) / 1e6;
    const int64_t latency = 80 + static_cast<int64_t>(Below(2500));
    const char* route = kRoutes[Skewed(5)];
    const bool error = kind >= 95;
    const int status = error ? (Below(2) ? 429 : 503) : 200;
    if (error) {
      e->type = "gateway.upstream_error";
      e->severity_text = "ERROR";
      e->severity_number = 17;
      std::snprintf(
          body, sizeof body,
          "upstream %s returned %d for %s %s after %lld ms; retrying with backoff (attempt %d of 3)",
          m.provider, status, m.name, route, static_cast<long long>(latency), 1 + static_cast<int>(Below(3)));
    } else {
      e->type = "gateway.request";
      std::snprintf(body, sizeof body, "%s %s: %d in %lld ms, %lld+%lld tokens, $%.6f", route, m.name, status,
                    static_cast<long long>(latency), static_cast<long long>(in), static_cast<long long>(out),
                    cost);
    }
    Add(&a, "request.id", Quote(request_id));
    Add(&a, "agent.id", Quote(agent));
    Add(&a, "http.status_code", Int(status));
    Add(&a, "gen_ai.system", Quote(m.provider));
    Add(&a, "gen_ai.request.model", Quote(m.name));
    Add(&a, "gen_ai.usage.input_tokens", Int(in));
    Add(&a, "gen_ai.usage.output_tokens", Int(error ? 0 : out));
    Add(&a, "cost_usd", Num(error ? 0.0 : cost));
    Add(&a, "latency_ms", Int(latency));
    if (!error) Add(&a, "cache.hit", Below(5) == 0 ? "true" : "false");
  } else if (kind < 70) {  // an agent's tool call
    svc = &kAgentServices[Skewed(6)];
    const Tool& t = kTools[Skewed(12)];
    const char* outcome = kOutcomes[Below(10)];
    const int64_t latency = 2 + static_cast<int64_t>(Below(900));
    const int step = 1 + static_cast<int>(Below(12));
    e->type = "agent.tool_call";
    if (outcome[0] != 'o') {
      e->severity_text = "WARN";
      e->severity_number = 13;
    }
    std::snprintf(body, sizeof body, "agent %s called tool %s.%s at step %d of run %s: %s in %lld ms",
                  agent.c_str(), t.name, t.action, step, trace_.substr(0, 12).c_str(), outcome,
                  static_cast<long long>(latency));
    Add(&a, "request.id", Quote(request_id));
    Add(&a, "agent.id", Quote(agent));
    Add(&a, "run.id", Quote("run_" + trace_.substr(0, 12)));
    Add(&a, "run.step", Int(step));
    Add(&a, "tool.name", Quote(t.name));
    Add(&a, "tool.action", Quote(t.action));
    Add(&a, "tool.outcome", Quote(outcome));
    Add(&a, "latency_ms", Int(latency));
  } else if (kind < 85) {  // a policy decision on an agent's action
    svc = &kGatewayServices[0];
    const char* policy = kPolicies[Skewed(6)];
    const char* decision = kDecisions[Below(8)];
    const Tool& t = kTools[Skewed(12)];
    const int64_t eval_us = 3 + static_cast<int64_t>(Below(60));
    e->type = "policy.decision";
    if (decision[0] == 'd') {
      e->severity_text = "WARN";
      e->severity_number = 13;
    }
    std::snprintf(body, sizeof body,
                  "policy %s evaluated %s.%s for agent %s in region %s: %s (%lld us, rule %s/%d)", policy,
                  t.name, t.action, agent.c_str(), region, decision, static_cast<long long>(eval_us), policy,
                  1 + static_cast<int>(Below(9)));
    Add(&a, "request.id", Quote(request_id));
    Add(&a, "agent.id", Quote(agent));
    Add(&a, "policy.id", Quote(policy));
    Add(&a, "policy.decision", Quote(decision));
    Add(&a, "policy.rule", Quote(std::string(policy) + "/" + std::to_string(1 + Below(9))));
    Add(&a, "eval_us", Int(eval_us));
  } else {  // an agent run finished
    svc = &kAgentServices[Skewed(6)];
    const Model& m = kModels[Skewed(5)];
    const int steps = 1 + static_cast<int>(Below(14));
    const int64_t tokens = 500 + static_cast<int64_t>(Below(40000));
    const double cost = std::round(tokens * m.usd_per_1k_in / 1000 * 1e6) / 1e6;
    const int64_t duration = 400 + static_cast<int64_t>(Below(60000));
    const bool ok = Below(10) != 0;
    e->type = "agent.run_finished";
    std::snprintf(body, sizeof body,
                  "run %s of agent %s %s after %d steps, %lld ms, %lld tokens on %s ($%.6f)",
                  trace_.substr(0, 12).c_str(), agent.c_str(), ok ? "completed" : "failed", steps,
                  static_cast<long long>(duration), static_cast<long long>(tokens), m.name, cost);
    Add(&a, "agent.id", Quote(agent));
    Add(&a, "run.id", Quote("run_" + trace_.substr(0, 12)));
    Add(&a, "run.status", Quote(ok ? "completed" : "failed"));
    Add(&a, "run.steps", Int(steps));
    Add(&a, "gen_ai.request.model", Quote(m.name));
    Add(&a, "gen_ai.usage.total_tokens", Int(tokens));
    Add(&a, "cost_usd", Num(cost));
    Add(&a, "duration_ms", Int(duration));
  }
  e->body_kind = BodyKind::kString;
  e->body = body;
  e->service_name = svc->name;
  e->scope_name = svc->scope;
  e->scope_version = svc->version;
  const std::string host =
      std::string(svc->name).substr(0, 6) + "-" + std::to_string(1 + Skewed(4)) + "." + region;
  Add(&e->resource_attributes, "service.name", Quote(svc->name));
  Add(&e->resource_attributes, "service.version", Quote(svc->version));
  Add(&e->resource_attributes, "host.name", Quote(host));
  Add(&e->resource_attributes, "deployment.environment", Quote("production"));
}

void AppendNdjson(const Event& e, bool with_org, std::string* out) {
  *out += "{";
  if (with_org) *out += "\"org\":" + Quote(e.org) + ",";
  *out += "\"time\":\"" + Rfc3339(e.time_unix_nanos) + "\",\"type\":" + Quote(e.type) +
          ",\"severity\":" + Quote(e.severity_text) + ",\"body\":" + Quote(e.body) + ",\"attributes\":{";
  bool first = true;
  auto attr = [&](std::string_view key, std::string_view value_json) {
    if (!first) out->push_back(',');
    first = false;
    *out += Quote(key);
    out->push_back(':');
    *out += value_json;
  };
  attr("service.name", Quote(e.service_name));
  for (const Attribute& r : e.resource_attributes)
    if (r.key == "host.name") attr(r.key, r.value_json);
  if (!e.trace_id_hex.empty()) attr("trace_id", Quote(e.trace_id_hex));
  if (!e.span_id_hex.empty()) attr("span_id", Quote(e.span_id_hex));
  for (const Attribute& x : e.attributes) attr(x.key, x.value_json);
  *out += "}}\n";
}

std::string RenderNdjson(std::span<const Event> events, bool with_org) {
  std::string out;
  out.reserve(events.size() * 600);
  for (const Event& e : events) AppendNdjson(e, with_org, &out);
  return out;
}

std::string RenderOtlpProto(std::span<const Event> events) {
  using namespace protowire;  // NOLINT(google-build-using-namespace)
  // resource key -> (resource bytes, scope key -> (scope bytes, records)), first-appearance order.
  struct Scope {
    std::string scope;
    std::string records;
  };
  struct Resource {
    std::string resource;
    std::vector<std::pair<std::string, Scope>> scopes;
  };
  std::vector<std::pair<std::string, Resource>> resources;
  for (const Event& e : events) {
    std::string rkey;
    for (const Attribute& r : e.resource_attributes) rkey += r.key + "=" + r.value_json + ";";
    auto it =
        std::find_if(resources.begin(), resources.end(), [&](const auto& p) { return p.first == rkey; });
    if (it == resources.end()) {
      resources.push_back({rkey, Resource{Attributes(e.resource_attributes, 1), {}}});
      it = resources.end() - 1;
    }
    const std::string skey = e.scope_name + "@" + e.scope_version;
    auto& scopes = it->second.scopes;
    auto sit = std::find_if(scopes.begin(), scopes.end(), [&](const auto& p) { return p.first == skey; });
    if (sit == scopes.end()) {
      std::string scope = LenField(1, e.scope_name);
      if (!e.scope_version.empty()) scope += LenField(2, e.scope_version);
      scopes.push_back({skey, Scope{std::move(scope), {}}});
      sit = scopes.end() - 1;
    }
    sit->second.records += LenField(2, LogRecord(e));
  }
  std::string out;
  for (const auto& [rkey, r] : resources) {
    std::string scope_logs;
    for (const auto& [skey, s] : r.scopes) scope_logs += LenField(2, LenField(1, s.scope) + s.records);
    out += LenField(1, LenField(1, r.resource) + scope_logs);
  }
  return out;
}

std::string ContentHash(const Event& e) {
  Event sorted = e;
  sorted.id.clear();
  auto by_key = [](const Attribute& a, const Attribute& b) { return a.key < b.key; };
  std::stable_sort(sorted.attributes.begin(), sorted.attributes.end(), by_key);
  std::stable_sort(sorted.resource_attributes.begin(), sorted.resource_attributes.end(), by_key);
  // Values as JSON *values*, not text: jsonb keeps a number's value but not its spelling (7.8e-05 comes
  // back as 0.000078), so each value is parsed and written again in one canonical form.
  for (auto* attrs : {&sorted.attributes, &sorted.resource_attributes}) {
    for (Attribute& a : *attrs) {
      auto v = nlohmann::json::parse(a.value_json, nullptr, false);
      if (!v.is_discarded()) a.value_json = v.dump();
    }
  }
  return EventId(sorted.org, sorted, 0);
}

}  // namespace govern::telemetry::benchgen
