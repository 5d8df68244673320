// Entry fields, canonical encoding and hashes.
#include "audit/entry.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "audit/json_canonical.h"
#include "base/time_format.h"
#include "crypto/encoding.h"
#include "crypto/sha256.h"

namespace govern::audit {
namespace {

// JSON numbers are doubles: seq must be exact in one.
constexpr uint64_t kMaxSeq = (uint64_t{1} << 53) - 1;
constexpr size_t kTimeTextSize = 27;  // YYYY-MM-DDTHH:MM:SS.ffffffZ

Hash Digest(std::span<const uint8_t> data) {
  auto r = crypto::Sha256(data);
  if (!r.ok()) {
    std::fprintf(stderr, "audit: SHA-256 failed: %s\n", r.status().ToString().c_str());
    std::abort();
  }
  return *r;
}

Status CheckText(std::string_view field, std::string_view value, size_t min, size_t max) {
  if (value.size() < min || value.size() > max) {
    return InvalidArgument(std::string(field) + ": length " + std::to_string(value.size()) +
                           " bytes is outside " + std::to_string(min) + ".." + std::to_string(max));
  }
  if (!internal::IsValidUtf8(value)) return InvalidArgument(std::string(field) + ": not valid UTF-8");
  if (value.find('\0') != std::string_view::npos) {
    return InvalidArgument(std::string(field) + ": contains U+0000");
  }
  return OkStatus();
}

}  // namespace

std::string HashToHex(const Hash& hash) { return crypto::HexEncode(hash); }

Result<Hash> HashFromHex(std::string_view hex) {
  if (hex.size() != 64) {
    return InvalidArgument("hash: expected 64 hex digits, got " + std::to_string(hex.size()) + " characters");
  }
  GOVERN_ASSIGN_OR_RETURN(auto bytes, crypto::HexDecode(hex));
  Hash h;
  std::memcpy(h.data(), bytes.data(), h.size());
  return h;
}

namespace {

void PutDigits(char* at, int64_t v, int width) {
  for (int i = width - 1; i >= 0; --i) {
    at[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
}

// Writes the 27 bytes of FormatTime at `at` (no snprintf: this is on the verification path).
void WriteTime(char* at, int64_t time_us) {
  if (time_us < kMinTimeUs) time_us = kMinTimeUs;
  if (time_us > kMaxTimeUs) time_us = kMaxTimeUs;
  int64_t secs = time_us / 1000000;
  int64_t micros = time_us % 1000000;
  if (micros < 0) {
    micros += 1000000;
    --secs;
  }
  int64_t days = secs / 86400;
  int64_t sod = secs % 86400;
  if (sod < 0) {
    sod += 86400;
    --days;
  }
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, y, m, d);
  std::memcpy(at, "0000-00-00T00:00:00.000000Z", kTimeTextSize);
  PutDigits(at, y, 4);
  PutDigits(at + 5, m, 2);
  PutDigits(at + 8, d, 2);
  PutDigits(at + 11, sod / 3600, 2);
  PutDigits(at + 14, sod / 60 % 60, 2);
  PutDigits(at + 17, sod % 60, 2);
  PutDigits(at + 20, micros, 6);
}

// The canonical encoding up to and including `"seq":`, and what follows the seq's digits: the seq is
// the only member that depends on the chain head, so the service can splice it in under the head's
// lock (CanonicalEntrySplit).
void AppendCanonicalBeforeSeq(std::string& out, const Entry& e) {
  out += "{\"action\":";
  AppendJcsString(out, e.action);
  out += ",\"actor\":";
  AppendJcsString(out, e.actor);
  out += ",\"details\":";
  out += e.details;
  out += ",\"idempotency_key\":";
  AppendJcsString(out, e.idempotency_key);
  out += ",\"org\":";
  AppendJcsString(out, e.org);
  out += ",\"outcome\":";
  AppendJcsString(out, e.outcome);
  out += ",\"seq\":";
}

void AppendCanonicalAfterSeq(std::string& out, const Entry& e) {
  out += ",\"target\":";
  AppendJcsString(out, e.target);
  out += ",\"time\":\"";
  const size_t at = out.size();
  out.resize(at + kTimeTextSize);
  WriteTime(out.data() + at, e.time_us);
  out += "\"}";
}

void AppendCanonicalEntry(std::string& out, const Entry& e) {
  AppendCanonicalBeforeSeq(out, e);
  char digits[24];
  auto res = std::to_chars(digits, digits + sizeof digits, e.seq);
  out.append(digits, res.ptr);
  AppendCanonicalAfterSeq(out, e);
}

}  // namespace

std::string FormatTime(int64_t time_us) {
  std::string out(kTimeTextSize, '\0');
  WriteTime(out.data(), time_us);
  return out;
}

Result<int64_t> ParseTime(std::string_view t) {
  // YYYY-MM-DDTHH:MM:SS.ffffffZ
  static constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd.ddddddZ";
  auto bad = [&](std::string_view why) {
    std::string shown(t.substr(0, 40));
    return InvalidArgument("time \"" + shown + "\": " + std::string(why) +
                           " (expected YYYY-MM-DDTHH:MM:SS.ffffffZ)");
  };
  if (t.size() != kShape.size()) return bad("wrong length");
  for (size_t i = 0; i < kShape.size(); ++i) {
    const bool digit = t[i] >= '0' && t[i] <= '9';
    if (kShape[i] == 'd' ? !digit : t[i] != kShape[i]) return bad("malformed");
  }
  // The shape is fixed above; the fields and the calendar are base's (time_format.h).
  auto r = ParseRfc3339(t);
  if (!r.ok()) {
    const std::string why = r.status().message();
    if (why.starts_with("month") || why.starts_with("day")) return bad("date out of range");
    if (why.starts_with("time of day")) return bad("time of day out of range");
    return bad("malformed");
  }
  if (r->year < 1) return bad("date out of range");
  if (r->second > 59) return bad("time of day out of range");
  return r->unix_seconds * 1000000 + r->nanos / 1000;
}

Status ValidateOrg(std::string_view org) {
  if (org.empty() || org.size() > kMaxOrgBytes) {
    return InvalidArgument("org: must be 1.." + std::to_string(kMaxOrgBytes) + " characters");
  }
  for (size_t i = 0; i < org.size(); ++i) {
    const char c = org[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (i > 0 && (c == '_' || c == '-'));
    if (!ok) {
      return InvalidArgument("org: character " + std::to_string(i) +
                             " is not allowed (pattern [a-z0-9][a-z0-9_-]{0,62})");
    }
  }
  return OkStatus();
}

Status ValidateEntryFieldsExceptDetails(const Entry& e) {
  GOVERN_RETURN_IF_ERROR(ValidateOrg(e.org));
  if (e.seq < 1 || e.seq > kMaxSeq) return InvalidArgument("seq: must be 1..2^53-1");
  if (e.time_us < kMinTimeUs || e.time_us > kMaxTimeUs) {
    return InvalidArgument("time: outside years 0001..9999");
  }
  GOVERN_RETURN_IF_ERROR(CheckText("actor", e.actor, 1, kMaxActorBytes));
  GOVERN_RETURN_IF_ERROR(CheckText("action", e.action, 1, kMaxActionBytes));
  GOVERN_RETURN_IF_ERROR(CheckText("target", e.target, 0, kMaxTargetBytes));
  GOVERN_RETURN_IF_ERROR(CheckText("outcome", e.outcome, 0, kMaxOutcomeBytes));
  GOVERN_RETURN_IF_ERROR(CheckText("idempotency_key", e.idempotency_key, 0, kMaxIdempotencyKeyBytes));
  return OkStatus();
}

Status ValidateEntryFields(const Entry& e) {
  GOVERN_RETURN_IF_ERROR(ValidateEntryFieldsExceptDetails(e));
  auto canonical = internal::Canonicalize(e.details, e.details.size(), kMaxDetailsDepth, "details", true);
  if (!canonical.ok()) return canonical.status();
  if (*canonical != e.details) return InvalidArgument("details: not in canonical (RFC 8785) form");
  return OkStatus();
}

std::string CanonicalEntry(const Entry& e) {
  std::string out;
  out.reserve(160 + e.actor.size() + e.action.size() + e.target.size() + e.outcome.size() + e.details.size() +
              e.idempotency_key.size() + e.org.size());
  AppendCanonicalEntry(out, e);
  return out;
}

CanonicalParts CanonicalEntrySplit(const Entry& e) {
  CanonicalParts p;
  AppendCanonicalBeforeSeq(p.before_seq, e);
  AppendCanonicalAfterSeq(p.after_seq, e);
  return p;
}

Hash EntryLeafHash(const Entry& e) {
  // The leaf prefix byte and the canonical text in one reused buffer: one hash call, no allocation
  // once the buffer has grown.
  thread_local std::string buf;
  buf.clear();
  buf.push_back('\0');
  AppendCanonicalEntry(buf, e);
  return Digest(crypto::AsBytes(buf));
}

Hash LeafHash(std::string_view canonical) {
  thread_local std::string buf;
  buf.clear();
  buf.push_back('\0');
  buf.append(canonical);
  return Digest(crypto::AsBytes(buf));
}

Hash ChainHash(const Hash& prev, const Hash& leaf) {
  uint8_t in[64];
  std::memcpy(in, prev.data(), 32);
  std::memcpy(in + 32, leaf.data(), 32);
  return Digest(in);
}

Hash NodeHash(const Hash& left, const Hash& right) {
  uint8_t in[65];
  in[0] = 1;
  std::memcpy(in + 1, left.data(), 32);
  std::memcpy(in + 33, right.data(), 32);
  return Digest(in);
}

Hash EmptyTreeHash() {
  static const Hash empty = Digest({});
  return empty;
}

Hash Seal(Entry& entry, const Hash& prev) {
  entry.prev_hash = prev;
  const Hash leaf = EntryLeafHash(entry);
  entry.entry_hash = ChainHash(prev, leaf);
  return leaf;
}

}  // namespace govern::audit
