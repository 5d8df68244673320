// The audit tables read and maintained: entries by seq, searches, proofs, checkpoints, export,
// verification straight from the tables, and retention. Free functions on a Connection (one thread at
// a time, like the Connection).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/checkpoint.h"
#include "audit/export.h"
#include "audit/merkle.h"
#include "base/status.h"
#include "services/audit/entry.h"
#include "services/audit/files.h"

namespace govern::db {
class Connection;
class Rows;
}  // namespace govern::db

namespace govern::audit_service {

// The columns every entry read selects, and the row they make.
inline constexpr std::string_view kEntryColumns =
    "org, seq, idem_key, (extract(epoch from time) * 1000000)::bigint, actor, action, target, outcome, "
    "details, "
    "prev_hash, entry_hash, leaf_hash";
Result<StoredEntry> EntryFromRow(const db::Rows& rows, int row);

// One organisation's chain head.
struct ChainHead {
  uint64_t size = 0;  // entries ever appended (next_seq - 1)
  audit::Hash head_hash{};
  audit::CompactRange range;
  uint64_t first_seq = 1;    // oldest entry kept (retention)
  audit::Hash first_prev{};  // prev_hash of first_seq
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
// The SQL Search runs (for EXPLAIN in tests and benchmarks): $1 org, then actor, action, since, until,
// before_seq as present, then the limit.
std::string SearchSql(const SearchQuery& q);

// Proofs over the tree of the first `size` entries, read from the stored leaves and subtrees.
// InvalidArgument for sizes beyond the head or a seq beyond the size.
struct InclusionProofResult {
  audit::Hash leaf{};
  audit::Hash root{};
  std::vector<audit::Hash> proof;
};
Result<InclusionProofResult> InclusionProofFor(db::Connection& conn, std::string_view org, uint64_t seq,
                                               uint64_t size);
struct ConsistencyProofResult {
  audit::Hash old_root{};
  audit::Hash new_root{};
  std::vector<audit::Hash> proof;
};
Result<ConsistencyProofResult> ConsistencyProofFor(db::Connection& conn, std::string_view org,
                                                   uint64_t old_size, uint64_t new_size);

// Signs the organisation's current head and stores the checkpoint (an existing one of the same size is
// returned as it is). NotFound for an organisation that never appended.
struct StoredCheckpoint {
  audit::Checkpoint checkpoint;
  std::string note;
  bool created = false;
};
Result<StoredCheckpoint> MakeCheckpoint(db::Connection& conn, std::string_view org,
                                        const CheckpointSigner& signer, int64_t now_micros);
// The newest stored checkpoint; NotFound when there is none.
Result<StoredCheckpoint> LatestCheckpoint(db::Connection& conn, std::string_view org);
// Organisations whose head moved past their newest checkpoint.
Result<std::vector<std::string>> OrgsNeedingCheckpoint(db::Connection& conn, int limit);

// Writes the export of `org` (audit/export.h format) line by line (each without its newline), in
// pages of `page_size` entries so memory stays bounded, from one REPEATABLE READ snapshot. An error
// from `out` stops it and is returned. `pages`, when given, receives how many entry pages were read.
Status Export(db::Connection& conn, std::string_view org,
              const std::function<Status(std::string_view line)>& out, int page_size = 5000,
              int* pages = nullptr);

// Verifies the chain of `org` straight from the tables with the core Verifier: against the checkpoints
// stored in PostgreSQL and `extra_checkpoints` (notes kept outside it), when `keys` is not empty;
// chain and Merkle tree only otherwise. A failed Report names the first bad entry; an error Status
// only when the tables could not be read.
Result<audit::Report> VerifyFromDatabase(db::Connection& conn, std::string_view org,
                                         const std::vector<audit::VerifierKey>& keys,
                                         const std::vector<std::string>& extra_checkpoints = {});

// Retention: removes the entries of `org` older than `cutoff_micros`, only up to the newest signed
// checkpoint and only whole runs of 16 (so the stored subtrees still cover what is removed); keeps the
// prev_hash at the cut on the head so what remains still verifies. Returns the entries removed.
Result<int64_t> ApplyRetention(db::Connection& conn, std::string_view org, int64_t cutoff_micros);
// Per-organisation retention override in seconds (nullopt: forever); ClearRetention: back to the
// configured default.
Status SetRetention(db::Connection& conn, std::string_view org, std::optional<int64_t> keep_secs);
Status ClearRetention(db::Connection& conn, std::string_view org);
// nullopt: no override; an inner nullopt: forever.
Result<std::optional<std::optional<int64_t>>> GetRetention(db::Connection& conn, std::string_view org);

}  // namespace govern::audit_service
