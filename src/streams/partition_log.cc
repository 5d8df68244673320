// The on-disk log of one partition (see partition_log.h).
#include "streams/partition_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/file.h"
#include "base/log.h"
#include "streams/errors.h"
#include "streams/wire.h"

namespace govern::streams {

namespace fs = std::filesystem;

namespace {

Status Errno(const std::string& what) { return Internal(what + ": " + std::strerror(errno)); }

bool PreadAll(int fd, char* buf, size_t n, uint64_t pos) {
  while (n > 0) {
    ssize_t r = ::pread(fd, buf, n, static_cast<off_t>(pos));
    if (r <= 0) {
      if (r < 0 && errno == EINTR) continue;
      return false;
    }
    buf += r;
    n -= static_cast<size_t>(r);
    pos += static_cast<uint64_t>(r);
  }
  return true;
}

bool PwriteAll(int fd, const char* buf, size_t n, uint64_t pos) {
  while (n > 0) {
    ssize_t r = ::pwrite(fd, buf, n, static_cast<off_t>(pos));
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    buf += r;
    n -= static_cast<size_t>(r);
    pos += static_cast<uint64_t>(r);
  }
  return true;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

PartitionLog::PartitionLog(std::string dir, LogOptions options, Syncer* syncer)
    : dir_(std::move(dir)), options_(options), syncer_(syncer) {}

PartitionLog::~PartitionLog() {
  for (auto& [base, seg] : segments_) CloseSegment(seg);
}

std::string PartitionLog::PathFor(int64_t base, const char* ext) const {
  char name[32];
  std::snprintf(name, sizeof name, "%020lld", static_cast<long long>(base));
  return dir_ + "/" + name + ext;
}

void PartitionLog::CloseSegment(Segment& seg) {
  if (seg.index_fd >= 0) ::close(seg.index_fd);
  if (seg.time_fd >= 0) ::close(seg.time_fd);
  seg.index_fd = seg.time_fd = -1;
  seg.file.reset();
}

Result<std::unique_ptr<PartitionLog>> PartitionLog::Open(std::string dir, LogOptions options,
                                                         Syncer* syncer) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal("create " + dir + ": " + ec.message());
  std::unique_ptr<PartitionLog> log(new PartitionLog(dir, options, syncer));
  std::vector<int64_t> bases;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.size() == 24 && name.ends_with(".log")) {
      char* end = nullptr;
      long long base = std::strtoll(name.c_str(), &end, 10);
      if (end == name.c_str() + 20 && base >= 0) bases.push_back(base);
    }
  }
  if (ec) return Internal("list " + dir + ": " + ec.message());
  std::sort(bases.begin(), bases.end());
  for (size_t i = 0; i < bases.size(); i++)
    GOVERN_RETURN_IF_ERROR(log->OpenSegment(bases[i], i + 1 == bases.size()));
  if (log->segments_.empty()) GOVERN_RETURN_IF_ERROR(log->NewSegment(0));

  // Leader epochs: keep entries below the recovered end.
  std::istringstream epochs(ReadWholeFile(dir + "/leader-epoch-checkpoint"));
  int32_t epoch;
  int64_t start;
  int64_t leo = log->segments_.rbegin()->second.next_offset;
  while (epochs >> epoch >> start)
    if (start < leo) log->epochs_.emplace_back(epoch, start);
  // Everything that survived recovery is on disk after one sync; a single broker's high watermark is its
  // end. Sync now so that claim holds for bytes a killed process left in the page cache.
  for (auto& [base, seg] : log->segments_)
    if (::fdatasync(seg.file->fd()) != 0) return Errno("fdatasync " + log->PathFor(base, ".log"));
  log->hw_ = leo;
  return log;
}

