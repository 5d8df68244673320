// The audit tables read and maintained: entries, searches, proofs, checkpoints, export, retention.
#include "services/audit/store.h"

#include <algorithm>
#include <map>

#include "db/connection.h"

namespace govern::audit_service {
namespace {

std::string MicrosParam(int n) {
  return "('epoch'::timestamptz + $" + std::to_string(n) + "::bigint * interval '1 microsecond')";
}

std::string Join(const std::vector<std::string>& v) {
  std::string out = "{";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + v[i];
  return out + "}";
}

Result<audit::Hash> HashColumn(const db::Rows& rows, int row, int col) {
  GOVERN_ASSIGN_OR_RETURN(std::string b, rows.Bytes(row, col));
  return HashFromBytes(b);
}

// Reads the stored nodes `ids` of `org`: leaves from audit_entries, subtrees from audit_tree_nodes.
Result<std::vector<audit::Hash>> FetchNodes(db::Connection& conn, std::string_view org,
                                            std::span<const audit::NodeId> ids) {
  std::vector<std::string> seqs, levels, idxs;
  for (const audit::NodeId& id : ids) {
    if (id.level == 0) {
      seqs.push_back(std::to_string(id.start + 1));
    } else {
      levels.push_back(std::to_string(id.level));
      idxs.push_back(std::to_string(id.start >> id.level));
    }
  }
  std::map<audit::NodeId, audit::Hash> found;
  if (!seqs.empty()) {
    GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                            conn.ExecPrepared("SELECT seq, leaf_hash FROM audit_entries WHERE org = $1 AND "
                                              "seq = ANY($2::bigint[])",
                                              db::Params(org, Join(seqs))));
    for (int i = 0; i < rows.size(); ++i) {
      GOVERN_ASSIGN_OR_RETURN(int64_t seq, rows.Int64(i, 0));
      GOVERN_ASSIGN_OR_RETURN(found[(audit::NodeId{static_cast<uint64_t>(seq - 1), 0})],
                              HashColumn(rows, i, 1));
    }
  }
  if (!levels.empty()) {
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows rows,
        conn.ExecPrepared(
            "SELECT n.level, n.idx, n.hash FROM audit_tree_nodes n JOIN unnest($2::smallint[], "
            "$3::bigint[]) AS k(level, idx) ON n.org = $1 AND n.level = k.level AND n.idx = k.idx",
            db::Params(org, Join(levels), Join(idxs))));
    for (int i = 0; i < rows.size(); ++i) {
      GOVERN_ASSIGN_OR_RETURN(int64_t level, rows.Int64(i, 0));
      GOVERN_ASSIGN_OR_RETURN(int64_t idx, rows.Int64(i, 1));
      auto id = audit::NodeId{static_cast<uint64_t>(idx) << level, static_cast<uint32_t>(level)};
      GOVERN_ASSIGN_OR_RETURN(found[id], HashColumn(rows, i, 2));
    }
  }
  std::vector<audit::Hash> out;
  out.reserve(ids.size());
  for (const audit::NodeId& id : ids) {
    auto it = found.find(id);
    if (it == found.end()) {
      return NotFound(id.level == 0 ? "entry " + std::to_string(id.start + 1) + " is not stored (retention?)"
                                    : "a stored subtree is missing (level " + std::to_string(id.level) + ")");
    }
    out.push_back(it->second);
  }
  return out;
}

audit::StoredNodeSource NodesOf(db::Connection& conn, std::string_view org) {
  return audit::StoredNodeSource(audit::kDefaultStride, [&conn, org](std::span<const audit::NodeId> ids) {
    return FetchNodes(conn, org, ids);
  });
}

Status Prefetch(db::Connection& conn, std::string_view org, audit::StoredNodeSource& src,
                const std::vector<audit::NodeId>& ids) {
  if (ids.empty()) return OkStatus();
  GOVERN_ASSIGN_OR_RETURN(std::vector<audit::Hash> hashes, FetchNodes(conn, org, ids));
  for (size_t i = 0; i < ids.size(); ++i) src.Add(ids[i], hashes[i]);
  return OkStatus();
}

