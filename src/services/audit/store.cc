// The audit tables read and maintained: entries, searches, proofs, checkpoints, export, retention.
#include "services/audit/store.h"

#include <map>
#include <nlohmann/json.hpp>

#include "crypto/bytes.h"
#include "crypto/encoding.h"
#include "db/connection.h"

namespace govern::audit_service {
namespace {

using json = nlohmann::json;

constexpr std::string_view kEntryColumns =
    "org, seq, idem_key, (extract(epoch from time) * 1000000)::bigint, actor, action, target, outcome, "
    "details, "
    "prev_hash, entry_hash, leaf_hash";

constexpr std::string_view kMicrosToTime = "('epoch'::timestamptz + {} * interval '1 microsecond')";

std::string MicrosParam(int n) {
  std::string p = "$" + std::to_string(n) + "::bigint";
  std::string s(kMicrosToTime);
  return s.replace(s.find("{}"), 2, p);
}

Result<StoredEntry> RowEntry(const db::Rows& r, int i) {
  StoredEntry e;
  e.fields.org = r.Text(i, 0);
  GOVERN_ASSIGN_OR_RETURN(e.fields.seq, r.Int64(i, 1));
  e.fields.idempotency_key = r.Text(i, 2);
  GOVERN_ASSIGN_OR_RETURN(e.fields.time_micros, r.Int64(i, 3));
  e.fields.actor = r.Text(i, 4);
  e.fields.action = r.Text(i, 5);
  e.fields.target = r.Text(i, 6);
  e.fields.outcome = r.Text(i, 7);
  e.fields.details = r.Text(i, 8);
  GOVERN_ASSIGN_OR_RETURN(e.prev_hash, r.Bytes(i, 9));
  GOVERN_ASSIGN_OR_RETURN(e.entry_hash, r.Bytes(i, 10));
  GOVERN_ASSIGN_OR_RETURN(e.leaf_hash, r.Bytes(i, 11));
  return e;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out = "{";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + v[i];
  return out + "}";
}

// Fetches the stored nodes `refs` of `org` into a NodeSource.
Result<NodeSource> FetchNodes(db::Connection& conn, std::string_view org, const std::vector<NodeRef>& refs) {
  auto nodes = std::make_shared<std::map<std::pair<int, uint64_t>, Hash>>();
  std::vector<std::string> seqs, levels, idxs;
  for (const NodeRef& r : refs) {
    if (r.level == 0) {
      seqs.push_back(std::to_string(r.index + 1));
    } else {
      levels.push_back(std::to_string(r.level));
      idxs.push_back(std::to_string(r.index));
    }
  }
  if (!seqs.empty()) {
    GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                            conn.ExecPrepared("SELECT seq, leaf_hash FROM audit_entries WHERE org = $1 AND "
                                              "seq = ANY($2::bigint[])",
                                              db::Params(org, Join(seqs))));
    for (int i = 0; i < rows.size(); ++i) {
      GOVERN_ASSIGN_OR_RETURN(int64_t seq, rows.Int64(i, 0));
      GOVERN_ASSIGN_OR_RETURN(std::string h, rows.Bytes(i, 1));
      (*nodes)[{0, static_cast<uint64_t>(seq - 1)}] = std::move(h);
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
      GOVERN_ASSIGN_OR_RETURN(std::string h, rows.Bytes(i, 2));
      (*nodes)[{static_cast<int>(level), static_cast<uint64_t>(idx)}] = std::move(h);
    }
  }
  return NodeSource([nodes](int level, uint64_t index) -> std::optional<Hash> {
    auto it = nodes->find({level, index});
    if (it == nodes->end()) return std::nullopt;
    return it->second;
  });
}

Result<Hash> RootAt(db::Connection& conn, std::string_view org, const ChainHead& head, int64_t size) {
  if (size == head.size) {
    GOVERN_ASSIGN_OR_RETURN(CompactRange cr,
                            CompactRange::Decode(static_cast<uint64_t>(size), head.compact_range));
    return cr.Root();
  }
  GOVERN_ASSIGN_OR_RETURN(NodeSource src, FetchNodes(conn, org, RootNodes(static_cast<uint64_t>(size))));
  return TreeRoot(static_cast<uint64_t>(size), src);
}

Result<StoredCheckpoint> CheckpointRow(const db::Rows& rows, int i, std::string_view org) {
  StoredCheckpoint c;
  c.checkpoint.org = std::string(org);
  GOVERN_ASSIGN_OR_RETURN(int64_t size, rows.Int64(i, 0));
  c.checkpoint.size = static_cast<uint64_t>(size);
  GOVERN_ASSIGN_OR_RETURN(c.checkpoint.root, rows.Bytes(i, 1));
  GOVERN_ASSIGN_OR_RETURN(c.checkpoint.chain_head, rows.Bytes(i, 2));
  GOVERN_ASSIGN_OR_RETURN(c.checkpoint.time_unix, rows.Int64(i, 3));
  c.note = rows.Text(i, 4);
  return c;
}

}  // namespace

