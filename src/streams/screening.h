// Screener: sensitive-data screening of produced record payloads with the shared DLP engine
// (dlp::RuleSet, compiled once), per topic: off, flag or block.
//
//  - flag: every record whose key or value has a finding gets a header "govern-dlp" whose value names
//    the detectors that matched ("email,card_number"). This changes the batch, so it is re-encoded: the
//    records section is decompressed, rewritten, recompressed with the batch's codec, and the batch's
//    length and CRC-32C recomputed. A batch without findings is stored as sent (no copy).
//  - block: a batch with any finding is refused; the broker answers POLICY_VIOLATION for that partition
//    and logs the detectors that matched (Produce v7 has no error-message field).
//
// Compressed batches (gzip, snappy raw or xerial-framed, lz4 frame, zstd) are decompressed to be
// screened; decompressed size is bounded (max_decompressed_bytes), beyond which the batch is refused as
// INVALID_RECORD, as is a batch whose records cannot be decoded: screening fails closed.
//
// Topic modes come from patterns: an exact name or a prefix ending in '*'; the longest matching pattern
// wins, else the default mode. Immutable after construction: thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace govern::dlp {
class RuleSet;
}

namespace govern::streams {

enum class ScreenMode : uint8_t { kOff, kFlag, kBlock };
Result<ScreenMode> ParseScreenMode(std::string_view s);  // "off", "flag", "block"

inline constexpr std::string_view kDlpHeader = "govern-dlp";

struct ScreeningOptions {
  ScreenMode default_mode = ScreenMode::kOff;
  std::vector<std::pair<std::string, ScreenMode>> topics;  // pattern ("orders", "pii-*") -> mode
  size_t max_decompressed_bytes = 64 << 20;
};
// "orders=block,pii-*=flag" -> topics; InvalidArgument on a bad entry.
Result<std::vector<std::pair<std::string, ScreenMode>>> ParseTopicModes(std::string_view spec);

struct ScreenVerdict {
  bool blocked = false;
  std::string detectors;                 // comma-separated detector ids that matched (block or flag)
  std::optional<std::string> rewritten;  // flag mode with findings: the new batch bytes
};

class Screener {
 public:
  Screener(ScreeningOptions options, std::shared_ptr<const dlp::RuleSet> rules);

  ScreenMode ModeFor(std::string_view topic) const;
  // Screens one whole, already validated batch (ParseBatch ok). FailedPrecondition when the batch cannot
  // be screened (unknown codec, too large decompressed, undecodable records).
  Result<ScreenVerdict> Screen(std::string_view batch, ScreenMode mode) const;

 private:
  ScreeningOptions options_;
  std::shared_ptr<const dlp::RuleSet> rules_;
};

// Records codec helpers (exposed for tests): decompress/compress the records section of a batch with
// Kafka codec `codec` (1 gzip, 2 snappy, 3 lz4, 4 zstd).
Status DecompressRecords(int codec, std::string_view in, size_t limit, std::string* out);
Status CompressRecords(int codec, std::string_view in, std::string* out);

}  // namespace govern::streams