Result<audit::Hash> RootAt(db::Connection& conn, std::string_view org, const ChainHead& head, uint64_t size) {
  if (size == head.size) return head.range.Root();
  audit::StoredNodeSource src = NodesOf(conn, org);
  return src.Subtree(0, size);
}

Result<StoredCheckpoint> CheckpointRow(const db::Rows& rows, int i, std::string_view org) {
  StoredCheckpoint c;
  c.checkpoint.origin = audit::CheckpointOrigin(org);
  GOVERN_ASSIGN_OR_RETURN(int64_t size, rows.Int64(i, 0));
  c.checkpoint.size = static_cast<uint64_t>(size);
  GOVERN_ASSIGN_OR_RETURN(c.checkpoint.root, HashColumn(rows, i, 1));
  GOVERN_ASSIGN_OR_RETURN(c.checkpoint.chain_head, HashColumn(rows, i, 2));
  GOVERN_ASSIGN_OR_RETURN(c.checkpoint.time_us, rows.Int64(i, 3));
  c.note = rows.Text(i, 4);
  return c;
}

constexpr std::string_view kCheckpointColumns =
    "size, root, chain_head, (extract(epoch from time) * 1000000)::bigint, note";

}  // namespace

Result<StoredEntry> EntryFromRow(const db::Rows& r, int i) {
  StoredEntry e;
  e.entry.org = r.Text(i, 0);
  GOVERN_ASSIGN_OR_RETURN(int64_t seq, r.Int64(i, 1));
  e.entry.seq = static_cast<uint64_t>(seq);
  e.entry.idempotency_key = r.Text(i, 2);
  GOVERN_ASSIGN_OR_RETURN(e.entry.time_us, r.Int64(i, 3));
  e.entry.actor = r.Text(i, 4);
  e.entry.action = r.Text(i, 5);
  e.entry.target = r.Text(i, 6);
  e.entry.outcome = r.Text(i, 7);
  e.entry.details = r.Text(i, 8);
  GOVERN_ASSIGN_OR_RETURN(e.entry.prev_hash, HashColumn(r, i, 9));
  GOVERN_ASSIGN_OR_RETURN(e.entry.entry_hash, HashColumn(r, i, 10));
  GOVERN_ASSIGN_OR_RETURN(e.leaf_hash, HashColumn(r, i, 11));
  return e;
}

Result<ChainHead> GetHead(db::Connection& conn, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                          conn.ExecPrepared("SELECT next_seq, head_hash, compact_range, first_seq, "
                                            "first_prev FROM audit_heads WHERE org = $1",
                                            db::Params(org)));
  if (rows.empty()) return NotFound("organisation '" + std::string(org) + "' has no audit entries");
  ChainHead h;
  GOVERN_ASSIGN_OR_RETURN(int64_t next, rows.Int64(0, 0));
  h.size = static_cast<uint64_t>(next - 1);
  GOVERN_ASSIGN_OR_RETURN(h.head_hash, HashColumn(rows, 0, 1));
  GOVERN_ASSIGN_OR_RETURN(std::string cr, rows.Bytes(0, 2));
  GOVERN_ASSIGN_OR_RETURN(h.range, audit::CompactRange::Decode(cr));
  GOVERN_ASSIGN_OR_RETURN(int64_t first, rows.Int64(0, 3));
  h.first_seq = static_cast<uint64_t>(first);
  GOVERN_ASSIGN_OR_RETURN(h.first_prev, HashColumn(rows, 0, 4));
  if (h.range.size() != h.size)
    return DataLoss("the chain head of '" + std::string(org) + "' is inconsistent");
  return h;
}

Result<StoredEntry> GetEntry(db::Connection& conn, std::string_view org, int64_t seq) {
  // Planned for each read (not a prepared statement): a connection's first reads often come while the
  // table is small (a new deployment, the benchmark's start), and the generic plan PostgreSQL made
  // then and kept took the time index (org, time, seq), bounded by org alone: every later read scanned
  // the organisation's whole chain. Planning this lookup costs a few tens of microseconds.
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      conn.Exec("SELECT " + std::string(kEntryColumns) + " FROM audit_entries WHERE org = $1 AND seq = $2",
                db::Params(org, seq)));
  if (rows.empty()) {
    return NotFound("organisation '" + std::string(org) + "' has no entry " + std::to_string(seq));
  }
  return EntryFromRow(rows, 0);
}

