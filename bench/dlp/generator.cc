// The benchmark's text generator; see generator.h for what it produces and why.
#include "generator.h"

#include <cstdio>

namespace govern::bench::dlp {
namespace {

const char* const kWords[] = {
    "the",      "request",  "model",    "agent",   "please", "summarize", "report",  "quarterly", "customer",
    "invoice",  "latency",  "deploy",   "cluster", "review", "policy",    "account", "update",    "budget",
    "meeting",  "notes",    "action",   "items",   "error",  "retry",     "timeout", "service",   "cache",
    "query",    "database", "schema",   "migrate", "ticket", "escalate",  "owner",   "draft",     "email",
    "contract", "renewal",  "forecast", "team",    "sprint", "release",   "branch",  "merge",     "test",
    "and",      "for",      "with",     "from",    "into",   "about",     "this",    "that",      "we",
};
const char* const kServices[] = {"api-gateway", "billing",   "auth",      "search",
                                 "ingest",      "scheduler", "ai-gateway"};
const char* const kPaths[] = {"/v1/orders",   "/v1/users",  "/v1/chat/completions", "/healthz",
                              "/v1/invoices", "/v1/search", "/v2/messages"};
const char* const kLevels[] = {"INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"};

// Luhn-valid test cards, valid IBANs and the like: sensitive by shape and checksum.
const char* const kCards[] = {"4111 1111 1111 1111", "5500-0000-0000-0004", "378282246310005",
                              "6011000990139424", "4012888888881881"};
const char* const kIbans[] = {"DE89370400440532013000", "GB82 WEST 1234 5698 7654 32",
                              "FR1420041010050500013M02606", "NL91ABNA0417164300"};

}  // namespace

uint64_t TextGenerator::Next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string TextGenerator::Word() { return kWords[Pick(sizeof kWords / sizeof kWords[0])]; }

std::string TextGenerator::Sentence(size_t words) {
  std::string s;
  for (size_t i = 0; i < words; ++i) {
    if (i) s.push_back(' ');
    s += Word();
  }
  return s;
}

std::string TextGenerator::Timestamp() {
  char buf[40];
  std::snprintf(buf, sizeof buf, "2026-11-%02zuT%02zu:%02zu:%02zu.%03zuZ", 1 + Pick(28), Pick(24), Pick(60),
                Pick(60), Pick(1000));
  return buf;
}

std::string TextGenerator::HexId(size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(kHex[Pick(16)]);
  return s;
}

std::string TextGenerator::SensitiveValue() {
  char buf[128];
  switch (Pick(10)) {
    case 0:
      std::snprintf(buf, sizeof buf, "%s.%s%zu@example.com", Word().c_str(), Word().c_str(), Pick(100));
      return buf;
    case 1:
      return kCards[Pick(5)];
    case 2:
      std::snprintf(buf, sizeof buf, "+1 (415) %03zu-%04zu", 200 + Pick(700), Pick(10000));
      return buf;
    case 3:
      return kIbans[Pick(4)];
    case 4:
      std::snprintf(buf, sizeof buf, "%03zu-%02zu-%04zu", 100 + Pick(500), 10 + Pick(89), 1000 + Pick(9000));
      return buf;
    case 5:
      std::snprintf(buf, sizeof buf, "203.0.113.%zu", 1 + Pick(254));
      return buf;
    case 6:
      return "AKIAIOSFODNN7EXAMPLE";
    case 7:
      return "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
             "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    case 8:
      return "ghp_" + HexId(20) + "ABCDEFGHIJKLMNOP";
    default:
      return "password=" + Word() + std::to_string(Pick(10000));
  }
}

// A 16-digit order number whose check digit is deliberately wrong: it looks like a card and must fail Luhn.
std::string TextGenerator::OrderNumber() {
  std::string d = std::to_string(1000000000000000ull + Next() % 8999999999999999ull).substr(0, 15);
  int sum = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    int v = d[d.size() - 1 - i] - '0';
    if (i % 2 == 0) v = v * 2 > 9 ? v * 2 - 9 : v * 2;
    sum += v;
  }
  d.push_back(static_cast<char>('0' + ((10 - sum % 10) % 10 + 1) % 10));
  return d;
}

std::string TextGenerator::Line() {
  std::string line;
  char buf[512];
  if (Pick(3) == 0) {
    // A chat prompt to an agent.
    line = "Please " + Word() + " the " + Word() + " " + Word() + ": " + Sentence(8 + Pick(40)) + ".";
  } else {
    std::snprintf(
        buf, sizeof buf,
        "%s %-5s %s request_id=%s method=GET path=%s/%zu status=%d latency_ms=%zu version=1.%zu.%zu "
        "order=%s msg=\"%s\"",
        Timestamp().c_str(), kLevels[Pick(6)], kServices[Pick(7)], HexId(16).c_str(), kPaths[Pick(7)],
        Pick(100000), Pick(10) == 0 ? 500 : 200, Pick(2000), Pick(20), Pick(50), OrderNumber().c_str(),
        Sentence(3 + Pick(10)).c_str());
    line = buf;
  }
  if (Sensitive()) line += " " + Word() + " " + SensitiveValue();
  return line;
}

std::string TextGenerator::Event() {
  char buf[1024];
  std::string body = Sentence(18 + Pick(10));
  if (Sensitive()) body += " " + SensitiveValue();
  std::snprintf(buf, sizeof buf,
                R"({"id":"evt_%s","organisation":"org_%zu","time":"%s","type":"gateway.request",)"
                R"("service":"%s","attributes":{"model":"gpt-4o-mini","route":"%s","status":%d,)"
                R"("latency_ms":%zu,"tokens_in":%zu,"tokens_out":%zu,"trace_id":"%s","user":"user_%zu",)"
                R"("region":"eu-west-1","cache":"miss"},"body":"%s"})",
                HexId(24).c_str(), 1 + Pick(50), Timestamp().c_str(), kServices[Pick(7)], kPaths[Pick(7)],
                Pick(10) == 0 ? 500 : 200, Pick(3000), Pick(4000), Pick(1000), HexId(32).c_str(),
                Pick(100000), body.c_str());
  return buf;
}

}  // namespace govern::bench::dlp
