// The export file (NDJSON) and the streaming verifier that checks a chain against signed checkpoints.
//
// An export is one header line, then one line per entry in seq order, then checkpoint lines:
//   {"format":"govern-audit-export","version":1,"org":"acme","first_seq":1,"prev_hash":"<hex>",
//    "frontier":["<hex>",...]}
//   {"seq":1,"time":"2026-...Z","org":"acme","actor":"...","action":"...","target":"...",
//    "outcome":"...","details":{...},"idempotency_key":"...","prev_hash":"<hex>","entry_hash":"<hex>"}
//   {"checkpoint":"<signed note text>"}
// prev_hash and frontier describe the chain just before first_seq (kGenesisHash and [] for a full
// export), so a suffix kept after retention still verifies. docs/audit-format.md is the reference.
//
// ExportWriter and Verifier are values used by one thread at a time. The Verifier keeps constant
// memory apart from the compact range (at most 64 hashes) and the checkpoints it was given.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "audit/checkpoint.h"
#include "audit/entry.h"
#include "audit/merkle.h"
#include "base/status.h"

namespace govern::audit {

inline constexpr std::string_view kExportFormat = "govern-audit-export";
inline constexpr int kExportVersion = 1;
// Longest export line the parser accepts (an entry line with the largest details fits well within).
inline constexpr size_t kMaxExportLineBytes = 4 * 1024 * 1024;

struct ExportHeader {
  std::string org;
  uint64_t first_seq = 1;
  Hash prev_hash{};       // entry_hash of entry first_seq - 1 (kGenesisHash when first_seq is 1)
  CompactRange frontier;  // the compact range of the first first_seq - 1 leaves

  friend bool operator==(const ExportHeader&, const ExportHeader&) = default;
};

// One line each, without the trailing newline.
std::string FormatHeaderLine(const ExportHeader& header);
std::string FormatEntryLine(const Entry& entry);
std::string FormatCheckpointLine(std::string_view note);

// One parsed line of an export file.
struct ExportLine {
  enum class Kind { kHeader, kEntry, kCheckpoint };
  Kind kind = Kind::kEntry;
  ExportHeader header;     // kHeader
  Entry entry;             // kEntry: fields as written (hashes not checked; details canonicalized)
  std::string checkpoint;  // kCheckpoint: the note text (signature not checked)
};
// Parses outside input: kInvalidArgument saying which member is wrong and why (unknown or missing
// members, duplicates, wrong types, bad hex, bad time, a field failing ValidateEntryFields).
Result<ExportLine> ParseExportLine(std::string_view line);

// Writes an export. Not thread-safe. Does not own the stream or fd. Each Write* returns the first
// write error (kInternal for a failed stream, errno-mapped for an fd); after an error every call
// returns it again. Writes are buffered: call Finish() and check it.
class ExportWriter {
 public:
  explicit ExportWriter(std::ostream& out);
  explicit ExportWriter(int fd);
  ~ExportWriter();
  ExportWriter(const ExportWriter&) = delete;
  ExportWriter& operator=(const ExportWriter&) = delete;

  Status WriteHeader(const ExportHeader& header);
  // Entries as stored, in seq order. The writer does not judge them (a damaged chain is exported as it
  // is, for the verifier to name the damage); it only requires the header first (kFailedPrecondition).
  Status WriteEntry(const Entry& entry);
  Status WriteCheckpoint(std::string_view note);
  // Flushes (the stream, or the buffered fd writes). Does not fsync or close.
  Status Finish();

 private:
  Status Emit(std::string_view line);
  Status FlushFd();

  std::ostream* out_ = nullptr;
  int fd_ = -1;
  std::string buf_;
  Status error_;
  bool header_written_ = false;
};

// Why verification stopped.
enum class Failure {
  kNone,
  kMalformed,            // a line or field could not be parsed or validated (org mismatch included)
  kSeqGap,               // entry seq is not the next one (deleted or reordered entries)
  kPrevHashMismatch,     // prev_hash is not the previous entry's entry_hash
  kEntryHashMismatch,    // entry_hash does not match the fields (a field was changed)
  kCheckpointMismatch,   // chain head or Merkle root differs from a signed checkpoint at its size
  kCheckpointSignature,  // a checkpoint note is malformed or its signature does not verify
  kCheckpointBeyondEnd,  // a signed checkpoint covers entries that are missing (truncated tail)
};
std::string_view FailureName(Failure failure);

struct Report {
  bool ok() const { return failure == Failure::kNone; }

