// The audit tables read and maintained: entries by seq, searches, proofs, checkpoints, export and
// retention. Free functions on a Connection (one thread at a time, like the Connection).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "services/audit/chain.h"
#include "services/audit/entry.h"
#include "services/audit/verify.h"

namespace govern::db {
class Connection;
}  // namespace govern::db

namespace govern::audit_service {

// One organisation's chain head.
struct ChainHead {
  int64_t size = 0;  // next_seq - 1: entries ever appended
  Hash head_hash;    // entry_hash of seq == size
  std::string compact_range;
  int64_t first_seq = 1;  // oldest entry kept (retention)
  Hash first_prev;        // prev_hash of first_seq
};
// NotFound for an organisation that never appended.
Result<ChainHead> GetHead(db::Connection& conn, std::string_view org);

// NotFound for an unknown organisation or seq (or one removed by retention).
Result<StoredEntry> GetEntry(db::Connection& conn, std::string_view org, int64_t seq);

struct SearchQuery {
  std::string actor;                    // empty: any
  std::string action;                   // empty: any
  std::optional<int64_t> since_micros;  // time >= since
  std::optional<int64_t> until_micros;  // time < until
  int limit = 100;                      // 1..1000
  std::optional<int64_t> before_seq;    // the page cursor: only entries with seq < before_seq
};
struct SearchPage {
  std::vector<StoredEntry> entries;        // newest (highest seq) first
  std::optional<int64_t> next_before_seq;  // set when there may be more
};
Result<SearchPage> Search(db::Connection& conn, std::string_view org, const SearchQuery& q);
// The SQL and parameters Search runs (for EXPLAIN in tests and benchmarks).
std::string SearchSql(const SearchQuery& q);

// Proofs over the tree of the first `size` entries. InvalidArgument for sizes beyond the head.
Result<std::vector<Hash>> InclusionProofFor(db::Connection& conn, std::string_view org, int64_t seq,
                                            int64_t size, Hash* leaf, Hash* root);
Result<std::vector<Hash>> ConsistencyProofFor(db::Connection& conn, std::string_view org, int64_t old_size,
                                              int64_t new_size, Hash* old_root, Hash* new_root);

// Signs the organisation's current head and stores the checkpoint (an existing one of the same size is
// returned as it is). NotFound for an organisation that never appended.
struct StoredCheckpoint {
  Checkpoint checkpoint;
  std::string note;
  bool created = false;
};
Result<StoredCheckpoint> MakeCheckpoint(db::Connection& conn, std::string_view org,
                                        const CheckpointSigner& signer, int64_t now_unix);
// The newest stored checkpoint; NotFound when there is none.
Result<StoredCheckpoint> LatestCheckpoint(db::Connection& conn, std::string_view org);
// Organisations whose head moved past their newest checkpoint.
Result<std::vector<std::string>> OrgsNeedingCheckpoint(db::Connection& conn, int limit);

// Writes the export of `org` (verify.h format) line by line (each without its newline), in pages so
// memory stays bounded. Reads in one REPEATABLE READ snapshot.
Status Export(db::Connection& conn, std::string_view org, const std::string& verifier_key,
              const std::function<Status(std::string_view line)>& out);
// Exports into a Verifier: the number of entries verified, or DataLoss naming the first bad entry.
// `verifier_key` empty: chain and Merkle tree only. `extra_checkpoints`: notes from outside.
Result<VerifyReport> VerifyFromDatabase(db::Connection& conn, std::string_view org,
                                        const std::string& verifier_key,
                                        const std::vector<std::string>& extra_checkpoints = {});
// The tests' shorthand: entries verified (chain only).
Result<int64_t> VerifyFromDatabase(db::Connection& conn, std::string_view org, std::nullptr_t);

// Retention: removes the entries of `org` older than `cutoff_micros`, only up to the newest signed
// checkpoint and only whole runs of 16 (so the stored subtrees still cover what is removed); keeps the
// prev_hash at the cut on the head so what remains still verifies. Returns the entries removed.
Result<int64_t> ApplyRetention(db::Connection& conn, std::string_view org, int64_t cutoff_micros);
// Per-organisation retention override in seconds (nullopt: the configured default).
Status SetRetention(db::Connection& conn, std::string_view org, std::optional<int64_t> keep_secs);
Result<std::optional<int64_t>> GetRetention(db::Connection& conn, std::string_view org);

}  // namespace govern::audit_service
