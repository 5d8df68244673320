// Record batch v2 parsing, checking and stamping (see batch.h).
#include "streams/batch.h"

#include "storage/crc32c.h"
#include "streams/wire.h"

namespace govern::streams {

int32_t BatchHeader::last_sequence() const {
  int64_t last = int64_t{base_sequence} + last_offset_delta;
  if (last > INT32_MAX) last -= int64_t{INT32_MAX} + 1;
  return static_cast<int32_t>(last);
}

BatchHeader PeekHeader(std::string_view d) {
  const char* p = d.data();
  BatchHeader h;
  h.base_offset = static_cast<int64_t>(LoadBe64(p));
  h.batch_length = static_cast<int32_t>(LoadBe32(p + 8));
  h.leader_epoch = static_cast<int32_t>(LoadBe32(p + 12));
  h.magic = static_cast<int8_t>(p[16]);
  h.crc = LoadBe32(p + 17);
  h.attributes = static_cast<int16_t>(LoadBe16(p + 21));
  h.last_offset_delta = static_cast<int32_t>(LoadBe32(p + 23));
  h.base_timestamp = static_cast<int64_t>(LoadBe64(p + 27));
  h.max_timestamp = static_cast<int64_t>(LoadBe64(p + 35));
  h.producer_id = static_cast<int64_t>(LoadBe64(p + 43));
  h.producer_epoch = static_cast<int16_t>(LoadBe16(p + 51));
  h.base_sequence = static_cast<int32_t>(LoadBe32(p + 53));
  h.records_count = static_cast<int32_t>(LoadBe32(p + 57));
  return h;
}

namespace {

// Walks uncompressed records: each is a zigzag varint length then that many bytes, whose offset delta
// must equal its index.
Status CheckRecords(std::string_view body, int32_t count) {
  Reader r(body);
  for (int32_t i = 0; i < count; i++) {
    int32_t len = r.Varint();
    if (!r.ok() || len < 0) return InvalidArgument("record " + std::to_string(i) + ": bad length");
    Reader rec(r.Bytes(static_cast<size_t>(len)));
    if (!r.ok()) return InvalidArgument("record " + std::to_string(i) + " runs past the batch");
    rec.Int8();     // attributes
    rec.Varlong();  // timestamp delta
    int32_t delta = rec.Varint();
    if (!rec.ok() || delta != i)
      return InvalidArgument("record " + std::to_string(i) + ": offset delta " + std::to_string(delta));
  }
  if (r.remaining() != 0) return InvalidArgument("bytes after the last record");
  return OkStatus();
}

}  // namespace

Result<BatchHeader> ParseBatch(std::string_view data) {
  if (data.size() < kBatchHeaderSize) return InvalidArgument("record batch shorter than its header");
  BatchHeader h = PeekHeader(data);
  if (h.magic != 2) return InvalidArgument("record batch magic " + std::to_string(h.magic) + ", want 2");
  if (h.batch_length < 0 || h.total_size() != data.size())
    return InvalidArgument("record batch length " + std::to_string(h.batch_length) + " does not match " +
                           std::to_string(data.size()) + " bytes");
  uint32_t crc = storage::Crc32c(data.data() + kBatchCrcStart, data.size() - kBatchCrcStart);
  if (crc != h.crc) return DataLoss("record batch CRC mismatch");
  if (h.records_count <= 0) return InvalidArgument("record batch holds no records");
  if (h.last_offset_delta != h.records_count - 1)
    return InvalidArgument("lastOffsetDelta " + std::to_string(h.last_offset_delta) + " with " +
                           std::to_string(h.records_count) + " records");
  if (h.codec() > 4) return InvalidArgument("unknown compression codec " + std::to_string(h.codec()));
  if (h.codec() == 0) GOVERN_RETURN_IF_ERROR(CheckRecords(data.substr(kBatchHeaderSize), h.records_count));
  return h;
}

Status ForEachBatch(std::string_view records, const std::function<Status(std::string_view)>& fn) {
  if (records.empty()) return InvalidArgument("empty record set");
  size_t pos = 0;
  while (pos < records.size()) {
    if (records.size() - pos < kBatchHeaderSize) return InvalidArgument("record set ends in a partial batch");
    int32_t len = static_cast<int32_t>(LoadBe32(records.data() + pos + kBatchLengthOffset));
    if (len < static_cast<int32_t>(kBatchHeaderSize - kBatchLogOverhead) ||
        records.size() - pos - kBatchLogOverhead < static_cast<size_t>(len))
      return InvalidArgument("record set ends in a partial batch");
    size_t total = static_cast<size_t>(len) + kBatchLogOverhead;
    GOVERN_RETURN_IF_ERROR(fn(records.substr(pos, total)));
    pos += total;
  }
  return OkStatus();
}

void StampBatch(char* batch, int64_t base_offset, int32_t leader_epoch) {
  StoreBe64(batch, static_cast<uint64_t>(base_offset));
  StoreBe32(batch + 12, static_cast<uint32_t>(leader_epoch));
}

namespace {
void PutVarlong(std::string& out, int64_t v) {
  uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (z >= 0x80) {
    out.push_back(static_cast<char>((z & 0x7f) | 0x80));
    z >>= 7;
  }
  out.push_back(static_cast<char>(z));
}
}  // namespace

std::string BuildBatch(const std::vector<std::string>& values, int64_t timestamp_ms, int64_t producer_id,
                       int16_t producer_epoch, int32_t base_sequence) {
  std::string records;
  for (size_t i = 0; i < values.size(); i++) {
    std::string rec;
    rec.push_back(0);                          // attributes
    PutVarlong(rec, 0);                        // timestamp delta
    PutVarlong(rec, static_cast<int64_t>(i));  // offset delta
    PutVarlong(rec, -1);                       // null key
    PutVarlong(rec, static_cast<int64_t>(values[i].size()));
    rec += values[i];
    PutVarlong(rec, 0);  // no headers
    PutVarlong(records, static_cast<int64_t>(rec.size()));
    records += rec;
  }
  Writer w;
  w.Int64(0);
  w.Int32(static_cast<int32_t>(kBatchHeaderSize - kBatchLogOverhead + records.size()));
  w.Int32(-1);
  w.Int8(2);
  w.Int32(0);  // crc, patched below
  w.Int16(0);
  w.Int32(static_cast<int32_t>(values.size()) - 1);
  w.Int64(timestamp_ms);
  w.Int64(timestamp_ms);
  w.Int64(producer_id);
  w.Int16(producer_epoch);
  w.Int32(base_sequence);
  w.Int32(static_cast<int32_t>(values.size()));
  w.Raw(records);
  std::string& s = w.str();
  StoreBe32(s.data() + 17, storage::Crc32c(s.data() + kBatchCrcStart, s.size() - kBatchCrcStart));
  return s;
}

}  // namespace govern::streams
