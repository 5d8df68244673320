// Telemetry queries over PostgreSQL and the archive, and the page cursor.
#include "services/telemetry/query.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <utility>

#include "crypto/encoding.h"
#include "crypto/sha256.h"
#include "db/params.h"
#include "services/telemetry/json_text.h"

namespace govern::telemetry {
namespace {

constexpr const char* kSelect =
    "SELECT time_ns, id, observed_ns, received_ns, type, severity_text, severity_number, body_kind, body, "
    "attributes::text, resource_attributes::text, service_name, scope_name, scope_version, trace_id, "
    "span_id, flags, dropped_attributes FROM telemetry_events WHERE org = $1 AND time_ns >= $2 AND "
    "time_ns < $3";

// Appends the UTF-8 encoding of `cp`.
void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

Status Malformed(std::string_view what) {
  return DataLoss("jsonb text from the server: " + std::string(what));
}

// Reads the JSON string starting at s[*i] (a '"'), unescaped into *out; *i ends past the closing quote.
Status ReadString(std::string_view s, size_t* i, std::string* out) {
  auto hex4 = [&](size_t at, uint32_t* v) {
    if (at + 4 > s.size()) return false;
    *v = 0;
    for (size_t k = at; k < at + 4; ++k) {
      char c = s[k];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) return false;
      *v = *v * 16 + static_cast<uint32_t>(d);
    }
    return true;
  };
  out->clear();
  size_t k = *i + 1;
  while (k < s.size() && s[k] != '"') {
    if (s[k] != '\\') {
      out->push_back(s[k++]);
      continue;
    }
    if (++k >= s.size()) return Malformed("unterminated escape");
    char c = s[k++];
    switch (c) {
      case '"':
        out->push_back('"');
        break;
      case '\\':
        out->push_back('\\');
        break;
      case '/':
        out->push_back('/');
        break;
      case 'b':
        out->push_back('\b');
        break;
      case 'f':
        out->push_back('\f');
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'u': {
        uint32_t cp = 0;
        if (!hex4(k, &cp)) return Malformed("bad \\u escape");
        k += 4;
        if (cp >= 0xD800 && cp < 0xDC00) {
          uint32_t lo = 0;
          if (k + 6 <= s.size() && s[k] == '\\' && s[k + 1] == 'u' && hex4(k + 2, &lo) && lo >= 0xDC00 &&
              lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            k += 6;
          } else {
            return Malformed("lone surrogate");
          }
        }
        AppendUtf8(*out, cp);
        break;
      }
      default:
        return Malformed("bad escape");
    }
  }
  if (k >= s.size()) return Malformed("unterminated string");
  *i = k + 1;
  return OkStatus();
}

// Copies the JSON value starting at s[*i] into *out without the whitespace jsonb's text form puts
// after ':' and ','; *i ends past it. Strings are copied verbatim (escapes kept).
Status CopyValue(std::string_view s, size_t* i, std::string* out) {
  out->clear();
  int depth = 0;
  size_t k = *i;
  while (k < s.size()) {
    char c = s[k];
    if (c == '"') {
      size_t start = k++;
      while (k < s.size() && s[k] != '"') k += s[k] == '\\' ? 2 : 1;
      if (k >= s.size()) return Malformed("unterminated string");
      ++k;
      out->append(s.substr(start, k - start));
    } else if (c == '{' || c == '[') {
      ++depth;
      out->push_back(c);
      ++k;
    } else if (c == '}' || c == ']') {
      if (depth == 0) break;
      --depth;
      out->push_back(c);
      ++k;
    } else if (c == ',' && depth == 0) {
      break;
    } else {
      if (c != ' ' && c != '\n' && c != '\t' && c != '\r') out->push_back(c);
      ++k;
    }
    if (depth == 0 && !out->empty() && (c == '"' || c == '}' || c == ']')) break;
  }
  if (depth != 0 || out->empty()) return Malformed("bad value");
  *i = k;
  return OkStatus();
}

// jsonb object text ("{"a": 1, "b": [1, 2]}") -> attributes in jsonb's key order.
Result<std::vector<Attribute>> SplitObject(std::string_view s) {
  std::vector<Attribute> attrs;
  size_t i = 0;
  auto skip_ws = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
  };
  skip_ws();
  if (i >= s.size() || s[i] != '{') return Malformed("not an object");
  ++i;
  skip_ws();
  if (i < s.size() && s[i] == '}') return attrs;
  while (true) {
    skip_ws();
    if (i >= s.size() || s[i] != '"') return Malformed("expected a key");
    Attribute a;
    GOVERN_RETURN_IF_ERROR(ReadString(s, &i, &a.key));
    skip_ws();
    if (i >= s.size() || s[i] != ':') return Malformed("expected ':'");
    ++i;
    skip_ws();
    GOVERN_RETURN_IF_ERROR(CopyValue(s, &i, &a.value_json));
    attrs.push_back(std::move(a));
    skip_ws();
    if (i < s.size() && s[i] == ',') {
      ++i;
      continue;
    }
    if (i < s.size() && s[i] == '}') break;
    return Malformed("expected ',' or '}'");
  }
  return attrs;
}

