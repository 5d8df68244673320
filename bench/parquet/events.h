// A deterministic generator of realistic telemetry events (about 550 bytes of values each), the rows
// the compactor turns into Parquet. Agent and gateway traffic repeats a lot: a few event types,
// a dozen services, templated messages, attribute JSON with the same keys, while ids, durations, token
// counts and costs vary from event to event. Time advances by a jittered step, as in an hour of an
// organisation's events. Not thread-safe (one generator per thread).
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

namespace govern::bench {

struct Event {
  std::string org_id;
  int64_t time_us = 0;
  std::string type;
  std::string service;
  std::string host;
  std::string level;
  std::string message;
  std::string attributes;  // JSON object
  int32_t status = 0;
  double duration_ms = 0;
  bool has_tokens = false;
  int64_t tokens = 0;

  // Bytes of the values themselves: string bytes plus 8 per number (the "raw" size of a row).
  size_t RawBytes() const {
    return org_id.size() + 8 + type.size() + service.size() + host.size() + level.size() + message.size() +
           attributes.size() + 8 + 8 + 8;
  }
};

class EventGenerator {
 public:
  explicit EventGenerator(uint64_t seed, int64_t start_us = 1'767'225'600'000'000LL)
      : rng_(seed), time_us_(start_us) {}

  void Next(Event* e) {
    static const char* kTypes[] = {"agent.tool_call", "gateway.request", "policy.decision", "sandbox.exec",
                                   "agent.tool_call", "gateway.request", "gateway.request", "auth.token"};
    static const char* kServices[] = {"checkout-agent", "support-agent", "billing-api", "search-gateway",
                                      "docs-indexer",   "fraud-screen",  "crm-sync",    "ops-copilot",
                                      "data-export",    "notify",        "scheduler",   "review-bot"};
    static const char* kTools[] = {"sql.query", "http.get",     "fs.read",         "fs.write",
                                   "shell.run", "email.send",   "calendar.create", "vector.search",
                                   "git.diff",  "ticket.update"};
    static const char* kModels[] = {"gpt-4o-mini", "claude-3-5-sonnet", "llama-3.1-70b", "gpt-4.1"};
    static const char* kRegions[] = {"eu-west-1", "us-east-1", "eu-central-1"};
    static const char* kDecisions[] = {"allow", "allow", "allow", "allow", "deny", "review"};
    static const char* kLevels[] = {"info", "info", "info", "info", "info", "warn", "error", "debug"};

    time_us_ += 1000 + static_cast<int64_t>(rng_() % 26000);  // ~70 events/s per organisation-hour file
    e->org_id = "org-0042";
    e->time_us = time_us_;
    const size_t t = rng_() % 8;
    e->type = kTypes[t];
    const size_t svc = Skewed(12);
    e->service = kServices[svc];
    e->host = "node-" + std::to_string(1 + rng_() % 8) + ".dc1.internal";
    e->level = kLevels[rng_() % 8];
    const char* tool = kTools[Skewed(10)];
    const char* model = kModels[rng_() % 4];
    const char* region = kRegions[svc % 3];
    const char* decision = kDecisions[rng_() % 6];
    const unsigned agent = static_cast<unsigned>(Skewed(40));
    const unsigned user = static_cast<unsigned>(Skewed(300));
    const int ms = static_cast<int>(5 + rng_() % 1200);
    const int64_t tokens_in = 200 + static_cast<int64_t>(rng_() % 4000);
    const int64_t tokens_out = 20 + static_cast<int64_t>(rng_() % 800);
    request_ += 1 + rng_() % 3;
    char req[32];
    std::snprintf(req, sizeof req, "req_%012" PRIx64,
                  static_cast<uint64_t>(request_ * 2654435761u % 0xffffffffffffu));
    char trace[24];
    std::snprintf(trace, sizeof trace, "%016" PRIx64, trace_base_ + request_ / 4);
    e->status = decision[0] == 'd' ? 403 : (rng_() % 50 == 0 ? 500 : 200);
    e->duration_ms = ms + static_cast<double>(rng_() % 1000) / 1000.0;
    e->has_tokens = t == 1 || t == 5 || t == 6;
    e->tokens = e->has_tokens ? tokens_in + tokens_out : 0;

    char buf[1024];
    switch (t) {
      case 0:
      case 4:
        std::snprintf(buf, sizeof buf,
                      "agent agent-%02u called %s for user u-%04u: %s after policy check in %d ms "
                      "(request %s, attempt 1)",
                      agent, tool, user, decision, ms, req);
        break;
      case 1:
      case 5:
      case 6:
        std::snprintf(buf, sizeof buf,
                      "POST /v1/chat/completions model=%s status=%d tokens_in=%" PRId64 " tokens_out=%" PRId64
                      " latency_ms=%d upstream=%s request=%s",
                      model, e->status, tokens_in, tokens_out, ms, region, req);
        break;
      case 2:
        std::snprintf(buf, sizeof buf,
                      "policy bundle default-v3 decided %s for action %s by agent-%02u on resource "
                      "projects/p-%03u/datasets/d-%02u",
                      decision, tool, agent, user % 97, agent % 13);
        break;
      case 3:
        std::snprintf(buf, sizeof buf,
                      "sandbox vm-%04u ran `python3 job_%u.py --batch %d` exit=0 cpu_ms=%d mem_mb=%d",
                      user % 600, agent, ms % 64, ms * 3, 128 + ms % 384);
        break;
      default:
        std::snprintf(buf, sizeof buf,
                      "issued access token for user u-%04u client cli-%02u scope read:events ttl=3600", user,
                      agent % 9);
        break;
    }
    e->message = buf;
    std::snprintf(buf, sizeof buf,
                  "{\"agent_id\":\"agent-%02u\",\"user_id\":\"u-%04u\",\"model\":\"%s\",\"tool\":\"%s\","
                  "\"region\":\"%s\",\"decision\":\"%s\",\"policy\":\"default-v3\",\"tokens_in\":%" PRId64
                  ",\"tokens_out\":%" PRId64
                  ",\"cost_usd\":%.5f,\"trace_id\":\"%s\",\"sdk\":\"govern-py/1.4.2\","
                  "\"user_agent\":\"govern-py/1.4.2 (linux; python 3.11.6)\",\"k8s.pod\":\"%s-%x\","
                  "\"deployment\":\"prod\"}",
                  agent, user, model, tool, region, decision, tokens_in, tokens_out,
                  static_cast<double>(tokens_in * 3 + tokens_out * 12) / 1e6, trace, kServices[svc],
                  static_cast<unsigned>(0x7d9f8b00 + svc * 17));
    e->attributes = buf;
  }

 private:
  // Small indexes far more often than large ones, as real traffic concentrates on a few names.
  size_t Skewed(size_t n) {
    size_t a = rng_() % n, b = rng_() % n;
    return a < b ? a : b;
  }

  std::mt19937_64 rng_;
  int64_t time_us_;
  uint64_t request_ = 1'000'000;
  uint64_t trace_base_ = 0x5a17c0de00000000ULL;
};

}  // namespace govern::bench