Status PartitionLog::OpenSegment(int64_t base, bool last) {
  std::string path = PathFor(base, ".log");
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Errno("open " + path);
  Segment& seg = segments_[base];
  seg.base = base;
  seg.next_offset = base;
  seg.file = std::make_shared<SyncFile>(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return Errno("stat " + path);
  seg.size = static_cast<uint64_t>(st.st_size);
  // The last segment may end in a torn write: scan and check it all. Older segments were complete when
  // the next one was created; their headers are still scanned to rebuild producer state and indexes.
  GOVERN_RETURN_IF_ERROR(ScanSegment(seg, /*check=*/last, /*truncate_tail=*/last));
  seg.index_fd = ::open(PathFor(base, ".index").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  seg.time_fd = ::open(PathFor(base, ".timeindex").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (seg.index_fd < 0 || seg.time_fd < 0) return Errno("open index of " + path);
  return WriteIndexFiles(seg);
}

Status PartitionLog::NewSegment(int64_t base) {
  std::string path = PathFor(base, ".log");
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("create " + path);
  Segment& seg = segments_[base];
  seg.base = base;
  seg.next_offset = base;
  seg.file = std::make_shared<SyncFile>(fd);
  seg.index_fd = ::open(PathFor(base, ".index").c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  seg.time_fd = ::open(PathFor(base, ".timeindex").c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (seg.index_fd < 0 || seg.time_fd < 0) return Errno("create index of " + path);
  // The new name must survive a crash before anything acknowledged lands in it.
  return SyncDirectory(dir_);
}

// Walks the batches of `seg` from position 0, rebuilding its in-memory indexes, end offset and the
// producer state. With `check`, each batch is read whole and CRC-checked; the first bad one ends the
// segment, and with `truncate_tail` the file is cut there.
Status PartitionLog::ScanSegment(Segment& seg, bool check, bool truncate_tail) {
  seg.index.clear();
  seg.time_index.clear();
  seg.bytes_since_index = 0;
  seg.max_timestamp = -1;
  seg.next_offset = seg.base;
  uint64_t pos = 0;
  std::string buf;
  char head[kBatchHeaderSize];
  const int fd = seg.file->fd();
  while (pos < seg.size) {
    if (seg.size - pos < kBatchHeaderSize || !PreadAll(fd, head, kBatchHeaderSize, pos)) break;
    BatchHeader h = PeekHeader(std::string_view(head, kBatchHeaderSize));
    if (h.magic != 2 || h.batch_length < static_cast<int32_t>(kBatchHeaderSize - kBatchLogOverhead) ||
        h.total_size() > seg.size - pos || h.base_offset != seg.next_offset || h.last_offset_delta < 0)
      break;
    if (check) {
      buf.resize(h.total_size());
      if (!PreadAll(fd, buf.data(), buf.size(), pos)) break;
      if (!ParseBatch(buf).ok()) break;
    }
    IndexBatch(seg, h, pos, h.total_size(), /*write_files=*/false);
    TrackProducer(h);
    seg.next_offset = h.last_offset() + 1;
    pos += h.total_size();
  }
  if (pos < seg.size) {
    if (!truncate_tail)
      return DataLoss(PathFor(seg.base, ".log") + ": bad batch at position " + std::to_string(pos) +
                      " in a sealed segment");
    log::Warn("streams", "truncating torn tail",
              {{"segment", PathFor(seg.base, ".log")},
               {"position", std::to_string(pos)},
               {"dropped_bytes", std::to_string(seg.size - pos)}});
    if (::ftruncate(fd, static_cast<off_t>(pos)) != 0) return Errno("truncate " + PathFor(seg.base, ".log"));
    if (::fdatasync(fd) != 0) return Errno("fdatasync " + PathFor(seg.base, ".log"));
    seg.size = pos;
  }
  return OkStatus();
}

void PartitionLog::IndexBatch(Segment& seg, const BatchHeader& h, uint64_t position, uint64_t size,
                              bool write_files) {
  seg.max_timestamp = std::max(seg.max_timestamp, h.max_timestamp);
  bool first = seg.index.empty();
  if (first || seg.bytes_since_index >= static_cast<uint64_t>(options_.index_interval_bytes)) {
    IndexEntry e{static_cast<uint32_t>(h.base_offset - seg.base), static_cast<uint32_t>(position)};
    TimeEntry t{seg.max_timestamp, e.rel_offset};
    seg.index.push_back(e);
    seg.time_index.push_back(t);
    seg.bytes_since_index = 0;
    if (write_files) {
      // Indexes are rebuilt on recovery, so they are written but never synced on the produce path.
      char b[12];
      StoreBe32(b, e.rel_offset);
      StoreBe32(b + 4, e.position);
      PwriteAll(seg.index_fd, b, 8, (seg.index.size() - 1) * 8);
      StoreBe64(b, static_cast<uint64_t>(t.timestamp));
      StoreBe32(b + 8, t.rel_offset);
      PwriteAll(seg.time_fd, b, 12, (seg.time_index.size() - 1) * 12);
    }
  }
  seg.bytes_since_index += size;
}

Status PartitionLog::WriteIndexFiles(Segment& seg) {
  std::string idx, tidx;
  char b[12];
  for (const IndexEntry& e : seg.index) {
    StoreBe32(b, e.rel_offset);
    StoreBe32(b + 4, e.position);
    idx.append(b, 8);
  }
  for (const TimeEntry& t : seg.time_index) {
    StoreBe64(b, static_cast<uint64_t>(t.timestamp));
    StoreBe32(b + 8, t.rel_offset);
    tidx.append(b, 12);
  }
  if (::ftruncate(seg.index_fd, 0) != 0 || ::ftruncate(seg.time_fd, 0) != 0 ||
      !PwriteAll(seg.index_fd, idx.data(), idx.size(), 0) ||
      !PwriteAll(seg.time_fd, tidx.data(), tidx.size(), 0))
    return Errno("write index of " + PathFor(seg.base, ".log"));
  return OkStatus();
}

void PartitionLog::TrackProducer(const BatchHeader& h) {
  if (h.producer_id < 0) return;
  ProducerState& p = producers_[h.producer_id];
  if (h.producer_epoch != p.epoch) {
    p.epoch = h.producer_epoch;
    p.recent.clear();
  }
  p.recent.push_back({h.base_sequence, h.last_sequence(), h.base_offset});
  if (p.recent.size() > 5) p.recent.pop_front();
}

Status PartitionLog::SaveEpochs() {
  std::string text;
  for (auto& [epoch, start] : epochs_) text += std::to_string(epoch) + " " + std::to_string(start) + "\n";
  return ReplaceFileDurably(dir_ + "/leader-epoch-checkpoint", text);
}

AppendInfo PartitionLog::Append(std::string& batch, const BatchHeader& header, int32_t leader_epoch,
                                std::function<void(Status)> on_durable) {
  std::unique_lock<std::mutex> lock(mu_);
  AppendInfo info;
  if (failed_) {
    info.error = kerr::kKafkaStorageError;
    return info;
  }
  // Idempotence: the producer's sequence must continue its last batch, or repeat one of its last five.
  if (header.producer_id >= 0 && header.base_sequence >= 0) {
    auto it = producers_.find(header.producer_id);
    if (it == producers_.end() || it->second.epoch != header.producer_epoch) {
      if (it != producers_.end() && header.producer_epoch < it->second.epoch) {
        info.error = kerr::kInvalidProducerEpoch;
        return info;
      }
      if (header.base_sequence != 0) {
        info.error = it == producers_.end() ? kerr::kUnknownProducerId : kerr::kOutOfOrderSequenceNumber;
        return info;
      }
    } else {
      const ProducerState& p = it->second;
      for (const SeqEntry& e : p.recent) {
        if (e.first_seq == header.base_sequence && e.last_seq == header.last_sequence()) {
          info.duplicate = true;
          info.base_offset = e.base_offset;
          Segment& active = segments_.rbegin()->second;
          // The original may still be waiting for its sync: answer after the next one.
          syncer_->Request(active.file, std::move(on_durable));
          return info;
        }
      }
      int32_t expected = p.recent.back().last_seq == INT32_MAX ? 0 : p.recent.back().last_seq + 1;
      if (header.base_sequence != expected) {
        info.error = kerr::kOutOfOrderSequenceNumber;
        return info;
      }
    }
  }

  Segment* seg = &segments_.rbegin()->second;
  if (seg->size > 0 && seg->size + batch.size() > static_cast<uint64_t>(options_.segment_bytes)) {
    // The sealed segment's data is synced before the next segment's name can reach the disk: recovery
    // truncates a torn tail only in the last segment and refuses a damaged sealed one, so a power cut
    // between the new name and the old tail must not leave the old tail unsynced. Its indexes are synced
    // once here too, so reopening need not rebuild them.
    if (::fdatasync(seg->file->fd()) != 0) {
      log::Error("streams", "sync sealed segment", {{"dir", dir_}, {"error", std::strerror(errno)}});
      seg->file->MarkFailed();  // this error is not reported again to the Syncer's syncs of the file
      failed_ = true;
      info.error = kerr::kKafkaStorageError;
      return info;
    }
    seg->file->Seal();  // written and synced for good: the Syncer may drop its descriptions of it
    ::fdatasync(seg->index_fd);
    ::fdatasync(seg->time_fd);
    Status s = NewSegment(seg->next_offset);
    if (!s.ok()) {
      log::Error("streams", "roll segment", {{"dir", dir_}, {"error", s.ToString()}});
      info.error = kerr::kKafkaStorageError;
      return info;
    }
    seg = &segments_.rbegin()->second;
  }
  const int64_t base = seg->next_offset;
  if (epochs_.empty() || leader_epoch > epochs_.back().first) {
    epochs_.emplace_back(leader_epoch, base);
    Status s = SaveEpochs();
    if (!s.ok()) {
      epochs_.pop_back();
      info.error = kerr::kKafkaStorageError;
      return info;
    }
  }
  StampBatch(batch.data(), base, leader_epoch);
  if (!PwriteAll(seg->file->fd(), batch.data(), batch.size(), seg->size)) {
    log::Error("streams", "append", {{"dir", dir_}, {"error", std::strerror(errno)}});
    if (::ftruncate(seg->file->fd(), static_cast<off_t>(seg->size)) != 0) failed_ = true;
    info.error = kerr::kKafkaStorageError;
    return info;
  }
  BatchHeader h = header;
  h.base_offset = base;
  IndexBatch(*seg, h, seg->size, batch.size(), /*write_files=*/true);
  seg->size += batch.size();
  seg->next_offset = h.last_offset() + 1;
  TrackProducer(h);
  info.base_offset = base;
  const int64_t end = seg->next_offset;
  syncer_->Request(seg->file, [this, end, done = std::move(on_durable)](Status s) {
    if (s.ok()) {
      Advance(end);
    } else {
      std::lock_guard<std::mutex> l(mu_);
      failed_ = true;
    }
    if (done) done(s);
  });
  return info;
}

void PartitionLog::Advance(int64_t end) {
  std::function<void()> notify;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (end <= hw_) return;
    hw_ = end;
    notify = on_advance_;
  }
  if (notify) notify();
}

void PartitionLog::set_on_advance(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  on_advance_ = std::move(fn);
}

uint64_t PartitionLog::PositionFor(const Segment& seg, int64_t offset) const {
  auto rel = static_cast<uint32_t>(offset - seg.base);
  auto it = std::upper_bound(seg.index.begin(), seg.index.end(), rel,
                             [](uint32_t r, const IndexEntry& e) { return r < e.rel_offset; });
  if (it == seg.index.begin()) return 0;
  return std::prev(it)->position;
}

Result<std::string> PartitionLog::Read(int64_t offset, size_t max_bytes, int64_t limit_offset) const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t start = segments_.begin()->first;
  int64_t end = segments_.rbegin()->second.next_offset;
  if (offset < start || offset > end)
    return OutOfRange("offset " + std::to_string(offset) + " outside [" + std::to_string(start) + ", " +
                      std::to_string(end) + "]");
  std::string out;
  limit_offset = std::min(limit_offset, end);
  char head[kBatchHeaderSize];
  bool stop = offset >= limit_offset;
  for (auto it = std::prev(segments_.upper_bound(offset)); it != segments_.end() && !stop; ++it) {
    const Segment& seg = it->second;
    uint64_t pos = PositionFor(seg, std::max(offset, seg.base));
    uint64_t first = 0, last = 0;  // the range of this segment to copy
    while (pos < seg.size) {
      if (!PreadAll(seg.file->fd(), head, kBatchHeaderSize, pos)) return Internal("read " + dir_);
      BatchHeader h = PeekHeader(std::string_view(head, kBatchHeaderSize));
      if (h.base_offset >= limit_offset) {
        stop = true;
        break;
      }
      if (h.last_offset() >= offset) {
        if (last == 0) first = last = pos;
        size_t taken = out.size() + (last - first);
        // Always at least one whole batch, even above max_bytes (KIP-74).
        if (taken > 0 && taken + h.total_size() > max_bytes) {
          stop = true;
          break;
        }
        last = pos + h.total_size();
      }
      pos += h.total_size();
    }
    if (last > first) {
      size_t old = out.size();
      out.resize(old + (last - first));
      if (!PreadAll(seg.file->fd(), out.data() + old, last - first, first)) return Internal("read " + dir_);
    }
    offset = seg.next_offset;
  }
  return out;
}

int64_t PartitionLog::OffsetForTime(int64_t ts) const {
  std::lock_guard<std::mutex> lock(mu_);
  char head[kBatchHeaderSize];
  for (const auto& [base, seg] : segments_) {
    if (seg.max_timestamp < ts) continue;
    // The time index holds the running maximum: start from the last entry still below ts.
    uint64_t pos = 0;
    for (const TimeEntry& t : seg.time_index) {
      if (t.timestamp >= ts) break;
      pos = PositionFor(seg, seg.base + t.rel_offset);
    }
    while (pos < seg.size && PreadAll(seg.file->fd(), head, kBatchHeaderSize, pos)) {
      BatchHeader h = PeekHeader(std::string_view(head, kBatchHeaderSize));
      if (h.max_timestamp >= ts) return h.base_offset;
      pos += h.total_size();
    }
  }
  return -1;
}

int64_t PartitionLog::log_start_offset() const {
  std::lock_guard<std::mutex> lock(mu_);
  return segments_.begin()->first;
}
int64_t PartitionLog::log_end_offset() const {
  std::lock_guard<std::mutex> lock(mu_);
  return segments_.rbegin()->second.next_offset;
}
int64_t PartitionLog::high_watermark() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hw_;
}
int32_t PartitionLog::latest_epoch() const {
  std::lock_guard<std::mutex> lock(mu_);
  return epochs_.empty() ? -1 : epochs_.back().first;
}
std::vector<std::pair<int32_t, int64_t>> PartitionLog::EpochEntries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return epochs_;
}
size_t PartitionLog::segment_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return segments_.size();
}

