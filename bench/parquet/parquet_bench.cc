// Compaction to Parquet: rows/s writing realistic telemetry rows (events.h) to a durable file with
// ZSTD and the size ratio against the rows' raw bytes; beside it, zstd alone over the same bytes (the
// raw limit) and the read-back speed. Usage: parquet_bench [--quick] [--results DIR]
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "events.h"
#include "report.h"
#include "storage/parquet/reader.h"
#include "storage/parquet/writer.h"

namespace govern {
namespace {

using Clock = std::chrono::steady_clock;

parquet::Schema EventSchema() {
  using parquet::Type;
  return {{"org_id", Type::kString, false},  {"time", Type::kTimestampMicros, false},
          {"type", Type::kString, false},    {"service", Type::kString, false},
          {"host", Type::kString, false},    {"level", Type::kString, false},
          {"message", Type::kString, false}, {"attributes", Type::kString, false},
          {"status", Type::kInt32, false},   {"duration_ms", Type::kDouble, false},
          {"tokens", Type::kInt64, true}};
}

struct Batches {
  std::vector<std::vector<parquet::ColumnVector>> batches;
  size_t rows = 0;
  size_t raw_bytes = 0;
  std::string ndjson_like;  // the same values, concatenated, for the zstd-alone peer
};

// With `sort`, each batch is ordered by (type, service) before it is written: a layout the compactor
// could choose (similar events side by side) at the cost of time order inside a batch.
Batches Generate(size_t rows, size_t batch_rows, bool sort) {
  Batches out;
  bench::EventGenerator gen(42);
  parquet::Schema schema = EventSchema();
  std::vector<bench::Event> events;
  for (size_t done = 0; done < rows;) {
    std::vector<parquet::ColumnVector> cols;
    for (const auto& c : schema) cols.emplace_back(c.type);
    size_t n = std::min(batch_rows, rows - done);
    events.resize(n);
    for (bench::Event& ev : events) gen.Next(&ev);
    if (sort) {
      std::stable_sort(events.begin(), events.end(), [](const bench::Event& a, const bench::Event& b) {
        return std::tie(a.type, a.service) < std::tie(b.type, b.service);
      });
    }
    for (const bench::Event& e : events) {
      cols[0].AppendString(e.org_id);
      cols[1].AppendInt64(e.time_us);
      cols[2].AppendString(e.type);
      cols[3].AppendString(e.service);
      cols[4].AppendString(e.host);
      cols[5].AppendString(e.level);
      cols[6].AppendString(e.message);
      cols[7].AppendString(e.attributes);
      cols[8].AppendInt32(e.status);
      cols[9].AppendDouble(e.duration_ms);
      if (e.has_tokens)
        cols[10].AppendInt64(e.tokens);
      else
        cols[10].AppendNull();
      out.raw_bytes += e.RawBytes();
      out.ndjson_like += e.org_id + '\t' + std::to_string(e.time_us) + '\t' + e.type + '\t' + e.service +
                         '\t' + e.host + '\t' + e.level + '\t' + e.message + '\t' + e.attributes + '\t' +
                         std::to_string(e.status) + '\t' + std::to_string(e.duration_ms) + '\t' +
                         std::to_string(e.tokens) + '\n';
    }
    done += n;
    out.batches.push_back(std::move(cols));
  }
  out.rows = rows;
  return out;
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace
}  // namespace govern

int main(int argc, char** argv) {
  using namespace govern;
  bench::Args args = bench::ParseArgs(argc, argv);
  const size_t rows = args.quick ? 200'000 : 1'000'000;
  const int rounds = args.quick ? 2 : 3;
  std::printf("generating %zu events...\n", rows);
  const bool sort = std::getenv("PARQUET_BENCH_SORT") != nullptr;
  Batches data = Generate(rows, sort ? 100'000 : 8192, sort);
  std::printf("raw bytes per row: %.1f\n", static_cast<double>(data.raw_bytes) / static_cast<double>(rows));

  const std::string dir = std::filesystem::temp_directory_path() / "govern-parquet-bench";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/org-0042-2026-01-01T00.parquet";

  double best_write = 0;
  uint64_t file_bytes = 0;
  for (int r = 0; r < rounds; ++r) {
    parquet::WriterOptions options;  // the defaults the compactor uses, unless overridden for a sweep
    if (const char* level = std::getenv("PARQUET_BENCH_ZSTD_LEVEL")) options.zstd_level = std::atoi(level);
    if (const char* page = std::getenv("PARQUET_BENCH_PAGE_BYTES")) options.page_bytes = std::atoll(page);
    if (const char* rows_per_page = std::getenv("PARQUET_BENCH_PAGE_ROWS"))
      options.page_rows = std::atoll(rows_per_page);
    auto start = Clock::now();
    auto writer = parquet::Writer::Open(path, EventSchema(), options);
    if (!writer.ok()) {
      std::fprintf(stderr, "%s\n", writer.status().ToString().c_str());
      return 1;
    }
    for (const auto& b : data.batches) {
      Status s = (*writer)->Write(b);
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        return 1;
      }
    }
    auto summary = (*writer)->Close();  // includes fsync, rename and directory fsync
    auto end = Clock::now();
    if (!summary.ok()) {
      std::fprintf(stderr, "%s\n", summary.status().ToString().c_str());
      return 1;
    }
    file_bytes = summary->file_bytes;
    best_write = std::max(best_write, static_cast<double>(rows) / Seconds(start, end));
  }

  // Where the bytes go, per column (compressed, all row groups).
  if (auto reader = parquet::Reader::Open(path); reader.ok()) {
    const auto& schema = (*reader)->schema();
    std::vector<int64_t> per_column(schema.size(), 0);
    for (const auto& g : (*reader)->row_groups()) {
      for (size_t c = 0; c < schema.size(); ++c) per_column[c] += g.columns[c].compressed_bytes;
    }
    for (size_t c = 0; c < schema.size(); ++c) {
      std::printf("  %-12s %6.2f B/row\n", schema[c].name.c_str(),
                  static_cast<double>(per_column[c]) / static_cast<double>(rows));
    }
  }

  // Read back every column of every row group.
  double best_read = 0;
  for (int r = 0; r < rounds; ++r) {
    auto start = Clock::now();
    auto reader = parquet::Reader::Open(path);
    size_t got = 0;
    for (size_t g = 0; reader.ok() && g < (*reader)->row_groups().size(); ++g) {
      auto cols = (*reader)->ReadRowGroup(g);
      if (!cols.ok()) {
        std::fprintf(stderr, "%s\n", cols.status().ToString().c_str());
        return 1;
      }
      got += (*cols)[0].size();
    }
    auto end = Clock::now();
    if (got != rows) {
      std::fprintf(stderr, "read back %zu rows, want %zu\n", got, rows);
      return 1;
    }
    best_read = std::max(best_read, static_cast<double>(rows) / Seconds(start, end));
  }

  // The raw limit: zstd level 3 alone over the same values, as one stream.
  std::string compressed(ZSTD_compressBound(data.ndjson_like.size()), '\0');
  auto zs = Clock::now();
  size_t zn = ZSTD_compress(compressed.data(), compressed.size(), data.ndjson_like.data(),
                            data.ndjson_like.size(), 3);
  auto ze = Clock::now();
  if (ZSTD_isError(zn)) return 1;
  const double zstd_rows_per_s = static_cast<double>(rows) / Seconds(zs, ze);
  const double zstd_ratio = static_cast<double>(data.raw_bytes) / static_cast<double>(zn);
  const double ratio = static_cast<double>(data.raw_bytes) / static_cast<double>(file_bytes);
  std::filesystem::remove_all(dir);

  bench::Report report("parquet", args.quick);
  report.Add(
      {.metric = "compaction_rows_per_s",
       .value = best_write,
       .unit = "rows/s",
       .target = 277000,
       .peer = "zstd -3 alone, same bytes",
       .peer_value = zstd_rows_per_s,
       .note = "1 core, ~" + std::to_string(data.raw_bytes / rows) + " B rows, durable file (fsync+rename)"});
  report.Add({.metric = "compaction_size_ratio",
              .value = ratio,
              .unit = "x",
              .target = 25.7,
              .peer = "zstd -3 alone, same bytes",
              .peer_value = zstd_ratio,
              .note = std::to_string(file_bytes) + " B file for " + std::to_string(rows) + " rows"});
  report.Add(
      {.metric = "archive_read_rows_per_s", .value = best_read, .unit = "rows/s", .note = "every column"});
  return report.Finish(args.results_dir) ? 0 : 1;
}