std::string SearchSql(const SearchQuery& q) {
  std::string sql = "SELECT " + std::string(kEntryColumns) + " FROM audit_entries WHERE org = $1";
  int n = 2;
  if (!q.actor.empty()) sql += " AND actor = $" + std::to_string(n++);
  if (!q.action.empty()) sql += " AND action = $" + std::to_string(n++);
  if (q.since_micros) sql += " AND time >= " + MicrosParam(n++);
  if (q.until_micros) sql += " AND time < " + MicrosParam(n++);
  if (q.before_seq) sql += " AND seq < $" + std::to_string(n++);
  sql += " ORDER BY seq DESC LIMIT $" + std::to_string(n++);
  return sql;
}

Result<SearchPage> Search(db::Connection& conn, std::string_view org, const SearchQuery& q) {
  if (q.limit < 1 || q.limit > 1000) return InvalidArgument("limit must be 1-1000");
  db::Params p(org);
  if (!q.actor.empty()) p.Add(q.actor);
  if (!q.action.empty()) p.Add(q.action);
  if (q.since_micros) p.Add(*q.since_micros);
  if (q.until_micros) p.Add(*q.until_micros);
  if (q.before_seq) p.Add(*q.before_seq);
  p.Add(static_cast<int64_t>(q.limit) + 1);
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, conn.ExecPrepared(SearchSql(q), p));
  SearchPage page;
  int n = std::min(rows.size(), q.limit);
  for (int i = 0; i < n; ++i) {
    GOVERN_ASSIGN_OR_RETURN(StoredEntry e, EntryFromRow(rows, i));
    page.entries.push_back(std::move(e));
  }
  if (rows.size() > q.limit) page.next_before_seq = static_cast<int64_t>(page.entries.back().entry.seq);
  return page;
}

Result<InclusionProofResult> InclusionProofFor(db::Connection& conn, std::string_view org, uint64_t seq,
                                               uint64_t size) {
  GOVERN_ASSIGN_OR_RETURN(ChainHead head, GetHead(conn, org));
  if (size < 1 || size > head.size) {
    return InvalidArgument("size must be 1-" + std::to_string(head.size) + " (the chain's length)");
  }
  if (seq < 1 || seq > size) return InvalidArgument("seq must be 1-" + std::to_string(size));
  GOVERN_ASSIGN_OR_RETURN(StoredEntry e, GetEntry(conn, org, static_cast<int64_t>(seq)));
  audit::StoredNodeSource src = NodesOf(conn, org);
  GOVERN_ASSIGN_OR_RETURN(std::vector<audit::NodeId> ids,
                          audit::InclusionProofNodes(seq - 1, size, audit::kDefaultStride));
  GOVERN_RETURN_IF_ERROR(Prefetch(conn, org, src, ids));
  InclusionProofResult out;
  GOVERN_ASSIGN_OR_RETURN(out.proof, audit::InclusionProof(src, seq - 1, size));
  out.leaf = e.leaf_hash;
  GOVERN_ASSIGN_OR_RETURN(out.root, RootAt(conn, org, head, size));
  return out;
}

Result<ConsistencyProofResult> ConsistencyProofFor(db::Connection& conn, std::string_view org,
                                                   uint64_t old_size, uint64_t new_size) {
  GOVERN_ASSIGN_OR_RETURN(ChainHead head, GetHead(conn, org));
  if (new_size < 1 || new_size > head.size) {
    return InvalidArgument("new must be 1-" + std::to_string(head.size) + " (the chain's length)");
  }
  if (old_size < 1 || old_size > new_size) return InvalidArgument("old must be 1-new");
  audit::StoredNodeSource src = NodesOf(conn, org);
  GOVERN_ASSIGN_OR_RETURN(std::vector<audit::NodeId> ids,
                          audit::ConsistencyProofNodes(old_size, new_size, audit::kDefaultStride));
  GOVERN_RETURN_IF_ERROR(Prefetch(conn, org, src, ids));
  ConsistencyProofResult out;
  GOVERN_ASSIGN_OR_RETURN(out.proof, audit::ConsistencyProof(src, old_size, new_size));
  GOVERN_ASSIGN_OR_RETURN(out.old_root, RootAt(conn, org, head, old_size));
  GOVERN_ASSIGN_OR_RETURN(out.new_root, RootAt(conn, org, head, new_size));
  return out;
}

