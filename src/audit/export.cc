// Export lines, the export writer and the streaming verifier.
#include "audit/export.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "audit/json_canonical.h"
#include "crypto/encoding.h"

namespace govern::audit {
namespace {

using internal::JsonMember;
using internal::JsonType;

void AppendHex(std::string& out, const Hash& h) {
  out.push_back('"');
  out += HashToHex(h);
  out.push_back('"');
}

Status LineError(std::string_view member, std::string_view why) {
  return InvalidArgument("export line: \"" + std::string(member) + "\": " + std::string(why));
}

Result<Hash> LowerHex(const JsonMember& m) {
  if (m.type != JsonType::kString) return LineError(m.name, "expected a string of 64 hex digits");
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  Hash h;
  bool ok = m.str.size() == 64;
  for (size_t i = 0; ok && i < 32; ++i) {
    const int hi = nibble(m.str[2 * i]), lo = nibble(m.str[2 * i + 1]);
    ok = hi >= 0 && lo >= 0;
    h[i] = static_cast<uint8_t>(hi << 4 | (lo & 0xF));
  }
  if (!ok) return LineError(m.name, "expected 64 lower-case hex digits");
  return h;
}

Result<uint64_t> Integer(const JsonMember& m) {
  if (m.type != JsonType::kNumber || m.raw.empty() || m.raw.size() > 19) {
    return LineError(m.name, "expected a non-negative integer");
  }
  uint64_t v = 0;
  for (char c : m.raw) {
    if (c < '0' || c > '9') return LineError(m.name, "expected a non-negative integer");
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// Moves the decoded string out of the member (members are read once).
Status Text(JsonMember& m, std::string& out) {
  if (m.type != JsonType::kString) return LineError(m.name, "expected a string");
  out = std::move(m.str);
  return OkStatus();
}

// Maps member names to slots, refusing unknown names and reporting missing ones.
class Members {
 public:
  Members(std::vector<JsonMember>& members, std::initializer_list<std::string_view> names)
      : members_(members), names_(names), found_(names.size(), nullptr) {}

  Status Bind() {
    for (JsonMember& m : members_) {
      size_t i = 0;
      while (i < names_.size() && names_[i] != m.name) ++i;
      if (i == names_.size()) return LineError(m.name, "unknown member");
      found_[i] = &m;
    }
    for (size_t i = 0; i < names_.size(); ++i) {
      if (!found_[i]) return LineError(names_[i], "missing");
    }
    return OkStatus();
  }
  JsonMember& operator[](size_t i) { return *found_[i]; }

 private:
  std::vector<JsonMember>& members_;
  std::vector<std::string_view> names_;
  std::vector<JsonMember*> found_;
};

Status ParseHeader(std::vector<JsonMember>& members, ExportHeader& h) {
  Members m(members, {"format", "version", "org", "first_seq", "prev_hash", "frontier"});
  GOVERN_RETURN_IF_ERROR(m.Bind());
  if (m[0].type != JsonType::kString || m[0].str != kExportFormat) {
    return LineError("format", "expected \"govern-audit-export\"");
  }
  GOVERN_ASSIGN_OR_RETURN(uint64_t version, Integer(m[1]));
  if (version != static_cast<uint64_t>(kExportVersion)) {
    return LineError("version", "unsupported version " + std::to_string(version));
  }
  GOVERN_RETURN_IF_ERROR(Text(m[2], h.org));
  if (auto s = ValidateOrg(h.org); !s.ok()) return LineError("org", s.message());
  GOVERN_ASSIGN_OR_RETURN(h.first_seq, Integer(m[3]));
  if (h.first_seq < 1) return LineError("first_seq", "must be at least 1");
  GOVERN_ASSIGN_OR_RETURN(h.prev_hash, LowerHex(m[4]));
  if (m[5].type != JsonType::kArray) return LineError("frontier", "expected an array of hashes");
  // The canonical text of an array of strings is ["..","..",...]: walk it.
  std::vector<Hash> hashes;
  std::string_view a = m[5].canonical;
  a.remove_prefix(1);
  while (!a.empty() && a[0] != ']') {
    if (a.size() < 67 || a[0] != '"' || a[65] != '"') return LineError("frontier", "expected hex hashes");
    auto hash = HashFromHex(a.substr(1, 64));
    if (!hash.ok() || HashToHex(*hash) != a.substr(1, 64)) {
      return LineError("frontier", "expected 64 lower-case hex digits");
    }
    hashes.push_back(*hash);
    a.remove_prefix(66);
    if (!a.empty() && a[0] == ',') a.remove_prefix(1);
  }
  if (hashes.size() > 64) return LineError("frontier", "more than 64 hashes");
  auto range = CompactRange::FromHashes(h.first_seq - 1, std::move(hashes));
  if (!range.ok()) return LineError("frontier", range.status().message());
  h.frontier = std::move(*range);
  if (h.first_seq == 1 && h.prev_hash != kGenesisHash) {
    return LineError("prev_hash", "must be zeros when first_seq is 1");
  }
  return OkStatus();
}

Status ParseEntry(std::vector<JsonMember>& members, Entry& e) {
  Members m(members, {"seq", "time", "org", "actor", "action", "target", "outcome", "details",
                      "idempotency_key", "prev_hash", "entry_hash"});
  GOVERN_RETURN_IF_ERROR(m.Bind());
  GOVERN_ASSIGN_OR_RETURN(e.seq, Integer(m[0]));
  if (m[1].type != JsonType::kString) return LineError("time", "expected a string");
  auto t = ParseTime(m[1].str);
  if (!t.ok()) return LineError("time", t.status().message());
  e.time_us = *t;
  GOVERN_RETURN_IF_ERROR(Text(m[2], e.org));
  GOVERN_RETURN_IF_ERROR(Text(m[3], e.actor));
  GOVERN_RETURN_IF_ERROR(Text(m[4], e.action));
  GOVERN_RETURN_IF_ERROR(Text(m[5], e.target));
  GOVERN_RETURN_IF_ERROR(Text(m[6], e.outcome));
  if (m[7].type != JsonType::kObject) return LineError("details", "expected an object");
  e.details = std::move(m[7].canonical);
  GOVERN_RETURN_IF_ERROR(Text(m[8], e.idempotency_key));
  GOVERN_ASSIGN_OR_RETURN(e.prev_hash, LowerHex(m[9]));
  GOVERN_ASSIGN_OR_RETURN(e.entry_hash, LowerHex(m[10]));
  if (auto s = ValidateEntryFieldsExceptDetails(e); !s.ok()) {
    return InvalidArgument("export line: " + s.message());
  }
  return OkStatus();
}

std::string SeqText(uint64_t seq) { return "seq " + std::to_string(seq); }

}  // namespace

// ---- Lines --------------------------------------------------------------------------------------

std::string FormatHeaderLine(const ExportHeader& h) {
  std::string out = "{\"format\":\"govern-audit-export\",\"version\":1,\"org\":";
  AppendJcsString(out, h.org);
  out += ",\"first_seq\":";
  out += std::to_string(h.first_seq);
  out += ",\"prev_hash\":";
  AppendHex(out, h.prev_hash);
  out += ",\"frontier\":[";
  for (size_t i = 0; i < h.frontier.hashes().size(); ++i) {
    if (i) out.push_back(',');
    AppendHex(out, h.frontier.hashes()[i]);
  }
  out += "]}";
  return out;
}

std::string FormatEntryLine(const Entry& e) {
  std::string out;
  out.reserve(300 + e.details.size() + e.target.size());
  out += "{\"seq\":";
  out += std::to_string(e.seq);
  out += ",\"time\":\"";
  out += FormatTime(e.time_us);
  out += "\",\"org\":";
  AppendJcsString(out, e.org);
  out += ",\"actor\":";
  AppendJcsString(out, e.actor);
  out += ",\"action\":";
  AppendJcsString(out, e.action);
  out += ",\"target\":";
  AppendJcsString(out, e.target);
  out += ",\"outcome\":";
  AppendJcsString(out, e.outcome);
  out += ",\"details\":";
  out += e.details.empty() ? std::string_view("{}") : std::string_view(e.details);
  out += ",\"idempotency_key\":";
  AppendJcsString(out, e.idempotency_key);
  out += ",\"prev_hash\":";
  AppendHex(out, e.prev_hash);
  out += ",\"entry_hash\":";
  AppendHex(out, e.entry_hash);
  out += '}';
  return out;
}

std::string FormatCheckpointLine(std::string_view note) {
  std::string out = "{\"checkpoint\":";
  AppendJcsString(out, note);
  out += '}';
  return out;
}

Result<ExportLine> ParseExportLine(std::string_view line) {
  std::vector<JsonMember> members;
  GOVERN_RETURN_IF_ERROR(
      internal::ParseObjectMembers(line, kMaxExportLineBytes, kMaxDetailsDepth + 1, "export line", members));
  ExportLine out;
  if (members.size() == 1 && members[0].name == "checkpoint") {
    if (members[0].type != JsonType::kString) return LineError("checkpoint", "expected a string");
    out.kind = ExportLine::Kind::kCheckpoint;
    out.checkpoint = std::move(members[0].str);
    return out;
  }
  for (const JsonMember& m : members) {
    if (m.name == "format") {
      out.kind = ExportLine::Kind::kHeader;
      GOVERN_RETURN_IF_ERROR(ParseHeader(members, out.header));
      return out;
    }
  }
  out.kind = ExportLine::Kind::kEntry;
  GOVERN_RETURN_IF_ERROR(ParseEntry(members, out.entry));
  return out;
}

// ---- ExportWriter -------------------------------------------------------------------------------

ExportWriter::ExportWriter(std::ostream& out) : out_(&out) {}
ExportWriter::ExportWriter(int fd) : fd_(fd) { buf_.reserve(1 << 16); }
ExportWriter::~ExportWriter() = default;

Status ExportWriter::FlushFd() {
  size_t done = 0;
  while (done < buf_.size()) {
    const ssize_t n = ::write(fd_, buf_.data() + done, buf_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = ErrnoStatus(errno, "write export");
      return error_;
    }
    done += static_cast<size_t>(n);
  }
  buf_.clear();
  return OkStatus();
}

Status ExportWriter::Emit(std::string_view line) {
  if (!error_.ok()) return error_;
  if (out_) {
    out_->write(line.data(), static_cast<std::streamsize>(line.size()));
    out_->put('\n');
    if (!*out_) error_ = Internal("write export: stream failed");
    return error_;
  }
  buf_.append(line);
  buf_.push_back('\n');
  if (buf_.size() >= (1 << 16)) return FlushFd();
  return OkStatus();
}

Status ExportWriter::WriteHeader(const ExportHeader& header) {
  if (!error_.ok()) return error_;
  if (header_written_) return FailedPrecondition("export: header written twice");
  GOVERN_RETURN_IF_ERROR(ValidateOrg(header.org));
  if (header.first_seq < 1 || header.frontier.size() != header.first_seq - 1) {
    return FailedPrecondition("export: the frontier must cover first_seq - 1 entries");
  }
  header_written_ = true;
  return Emit(FormatHeaderLine(header));
}

Status ExportWriter::WriteEntry(const Entry& entry) {
  if (!header_written_) return FailedPrecondition("export: entry before the header");
  return Emit(FormatEntryLine(entry));
}

Status ExportWriter::WriteCheckpoint(std::string_view note) {
  if (!header_written_) return FailedPrecondition("export: checkpoint before the header");
  return Emit(FormatCheckpointLine(note));
}

Status ExportWriter::Finish() {
  if (!error_.ok()) return error_;
  if (out_) {
    out_->flush();
    if (!*out_) error_ = Internal("write export: flush failed");
    return error_;
  }
  return FlushFd();
}

// ---- Verifier -----------------------------------------------------------------------------------

std::string_view FailureName(Failure failure) {
  switch (failure) {
    case Failure::kNone:
      return "none";
    case Failure::kMalformed:
      return "malformed";
    case Failure::kSeqGap:
      return "seq_gap";
    case Failure::kPrevHashMismatch:
      return "prev_hash_mismatch";
    case Failure::kEntryHashMismatch:
      return "entry_hash_mismatch";
    case Failure::kCheckpointMismatch:
      return "checkpoint_mismatch";
    case Failure::kCheckpointSignature:
      return "checkpoint_signature";
    case Failure::kCheckpointBeyondEnd:
      return "checkpoint_beyond_end";
  }
  return "unknown";
}

Verifier::Verifier(VerifierOptions options, const std::vector<VerifierKey>& keys)
    : options_(std::move(options)),
      keys_(&keys),
      next_seq_(options_.first_seq),
      head_(options_.prev_hash),
      range_(options_.frontier),
      last_matched_size_(options_.first_seq - 1) {
  if (options_.origin.empty()) options_.origin = CheckpointOrigin(options_.org);
  report_.last_seq = options_.first_seq - 1;
  report_.chain_head = head_;
}

Result<Verifier> Verifier::Create(VerifierOptions options, const std::vector<VerifierKey>& keys) {
  GOVERN_RETURN_IF_ERROR(ValidateOrg(options.org));
  if (options.first_seq < 1) return InvalidArgument("verifier: first_seq must be at least 1");
  if (options.frontier.size() != options.first_seq - 1) {
    return InvalidArgument("verifier: the frontier must cover first_seq - 1 entries");
  }
  return Verifier(std::move(options), keys);
}

Result<Verifier> Verifier::Create(const ExportHeader& header, const std::vector<VerifierKey>& keys) {
  VerifierOptions o;
  o.org = header.org;
  o.first_seq = header.first_seq;
  o.prev_hash = header.prev_hash;
  o.frontier = header.frontier;
  return Create(std::move(o), keys);
}

Status Verifier::Fail(Failure failure, uint64_t first_bad, uint64_t last_bad, std::string reason) {
  report_.failure = failure;
  report_.first_bad_seq = first_bad;
  report_.last_bad_seq = last_bad;
  report_.reason = std::move(reason);
  error_ = DataLoss(std::string(FailureName(failure)) + ": " + report_.reason);
  return error_;
}

Status Verifier::AddMalformed(std::string reason) {
  if (!error_.ok()) return error_;
  return Fail(Failure::kMalformed, next_seq_, next_seq_, std::move(reason));
}

Status Verifier::AddCheckpoint(std::string_view note) {
  if (!error_.ok()) return error_;
  auto c = OpenCheckpoint(note, *keys_);
  if (!c.ok()) {
    // Name the size the note claims, if its body parses, so the report says which one was bad.
    uint64_t size = 0;
    const size_t split = note.rfind("\n\n");
    if (split != std::string_view::npos) {
      if (auto body = ParseCheckpointBody(note.substr(0, split + 1)); body.ok()) size = body->size;
    }
    return Fail(Failure::kCheckpointSignature, size, size,
                "checkpoint for size " + std::to_string(size) + " does not verify: " + c.status().message());
  }
  return AddCheckpoint(*c);
}

Status Verifier::Check(const Checkpoint& c) {
  const bool head_ok = c.chain_head == head_;
  const bool root_ok = c.root == range_.Root();
  if (head_ok && root_ok) {
    ++report_.checkpoints_matched;
    last_matched_size_ = c.size;
    return OkStatus();
  }
  const uint64_t first = std::min(last_matched_size_ + 1, c.size);
  std::string what = !head_ok && !root_ok ? "chain head and Merkle root differ"
                     : !head_ok           ? "chain head differs"
                                          : "Merkle root differs";
  return Fail(Failure::kCheckpointMismatch, first, c.size,
              what + " from the checkpoint signed at size " + std::to_string(c.size) + " (" +
                  FormatTime(c.time_us) + "): an entry in " + SeqText(first) + ".." + std::to_string(c.size) +
                  " was changed, deleted, inserted or reordered and the chain recomputed");
}

Status Verifier::AddCheckpoint(const Checkpoint& c) {
  if (!error_.ok()) return error_;
  if (c.origin != options_.origin) {
    return Fail(Failure::kMalformed, c.size, c.size,
                "checkpoint origin \"" + c.origin + "\" is not \"" + options_.origin + "\"");
  }
  const uint64_t current = next_seq_ - 1;
  if (c.size < options_.first_seq - 1) {
    ++report_.checkpoints_before_range;
    return OkStatus();
  }
  if (c.size == current) return Check(c);
  if (c.size < current) {
    ++report_.checkpoints_late;
    return FailedPrecondition("checkpoint at size " + std::to_string(c.size) +
                              " given after its entries; give checkpoints first");
  }
  auto [it, inserted] = pending_.emplace(c.size, c);
  if (!inserted && (it->second.root != c.root || it->second.chain_head != c.chain_head)) {
    return Fail(Failure::kCheckpointMismatch, c.size, c.size,
                "two signed checkpoints at size " + std::to_string(c.size) + " disagree (a split view)");
  }
  return OkStatus();
}

Status Verifier::Add(const Entry& entry) {
  if (!error_.ok()) return error_;
  if (entry.seq == next_seq_) {
    if (auto s = ValidateEntryFields(entry); !s.ok()) {
      return Fail(Failure::kMalformed, entry.seq, entry.seq, SeqText(entry.seq) + ": " + s.message());
    }
  }
  return AddParsed(entry);
}

Status Verifier::AddParsed(const Entry& e) {
  if (!error_.ok()) return error_;
  if (e.org != options_.org) {
    return Fail(Failure::kMalformed, next_seq_, next_seq_,
                SeqText(e.seq) + ": org \"" + e.org + "\" in an export of \"" + options_.org + "\"");
  }
  if (e.seq != next_seq_) {
    return Fail(Failure::kSeqGap, next_seq_, next_seq_,
                "expected " + SeqText(next_seq_) + ", found " + SeqText(e.seq) +
                    (e.seq > next_seq_ ? " (entries missing)" : " (out of order or repeated)"));
  }
  if (e.prev_hash != head_) {
    return Fail(Failure::kPrevHashMismatch, e.seq, e.seq,
                SeqText(e.seq) + ": prev_hash is not the entry_hash of the entry before it");
  }
  const Hash leaf = EntryLeafHash(e);
  if (ChainHash(head_, leaf) != e.entry_hash) {
    return Fail(Failure::kEntryHashMismatch, e.seq, e.seq,
                SeqText(e.seq) + ": entry_hash does not match its fields (a field was changed)");
  }
  head_ = e.entry_hash;
  range_.Append(leaf);
  ++next_seq_;
  ++report_.entries_verified;
  if (!pending_.empty() && pending_.begin()->first == e.seq) {
    const Checkpoint c = pending_.begin()->second;
    pending_.erase(pending_.begin());
    return Check(c);
  }
  return OkStatus();
}

Report Verifier::Finish() {
  if (error_.ok() && !pending_.empty()) {
    const Checkpoint& c = pending_.begin()->second;
    (void)Fail(Failure::kCheckpointBeyondEnd, next_seq_, c.size,
               "a checkpoint signed at size " + std::to_string(c.size) + " covers entries up to " +
                   SeqText(c.size) + " but the chain ends at " + SeqText(next_seq_ - 1) +
                   " (the tail was truncated)");
  }
  report_.last_seq = next_seq_ - 1;
  report_.chain_head = head_;
  report_.root = range_.Root();
  return report_;
}

// ---- Files --------------------------------------------------------------------------------------

namespace {

// Reads lines of at most kMaxExportLineBytes from an fd (without the newline).
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd), buf_(1 << 20) {}

  // Ok with `line` set, kOutOfRange at the end, kInvalidArgument for an overlong line.
  Status Next(std::string_view& line) {
    while (true) {
      const char* nl = static_cast<const char*>(std::memchr(buf_.data() + begin_, '\n', end_ - begin_));
      if (nl) {
        const auto at = static_cast<size_t>(nl - buf_.data());
        line = std::string_view(buf_.data() + begin_, at - begin_);
        begin_ = at + 1;
        ++line_no_;
        return OkStatus();
      }
      if (end_ - begin_ > kMaxExportLineBytes) {
        ++line_no_;
        return InvalidArgument("line " + std::to_string(line_no_) + " is longer than " +
                               std::to_string(kMaxExportLineBytes) + " bytes");
      }
      if (eof_) {
        if (begin_ == end_) return OutOfRange("end");
        line = std::string_view(buf_.data() + begin_, end_ - begin_);  // no final newline
        begin_ = end_;
        ++line_no_;
        return OkStatus();
      }
      // Move the partial line to the front and read more.
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
      if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
      const ssize_t n = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, "read export");
      }
      if (n == 0) eof_ = true;
      end_ += static_cast<size_t>(n);
    }
  }
  uint64_t line_no() const { return line_no_; }

