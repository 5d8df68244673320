// Ingest's path from a WAL record (record.h) to telemetry_events rows without building Event values:
// CheckRecord walks the record's bytes once (when ingest reads it from the WAL) and AppendRecordRows
// walks them again to write the binary COPY rows straight from the bytes (when ingest stores it).
// Neither allocates per event (scratch buffers are reused), where DecodeRecord allocates every string
// and attribute of every event: that was most of ingest's own CPU per stored event.
//
// Promises:
//  - CheckRecord accepts exactly the records DecodeRecord accepts, refusing the others with the same
//    DataLoss message; of those, it refuses with InvalidArgument exactly the records holding an event
//    that cannot be stored (an empty id, or a NUL character as UnstorableReason defines it), naming the
//    first such event as "event I (id "..."): reason".
//  - For a record CheckRecord accepted, AppendRecordRows writes the same bytes, row for row, as
//    AppendEventRow (schema.h) writes for the events DecodeRecord returns.
//
// Pure functions; thread-safe (a RowScratch belongs to one caller at a time).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "db/copy_encoder.h"

namespace govern::telemetry {

// What ingest needs to know of a checked record before it stores it.
struct RecordInfo {
  int64_t received_unix_nanos = 0;
  size_t events = 0;
  // One event time from each UTC day the record's events fall in (PartitionFor of each names the
  // partitions the record needs), in order of first appearance.
  std::vector<int64_t> day_times;
};

// Checks `data` (see the promises above) and fills *info.
Status CheckRecord(std::string_view data, RecordInfo* info);

// Reused between calls so that writing rows allocates nothing in the steady state.
struct RowScratch {
  std::string attributes;
  std::string resource_attributes;
};

// Writes every event of a record that CheckRecord accepted as one telemetry_events row: `start_row`
// is called once per event and returns the encoder positioned at a new row of kEventColumnCount
// fields (CopyIn::Row, or CopyEncoder::Row in tests). Returns the number of rows written.
template <typename StartRow>
size_t AppendRecordRows(std::string_view data, RowScratch* scratch, StartRow&& start_row);

namespace internal {
// One event's fields, viewing the record's bytes.
struct EventView {
  std::string_view id, org, type, severity_text, body, service_name, scope_name, scope_version, trace_id_hex,
      span_id_hex;
  int64_t time_unix_nanos = 0, observed_unix_nanos = 0;
  int64_t received_unix_nanos = 0;  // the record's
  int32_t severity_number = 0;
  uint8_t body_kind = 0;
  uint32_t flags = 0, dropped_attributes_count = 0;
  std::string_view attributes, resource_attributes;  // the encoded key/value pairs (after the count)
  uint64_t attribute_count = 0, resource_attribute_count = 0;
};
// Walks a record that CheckRecord accepted.
class RecordWalker {
 public:
  explicit RecordWalker(std::string_view data);
  // The next event, false after the last one.
  bool Next(EventView* e);

 private:
  bool Varint(uint64_t* v);
  bool Pairs(uint64_t* count, std::string_view* encoded);

  std::string_view data_;
  size_t pos_ = 0;
  uint64_t left_ = 0;
  int64_t received_ = 0;
};
// The attributes column of a viewed event: {"key": value_json, ...} as AttributesObjectJson writes it.
void AttributesJson(std::string_view encoded, uint64_t count, std::string* out);
void AppendRowFields(db::CopyEncoder& row, const EventView& e, RowScratch* scratch);
}  // namespace internal

template <typename StartRow>
size_t AppendRecordRows(std::string_view data, RowScratch* scratch, StartRow&& start_row) {
  internal::RecordWalker walker(data);
  internal::EventView e;
  size_t rows = 0;
  while (walker.Next(&e)) {
    internal::AppendRowFields(start_row(), e, scratch);
    ++rows;
  }
  return rows;
}

}  // namespace govern::telemetry
