// Offline verification of an exported audit chain.
#include "services/audit/verify.h"

#include <nlohmann/json.hpp>

#include "crypto/bytes.h"
#include "crypto/encoding.h"
#include "services/audit/entry.h"

namespace govern::audit_service {

using json = nlohmann::json;

namespace {

Result<CompactRange> DecodeRange(std::string_view hex, int64_t size) {
  auto bytes = crypto::HexDecode(hex);
  if (!bytes.ok()) return InvalidArgument("compact_range is not hex");
  return CompactRange::Decode(static_cast<uint64_t>(size), crypto::AsString(*bytes));
}

}  // namespace

Verifier::Verifier(std::string verifier_key) : key_(std::move(verifier_key)) {}

Status Verifier::Fail(std::string message) {
  if (error_.ok()) error_ = DataLoss(std::move(message));
  return error_;
}

Status Verifier::AddCheckpoint(std::string_view note) {
  if (!error_.ok()) return error_;
  if (key_.empty()) return Fail("a checkpoint was found but no verifier key was given (--key)");
  auto c = OpenCheckpoint(note, key_);
  if (!c.ok()) return Fail("checkpoint: " + c.status().message());
  if (have_header_ && c->org != report_.org) {
    return Fail("checkpoint of size " + std::to_string(c->size) + " is for organisation '" + c->org +
                "', not '" + report_.org + "'");
  }
  if (have_header_ && static_cast<int64_t>(c->size) < report_.first_seq - 1) {
    ++report_.checkpoints_skipped;
    return OkStatus();
  }
  if (have_header_ && static_cast<int64_t>(c->size) <= report_.last_seq) {
    // Already passed (an external checkpoint given late): cannot be checked in one pass.
    pending_[c->size].push_back(*c);
    return Fail("checkpoint of size " + std::to_string(c->size) +
                " arrived after its entries; give external checkpoints before the export");
  }
  pending_[c->size].push_back(std::move(*c));
  return OkStatus();
}

Status Verifier::CheckCheckpointsAt(uint64_t size) {
  auto it = pending_.find(size);
  if (it == pending_.end()) return OkStatus();
  for (const Checkpoint& c : it->second) {
    std::string range =
        last_good_checkpoint_ + 1 == static_cast<int64_t>(size)
            ? "entry " + std::to_string(size)
            : "entries " + std::to_string(last_good_checkpoint_ + 1) + ".." + std::to_string(size);
    if (c.chain_head != head_) {
      return Fail("checkpoint of size " + std::to_string(size) + " does not match the chain head: " + range +
                  " were changed, removed or reordered after it was signed (first bad: entry " +
                  std::to_string(std::max<int64_t>(last_good_checkpoint_ + 1, report_.first_seq)) + ")");
    }
    if (c.root != range_.Root()) {
      return Fail("checkpoint of size " + std::to_string(size) + " does not match the Merkle root: " + range +
                  " were changed after it was signed");
    }
    ++report_.checkpoints_verified;
  }
  last_good_checkpoint_ = static_cast<int64_t>(size);
  pending_.erase(it);
  return OkStatus();
}

Status Verifier::AddLine(std::string_view line) {
  if (!error_.ok()) return error_;
  if (line.empty() || line == "\r") return OkStatus();
  if (!have_header_) {
    json h = json::parse(line.begin(), line.end(), nullptr, false);
    if (h.is_discarded() || !h.is_object() || h.value("format", "") != "govern-audit-export/1") {
      return Fail("the first line is not a govern-audit-export/1 header");
    }
    try {
      report_.org = h.at("org").get<std::string>();
      report_.first_seq = h.at("first_seq").get<int64_t>();
      auto prev = ParseHexHash(h.at("prev_hash").get<std::string>());
      if (!prev.ok() || report_.first_seq < 1) return Fail("bad header: prev_hash or first_seq");
      head_ = *prev;
      auto cr = DecodeRange(h.at("compact_range").get<std::string>(), report_.first_seq - 1);
      if (!cr.ok()) return Fail("bad header: " + cr.status().message());
      range_ = std::move(*cr);
    } catch (const json::exception& e) {
      return Fail(std::string("bad header: ") + e.what());
    }
    report_.last_seq = report_.first_seq - 1;
    last_good_checkpoint_ = report_.first_seq - 1;
    have_header_ = true;
    // External checkpoints given before the header: drop those older than the kept entries.
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (static_cast<int64_t>(it->first) < report_.first_seq - 1) {
        report_.checkpoints_skipped += static_cast<int64_t>(it->second.size());
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    return CheckCheckpointsAt(static_cast<uint64_t>(report_.first_seq - 1));
  }
  if (line.substr(0, 14) == "{\"checkpoint\":") {
    json c = json::parse(line.begin(), line.end(), nullptr, false);
    if (c.is_discarded() || !c.contains("checkpoint") || !c["checkpoint"].is_string()) {
      return Fail("malformed checkpoint line after entry " + std::to_string(report_.last_seq));
    }
    if (key_.empty()) return OkStatus();  // chain-only verification ignores the export's checkpoints
    auto opened = OpenCheckpoint(c["checkpoint"].get<std::string>(), key_);
    if (!opened.ok())
      return Fail("checkpoint after entry " + std::to_string(report_.last_seq) + ": " +
                  opened.status().message());
    if (static_cast<int64_t>(opened->size) < report_.first_seq - 1) {
      ++report_.checkpoints_skipped;
      return OkStatus();
    }
    if (static_cast<int64_t>(opened->size) < report_.last_seq) {
      return Fail("checkpoint of size " + std::to_string(opened->size) + " appears after entry " +
                  std::to_string(report_.last_seq) + " (reordered export)");
    }
    if (opened->org != report_.org)
      return Fail("checkpoint for another organisation ('" + opened->org + "')");
    pending_[opened->size].push_back(std::move(*opened));
    return CheckCheckpointsAt(static_cast<uint64_t>(report_.last_seq));
  }
  auto e = ParseEntryJson(line);
  int64_t expected = report_.last_seq + 1;
  if (!e.ok())
    return Fail("entry " + std::to_string(expected) + ": unreadable line: " + e.status().message());
  const EntryFields& f = e->fields;
  if (f.org != report_.org)
    return Fail("entry " + std::to_string(f.seq) + " belongs to organisation '" + f.org + "'");
  if (f.seq != expected) {
    return Fail("entry " + std::to_string(expected) + " is missing or out of order (found entry " +
                std::to_string(f.seq) + " in its place)");
  }
  if (e->prev_hash != head_) {
    return Fail("entry " + std::to_string(f.seq) + ": prev_hash is not the hash of entry " +
                std::to_string(f.seq - 1) + " (an entry before it was removed, changed or reordered)");
  }
  std::string canonical = CanonicalEncoding(f);
  if (ChainHash(head_, canonical) != e->entry_hash) {
    return Fail("entry " + std::to_string(f.seq) +
                ": entry_hash does not match its fields (the entry was changed)");
  }
  head_ = e->entry_hash;
  range_.Append(LeafHash(canonical));
  report_.last_seq = f.seq;
  ++report_.entries;
  return CheckCheckpointsAt(static_cast<uint64_t>(f.seq));
}

Result<VerifyReport> Verifier::Finish() {
  if (!error_.ok()) return error_;
  if (!have_header_) return Fail("the export is empty (no header line)");
  if (!pending_.empty()) {
    uint64_t size = pending_.begin()->first;
    return Fail("checkpoint of size " + std::to_string(size) + " is beyond the last entry (" +
                std::to_string(report_.last_seq) + "): entries " + std::to_string(report_.last_seq + 1) +
                ".." + std::to_string(size) + " are missing (the tail was truncated)");
  }
  return report_;
}

}  // namespace govern::audit_service