Result<StoredEvent> ReadRow(const db::Rows& rows, int r, const std::string& org) {
  StoredEvent s;
  Event& e = s.event;
  e.org = org;
  GOVERN_ASSIGN_OR_RETURN(e.time_unix_nanos, rows.Int64(r, 0));
  e.id = rows.Text(r, 1);
  GOVERN_ASSIGN_OR_RETURN(e.observed_unix_nanos, rows.Int64(r, 2));
  GOVERN_ASSIGN_OR_RETURN(s.received_ns, rows.Int64(r, 3));
  e.type = rows.Text(r, 4);
  e.severity_text = rows.Text(r, 5);
  GOVERN_ASSIGN_OR_RETURN(int64_t severity, rows.Int64(r, 6));
  e.severity_number = static_cast<int32_t>(severity);
  GOVERN_ASSIGN_OR_RETURN(int64_t kind, rows.Int64(r, 7));
  if (kind < 0 || kind > 2) return DataLoss("telemetry_events.body_kind " + std::to_string(kind));
  e.body_kind = static_cast<BodyKind>(kind);
  e.body = rows.Text(r, 8);
  GOVERN_ASSIGN_OR_RETURN(e.attributes, SplitObject(rows.Text(r, 9)));
  GOVERN_ASSIGN_OR_RETURN(e.resource_attributes, SplitObject(rows.Text(r, 10)));
  e.service_name = rows.Text(r, 11);
  e.scope_name = rows.Text(r, 12);
  e.scope_version = rows.Text(r, 13);
  e.trace_id_hex = rows.Text(r, 14);
  e.span_id_hex = rows.Text(r, 15);
  GOVERN_ASSIGN_OR_RETURN(int64_t flags, rows.Int64(r, 16));
  e.flags = static_cast<uint32_t>(flags);
  GOVERN_ASSIGN_OR_RETURN(int64_t dropped, rows.Int64(r, 17));
  e.dropped_attributes_count = static_cast<uint32_t>(dropped);
  return s;
}

bool Before(const EventKey& a, const EventKey& b, bool newest_first) { return newest_first ? b < a : a < b; }

void PutI64(std::string& out, int64_t v) {
  auto u = static_cast<uint64_t>(v);
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<char>(u >> (8 * k)));
}
int64_t GetI64(const uint8_t* p) {
  uint64_t u = 0;
  for (int k = 7; k >= 0; --k) u = (u << 8) | p[k];
  return static_cast<int64_t>(u);
}
void PutString(std::string& out, std::string_view s) {
  PutI64(out, static_cast<int64_t>(s.size()));
  out.append(s);
}

