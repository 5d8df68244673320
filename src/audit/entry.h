// One audit entry, its canonical encoding and its hashes: the bytes that a customer re-computes to
// check the log (docs/audit-format.md writes every byte down).
//
// An entry's canonical encoding is the RFC 8785 (JCS) JSON text of the object {"action", "actor",
// "details", "idempotency_key", "org", "outcome", "seq", "target", "time"}. Its leaf hash is the RFC
// 9162 leaf hash SHA-256(0x00 || canonical); its entry hash chains it to the previous entry:
// entry_hash = SHA-256(prev_hash || leaf_hash), with 32 zero bytes before the first entry.
//
// Everything here is a pure function of its arguments: thread-safe, no I/O. The hash functions cannot
// fail (SHA-256 in OpenSSL fails only when it cannot allocate a context; they abort then).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace govern::audit {

using Hash = std::array<uint8_t, 32>;

// Lower-case hex (64 characters).
std::string HashToHex(const Hash& hash);
// Exactly 64 hex digits (either case); anything else is kInvalidArgument.
Result<Hash> HashFromHex(std::string_view hex);

// The hash before the first entry of every chain: 32 zero bytes.
inline constexpr Hash kGenesisHash{};

// Field limits (bytes of UTF-8). Kept here so the service's 4xx checks and the verifier agree.
inline constexpr size_t kMaxOrgBytes = 63;
inline constexpr size_t kMaxActorBytes = 256;
inline constexpr size_t kMaxActionBytes = 256;
inline constexpr size_t kMaxTargetBytes = 1024;
inline constexpr size_t kMaxOutcomeBytes = 64;
inline constexpr size_t kMaxIdempotencyKeyBytes = 128;
// A default for CanonicalizeDetails' max_bytes (the service may choose another).
inline constexpr size_t kDefaultMaxDetailsBytes = 64 * 1024;
// Deepest nesting CanonicalizeDetails accepts (the details object itself is depth 1).
inline constexpr int kMaxDetailsDepth = 64;
// The span of `time_us` that has a four-digit-year RFC 3339 form: 0001-01-01T00:00:00Z up to
// 9999-12-31T23:59:59.999999Z.
inline constexpr int64_t kMinTimeUs = -62135596800LL * 1000000;
inline constexpr int64_t kMaxTimeUs = 253402300799LL * 1000000 + 999999;

struct Entry {
  std::string org;              // [a-z0-9][a-z0-9_-]{0,62}
  uint64_t seq = 0;             // 1-based, no gaps within an org
  int64_t time_us = 0;          // Unix microseconds, UTC (PostgreSQL timestamptz precision)
  std::string actor;            // 1..256 bytes UTF-8
  std::string action;           // 1..256 bytes UTF-8
  std::string target;           // 0..1024 bytes UTF-8
  std::string outcome;          // 0..64 bytes UTF-8
  std::string details = "{}";   // canonical JSON text of an object (CanonicalizeDetails' output)
  std::string idempotency_key;  // 0..128 bytes UTF-8
  Hash prev_hash{};
  Hash entry_hash{};

  friend bool operator==(const Entry&, const Entry&) = default;
};

// RFC 3339 UTC with exactly six fractional digits and "Z": "2026-11-30T07:25:47.000123Z".
// `time_us` must lie in [kMinTimeUs, kMaxTimeUs] (ValidateEntryFields checks it); outside, the year
// is clamped so the text still has the fixed shape.
std::string FormatTime(int64_t time_us);
// Parses exactly FormatTime's form (six fractional digits, "Z", no other offset, valid calendar date).
Result<int64_t> ParseTime(std::string_view text);

// Checks every field but the hashes: org's pattern, seq >= 1, time in range, the text fields' UTF-8
// and lengths (no U+0000 anywhere: PostgreSQL text cannot hold it), and that `details` is canonical
// (equal to CanonicalizeDetails of itself). kInvalidArgument names the field and what is wrong.
Status ValidateEntryFields(const Entry& entry);
// The same checks without the details one (for a caller that has just canonicalized details itself).
Status ValidateEntryFieldsExceptDetails(const Entry& entry);
// Only the org pattern.
Status ValidateOrg(std::string_view org);

// The canonical encoding. Assumes ValidateEntryFields(entry) is ok (it does not check again; details
// is copied in as it stands).
std::string CanonicalEntry(const Entry& entry);
// The canonical encoding around the seq, the one member that depends on the chain head:
// CanonicalEntry(e) == before_seq + decimal(e.seq) + after_seq, whatever e.seq is (before_seq ends
// with `"seq":`, after_seq starts with `,"target":`). The service builds these before it holds the head
// and splices the seq in under the head's lock (in SQL). Same assumptions as CanonicalEntry.
struct CanonicalParts {
  std::string before_seq;
  std::string after_seq;
};
CanonicalParts CanonicalEntrySplit(const Entry& entry);

// Parses outside JSON that must be an object and returns its RFC 8785 text: members sorted by the
// UTF-16 code units of their names, no whitespace, ECMAScript number form, JCS string escaping.
// kInvalidArgument, with the byte offset (and the member path where it helps), for: input longer than
// max_bytes, anything that is not JSON, a top level that is not an object, a duplicate member name,
// invalid UTF-8, a lone surrogate escape, nesting deeper than kMaxDetailsDepth, a number that is not a
// finite double (1e400). Numbers are IEEE doubles as in JavaScript: 12345678901234567891 becomes
// 12345678901234567000 (send such identifiers as strings).
Result<std::string> CanonicalizeDetails(std::string_view json, size_t max_bytes);

// ECMAScript Number.prototype.toString of a finite double (RFC 8785 section 3.2.2.3): -0 is "0".
std::string FormatJcsNumber(double value);
// Appends the JCS form of a string (quotes included). `utf8` must be valid UTF-8.
void AppendJcsString(std::string& out, std::string_view utf8);

// RFC 9162 leaf hash: SHA-256(0x00 || canonical).
Hash LeafHash(std::string_view canonical);
// SHA-256(prev || leaf), a 64-byte input.
Hash ChainHash(const Hash& prev, const Hash& leaf);
// RFC 9162 interior node: SHA-256(0x01 || left || right).
Hash NodeHash(const Hash& left, const Hash& right);
// SHA-256 of the empty string: the Merkle tree hash of an empty tree.
Hash EmptyTreeHash();

// LeafHash(CanonicalEntry(entry)), without the intermediate string.
Hash EntryLeafHash(const Entry& entry);
// entry_hash for `entry` as it stands (its prev_hash included).
inline Hash ComputeEntryHash(const Entry& entry) { return ChainHash(entry.prev_hash, EntryLeafHash(entry)); }
// Sets entry.prev_hash = prev and entry.entry_hash accordingly. The leaf hash is returned so that a
// caller building the Merkle tree does not hash the canonical text twice.
Hash Seal(Entry& entry, const Hash& prev);

}  // namespace govern::audit
