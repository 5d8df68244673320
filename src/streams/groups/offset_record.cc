// Encoding and decoding of offsets-file frames (format in offset_record.h).
#include "streams/groups/offset_record.h"

#include <cstring>

#include "storage/crc32c.h"

namespace govern::streams::groups {
namespace {

template <typename T>
void Put(std::string* out, T v) {
  char b[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i)
    b[i] = static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
  out->append(b, sizeof(T));
}

Status PutString16(std::string* out, std::string_view s, const char* what) {
  if (s.size() > 0xffff) return InvalidArgument(std::string(what) + " longer than 65535 bytes");
  Put<uint16_t>(out, static_cast<uint16_t>(s.size()));
  out->append(s);
  return OkStatus();
}

// Reads little-endian values from a payload; every read checks the bounds and latches failure.
class Cursor {
 public:
  explicit Cursor(std::string_view d) : d_(d) {}
  template <typename T>
  T Get() {
    if (!ok_ || d_.size() - pos_ < sizeof(T)) {
      ok_ = false;
      return T{};
    }
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(d_[pos_ + i])) << (8 * i);
    pos_ += sizeof(T);
    return static_cast<T>(v);
  }
  std::string Bytes(size_t n) {
    if (!ok_ || d_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    std::string s(d_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  std::string String16() { return Bytes(Get<uint16_t>()); }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == d_.size(); }
  size_t remaining() const { return d_.size() - pos_; }

 private:
  std::string_view d_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace

Status EncodeRecord(const OffsetRecord& record, std::string* out) {
  std::string p;
  Put<uint8_t>(&p, static_cast<uint8_t>(record.type));
  GOVERN_RETURN_IF_ERROR(PutString16(&p, record.group, "group id"));
  if (record.type == RecordType::kCommit) {
    Put<uint32_t>(&p, static_cast<uint32_t>(record.commits.size()));
    for (const auto& [tp, v] : record.commits) {
      GOVERN_RETURN_IF_ERROR(PutString16(&p, tp.topic, "topic"));
      Put<int32_t>(&p, tp.partition);
      Put<int64_t>(&p, v.offset);
      Put<int32_t>(&p, v.leader_epoch);
      Put<int64_t>(&p, v.commit_timestamp_ms);
      Put<int64_t>(&p, v.expire_timestamp_ms);
      Put<uint32_t>(&p, static_cast<uint32_t>(v.metadata.size()));
      p.append(v.metadata);
    }
  } else {
    Put<uint32_t>(&p, static_cast<uint32_t>(record.deletes.size()));
    for (const auto& tp : record.deletes) {
      GOVERN_RETURN_IF_ERROR(PutString16(&p, tp.topic, "topic"));
      Put<int32_t>(&p, tp.partition);
    }
  }
  if (p.size() > kMaxPayloadSize) return InvalidArgument("offset record larger than 64 MiB");
  Put<uint32_t>(out, static_cast<uint32_t>(p.size()));
  Put<uint32_t>(out, storage::Crc32c(p));
  out->append(p);
  return OkStatus();
}

Result<size_t> DecodeRecord(std::string_view data, OffsetRecord* out) {
  if (data.size() < kFrameHeaderSize) return OutOfRange("torn frame header");
  Cursor h(data.substr(0, kFrameHeaderSize));
  uint32_t len = h.Get<uint32_t>();
  uint32_t crc = h.Get<uint32_t>();
  if (len > kMaxPayloadSize) return DataLoss("frame length " + std::to_string(len) + " too large");
  if (data.size() - kFrameHeaderSize < len) return OutOfRange("torn frame payload");
  std::string_view payload = data.substr(kFrameHeaderSize, len);
  if (storage::Crc32c(payload) != crc) return DataLoss("frame CRC mismatch");

  Cursor c(payload);
  OffsetRecord r;
  uint8_t type = c.Get<uint8_t>();
  if (type != static_cast<uint8_t>(RecordType::kCommit) &&
      type != static_cast<uint8_t>(RecordType::kDelete) &&
      type != static_cast<uint8_t>(RecordType::kDeleteTopics))
    return DataLoss("unknown record type " + std::to_string(type));
  r.type = static_cast<RecordType>(type);
  r.group = c.String16();
  uint32_t count = c.Get<uint32_t>();
  // Each entry takes at least 6 bytes (delete) or 38 (commit): a count beyond that is corruption, and
  // checking it first keeps a hostile count from reserving memory.
  size_t min_entry = r.type == RecordType::kCommit ? 38 : 6;
  if (!c.ok() || count > c.remaining() / min_entry) return DataLoss("bad entry count");
  for (uint32_t i = 0; i < count && c.ok(); ++i) {
    TopicPartition tp;
    tp.topic = c.String16();
    tp.partition = c.Get<int32_t>();
    if (r.type == RecordType::kCommit) {
      OffsetValue v;
      v.offset = c.Get<int64_t>();
      v.leader_epoch = c.Get<int32_t>();
      v.commit_timestamp_ms = c.Get<int64_t>();
      v.expire_timestamp_ms = c.Get<int64_t>();
      v.metadata = c.Bytes(c.Get<uint32_t>());
      r.commits.emplace_back(std::move(tp), std::move(v));
    } else {
      r.deletes.push_back(std::move(tp));
    }
  }
  if (!c.ok()) return DataLoss("truncated payload");
  if (!c.at_end()) return DataLoss("trailing bytes in payload");
  *out = std::move(r);
  return kFrameHeaderSize + len;
}

}  // namespace govern::streams::groups