int64_t PartitionLog::EndOffsetForEpoch(int32_t epoch) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < epochs_.size(); i++) {
    if (epochs_[i].first > epoch) return i == 0 ? -1 : epochs_[i].second;
  }
  return segments_.rbegin()->second.next_offset;
}

Status PartitionLog::RemoveSegmentFiles(Segment& seg) {
  int64_t base = seg.base;
  CloseSegment(seg);
  for (const char* ext : {".log", ".index", ".timeindex"}) {
    if (::unlink(PathFor(base, ext).c_str()) != 0 && errno != ENOENT) return Errno("unlink");
  }
  return OkStatus();
}

Status PartitionLog::TruncateTo(int64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  if (offset >= segments_.rbegin()->second.next_offset) return OkStatus();
  offset = std::max(offset, segments_.begin()->first);
  // Drop whole segments that start at or after the offset (keeping the first, emptied instead).
  while (segments_.size() > 1 && segments_.rbegin()->first >= offset) {
    GOVERN_RETURN_IF_ERROR(RemoveSegmentFiles(segments_.rbegin()->second));
    segments_.erase(std::prev(segments_.end()));
  }
  Segment& seg = segments_.rbegin()->second;
  uint64_t pos = PositionFor(seg, offset);
  char head[kBatchHeaderSize];
  while (pos < seg.size) {
    if (!PreadAll(seg.file->fd(), head, kBatchHeaderSize, pos)) return Internal("read " + dir_);
    BatchHeader h = PeekHeader(std::string_view(head, kBatchHeaderSize));
    if (h.last_offset() >= offset) break;
    pos += h.total_size();
  }
  if (::ftruncate(seg.file->fd(), static_cast<off_t>(pos)) != 0) return Errno("truncate");
  if (::fdatasync(seg.file->fd()) != 0) {
    seg.file->MarkFailed();
    return Errno("fdatasync");
  }
  seg.size = pos;
  producers_.clear();
  for (auto& [base, s] : segments_) GOVERN_RETURN_IF_ERROR(ScanSegment(s, false, false));
  GOVERN_RETURN_IF_ERROR(WriteIndexFiles(seg));
  GOVERN_RETURN_IF_ERROR(SyncDirectory(dir_));
  int64_t leo = seg.next_offset;
  hw_ = std::min(hw_, leo);
  while (!epochs_.empty() && epochs_.back().second >= leo) epochs_.pop_back();
  return SaveEpochs();
}

Result<int> PartitionLog::ApplyRetention(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t total = 0;
  for (auto& [base, seg] : segments_) total += seg.size;
  int deleted = 0;
  while (segments_.size() > 1) {
    Segment& oldest = segments_.begin()->second;
    bool too_old = options_.retention_ms >= 0 && oldest.max_timestamp < now_ms - options_.retention_ms;
    bool too_big = options_.retention_bytes >= 0 && total > static_cast<uint64_t>(options_.retention_bytes) &&
                   total - oldest.size >= static_cast<uint64_t>(options_.retention_bytes);
    if (!too_old && !too_big) break;
    total -= oldest.size;
    GOVERN_RETURN_IF_ERROR(RemoveSegmentFiles(oldest));
    segments_.erase(segments_.begin());
    deleted++;
  }
  if (deleted > 0) GOVERN_RETURN_IF_ERROR(SyncDirectory(dir_));
  return deleted;
}

}  // namespace govern::streams