Result<StoredCheckpoint> MakeCheckpoint(db::Connection& conn, std::string_view org,
                                        const CheckpointSigner& signer, int64_t now_micros) {
  GOVERN_ASSIGN_OR_RETURN(ChainHead head, GetHead(conn, org));
  StoredCheckpoint c;
  c.checkpoint = audit::Checkpoint{.origin = audit::CheckpointOrigin(org),
                                   .size = head.size,
                                   .root = head.range.Root(),
                                   .chain_head = head.head_hash,
                                   .time_us = now_micros};
  GOVERN_ASSIGN_OR_RETURN(c.note, signer.Sign(c.checkpoint));
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows ins,
      conn.ExecPrepared(
          "INSERT INTO audit_checkpoints (org, size, root, chain_head, time, note) VALUES ($1, $2, $3, "
          "$4, " +
              MicrosParam(5) + ", $6) ON CONFLICT (org, size) DO NOTHING",
          db::Params(org, static_cast<int64_t>(head.size), db::Bytea{HashBytes(c.checkpoint.root)},
                     db::Bytea{HashBytes(c.checkpoint.chain_head)}, now_micros, c.note)));
  if (ins.affected() == 1) {
    c.created = true;
    return c;
  }
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                          conn.ExecPrepared("SELECT " + std::string(kCheckpointColumns) +
                                                " FROM audit_checkpoints WHERE org = $1 AND size = $2",
                                            db::Params(org, static_cast<int64_t>(head.size))));
  if (rows.empty()) return Internal("a checkpoint vanished");
  return CheckpointRow(rows, 0, org);
}

Result<StoredCheckpoint> LatestCheckpoint(db::Connection& conn, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                          conn.ExecPrepared("SELECT " + std::string(kCheckpointColumns) +
                                                " FROM audit_checkpoints WHERE org = $1 ORDER BY "
                                                "size DESC LIMIT 1",
                                            db::Params(org)));
  if (rows.empty()) return NotFound("organisation '" + std::string(org) + "' has no checkpoint yet");
  return CheckpointRow(rows, 0, org);
}

Result<std::vector<std::string>> OrgsNeedingCheckpoint(db::Connection& conn, int limit) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      conn.ExecPrepared(
          "SELECT h.org FROM audit_heads h WHERE h.next_seq > 1 AND h.next_seq - 1 > COALESCE((SELECT "
          "max(size) FROM audit_checkpoints c WHERE c.org = h.org), 0) ORDER BY h.org LIMIT $1",
          db::Params(limit)));
  std::vector<std::string> out;
  for (int i = 0; i < rows.size(); ++i) out.emplace_back(rows.Text(i, 0));
  return out;
}

