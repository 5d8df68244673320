// DecisionLog (see decision_log.h).
#include "policy/decisions/decision_log.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "base/log.h"
#include "crypto/sha256.h"

namespace govern::policy {
namespace {

constexpr std::string_view kComponent = "policy.decisions";
// The WAL's own record header (crc, length, sequence): counted in what a record holds in memory.
constexpr size_t kWalRecordOverhead = 16;

// Set while a thread is inside AppendAsync, so a callback that runs at once on that thread (an
// immediate error) reports to its caller rather than as a later sync failure.
thread_local Status* t_immediate = nullptr;

}  // namespace

Result<std::unique_ptr<DecisionLog>> DecisionLog::Open(DecisionLogOptions options) {
  if (options.dir.empty()) return InvalidArgument("decision log: no directory given");
  if (options.sync_interval.count() <= 0)
    return InvalidArgument("decision log: sync_interval must be positive");
  if (options.max_pending_bytes < options.max_record_bytes + kWalRecordOverhead) {
    return InvalidArgument("decision log: max_pending_bytes must hold at least one record");
  }
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) return ErrnoStatus(ec.value(), "decision log: create " + options.dir);

  wal::Options wo;
  wo.segment_size = options.segment_size;
  wo.buffered_interval = options.sync_interval;
  wo.default_durability =
      options.mode == RecordMode::kDurable ? wal::Durability::kSync : wal::Durability::kBuffered;
  wo.max_record_size = options.max_record_bytes;
  // Our own bound (pending_bytes_, which also counts the group being written) is reached first, so
  // the WAL never refuses an async append for lack of room: we wait instead, for a bounded time.
  wo.max_pending_bytes = options.max_pending_bytes * 2;
  wo.fs = options.fs;
  auto wal = wal::Log::Open(options.dir, wo);
  if (!wal.ok()) return wal.status().WithContext("decision log: open the WAL in " + options.dir);
  GOVERN_ASSIGN_OR_RETURN(DecisionIdGenerator ids, DecisionIdGenerator::Create());

  if (options.max_retained_bytes > 0) {
    GOVERN_RETURN_IF_ERROR((*wal)->RegisterCursor(kRetentionCursor));
  } else if ((*wal)->Cursors().count(std::string(kRetentionCursor)) > 0) {
    // The bound was switched off: its cursor must not hold the WAL back forever.
    GOVERN_RETURN_IF_ERROR((*wal)->UnregisterCursor(kRetentionCursor));
  }
  std::unique_ptr<DecisionLog> log(new DecisionLog(std::move(options), std::move(*wal), std::move(ids)));
  if (log->options_.max_retained_bytes > 0) {
    log->retention_thread_ = std::thread([l = log.get()] { l->RetentionLoop(); });
  }
  return log;
}

DecisionLog::DecisionLog(DecisionLogOptions options, std::unique_ptr<wal::Log> wal, DecisionIdGenerator ids)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : &Clock::Real()),
      wal_(std::move(wal)),
      ids_(std::move(ids)) {}

DecisionLog::~DecisionLog() {
  {
    std::lock_guard lk(retention_mu_);
    stop_ = true;
  }
  retention_cv_.notify_all();
  if (retention_thread_.joinable()) retention_thread_.join();
  Status st = wal_->Flush();
  if (!st.ok()) log::Error(kComponent, "flush at close failed", {{"error", st.ToString()}});
  wal_.reset();  // completes every callback before the members they touch go away
}

Result<DecisionId> DecisionLog::Record(const DecisionRecord& record) {
  if (has_failure_.load(std::memory_order_relaxed)) {
    std::lock_guard lk(failure_mu_);
    if (failures_unreported_ > 0) {
      Status st = failure_.WithContext("decision log: " + std::to_string(failures_unreported_) +
                                       " recorded decisions were lost when their sync failed");
      failures_unreported_ = 0;
      failure_ = OkStatus();
      has_failure_.store(false, std::memory_order_relaxed);
      refused_.fetch_add(1, std::memory_order_relaxed);
      return st;
    }
  }
  const int64_t time_ns = record.time_ns != 0 ? record.time_ns : clock_->UnixMicros() * 1000;
  const DecisionId id = record.id.empty() ? ids_.Next(time_ns) : record.id;

  ContextKind kind = record.context_kind;
  std::string_view context = record.context;
  crypto::Sha256Digest digest;
  if (kind == ContextKind::kFull && options_.context != ContextKind::kFull) {
    kind = options_.context;
    context = {};
    if (kind == ContextKind::kHash) {
      auto d = crypto::Sha256(record.context);
      if (!d.ok()) {
        refused_.fetch_add(1, std::memory_order_relaxed);
        return d.status();
      }
      digest = *d;
      context = std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size());
    }
  } else if (kind == ContextKind::kHash && context.size() != 32) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return InvalidArgument("decision log: a context hash must be 32 bytes");
  }

  thread_local std::string buf;
  buf.clear();
  EncodeDecision(record, id, time_ns, kind, context, &buf);
  if (buf.size() > options_.max_record_bytes) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return InvalidArgument("decision log: record of " + std::to_string(buf.size()) +
                           " bytes is over the limit of " + std::to_string(options_.max_record_bytes) +
                           " (keep the context as a hash, or raise the limit)");
  }
  const size_t n = buf.size() + kWalRecordOverhead;
  if (Status st = Reserve(n); !st.ok()) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return st;
  }

  if (options_.mode == RecordMode::kDurable) {
    auto seq = wal_->Append(buf, wal::Durability::kSync);
    Release(n);
    if (!seq.ok()) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      return seq.status();
    }
    recorded_.fetch_add(1, std::memory_order_relaxed);
    synced_.fetch_add(1, std::memory_order_relaxed);
    return id;
  }

  Status immediate;
  t_immediate = &immediate;
  // Counted before the append: its callback may run (on the sync thread) before AppendAsync returns.
  recorded_.fetch_add(1, std::memory_order_relaxed);
  wal_->AppendAsync(
      buf, [this, n](Result<uint64_t> r) { OnSynced(n, r); }, wal::Durability::kBuffered);
  t_immediate = nullptr;
  if (!immediate.ok()) {
    recorded_.fetch_sub(1, std::memory_order_relaxed);
    refused_.fetch_add(1, std::memory_order_relaxed);
    return immediate;
  }
  return id;
}

