// For tests and the record fuzz target: what ingest did before record_rows.h existed (DecodeRecord,
// then each event's UnstorableReason, then AppendEventRow per event), to compare CheckRecord and
// AppendRecordRows against.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "db/copy_encoder.h"
#include "services/telemetry/record.h"
#include "services/telemetry/record_rows.h"
#include "services/telemetry/schema.h"

namespace govern::telemetry::testing {

// The status CheckRecord must give for `data`.
inline Status ReferenceCheck(std::string_view data) {
  auto batch = DecodeRecord(data);
  if (!batch.ok()) return batch.status();
  for (size_t i = 0; i < batch->events.size(); ++i) {
    const Event& e = batch->events[i];
    std::string why = e.id.empty() ? "id (empty)" : UnstorableReason(e);
    if (!why.empty())
      return InvalidArgument("event " + std::to_string(i) + " (id \"" + e.id.substr(0, 64) + "\"): " + why);
  }
  return OkStatus();
}

// The COPY bytes (header, rows, trailer) ingest wrote for a valid record, through Event values.
inline std::string ReferenceRows(std::string_view data) {
  db::CopyEncoder enc;
  auto batch = DecodeRecord(data);
  std::string a, r;
  if (batch.ok()) {
    for (const Event& e : batch->events)
      AppendEventFields(enc.Row(kEventColumnCount), e, batch->received_unix_nanos, &a, &r);
  }
  enc.Finish();
  return enc.buffer();
}

// The same through AppendRecordRows.
inline std::string ViewRows(std::string_view data, size_t* rows) {
  db::CopyEncoder enc;
  RowScratch scratch;
  *rows = AppendRecordRows(data, &scratch, [&]() -> db::CopyEncoder& { return enc.Row(kEventColumnCount); });
  enc.Finish();
  return enc.buffer();
}

}  // namespace govern::telemetry::testing
