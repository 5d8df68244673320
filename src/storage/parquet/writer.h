// parquet::Writer writes one Parquet file (format per apache/parquet-format) from a flat Schema.
//
// What it writes: data page v1 pages; REQUIRED and OPTIONAL columns (definition levels in the RLE /
// bit-packing hybrid, bit width 1); dictionary encoding (a PLAIN dictionary page and RLE_DICTIONARY data
// pages) for every type but BOOLEAN, falling back to PLAIN for the rest of a column chunk once the
// dictionary passes `dictionary_page_bytes`; PLAIN otherwise, or DELTA_BINARY_PACKED for integers when
// `delta_integers` and DELTA_LENGTH_BYTE_ARRAY for same-length strings when `delta_strings`; ZSTD,
// SNAPPY or no compression; min/max (PLAIN-encoded, strings by unsigned byte order and truncated) and
// null counts in each data page header and in each column chunk's metadata; key-value metadata; the
// footer, its length and the "PAR1" magics.
// See docs/parquet.md.
//
// Rows go in column-wise (Write, a batch of ColumnVectors) or row-wise (AppendRow); both may be mixed.
// Row groups are cut after `row_group_rows` rows or once about `row_group_bytes` are buffered. Nothing
// is visible at the target path until Close() returns ok (see DurableFile). A Writer is not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/status.h"
#include "storage/parquet/file.h"
#include "storage/parquet/types.h"

namespace govern::parquet {

enum class Compression { kUncompressed, kSnappy, kZstd };

struct WriterOptions {
  Compression compression = Compression::kZstd;
  int zstd_level = 3;
  int64_t row_group_rows = 1'000'000;
  int64_t row_group_bytes = 128 << 20;  // estimated encoded bytes buffered before a row group is cut
  int64_t page_bytes = 1 << 20;         // a data page is cut when its values reach this many bytes...
  int64_t page_rows = 50'000;           // ...or this many rows
  bool dictionary = true;
  int64_t dictionary_page_bytes = 1 << 20;  // beyond this the column chunk continues in PLAIN
  // When positive: after this many values of a chunk's first page, a column whose values were mostly
  // new drops its dictionary (the page so far is re-encoded, no dictionary page is written) and the
  // rest of the file's chunks of that column skip the attempt. When 0: the same judgement is made
  // when the first page closes (at least 1,000 values), keeping that page dictionary-encoded.
  int64_t dictionary_probe_values = 0;
  // INT32/INT64 columns not dictionary-encoded use DELTA_BINARY_PACKED instead of PLAIN: sorted times
  // and counters shrink to a few bits per value. DuckDB, Arrow and Spark read it.
  bool delta_integers = false;
  // BYTE_ARRAY pages not dictionary-encoded whose values all have one length (ids, hashes) use
  // DELTA_LENGTH_BYTE_ARRAY instead of PLAIN: the lengths (DELTA_BINARY_PACKED, a few bytes for the
  // page) ahead of the values back to back, so the compressor sees no 4-byte length between each two.
  // Pages of varying lengths stay PLAIN: on free text ZSTD did better with the lengths in between
  // (measured on telemetry bodies and attributes). DuckDB, Arrow and Spark read it.
  bool delta_strings = false;
  size_t statistics_string_bytes = 64;  // longer string min/max are truncated to about this length
  std::vector<KeyValue> metadata;       // FileMetaData.key_value_metadata
  std::string created_by = "govern version 0.1";
};

// One value of a row for AppendRow: null, or the value of the column's type (int64_t for timestamps).
using Value = std::variant<std::monostate, bool, int32_t, int64_t, double, std::string_view>;

struct WriteSummary {
  uint64_t file_bytes = 0;
  int64_t rows = 0;
  int64_t row_groups = 0;
};

class Writer {
 public:
  // Writes to `path` through a DurableFile.
  static Result<std::unique_ptr<Writer>> Open(const std::string& path, Schema schema,
                                              WriterOptions options = {});
  // Writes to any sink (memory, a pipe to an upload).
  static Result<std::unique_ptr<Writer>> Create(std::unique_ptr<Sink> sink, Schema schema,
                                                WriterOptions options = {});
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Appends rows: one ColumnVector per schema column, in schema order, all of the same length, each of
  // its column's type, with nulls only in optional columns (InvalidArgument otherwise, nothing written).
  Status Write(std::span<const ColumnVector> batch);
  // Appends one row, one Value per column.
  Status AppendRow(std::span<const Value> row);

  // Flushes the last row group, writes the footer and closes the sink (for a file: durable after this).
  // The Writer accepts nothing afterwards.
  Result<WriteSummary> Close();

  const Schema& schema() const;
  int64_t rows_written() const;

 private:
  class Impl;
  explicit Writer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::parquet
