// parquet::Reader reads a Parquet file with a flat schema: its metadata (schema, row groups, column
// statistics, key-value metadata) on Open, and any column of any row group on request.
//
// It accepts what Govern's writer writes and what common writers (DuckDB, Arrow, Spark) write for flat
// tables: BOOLEAN, INT32, INT64 (TIMESTAMP(MICROS) as kTimestampMicros), DOUBLE and BYTE_ARRAY columns,
// REQUIRED or OPTIONAL; data page v1; PLAIN, PLAIN_DICTIONARY, RLE_DICTIONARY, DELTA_BINARY_PACKED
// (integers) and DELTA_LENGTH_BYTE_ARRAY (strings) encodings; UNCOMPRESSED, SNAPPY and ZSTD. Anything
// else is Unimplemented; every malformed file is DataLoss (or InvalidArgument for a file that is not
// Parquet at all), never a crash, and every allocation is bounded by ReaderOptions. See docs/parquet.md.
//
// After Open a Reader is immutable: its const methods may be called from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "storage/parquet/file.h"
#include "storage/parquet/types.h"

namespace govern::parquet {

struct ReaderOptions {
  uint64_t max_footer_bytes = 16 << 20;
  uint64_t max_page_bytes = 256 << 20;            // uncompressed size of one page
  int64_t max_row_group_rows = 64 << 20;          // rows materialised by one ReadColumn
  uint64_t max_column_bytes = uint64_t{1} << 31;  // string bytes materialised by one ReadColumn
};

struct ColumnStatistics {
  std::optional<int64_t> null_count;
  // From min_value/max_value, decoded for the column's type; absent when the file has none or they
  // are malformed. Bounds, not necessarily values present (strings may be truncated).
  std::optional<Scalar> min;
  std::optional<Scalar> max;
};

struct ColumnChunkInfo {
  int32_t codec = 0;               // parquet CompressionCodec
  std::vector<int32_t> encodings;  // parquet Encoding values
  int64_t num_values = 0;
  int64_t compressed_bytes = 0;
  int64_t uncompressed_bytes = 0;
  bool has_dictionary = false;
  ColumnStatistics statistics;
};

struct RowGroupInfo {
  int64_t num_rows = 0;
  std::vector<ColumnChunkInfo> columns;  // in schema order
};

class Reader {
 public:
  static Result<std::unique_ptr<Reader>> Open(const std::string& path, ReaderOptions options = {});
  static Result<std::unique_ptr<Reader>> Open(std::unique_ptr<Source> source, ReaderOptions options = {});
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  const Schema& schema() const;
  int64_t num_rows() const;
  const std::vector<RowGroupInfo>& row_groups() const;
  const std::vector<KeyValue>& key_value_metadata() const;
  const std::string& created_by() const;

  // Row groups that may hold a value of integer column `column` (int32, int64 or timestamp_us) in
  // [lo, hi], judged by their min/max statistics; a row group without statistics is always included.
  // This is how archive queries skip row groups by time.
  std::vector<size_t> RowGroupsOverlapping(size_t column, int64_t lo, int64_t hi) const;

  // Reads one column of one row group: exactly row_groups()[row_group].num_rows values.
  Result<ColumnVector> ReadColumn(size_t row_group, size_t column) const;
  // Reads every column of a row group.
  Result<std::vector<ColumnVector>> ReadRowGroup(size_t row_group) const;

 private:
  class Impl;
  explicit Reader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::parquet
