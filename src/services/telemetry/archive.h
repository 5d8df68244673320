// The telemetry archive: how events of one organisation and hour are laid out in a Parquet file, the
// object keys and manifest rows that name those files, and Archive, the reader that answers queries
// from them (docs/telemetry-archive.md).
//
// Layout of a file: one Parquet column per telemetry_events column, in table order, all REQUIRED;
// times and counters INT64 (nanoseconds since the Unix epoch; our writer has no TIMESTAMP(NANOS)),
// severity_number and body_kind INT32, text columns BYTE_ARRAY UTF8 (dictionary-encoded where the
// values repeat), attributes and resource_attributes as compact JSON object text. Rows are sorted by
// (time_ns, id); row groups carry min/max statistics, so a reader skips row groups by time. ZSTD.
// Key-value metadata: govern.telemetry.org, govern.telemetry.hour_ns, govern.telemetry.layout.
//
// Files are write-once: a key listed in telemetry_archive_files is never rewritten, and a key not
// listed there (an orphan of a crashed compaction) is never read.
//
// Archive is thread-safe: Scan and ExportHour may run on many threads at once (the footer cache is
// locked; parquet::Reader is immutable after Open).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "db/connection.h"
#include "db/pool.h"
#include "services/telemetry/query_types.h"
#include "storage/objstore/store.h"
#include "storage/parquet/reader.h"
#include "storage/parquet/types.h"
#include "storage/parquet/writer.h"

namespace govern::telemetry {

// Column indexes of the archive layout (= telemetry_events column order, schema.h kEventColumns).
enum EventColumn : size_t {
  kColOrg,
  kColTimeNs,
  kColId,
  kColObservedNs,
  kColReceivedNs,
  kColType,
  kColSeverityText,
  kColSeverityNumber,
  kColBodyKind,
  kColBody,
  kColAttributes,
  kColResourceAttributes,
  kColServiceName,
  kColScopeName,
  kColScopeVersion,
  kColTraceId,
  kColSpanId,
  kColFlags,
  kColDroppedAttributes,
  kEventColumnsInFile,
};

// The Parquet schema of an archive file.
const parquet::Schema& EventParquetSchema();

// Writer options of an archive file: ZSTD, statistics, `row_group_rows` rows per row group, and the
// key-value metadata naming the organisation and hour.
parquet::WriterOptions EventWriterOptions(std::string_view org, int64_t hour_ns, int64_t row_group_rows);

// The start of the UTC hour holding `time_ns` (floor division: times before 1970 work too).
int64_t HourOf(int64_t time_ns);
// "2026-11-30T13" for the hour starting at hour_ns.
std::string HourLabel(int64_t hour_ns);
// The object key of file `seq` of an organisation's hour:
// "events/org=<org>/hour=<YYYY-MM-DDTHH>/<seq>.parquet". The organisation is percent-encoded outside
// [A-Za-z0-9._-] so any organisation name makes a valid, unambiguous key.
std::string ArchiveObjectKey(std::string_view org, int64_t hour_ns, int64_t seq);

// JSON text as PostgreSQL prints jsonb ("{\"a\": [1, 2]}") made compact ("{\"a\":[1,2]}"): whitespace
// outside strings removed, nothing else changed (numbers keep their exact digits).
std::string CompactJson(std::string_view json);
// The members of a JSON object, in text order, each value as compact JSON text. InvalidArgument when
// `json` is not one well-formed JSON object.
Result<std::vector<Attribute>> AttributesFromJson(std::string_view json);
// The JSON object text of `attributes` (keys escaped, values as given).
std::string AttributesToJson(const std::vector<Attribute>& attributes);

// Column-wise events in the archive layout: what the compactor fills from PostgreSQL rows and the
// writer takes, and what a reader's row group turns back into StoredEvents.
class EventColumns {
 public:
  EventColumns();
  size_t size() const { return columns_[kColTimeNs].size(); }
  void Clear();
  // Appends one row of `SELECT <kEventColumns>` in PostgreSQL's text format, starting at column
  // `first`. jsonb text is stored compact. InvalidArgument when a number does not parse.
  Status AppendPgRow(const db::Rows& rows, int row, int first = 0);
  void Append(const StoredEvent& event);
  const std::vector<parquet::ColumnVector>& columns() const { return columns_; }

 private:
  std::vector<parquet::ColumnVector> columns_;
};

// Row `row` of a read row group (columns in the archive layout) as a StoredEvent. DataLoss when the
// stored attributes are not a JSON object.
Result<StoredEvent> EventFromColumns(const std::vector<parquet::ColumnVector>& columns, size_t row);

// One row of telemetry_archive_files.
struct ArchiveFile {
  std::string org;
  int64_t hour_ns = 0;
  int64_t seq = 0;
  std::string object_key;
  int64_t rows = 0;
  int64_t bytes = 0;
  int64_t min_time_ns = 0;
  int64_t max_time_ns = 0;
};

struct ArchiveOptions {
  size_t footer_cache_files = 512;  // parquet::Readers (footers) kept open, least recently used out
  // Bytes fetched per read from the store: pages of one row group are read in a few large requests
  // rather than one per page (which matters for S3).
  uint64_t read_block_bytes = 4 << 20;
  parquet::ReaderOptions reader;
};

class Archive : public ArchiveReader {
 public:
  // Borrows `pool` and `store`, which must outlive the Archive.
  Archive(db::Pool* pool, objstore::Store* store, ArchiveOptions options = {});
  ~Archive() override;

  // Up to query.limit events of query.org in [from_ns, to_ns) matching type and attributes, strictly
  // after query.after in the query's order, from manifest-listed files only. Files and row groups
  // whose time bounds cannot hold a wanted event are not read.
  Result<std::vector<StoredEvent>> Scan(const EventQuery& query) override;

  // Manifest rows of `org` whose time bounds meet [from_ns, to_ns), ordered by min_time_ns.
  Result<std::vector<ArchiveFile>> ListFiles(db::Connection& conn, std::string_view org, int64_t from_ns,
                                             int64_t to_ns);

  // Every event of `org` in the hour starting at hour_ns, from PostgreSQL and from archived files
  // alike, sorted by (time_ns, id), written to one local Parquet file at `path` (durably; nothing at
  // `path` unless it succeeds). For `govern telemetry export`.
  Status ExportHour(db::Connection& conn, std::string_view org, int64_t hour_ns, const std::string& path);

  // Reads every event of one archive file (tests, export).
  Result<std::vector<StoredEvent>> ReadFile(const ArchiveFile& file);

  // Files whose footer is cached (tests).
  size_t cached_files() const;

 private:
  Result<std::shared_ptr<const parquet::Reader>> OpenFile(const ArchiveFile& file);

  db::Pool* pool_;
  objstore::Store* store_;
  ArchiveOptions options_;
  mutable std::mutex mu_;
  // LRU: most recent at the front; key = object key.
  std::list<std::pair<std::string, std::shared_ptr<const parquet::Reader>>> lru_;
  std::unordered_map<std::string, decltype(lru_)::iterator> cache_;
};

}  // namespace govern::telemetry