namespace {

// The export, read in one snapshot: header, then entries interleaved with the checkpoints of their size.
Status ExportIn(db::Connection& tx, std::string_view org,
                const std::function<Status(const audit::ExportHeader&)>& header_out,
                const std::function<Status(std::string_view note)>& checkpoint_out,
                const std::function<Status(const StoredEntry&)>& entry_out, bool checkpoints_first,
                int page_size = 5000, int* pages = nullptr) {
  // Only where the kept entries start: the export must not trust (or need) the rest of the head, which
  // verification checks rather than assumes.
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows hr,
      tx.ExecPrepared("SELECT first_seq, first_prev FROM audit_heads WHERE org = $1", db::Params(org)));
  if (hr.empty()) return NotFound("organisation '" + std::string(org) + "' has no audit entries");
  struct {
    uint64_t first_seq;
    audit::Hash first_prev;
  } head;
  GOVERN_ASSIGN_OR_RETURN(int64_t first_seq, hr.Int64(0, 0));
  head.first_seq = static_cast<uint64_t>(first_seq);
  GOVERN_ASSIGN_OR_RETURN(head.first_prev, HashColumn(hr, 0, 1));
  audit::ExportHeader header;
  header.org = std::string(org);
  header.first_seq = head.first_seq;
  header.prev_hash = head.first_prev;
  if (head.first_seq > 1) {
    // The compact range at the cut, from the stored subtrees (whole runs of 16 were removed).
    uint64_t n = head.first_seq - 1;
    audit::StoredNodeSource src = NodesOf(tx, org);
    std::vector<audit::Hash> hashes;
    uint64_t start = 0;
    for (int level = 63; level >= 0; --level) {
      uint64_t width = uint64_t{1} << level;
      if (!(n & width)) continue;
      GOVERN_ASSIGN_OR_RETURN(audit::Hash h, src.Subtree(start, width));
      hashes.push_back(h);
      start += width;
    }
    GOVERN_ASSIGN_OR_RETURN(header.frontier, audit::CompactRange::FromHashes(n, std::move(hashes)));
  }
  GOVERN_RETURN_IF_ERROR(header_out(header));
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows cps,
      tx.Exec("SELECT size, note FROM audit_checkpoints WHERE org = $1 ORDER BY size", db::Params(org)));
  int next_cp = 0;
  auto emit_checkpoints_upto = [&](int64_t size) -> Status {
    while (next_cp < cps.size()) {
      GOVERN_ASSIGN_OR_RETURN(int64_t s, cps.Int64(next_cp, 0));
      if (s > size) break;
      GOVERN_RETURN_IF_ERROR(checkpoint_out(cps.Text(next_cp, 1)));
      ++next_cp;
    }
    return OkStatus();
  };
  if (checkpoints_first) GOVERN_RETURN_IF_ERROR(emit_checkpoints_upto(INT64_MAX));
  int64_t after = static_cast<int64_t>(head.first_seq) - 1;
  const int page = std::max(1, page_size);
  for (;;) {
    GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                            tx.ExecPrepared("SELECT " + std::string(kEntryColumns) +
                                                " FROM audit_entries WHERE org = $1 AND seq > $2 "
                                                "ORDER BY seq LIMIT $3",
                                            db::Params(org, after, page)));
    if (pages != nullptr) ++*pages;
    for (int i = 0; i < rows.size(); ++i) {
      GOVERN_ASSIGN_OR_RETURN(StoredEntry e, EntryFromRow(rows, i));
      after = static_cast<int64_t>(e.entry.seq);
      GOVERN_RETURN_IF_ERROR(entry_out(e));
      if (!checkpoints_first) GOVERN_RETURN_IF_ERROR(emit_checkpoints_upto(after));
    }
    if (rows.size() < page) break;
  }
  return emit_checkpoints_upto(INT64_MAX);
}

Status Snapshot(db::Connection& conn, const std::function<Status(db::Connection&)>& body) {
  db::TxOptions tx;
  tx.isolation = db::Isolation::kRepeatableRead;
  tx.read_only = true;
  tx.max_attempts = 1;
  return conn.Transact(body, tx);
}

}  // namespace

Status Export(db::Connection& conn, std::string_view org,
              const std::function<Status(std::string_view line)>& out, int page_size, int* pages) {
  return Snapshot(conn, [&](db::Connection& tx) {
    if (pages != nullptr) *pages = 0;  // a retried snapshot counts afresh
    return ExportIn(
        tx, org, [&](const audit::ExportHeader& h) { return out(audit::FormatHeaderLine(h)); },
        [&](std::string_view note) { return out(audit::FormatCheckpointLine(note)); },
        [&](const StoredEntry& e) { return out(audit::FormatEntryLine(e.entry)); },
        /*checkpoints_first=*/false, page_size, pages);
  });
}