constexpr uint8_t kCursorVersion = 1;
constexpr size_t kCursorFixed = 1 + 8 + 8 + 8 + 8;  // version, from, to, hash, time
constexpr size_t kMaxCursorChars = 4096;

// First 8 bytes of SHA-256 over what a cursor must agree with. Attribute filters are sorted: their
// order in the request does not change the result.
std::string FilterHash(const EventQuery& q) {
  std::string canon = "govern.cursor.v1";
  PutString(canon, q.org);
  PutString(canon, q.type);
  std::vector<std::pair<std::string_view, std::string_view>> attrs;
  for (const Attribute& a : q.attributes) attrs.emplace_back(a.key, a.value_json);
  std::sort(attrs.begin(), attrs.end());
  PutI64(canon, static_cast<int64_t>(attrs.size()));
  for (const auto& [k, v] : attrs) {
    PutString(canon, k);
    PutString(canon, v);
  }
  canon.push_back(q.newest_first ? 'n' : 'o');
  PutI64(canon, q.from_ns);
  PutI64(canon, q.to_ns);
  Result<crypto::Sha256Digest> d = crypto::Sha256(canon);
  if (!d.ok()) return std::string(8, '\0');  // OpenSSL failed: every cursor then mismatches, safely
  return std::string(reinterpret_cast<const char*>(d->data()), 8);
}

}  // namespace

Result<std::vector<StoredEvent>> QueryRecent(db::Connection& conn, const EventQuery& q) {
  std::vector<StoredEvent> out;
  if (q.limit == 0 || q.from_ns >= q.to_ns) return out;
  std::string sql = kSelect;
  db::Params p(q.org, q.from_ns, q.to_ns);
  int n = 3;
  auto next = [&n] { return "$" + std::to_string(++n); };
  if (!q.type.empty()) {
    sql += " AND type = " + next();
    p.Add(q.type);
  }
  if (!q.attributes.empty()) {
    // One object for containment (what a GIN index would serve) and the same pairs as an array for
    // the exact check: containment alone lets [1] match [1,2], and an object cannot hold a key twice.
    std::string object = "{", pairs = "[";
    for (size_t k = 0; k < q.attributes.size(); ++k) {
      const Attribute& a = q.attributes[k];
      if (k > 0) {
        object.push_back(',');
        pairs.push_back(',');
      }
      internal::AppendJsonString(object, a.key);
      object += ":" + a.value_json;
      pairs.push_back('[');
      internal::AppendJsonString(pairs, a.key);
      pairs += "," + a.value_json + "]";
    }
    object.push_back('}');
    pairs.push_back(']');
    std::string o = next(), ps = next();
    // The columns are json (cheap to store); the filter compares as jsonb, so JSON values compare as
    // values. It runs only on rows the time range and the index already narrowed down.
    sql += " AND attributes::jsonb @> " + o + "::jsonb AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(" +
           ps + "::jsonb) f WHERE attributes::jsonb -> (f->>0) IS DISTINCT FROM f->1)";
    p.Add(object).Add(pairs);
  }
  const char* cmp = q.newest_first ? "<" : ">";
  if (q.after) {
    // The bare bound on time_ns is what the index and partition pruning use; the OR makes it exact.
    std::string t = next(), id = next();
    sql += std::string(" AND time_ns ") + cmp + "= " + t + " AND (time_ns " + cmp + " " + t +
           " OR id COLLATE \"C\" " + cmp + " " + id + ")";
    p.Add(q.after->time_ns).Add(q.after->id);
  }
  sql += q.newest_first ? " ORDER BY time_ns DESC, id COLLATE \"C\" DESC"
                        : " ORDER BY time_ns, id COLLATE \"C\"";
  sql += " LIMIT " + next();
  p.Add(static_cast<int64_t>(q.limit));
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, conn.ExecPrepared(sql, p));
  out.reserve(static_cast<size_t>(rows.size()));
  for (int r = 0; r < rows.size(); ++r) {
    GOVERN_ASSIGN_OR_RETURN(StoredEvent s, ReadRow(rows, r, q.org));
    out.push_back(std::move(s));
  }
  return out;
}