 private:
  int fd_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  uint64_t line_no_ = 0;
};

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool LooksLikeCheckpoint(std::string_view line) { return line.rfind("{\"checkpoint\":", 0) == 0; }

}  // namespace

Result<Report> VerifyExportFile(const std::string& path, const std::vector<VerifierKey>& keys) {
  return VerifyExportFile(path, keys, {});
}

Result<Report> VerifyExportFile(const std::string& path, const std::vector<VerifierKey>& keys,
                                const std::vector<std::string>& extra_checkpoints) {
  Report bad;
  bad.failure = Failure::kMalformed;
  Fd first;
  first.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (first.fd < 0) return ErrnoStatus(errno, "open " + path);
  LineReader reader(first.fd);
  std::string_view line;
  Status s = reader.Next(line);
  if (s.code() == Code::kOutOfRange) {
    bad.reason = "empty file";
    return bad;
  }
  if (!s.ok() && s.code() != Code::kInvalidArgument) return s;
  auto header = s.ok() ? ParseExportLine(line) : Result<ExportLine>(s);
  if (!header.ok() || header->kind != ExportLine::Kind::kHeader) {
    bad.reason =
        "line 1: not an export header" + (header.ok() ? std::string() : ": " + header.status().message());
    return bad;
  }
  auto verifier = Verifier::Create(header->header, keys);
  if (!verifier.ok()) {
    bad.reason = "line 1: " + verifier.status().message();
    return bad;
  }
  Verifier& v = *verifier;
  for (const std::string& note : extra_checkpoints) (void)v.AddCheckpoint(note);
  // Pass 1: the checkpoints.
  while (true) {
    s = reader.Next(line);
    if (s.code() == Code::kOutOfRange) break;
    if (s.code() == Code::kInvalidArgument) break;  // an overlong line: pass 2 reports it in order
    if (!s.ok()) return s;
    if (!LooksLikeCheckpoint(line)) continue;
    auto parsed = ParseExportLine(line);
    if (!parsed.ok() || parsed->kind != ExportLine::Kind::kCheckpoint) continue;  // reported in pass 2
    (void)v.AddCheckpoint(parsed->checkpoint);
  }
  // Pass 2: the entries, in one stream.
  Fd second;
  second.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (second.fd < 0) return ErrnoStatus(errno, "open " + path);
  LineReader entries(second.fd);
  (void)entries.Next(line);  // the header
  bool failed = !v.error_.ok();
  while (!failed) {
    s = entries.Next(line);
    if (s.code() == Code::kOutOfRange) break;
    if (s.code() == Code::kInvalidArgument) {
      failed = !v.AddMalformed(s.message()).ok();
      break;
    }
    if (!s.ok()) return s;
    if (LooksLikeCheckpoint(line)) continue;  // taken in pass 1
    auto parsed = ParseExportLine(line);
    if (!parsed.ok()) {
      failed = !v.AddMalformed("line " + std::to_string(entries.line_no()) + ": " + parsed.status().message())
                    .ok();
      break;
    }
    switch (parsed->kind) {
      case ExportLine::Kind::kHeader:
        failed = !v.AddMalformed("line " + std::to_string(entries.line_no()) + ": a second header").ok();
        break;
      case ExportLine::Kind::kCheckpoint: {
        Status cs = v.AddCheckpoint(parsed->checkpoint);
        failed = !v.error_.ok();
        (void)cs;
        break;
      }
      case ExportLine::Kind::kEntry:
        failed = !v.AddParsed(parsed->entry).ok();
        break;
    }
  }
  return v.Finish();
}

}  // namespace govern::audit