Result<audit::Report> VerifyFromDatabase(db::Connection& conn, std::string_view org,
                                         const std::vector<audit::VerifierKey>& keys,
                                         const std::vector<std::string>& extra_checkpoints) {
  std::optional<audit::Verifier> v;
  Status s = Snapshot(conn, [&](db::Connection& tx) {
    return ExportIn(
        tx, org,
        [&](const audit::ExportHeader& h) -> Status {
          GOVERN_ASSIGN_OR_RETURN(audit::Verifier made, audit::Verifier::Create(h, keys));
          v.emplace(std::move(made));
          if (!keys.empty()) {
            for (const std::string& note : extra_checkpoints) (void)v->AddCheckpoint(note);
          }
          return OkStatus();
        },
        [&](std::string_view note) -> Status {
          if (!keys.empty()) (void)v->AddCheckpoint(note);
          return OkStatus();
        },
        [&](const StoredEntry& e) -> Status {
          (void)v->Add(e.entry);  // the first failure is kept in the Report
          return OkStatus();
        },
        /*checkpoints_first=*/true);
  });
  if (!s.ok()) return s;
  return v->Finish();
}

Result<int64_t> ApplyRetention(db::Connection& conn, std::string_view org, int64_t cutoff_micros) {
  int64_t removed = 0;
  auto body = [&](db::Connection& tx) -> Status {
    removed = 0;
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows lock,
        tx.ExecPrepared("SELECT first_seq FROM audit_heads WHERE org = $1 FOR UPDATE", db::Params(org)));
    if (lock.empty()) return NotFound("organisation '" + std::string(org) + "' has no audit entries");
    GOVERN_ASSIGN_OR_RETURN(int64_t first_seq, lock.Int64(0, 0));
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows bound,
        tx.ExecPrepared("SELECT COALESCE((SELECT max(size) FROM audit_checkpoints WHERE org = $1), 0), "
                        "COALESCE((SELECT max(seq) FROM audit_entries WHERE org = $1 AND time < " +
                            MicrosParam(2) + "), 0)",
                        db::Params(org, cutoff_micros)));
    GOVERN_ASSIGN_OR_RETURN(int64_t checkpointed, bound.Int64(0, 0));
    GOVERN_ASSIGN_OR_RETURN(int64_t old, bound.Int64(0, 1));
    int64_t cut = std::min(checkpointed, old);
    cut -= cut % 16;  // the stored level-4 subtrees cover whole runs of 16
    if (cut < first_seq) return OkStatus();
    GOVERN_ASSIGN_OR_RETURN(StoredEntry last, GetEntry(tx, org, cut));
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows del,
        tx.ExecPrepared("DELETE FROM audit_entries WHERE org = $1 AND seq <= $2", db::Params(org, cut)));
    removed = del.affected();
    return tx
        .ExecPrepared("UPDATE audit_heads SET first_seq = $2, first_prev = $3 WHERE org = $1",
                      db::Params(org, cut + 1, db::Bytea{HashBytes(last.entry.entry_hash)}))
        .status();
  };
  GOVERN_RETURN_IF_ERROR(conn.Transact(body));
  return removed;
}

Status SetRetention(db::Connection& conn, std::string_view org, std::optional<int64_t> keep_secs) {
  return conn
      .Exec(
          "INSERT INTO audit_retention (org, keep_secs) VALUES ($1, $2) ON CONFLICT (org) DO UPDATE SET "
          "keep_secs = EXCLUDED.keep_secs, updated_at = now()",
          db::Params(org, keep_secs))
      .status();
}

Status ClearRetention(db::Connection& conn, std::string_view org) {
  return conn.Exec("DELETE FROM audit_retention WHERE org = $1", db::Params(org)).status();
}

Result<std::optional<std::optional<int64_t>>> GetRetention(db::Connection& conn, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                          conn.Exec("SELECT keep_secs FROM audit_retention WHERE org = $1", db::Params(org)));
  using Out = std::optional<std::optional<int64_t>>;
  if (rows.empty()) return Out();
  if (rows.IsNull(0, 0)) return Out(std::optional<int64_t>());
  GOVERN_ASSIGN_OR_RETURN(int64_t v, rows.Int64(0, 0));
  return Out(std::optional<int64_t>(v));
}

}  // namespace govern::audit_service
