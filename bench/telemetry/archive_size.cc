// The archive's size and encoding cost on the bench generator's events, without PostgreSQL: generates
// N events of one organisation (generator.h, ids as intake assigns them), sorts them as the compactor
// reads them, writes one archive file with the archive's writer options, reads it back and checks every
// event, and prints the file's bytes per column, the ratio to the events' value bytes and the writer's
// CPU time per row. Load-independent figures (bytes, ratio; CPU per row is the process's own).
//
// Usage: telemetry_archive_size [rows (default 200000)] [events per second (default 50000)] [out.parquet]
// Environment overrides of the archive's writer options, for experiments: TAS_ZSTD (level),
// TAS_PAGE_ROWS, TAS_PAGE_BYTES, TAS_PROBE (dictionary_probe_values), TAS_DELTA (0/1),
// TAS_DLBA (0/1: delta_strings), TAS_ROW_GROUP.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "generator.h"
#include "services/telemetry/archive.h"
#include "storage/parquet/reader.h"
#include "storage/parquet/writer.h"

using namespace govern;
using namespace govern::telemetry;

namespace {

double SelfCpu() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

void Die(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

size_t ValueBytes(const StoredEvent& s, const std::vector<parquet::ColumnVector>& cols, size_t row) {
  size_t n = 0;
  for (const auto& c : cols) {
    switch (c.type()) {
      case parquet::Type::kString:
        n += c.GetString(row).size();
        break;
      case parquet::Type::kInt32:
        n += 4;
        break;
      default:
        n += 8;
    }
  }
  (void)s;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t rows = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200000;
  const double rate = argc > 2 ? std::atof(argv[2]) : 50000;
  const std::string path = argc > 3 ? argv[3] : "/tmp/telemetry_archive_size.parquet";

  benchgen::GeneratorOptions go;
  go.org = "acme";
  go.events_per_second = rate;
  benchgen::Generator gen(go);
  std::vector<Event> events(rows);
  for (auto& e : events) gen.Next(&e);
  AssignMissingIds(events);
  std::vector<StoredEvent> stored(rows);
  for (size_t i = 0; i < rows; ++i) {
    stored[i].event = std::move(events[i]);
    // Intake stamps a batch's receive time a few milliseconds after the event time.
    stored[i].received_ns =
        stored[i].event.time_unix_nanos + 3'000'000 + static_cast<int64_t>(i % 997) * 1000;
  }
  std::sort(stored.begin(), stored.end(),
            [](const StoredEvent& a, const StoredEvent& b) { return a.key() < b.key(); });
  const int64_t hour_ns = HourOf(stored.front().event.time_unix_nanos);
  if (const char* v = std::getenv("TAS_SORT_TYPE"); v && *v == '1') {
    const size_t rg = std::getenv("TAS_ROW_GROUP") ? std::atoll(std::getenv("TAS_ROW_GROUP")) : 16384;
    for (size_t b = 0; b < rows; b += rg) {
      std::stable_sort(
          stored.begin() + b, stored.begin() + std::min(rows, b + rg),
          [](const StoredEvent& x, const StoredEvent& y) { return x.event.type < y.event.type; });
    }
  }

  const int64_t row_group_rows =
      std::getenv("TAS_ROW_GROUP") ? std::atoll(std::getenv("TAS_ROW_GROUP")) : 16384;
  EventColumns columns;
  size_t value_bytes = 0;
  double cpu0 = SelfCpu();
  parquet::WriterOptions wo = EventWriterOptions("acme", hour_ns, row_group_rows);
  // Overrides for experiments: TAS_ZSTD, TAS_PAGE_ROWS, TAS_PAGE_BYTES, TAS_PROBE, TAS_DELTA, TAS_DLBA.
  if (const char* v = std::getenv("TAS_ZSTD")) wo.zstd_level = std::atoi(v);
  if (const char* v = std::getenv("TAS_PAGE_ROWS")) wo.page_rows = std::atoll(v);
  if (const char* v = std::getenv("TAS_PAGE_BYTES")) wo.page_bytes = std::atoll(v);
  if (const char* v = std::getenv("TAS_PROBE")) wo.dictionary_probe_values = std::atoll(v);
  if (const char* v = std::getenv("TAS_DELTA")) wo.delta_integers = std::atoi(v) != 0;
  if (const char* v = std::getenv("TAS_DLBA")) wo.delta_strings = std::atoi(v) != 0;
  auto writer = parquet::Writer::Open(path, EventParquetSchema(), wo);
  Die(writer.status(), "open");
  double convert_cpu = 0;
  for (size_t begin = 0; begin < rows; begin += 16384) {
    size_t end = std::min(rows, begin + 16384);
    double c0 = SelfCpu();
    columns.Clear();
    for (size_t i = begin; i < end; ++i) columns.Append(stored[i]);
    convert_cpu += SelfCpu() - c0;
    for (size_t i = 0; i < columns.size(); ++i)
      value_bytes += ValueBytes(stored[begin + i], columns.columns(), i);
    Die((*writer)->Write(columns.columns()), "write");
  }
  auto summary = (*writer)->Close();
  Die(summary.status(), "close");
  double write_cpu = SelfCpu() - cpu0 - convert_cpu;

  auto reader = parquet::Reader::Open(path);
  Die(reader.status(), "reopen");
  std::map<size_t, int64_t> column_bytes;
  size_t checked = 0;
  double r0 = SelfCpu();
  for (size_t g = 0; g < (*reader)->row_groups().size(); ++g) {
    const auto& rg = (*reader)->row_groups()[g];
    for (size_t c = 0; c < rg.columns.size(); ++c) column_bytes[c] += rg.columns[c].compressed_bytes;
    auto cols = (*reader)->ReadRowGroup(g);
    Die(cols.status(), "read");
    for (size_t r = 0; r < static_cast<size_t>(rg.num_rows); ++r, ++checked) {
      auto e = EventFromColumns(*cols, r);
      Die(e.status(), "event");
      if (!(*e == stored[checked])) {
        std::fprintf(stderr, "row %zu differs after the round trip\n", checked);
        return 1;
      }
    }
  }
  double read_cpu = SelfCpu() - r0;
  if (checked != rows) {
    std::fprintf(stderr, "read %zu rows, wrote %zu\n", checked, rows);
    return 1;
  }

  std::printf(
      "rows %zu, row groups %lld, value bytes %zu (%.1f per row), parquet bytes %llu (%.1f per row)\n", rows,
      static_cast<long long>(summary->row_groups), value_bytes, double(value_bytes) / rows,
      static_cast<unsigned long long>(summary->file_bytes), double(summary->file_bytes) / rows);
  std::printf("ratio value bytes / parquet bytes: %.2fx\n",
              double(value_bytes) / double(summary->file_bytes));
  std::printf("writer CPU %.3f s (%.0f rows per CPU-second), EventColumns fill %.3f s, read+check %.3f s\n",
              write_cpu, rows / write_cpu, convert_cpu, read_cpu);
  const auto& schema = EventParquetSchema();
  for (const auto& [c, b] : column_bytes)
    std::printf("  %-20s %10lld bytes %6.2f per row\n", schema[c].name.c_str(), static_cast<long long>(b),
                double(b) / rows);
  return 0;
}