Result<ChainHead> GetHead(db::Connection& conn, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                          conn.ExecPrepared("SELECT next_seq, head_hash, compact_range, first_seq, "
                                            "first_prev FROM audit_heads WHERE org = $1",
                                            db::Params(org)));
  if (rows.empty()) return NotFound("organisation '" + std::string(org) + "' has no audit entries");
  ChainHead h;
  GOVERN_ASSIGN_OR_RETURN(int64_t next, rows.Int64(0, 0));
  h.size = next - 1;
  GOVERN_ASSIGN_OR_RETURN(h.head_hash, rows.Bytes(0, 1));
  GOVERN_ASSIGN_OR_RETURN(h.compact_range, rows.Bytes(0, 2));
  GOVERN_ASSIGN_OR_RETURN(h.first_seq, rows.Int64(0, 3));
  GOVERN_ASSIGN_OR_RETURN(h.first_prev, rows.Bytes(0, 4));
  return h;
}

Result<StoredEntry> GetEntry(db::Connection& conn, std::string_view org, int64_t seq) {
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                          conn.ExecPrepared("SELECT " + std::string(kEntryColumns) +
                                                " FROM audit_entries WHERE org = $1 AND seq = $2",
                                            db::Params(org, seq)));
  if (rows.empty()) {
    return NotFound("organisation '" + std::string(org) + "' has no entry " + std::to_string(seq));
  }
  return RowEntry(rows, 0);
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
    GOVERN_ASSIGN_OR_RETURN(StoredEntry e, RowEntry(rows, i));
    page.entries.push_back(std::move(e));
  }
  if (rows.size() > q.limit) page.next_before_seq = page.entries.back().fields.seq;
  return page;
}

Result<std::vector<Hash>> InclusionProofFor(db::Connection& conn, std::string_view org, int64_t seq,
                                            int64_t size, Hash* leaf, Hash* root) {
  GOVERN_ASSIGN_OR_RETURN(ChainHead head, GetHead(conn, org));
  if (size < 1 || size > head.size) {
    return InvalidArgument("size must be 1-" + std::to_string(head.size) + " (the chain's length)");
  }
  if (seq < 1 || seq > size) return InvalidArgument("seq must be 1-" + std::to_string(size));
  GOVERN_ASSIGN_OR_RETURN(StoredEntry e, GetEntry(conn, org, seq));
  auto idx = static_cast<uint64_t>(seq - 1);
  GOVERN_ASSIGN_OR_RETURN(NodeSource src,
                          FetchNodes(conn, org, InclusionProofNodes(idx, static_cast<uint64_t>(size))));
  GOVERN_ASSIGN_OR_RETURN(std::vector<Hash> proof, InclusionProof(idx, static_cast<uint64_t>(size), src));
  *leaf = e.leaf_hash;
  GOVERN_ASSIGN_OR_RETURN(*root, RootAt(conn, org, head, size));
  return proof;
}