Result<QueryPage> RunQuery(db::Pool* pool, ArchiveReader* archive, const EventQuery& q) {
  QueryPage page;
  if (q.limit == 0) return page;
  std::vector<StoredEvent> recent;
  {
    GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease conn, pool->Checkout());
    GOVERN_ASSIGN_OR_RETURN(recent, QueryRecent(*conn, q));
  }
  std::vector<StoredEvent> archived;
  if (archive != nullptr) {
    GOVERN_ASSIGN_OR_RETURN(archived, archive->Scan(q));
  }
  page.events.reserve(std::min(q.limit, recent.size() + archived.size()));
  size_t a = 0, b = 0;
  while (page.events.size() < q.limit && (a < recent.size() || b < archived.size())) {
    StoredEvent* pick;
    if (b >= archived.size()) {
      pick = &recent[a++];
    } else if (a >= recent.size()) {
      pick = &archived[b++];
    } else {
      EventKey ka = recent[a].key(), kb = archived[b].key();
      if (ka == kb) {
        ++b;  // the same event in both (a move between sources seen half-way): return it once
        continue;
      }
      pick = Before(ka, kb, q.newest_first) ? &recent[a++] : &archived[b++];
    }
    // A source that broke its order contract (or repeated a key) must not make the page repeat.
    if (!page.events.empty() && !Before(page.events.back().key(), pick->key(), q.newest_first)) continue;
    // Nor may it hand back events on the wrong side of the cursor.
    if (q.after && !Before(*q.after, pick->key(), q.newest_first)) continue;
    page.events.push_back(std::move(*pick));
  }
  if (page.events.size() == q.limit) page.next = page.events.back().key();
  return page;
}

std::string EncodeCursor(const EventQuery& q, const EventKey& last) {
  std::string raw;
  raw.reserve(kCursorFixed + last.id.size());
  raw.push_back(static_cast<char>(kCursorVersion));
  PutI64(raw, q.from_ns);
  PutI64(raw, q.to_ns);
  raw += FilterHash(q);
  PutI64(raw, last.time_ns);
  raw += last.id;
  return crypto::Base64UrlEncode(raw);
}

Status ApplyCursor(std::string_view token, bool time_range_given, EventQuery* q) {
  if (token.size() > kMaxCursorChars) return InvalidArgument("cursor: too long");
  Result<std::vector<uint8_t>> raw = crypto::Base64UrlDecode(token);
  if (!raw.ok()) return InvalidArgument("cursor: not a cursor of this API (bad encoding)");
  const std::vector<uint8_t>& b = *raw;
  if (b.size() < kCursorFixed || b[0] != kCursorVersion) {
    return InvalidArgument("cursor: not a cursor of this API");
  }
  EventQuery probe = *q;
  if (!time_range_given) {
    probe.from_ns = GetI64(&b[1]);
    probe.to_ns = GetI64(&b[9]);
  }
  if (std::memcmp(FilterHash(probe).data(), &b[17], 8) != 0) {
    return InvalidArgument("cursor: made for a different query (filters, time range or order changed)");
  }
  q->from_ns = probe.from_ns;
  q->to_ns = probe.to_ns;
  q->after = EventKey{GetI64(&b[25]), std::string(b.begin() + kCursorFixed, b.end())};
  return OkStatus();
}

std::string FormatRfc3339Nanos(int64_t unix_nanos) {
  int64_t secs = unix_nanos / 1'000'000'000;
  int64_t frac = unix_nanos % 1'000'000'000;
  if (frac < 0) {  // floor, so times before 1970 print forward from the second before
    frac += 1'000'000'000;
    --secs;
  }
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(frac));
  return buf;
}

}  // namespace govern::telemetry
