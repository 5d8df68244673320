// Severity names, the canonical event encoding and deterministic ids (see event.h).
#include "services/telemetry/event.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "services/telemetry/json_text.h"

namespace govern::telemetry {
namespace internal {

void AppendJsonDouble(std::string& out, double v) {
  if (std::isnan(v)) {
    out.append("\"NaN\"");
  } else if (std::isinf(v)) {
    out.append(v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  } else {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
  }
}

std::string ServiceName(const std::vector<Attribute>& resource_attributes) {
  std::string name;
  for (const auto& a : resource_attributes) {
    const std::string& v = a.value_json;
    if (a.key != "service.name" || v.size() < 2 || v.front() != '"') continue;
    name.clear();  // the last service.name wins, as a map built from the list would have it
    for (size_t i = 1; i + 1 < v.size(); ++i) {
      if (v[i] != '\\' || i + 2 >= v.size()) {
        name.push_back(v[i]);
        continue;
      }
      const char c = v[++i];
      if (c == 'n') {
        name.push_back('\n');
      } else if (c == 'r') {
        name.push_back('\r');
      } else if (c == 't') {
        name.push_back('\t');
      } else if (c == 'u' && i + 4 < v.size()) {  // \u00XX: a control character
        unsigned x = 0;
        std::from_chars(v.data() + i + 3, v.data() + i + 5, x, 16);
        name.push_back(static_cast<char>(x));
        i += 4;
      } else {
        name.push_back(c);  // \" and \\ (and anything else) stand for the character itself
      }
    }
  }
  return name;
}

}  // namespace internal

namespace {

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

// The canonical encoding (event.h) is written through a cursor into a buffer sized exactly first: no
// capacity check, no out-of-line append per field. Appending 8-byte integers and fields to a
// std::string one by one (about 40 appends an event) was 11 % of intake's CPU, and the string's
// allocation per event another few percent.
char* PutU64(char* p, uint64_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  std::memcpy(p, &v, sizeof v);
  return p + sizeof v;
}

char* PutField(char* p, std::string_view s) {
  p = PutU64(p, s.size());
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

char* PutAttributes(char* p, const std::vector<Attribute>& attrs) {
  p = PutU64(p, attrs.size());
  for (const auto& a : attrs) {
    p = PutField(p, a.key);
    p = PutField(p, a.value_json);
  }
  return p;
}

size_t AttributesBytes(const std::vector<Attribute>& attrs) {
  size_t n = 8;
  for (const auto& a : attrs) n += 16 + a.key.size() + a.value_json.size();
  return n;
}

}  // namespace

void FinishOtlpRecord(uint64_t time, uint64_t observed, std::string_view time_field,
                      std::string_view observed_field, Event* e, std::string* rejected) {
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (rejected->empty() && (time > kMax || observed > kMax)) {
    *rejected = std::string(time > kMax ? time_field : observed_field) +
                ": beyond the year 2262 (does not fit signed 64-bit nanoseconds)";
  }
  e->observed_unix_nanos = static_cast<int64_t>(observed);
  e->time_unix_nanos = static_cast<int64_t>(time != 0 ? time : observed);
  if (e->type.empty()) e->type = "log";
}

int32_t SeverityNumberFromName(std::string_view name) {
  static constexpr std::pair<std::string_view, int32_t> kNames[] = {
      {"trace", 1},  {"debug", 5},    {"info", 9},      {"information", 9}, {"notice", 10},
      {"warn", 13},  {"warning", 13}, {"error", 17},    {"err", 17},        {"critical", 21},
      {"fatal", 21}, {"crit", 21},    {"emergency", 21}};
  for (const auto& [n, v] : kNames) {
    if (EqualsIgnoreCase(name, n)) return v;
  }
  // OTLP enum names: SEVERITY_NUMBER_<LEVEL>[2-4].
  constexpr std::string_view kPrefix = "SEVERITY_NUMBER_";
  if (name.size() > kPrefix.size() && EqualsIgnoreCase(name.substr(0, kPrefix.size()), kPrefix)) {
    std::string_view rest = name.substr(kPrefix.size());
    int32_t offset = 0;
    if (!rest.empty() && rest.back() >= '2' && rest.back() <= '4') {
      offset = rest.back() - '1';
      rest.remove_suffix(1);
    }
    static constexpr std::pair<std::string_view, int32_t> kLevels[] = {
        {"trace", 1}, {"debug", 5}, {"info", 9}, {"warn", 13}, {"error", 17}, {"fatal", 21}};
    for (const auto& [n, v] : kLevels) {
      if (EqualsIgnoreCase(rest, n)) return v + offset;
    }
  }
  return 0;
}

// The lower-case hex SHA-256 of the canonical encoding with `ordinal`.
std::string EventId(std::string_view org, const Event& e, uint64_t ordinal) {
  constexpr std::string_view kTag = "govern.event.v1";
  const std::string_view fields[] = {
      org,           e.type,         e.severity_text, e.body,         e.trace_id_hex,
      e.span_id_hex, e.service_name, e.scope_name,    e.scope_version};
  size_t size = kTag.size() + 7 * 8 + AttributesBytes(e.attributes) + AttributesBytes(e.resource_attributes);
  for (std::string_view f : fields) size += 8 + f.size();
  // One buffer per thread, grown to the largest event seen and reused.
  thread_local std::string buffer;
  if (buffer.size() < size) buffer.resize(std::max(size, buffer.size() * 2));
  char* const begin = buffer.data();
  char* p = begin;
  std::memcpy(p, kTag.data(), kTag.size());
  p += kTag.size();
  for (std::string_view f : fields) p = PutField(p, f);
  p = PutU64(p, static_cast<uint64_t>(e.time_unix_nanos));
  p = PutU64(p, static_cast<uint64_t>(e.observed_unix_nanos));
  p = PutU64(p, static_cast<uint64_t>(static_cast<int64_t>(e.severity_number)));
  p = PutU64(p, static_cast<uint64_t>(e.body_kind));
  p = PutU64(p, e.flags);
  p = PutU64(p, e.dropped_attributes_count);
  p = PutU64(p, ordinal);
  p = PutAttributes(p, e.attributes);
  p = PutAttributes(p, e.resource_attributes);
  if (static_cast<size_t>(p - begin) != size) std::abort();  // the size computed above is the encoding's

  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  // SHA-256 fetched once and one context per thread, reused: EVP_Digest(EVP_sha256()) looks the
  // algorithm up and allocates a context on every call in OpenSSL 3, which cost more than hashing
  // the ~650 bytes itself. A failure here means OpenSSL cannot allocate; there is no useful id then.
  static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  struct Ctx {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    ~Ctx() { EVP_MD_CTX_free(ctx); }
  };
  thread_local Ctx local;
  if (sha256 == nullptr || local.ctx == nullptr || EVP_DigestInit_ex2(local.ctx, sha256, nullptr) != 1 ||
      EVP_DigestUpdate(local.ctx, begin, size) != 1 || EVP_DigestFinal_ex(local.ctx, md.data(), &len) != 1) {
    std::abort();
  }
  return internal::LowerHex(std::string_view(reinterpret_cast<const char*>(md.data()), len));
}

void AssignMissingIds(std::vector<Event>& events) {
  // Every missing id with ordinal 0 first, which identifies the content (SHA-256 collisions aside); then
  // identical contents found by sorting (index order within equal ids), the k-th repeat getting ordinal
  // k. Cheaper than a hash map of the ids: repeats are rare, and a map allocated two nodes per event.
  std::vector<size_t> assigned;
  for (size_t i = 0; i < events.size(); ++i) {
    Event& e = events[i];
    if (!e.id.empty()) continue;
    e.id = EventId(e.org, e, 0);
    assigned.push_back(i);
  }
  if (assigned.size() < 2) return;
  std::sort(assigned.begin(), assigned.end(), [&](size_t a, size_t b) {
    int c = events[a].id.compare(events[b].id);
    return c < 0 || (c == 0 && a < b);
  });
  for (size_t run = 0; run < assigned.size();) {
    const std::string& first = events[assigned[run]].id;
    size_t k = 1;
    while (run + k < assigned.size() && events[assigned[run + k]].id == first) {
      Event& e = events[assigned[run + k]];
      e.id = EventId(e.org, e, k);
      ++k;
    }
    run += k;
  }
}

}  // namespace govern::telemetry

namespace govern::telemetry {
namespace {

bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// True when valid JSON text `json` holds a \u0000 escape (the only way JSON spells NUL).
bool JsonHasNulEscape(std::string_view json) {
  for (size_t i = 0; i + 1 < json.size(); ++i) {
    if (json[i] != '\\') continue;
    if (json[i + 1] == 'u' && json.substr(i + 2, 4) == "0000") return true;
    ++i;  // skip the escaped character (so "\\u0000" is a backslash then text)
  }
  return false;
}

}  // namespace

std::string UnstorableReason(const Event& e) {
  const std::pair<std::string_view, std::string_view> fields[] = {
      {"id", e.id},
      {"type", e.type},
      {"severity_text", e.severity_text},
      {"service_name", e.service_name},
      {"scope_name", e.scope_name},
      {"scope_version", e.scope_version},
      {"trace_id", e.trace_id_hex},
      {"span_id", e.span_id_hex},
  };
  for (const auto& [name, value] : fields) {
    if (HasNul(value)) return std::string(name) + ": contains a NUL character, which cannot be stored";
  }
  if (HasNul(e.body) || (e.body_kind == BodyKind::kJson && JsonHasNulEscape(e.body))) {
    return "body: contains a NUL character, which cannot be stored";
  }
  for (const auto* attrs : {&e.attributes, &e.resource_attributes}) {
    const char* what = attrs == &e.attributes ? "attributes" : "resource attributes";
    for (const Attribute& a : *attrs) {
      if (HasNul(a.key) || HasNul(a.value_json) || JsonHasNulEscape(a.value_json)) {
        return std::string(what) + " \"" + (HasNul(a.key) ? std::string("?") : a.key) +
               "\": contains a NUL character, which cannot be stored";
      }
    }
  }
  return {};
}

}  // namespace govern::telemetry