  uint64_t entries_verified = 0;          // entries whose chain and hash checked out, before any failure
  uint64_t checkpoints_matched = 0;       // signed checkpoints whose root and chain head matched
  uint64_t checkpoints_before_range = 0;  // checkpoints older than first_seq - 1 (cannot be checked)
  uint64_t checkpoints_late = 0;          // given after the entries they cover: not checked (give them first)
  uint64_t last_seq = 0;                  // seq of the last entry verified (first_seq - 1 if none)
  Hash chain_head{};                      // entry_hash of the last entry verified
  Hash root{};                            // Merkle root over seq 1..last_seq
  // On failure: the first entry known bad, and the last one that may be. They are equal except for a
  // checkpoint mismatch (the chain was recomputed): the entries in (last matched checkpoint, failing
  // checkpoint] are suspect and the first of them is named.
  Failure failure = Failure::kNone;
  uint64_t first_bad_seq = 0;
  uint64_t last_bad_seq = 0;
  std::string reason;  // one line, for people
};

struct VerifierOptions {
  std::string org;
  uint64_t first_seq = 1;
  Hash prev_hash{};
  CompactRange frontier;  // must have size first_seq - 1
  // Required origin of checkpoints; empty means CheckpointOrigin(org).
  std::string origin;
};

// Checks entries in seq order against each other and against signed checkpoints. Give it the
// checkpoints first (AddCheckpoint); a checkpoint given after the entries it covers can be checked
// only if its size is the current one. The first failure stops it: later calls return the same error.
class Verifier {
 public:
  // `keys` must outlive the Verifier. kInvalidArgument from Create when the frontier's size is not
  // first_seq - 1 or the org is invalid.
  static Result<Verifier> Create(VerifierOptions options, const std::vector<VerifierKey>& keys);
  // For an export: options from its header.
  static Result<Verifier> Create(const ExportHeader& header, const std::vector<VerifierKey>& keys);

  // A signed note: verified now (a bad signature fails the run), matched when entries reach its size.
  Status AddCheckpoint(std::string_view note);
  // An already-verified checkpoint.
  Status AddCheckpoint(const Checkpoint& checkpoint);
  // The next entry. Fails on a gap, a broken link, a wrong hash or a checkpoint it contradicts.
  Status Add(const Entry& entry);
  // Marks the run failed as malformed input (a line that would not parse), naming the entry expected
  // next. For readers of outside files.
  Status AddMalformed(std::string reason);
  // Checks what is left (a checkpoint beyond the last entry) and reports.
  Report Finish();

  uint64_t next_seq() const { return next_seq_; }

 private:
  Verifier(VerifierOptions options, const std::vector<VerifierKey>& keys);
  friend Result<Report> VerifyExportFile(const std::string&, const std::vector<VerifierKey>&,
                                         const std::vector<std::string>&);
  Status Fail(Failure failure, uint64_t first_bad, uint64_t last_bad, std::string reason);
  Status Check(const Checkpoint& checkpoint);
  // Add without the details check (for entries whose details were canonicalized while parsing).
  Status AddParsed(const Entry& entry);

  VerifierOptions options_;
  const std::vector<VerifierKey>* keys_;
  uint64_t next_seq_;
  Hash head_;
  CompactRange range_;
  uint64_t last_matched_size_;
  Status error_;
  std::map<uint64_t, Checkpoint> pending_;  // by size
  Report report_;
};

// Verifies an export file: reads it twice (checkpoints first, then the entries in one stream).
// The Result is an error only when the file cannot be read; a bad file gives a failed Report.
Result<Report> VerifyExportFile(const std::string& path, const std::vector<VerifierKey>& keys);
// The same, with signed checkpoint notes kept elsewhere (a checkpoint directory, a customer's copy)
// added before the file's own.
Result<Report> VerifyExportFile(const std::string& path, const std::vector<VerifierKey>& keys,
                                const std::vector<std::string>& extra_checkpoints);

}  // namespace govern::audit