Result<std::vector<Hash>> ConsistencyProofFor(db::Connection& conn, std::string_view org, int64_t old_size,
                                              int64_t new_size, Hash* old_root, Hash* new_root) {
  GOVERN_ASSIGN_OR_RETURN(ChainHead head, GetHead(conn, org));
  if (new_size < 1 || new_size > head.size) {
    return InvalidArgument("new must be 1-" + std::to_string(head.size) + " (the chain's length)");
  }
  if (old_size < 1 || old_size > new_size) return InvalidArgument("old must be 1-new");
  GOVERN_ASSIGN_OR_RETURN(NodeSource src, FetchNodes(conn, org,
                                                     ConsistencyProofNodes(static_cast<uint64_t>(old_size),
                                                                           static_cast<uint64_t>(new_size))));
  GOVERN_ASSIGN_OR_RETURN(std::vector<Hash> proof, ConsistencyProof(static_cast<uint64_t>(old_size),
                                                                    static_cast<uint64_t>(new_size), src));
  GOVERN_ASSIGN_OR_RETURN(*old_root, RootAt(conn, org, head, old_size));
  GOVERN_ASSIGN_OR_RETURN(*new_root, RootAt(conn, org, head, new_size));
  return proof;
}

Result<StoredCheckpoint> MakeCheckpoint(db::Connection& conn, std::string_view org,
                                        const CheckpointSigner& signer, int64_t now_unix) {
  GOVERN_ASSIGN_OR_RETURN(ChainHead head, GetHead(conn, org));
  GOVERN_ASSIGN_OR_RETURN(CompactRange cr,
                          CompactRange::Decode(static_cast<uint64_t>(head.size), head.compact_range));
  StoredCheckpoint c;
  c.checkpoint = Checkpoint{.org = std::string(org),
                            .size = static_cast<uint64_t>(head.size),
                            .root = cr.Root(),
                            .chain_head = head.head_hash,
                            .time_unix = now_unix};
  GOVERN_ASSIGN_OR_RETURN(c.note, signer.Sign(c.checkpoint));
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows ins,
      conn.ExecPrepared(
          "INSERT INTO audit_checkpoints (org, size, root, chain_head, time, note) VALUES ($1, $2, $3, "
          "$4, to_timestamp($5), $6) ON CONFLICT (org, size) DO NOTHING",
          db::Params(org, head.size, db::Bytea{c.checkpoint.root}, db::Bytea{c.checkpoint.chain_head},
                     now_unix, c.note)));
  if (ins.affected() == 1) {
    c.created = true;
    return c;
  }
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                          conn.ExecPrepared("SELECT size, root, chain_head, extract(epoch from "
                                            "time)::bigint, note FROM audit_checkpoints WHERE org = "
                                            "$1 AND size = $2",
                                            db::Params(org, head.size)));
  if (rows.empty()) return Internal("a checkpoint vanished");
  return CheckpointRow(rows, 0, org);
}

