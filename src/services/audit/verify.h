// Verifier: checks an exported audit chain offline (or one read straight from PostgreSQL) against
// signed checkpoints, and names the first bad entry.
//
// The export format (NDJSON, one JSON object per line; docs/audit.md "Export"):
//   {"format":"govern-audit-export/1","org":..,"first_seq":F,"prev_hash":hex,"compact_range":hex,
//    "checkpoint_key":"govern-audit+..."}            what verification of entries F.. starts from
//   {"org":..,"seq":F,...,"prev_hash":..,"entry_hash":..}   entries in seq order (entry.h EntryJson)
//   {"checkpoint":"<signed note>"}                  after the entry whose seq is the checkpoint's size
// What is checked: every entry's seq follows the previous one, its prev_hash is the previous entry's
// entry_hash, its entry_hash is the hash of its fields; at every checkpoint (from the export or given
// separately, e.g. the files of audit.checkpoint_dir) the signature under the verifier key, the chain
// head and the Merkle root of the entries so far. A checkpoint larger than the last entry means the
// tail is missing. An attacker who rewrites entries and recomputes every hash after them is caught by
// the first checkpoint signed before the rewrite; the error then names the range of entries between
// the last checkpoint that matched and that one (exactly one entry when checkpoints are that dense).
//
// Not thread-safe: one Verifier reads one export.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "services/audit/chain.h"

namespace govern::audit_service {

struct VerifyReport {
  std::string org;
  int64_t first_seq = 1;
  int64_t last_seq = 0;  // first_seq - 1 when empty
  int64_t entries = 0;
  int64_t checkpoints_verified = 0;
  int64_t checkpoints_skipped = 0;  // older than the first entry kept (retention)
};

class Verifier {
 public:
  // `verifier_key`: the signed-note key ("govern-audit+<hash>+<base64>"); empty: checkpoints are not
  // checked (chain and Merkle only), and any checkpoint seen is an error.
  explicit Verifier(std::string verifier_key);

  // Feeds one line of an export. DataLoss naming the entry (or checkpoint) at the first problem;
  // after an error every later call returns it again.
  Status AddLine(std::string_view line);
  // A checkpoint from outside the export (checked when the chain reaches its size, or by Finish).
  Status AddCheckpoint(std::string_view note);
  // After the last line: checkpoints beyond the end are a truncated tail.
  Result<VerifyReport> Finish();

 private:
  Status Fail(std::string message);
  Status CheckCheckpointsAt(uint64_t size);

  std::string key_;
  bool have_header_ = false;
  Status error_;
  VerifyReport report_;
  Hash head_;
  CompactRange range_;
  int64_t last_good_checkpoint_ = 0;
  std::map<uint64_t, std::vector<Checkpoint>> pending_;
};

}  // namespace govern::audit_service
