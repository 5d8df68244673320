// Fuzz target: the telemetry WAL record decoder must refuse any malformed bytes without crashing, and
// whatever it accepts must encode back to the same bytes. Ingest's view path (record_rows.h) must
// accept and refuse exactly the same records with the same messages, and write the same COPY rows.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "services/telemetry/record.h"
#include "services/telemetry/record_rows.h"
#include "services/telemetry/record_rows_testing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  govern::telemetry::RecordInfo info;
  govern::Status view = govern::telemetry::CheckRecord(in, &info);
  govern::Status want = govern::telemetry::testing::ReferenceCheck(in);
  if (view.code() != want.code() || view.message() != want.message()) std::abort();
  if (view.ok()) {
    size_t rows = 0;
    if (govern::telemetry::testing::ViewRows(in, &rows) != govern::telemetry::testing::ReferenceRows(in) ||
        rows != info.events)
      std::abort();
  }
  auto batch = govern::telemetry::DecodeRecord(in);
  if (!batch.ok()) return 0;
  std::string again;
  govern::telemetry::EncodeRecord(batch->events, batch->received_unix_nanos, &again);
  auto second = govern::telemetry::DecodeRecord(again);
  if (!second.ok() || second->events != batch->events) std::abort();
  return 0;
}