void DecisionLog::OnSynced(size_t n, const Result<uint64_t>& r) {
  Release(n);
  if (r.ok()) {
    synced_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (t_immediate != nullptr) {  // on the recording thread, inside AppendAsync: not accepted
    *t_immediate = r.status();
    return;
  }
  failed_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lk(failure_mu_);
  if (failures_unreported_++ == 0) {
    failure_ = r.status();
    has_failure_.store(true, std::memory_order_relaxed);
    log::Error(kComponent, "recorded decisions lost: their sync failed", {{"error", r.status().ToString()}});
  }
}

Status DecisionLog::Reserve(size_t n) {
  const uint64_t max = options_.max_pending_bytes;
  uint64_t cur = pending_bytes_.load(std::memory_order_relaxed);
  // Fast path: room now. A record alone always fits (Open checked), so an empty queue admits it.
  while (cur + n <= max) {
    if (pending_bytes_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed)) return OkStatus();
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.max_block;
  std::unique_lock lk(space_mu_);
  space_waiters_.fetch_add(1, std::memory_order_seq_cst);
  for (;;) {
    cur = pending_bytes_.load(std::memory_order_seq_cst);
    bool got = false;
    while (cur + n <= max) {
      if (pending_bytes_.compare_exchange_weak(cur, cur + n, std::memory_order_seq_cst)) {
        got = true;
        break;
      }
    }
    if (got) {
      space_waiters_.fetch_sub(1, std::memory_order_seq_cst);
      return OkStatus();
    }
    if (space_cv_.wait_until(lk, deadline) == std::cv_status::timeout &&
        pending_bytes_.load(std::memory_order_seq_cst) + n > max) {
      space_waiters_.fetch_sub(1, std::memory_order_seq_cst);
      return ResourceExhausted("decision log: " + std::to_string(pending_bytes_.load()) +
                               " bytes of decisions have waited for the disk for longer than " +
                               std::to_string(options_.max_block.count()) +
                               " ms; the disk is too slow or failing (decision not recorded)");
    }
  }
}

void DecisionLog::Release(size_t n) {
  pending_bytes_.fetch_sub(n, std::memory_order_seq_cst);
  if (space_waiters_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard lk(space_mu_);
    space_cv_.notify_all();
  }
}

Status DecisionLog::Flush() { return wal_->Flush(); }

Status DecisionLog::Health() const { return wal_->Health(); }

DecisionLog::Stats DecisionLog::GetStats() const {
  Stats s;
  s.recorded = recorded_.load(std::memory_order_relaxed);
  s.synced = synced_.load(std::memory_order_relaxed);
  s.failed = failed_.load(std::memory_order_relaxed);
  s.refused = refused_.load(std::memory_order_relaxed);
  s.pending_bytes = pending_bytes_.load(std::memory_order_relaxed);
  return s;
}

Result<size_t> DecisionLog::EnforceRetention(uint64_t max_bytes) {
  // Segment files are named by their first sequence (docs/wal-format.md); each takes its file size.
  std::vector<std::pair<uint64_t, uint64_t>> segments;  // first sequence, bytes
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() != 24 || name.substr(20) != ".wal") continue;
    uint64_t first = 0;
    bool digits = true;
    for (char c : name.substr(0, 20)) {
      if (c < '0' || c > '9') digits = false;
      first = first * 10 + static_cast<uint64_t>(c - '0');
    }
    if (!digits) continue;
    std::error_code size_ec;
    const uint64_t bytes = entry.file_size(size_ec);
    if (size_ec) continue;  // deleted meanwhile
    segments.emplace_back(first, bytes);
    total += bytes;
  }
  if (ec) return ErrnoStatus(ec.value(), "decision log: list " + options_.dir);
  std::sort(segments.begin(), segments.end());
  size_t passed = 0;
  size_t keep_from = 0;
  // Pass whole segments, oldest first, never the active (last) one.
  while (total > max_bytes && keep_from + 1 < segments.size()) {
    total -= segments[keep_from].second;
    ++keep_from;
    ++passed;
  }
  if (passed == 0) return size_t{0};
  const uint64_t target = std::min(segments[keep_from].first, wal_->DurableSequence() + 1);
  GOVERN_ASSIGN_OR_RETURN(uint64_t at, wal_->CursorPosition(kRetentionCursor));
  if (target <= at) return size_t{0};
  GOVERN_RETURN_IF_ERROR(wal_->CommitCursor(kRetentionCursor, target));
  log::Info(kComponent, "retention bound passed: oldest decisions deleted unless a shipper still holds them",
            {{"max_bytes", max_bytes}, {"segments", passed}, {"next_seq", target}});
  return passed;
}

void DecisionLog::RetentionLoop() {
  std::unique_lock lk(retention_mu_);
  while (!stop_) {
    lk.unlock();
    auto r = EnforceRetention(options_.max_retained_bytes);
    if (!r.ok()) log::Warn(kComponent, "retention check failed", {{"error", r.status().ToString()}});
    lk.lock();
    retention_cv_.wait_for(lk, options_.retention_check, [&] { return stop_; });
  }
}

}  // namespace govern::policy