Result<StoredCheckpoint> LatestCheckpoint(db::Connection& conn, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      conn.ExecPrepared("SELECT size, root, chain_head, extract(epoch from time)::bigint, note "
                        "FROM audit_checkpoints WHERE org = $1 ORDER BY size DESC LIMIT 1",
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

Status Export(db::Connection& conn, std::string_view org, const std::string& verifier_key,
              const std::function<Status(std::string_view line)>& out) {
  auto body = [&](db::Connection& tx) -> Status {
    GOVERN_ASSIGN_OR_RETURN(ChainHead head, GetHead(tx, org));
    std::string range;
    if (head.first_seq > 1) {
      auto n = static_cast<uint64_t>(head.first_seq - 1);
      GOVERN_ASSIGN_OR_RETURN(NodeSource src, FetchNodes(tx, org, CompactRangeNodes(n)));
      GOVERN_ASSIGN_OR_RETURN(CompactRange cr, CompactRangeAt(n, src));
      range = cr.Encode();
    }
    json header = {{"format", "govern-audit-export/1"},
                   {"org", std::string(org)},
                   {"first_seq", head.first_seq},
                   {"prev_hash", HexHash(head.first_prev)},
                   {"compact_range", crypto::HexEncode(crypto::AsBytes(range))},
                   {"checkpoint_key", verifier_key}};
    GOVERN_RETURN_IF_ERROR(out(header.dump()));
    GOVERN_ASSIGN_OR_RETURN(db::Rows cps,
                            tx.Exec("SELECT size, note FROM audit_checkpoints WHERE org = $1 AND size "
                                    ">= $2 ORDER BY size",
                                    db::Params(org, head.first_seq - 1)));
    int next_cp = 0;
    auto emit_checkpoints_upto = [&](int64_t size) -> Status {
      while (next_cp < cps.size()) {
        GOVERN_ASSIGN_OR_RETURN(int64_t s, cps.Int64(next_cp, 0));
        if (s > size) break;
        GOVERN_RETURN_IF_ERROR(out(json{{"checkpoint", std::string(cps.Text(next_cp, 1))}}.dump()));
        ++next_cp;
      }
      return OkStatus();
    };
    GOVERN_RETURN_IF_ERROR(emit_checkpoints_upto(head.first_seq - 1));
    int64_t after = head.first_seq - 1;
    constexpr int kPage = 5000;
    for (;;) {
      GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                              tx.ExecPrepared("SELECT " + std::string(kEntryColumns) +
                                                  " FROM audit_entries WHERE org = $1 AND seq > $2 "
                                                  "ORDER BY seq LIMIT $3",
                                              db::Params(org, after, kPage)));
      for (int i = 0; i < rows.size(); ++i) {
        GOVERN_ASSIGN_OR_RETURN(StoredEntry e, RowEntry(rows, i));
        GOVERN_RETURN_IF_ERROR(out(EntryJson(e)));
        GOVERN_RETURN_IF_ERROR(emit_checkpoints_upto(e.fields.seq));
        after = e.fields.seq;
      }
      if (rows.size() < kPage) break;
    }
    return emit_checkpoints_upto(INT64_MAX);
  };
  db::TxOptions tx;
  tx.isolation = db::Isolation::kRepeatableRead;
  tx.read_only = true;
  tx.max_attempts = 1;
  return conn.Transact(body, tx);
}

Result<VerifyReport> VerifyFromDatabase(db::Connection& conn, std::string_view org,
                                        const std::string& verifier_key,
                                        const std::vector<std::string>& extra_checkpoints) {
  Verifier v(verifier_key);
  for (const std::string& note : extra_checkpoints) GOVERN_RETURN_IF_ERROR(v.AddCheckpoint(note));
  Status s = Export(conn, org, verifier_key, [&](std::string_view line) { return v.AddLine(line); });
  if (!s.ok() && s.code() != Code::kDataLoss) return s;
  return v.Finish();
}

Result<int64_t> VerifyFromDatabase(db::Connection& conn, std::string_view org, std::nullptr_t) {
  GOVERN_ASSIGN_OR_RETURN(VerifyReport r, VerifyFromDatabase(conn, org, std::string()));
  return r.entries;
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
                      db::Params(org, cut + 1, db::Bytea{last.entry_hash}))
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

Result<std::optional<int64_t>> GetRetention(db::Connection& conn, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                          conn.Exec("SELECT keep_secs FROM audit_retention WHERE org = $1", db::Params(org)));
  if (rows.empty() || rows.IsNull(0, 0)) return std::optional<int64_t>();
  GOVERN_ASSIGN_OR_RETURN(int64_t v, rows.Int64(0, 0));
  return std::optional<int64_t>(v);
}

}  // namespace govern::audit_service
