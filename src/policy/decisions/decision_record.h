// DecisionRecord: one policy decision as the decision log keeps it, its compact binary encoding (the
// payload of one WAL record), and the decision id that names it everywhere after (the telemetry event
// id, so a record sent twice is stored once).
//
// The record is independent of the policy engine: the engine fills one in and hands it to DecisionLog.
//
// Encoding (version 1, all integers little-endian, every length a LEB128 varint):
//   u8 version = 1 | u8 decision | u8 context kind | u8 flags = 0 | 16 bytes id | i64 time_ns |
//   u64 bundle_version | str organisation | str principal | str action | str resource |
//   varint n, n x str determining policy ids | varint n, n x str erroring policy ids | str context
// where str = varint length + bytes. The decoder is bounded: every length and count is checked against
// the bytes left before anything is allocated, unknown versions, decisions and context kinds are
// refused, a hashed context must be 32 bytes, varints must be in their shortest form (one encoding per
// record), and trailing bytes are an error. It never crashes on
// any input (fuzz target decision_record_fuzz).
//
// Thread-safety: the types are plain values; EncodeDecision/DecodeDecision are pure functions.
// DecisionIdGenerator::Next is safe to call from many threads at once.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::policy {

// The outcome. kApprovalRequired is the third outcome the engine will add (a human must approve);
// the log and the shipper carry it already. Values are the encoding's bytes: never renumber.
enum class RecordedDecision : uint8_t { kAllow = 1, kDeny = 2, kApprovalRequired = 3 };
std::string_view RecordedDecisionName(RecordedDecision d);  // "allow", "deny", "approval_required"

// What a record holds of the request context.
enum class ContextKind : uint8_t {
  kNone = 0,  // nothing
  kFull = 1,  // the context as JSON text
  kHash = 2,  // SHA-256 of that JSON text (32 bytes): proves what was decided on without keeping it
};

// 128 bits laid out as a UUIDv7 (RFC 9562): 48 bits of unix milliseconds, version 7, then 74 bits of
// which 42 are a random per-process prefix and 32 a per-process counter. All zero means "not set".
struct DecisionId {
  std::array<uint8_t, 16> bytes{};

  bool empty() const;
  // Canonical lower-case UUID text, "0190b6e2-8d4c-7a1f-9e3b-5c2d00000001" (36 characters of
  // [0-9a-f-], valid as a telemetry event id).
  std::string ToString() const;
  static Result<DecisionId> Parse(std::string_view text);
  friend bool operator==(const DecisionId&, const DecisionId&) = default;
};

// Unique ids without coordination: the random prefix separates processes (and restarts), the counter
// separates decisions within one, the time makes them sort roughly by when they were made.
class DecisionIdGenerator {
 public:
  // Draws the prefix from the CSPRNG; fails only when it cannot be seeded.
  static Result<DecisionIdGenerator> Create();
  // A fixed prefix (tests).
  explicit DecisionIdGenerator(uint64_t prefix) : prefix_(prefix) {}
  DecisionIdGenerator(DecisionIdGenerator&& other) noexcept
      : prefix_(other.prefix_), counter_(other.counter_.load()) {}

  DecisionId Next(int64_t time_ns);

 private:
  uint64_t prefix_;  // low 42 bits used
  std::atomic<uint32_t> counter_{0};
};

struct DecisionRecord {
  DecisionId id;        // empty: DecisionLog assigns one
  int64_t time_ns = 0;  // unix nanoseconds; 0: DecisionLog stamps the time of Record
  std::string organisation;
  // Cedar entity uids as text: Agent::"a1", Action::"call_tool", Tool::"web_search".
  std::string principal;
  std::string action;
  std::string resource;
  RecordedDecision decision = RecordedDecision::kDeny;
  std::vector<std::string> determining_policies;  // ids of the policies that determined the decision
  std::vector<std::string> erroring_policies;     // ids of the policies whose evaluation failed
  uint64_t bundle_version = 0;
  // The caller sets kFull and the context JSON; DecisionLog reduces it to what is configured.
  ContextKind context_kind = ContextKind::kNone;
  std::string context;  // kFull: JSON text; kHash: 32 bytes; kNone: empty

  friend bool operator==(const DecisionRecord&, const DecisionRecord&) = default;
};

inline constexpr uint8_t kDecisionRecordVersion = 1;

// Appends the encoding of `r` to `out` (which is not cleared).
void EncodeDecision(const DecisionRecord& r, std::string* out);
// The same with the id, time and context given apart from `r` (whose own are ignored): the decision
// log stamps the first two and reduces the context without copying the record.
void EncodeDecision(const DecisionRecord& r, const DecisionId& id, int64_t time_ns, ContextKind context_kind,
                    std::string_view context, std::string* out);
// Decodes one record; InvalidArgument (naming what is wrong) for anything that is not exactly one
// valid version-1 record.
Result<DecisionRecord> DecodeDecision(std::string_view bytes);

}  // namespace govern::policy
