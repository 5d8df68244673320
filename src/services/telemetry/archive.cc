// The archive layout (events <-> Parquet columns) and Archive, the query side over manifest-listed files.
#include "services/telemetry/archive.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <utility>

#include "services/telemetry/json_text.h"
#include "services/telemetry/schema.h"
#include "storage/objstore/local_store.h"
#include "storage/parquet/file.h"

namespace govern::telemetry {
namespace {

constexpr int kLayoutVersion = 1;

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Index just past the JSON string starting at s[i] == '"', or npos when it does not end.
size_t SkipString(std::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// Index just past the JSON value starting at s[i] (compact text), or npos when it is cut short.
size_t SkipValue(std::string_view s, size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  if (s[i] == '"') return SkipString(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      char c = s[i];
      if (c == '"') {
        i = SkipString(s, i);
        if (i == std::string_view::npos) return i;
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return std::string_view::npos;
  }
  size_t j = i;
  while (j < s.size() && s[j] != ',' && s[j] != '}' && s[j] != ']') ++j;
  return j == i ? std::string_view::npos : j;
}

Result<std::string> DecodeKey(std::string_view quoted) {
  if (quoted.find('\\') == std::string_view::npos) {
    return std::string(quoted.substr(1, quoted.size() - 2));
  }
  auto j = nlohmann::json::parse(quoted, nullptr, /*allow_exceptions=*/false);
  if (!j.is_string()) return InvalidArgument("bad JSON object key");
  return j.get<std::string>();
}

template <typename T>
bool ParseInt(std::string_view text, T* out) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && p == text.data() + text.size();
}

// Orders events the way a query wants them: ascending (time_ns, id), or descending.
struct KeyOrder {
  bool newest_first;
  bool Before(const EventKey& a, const EventKey& b) const { return newest_first ? b < a : a < b; }
  // The same on events, without copying their ids into EventKeys.
  bool Before(const StoredEvent& a, const StoredEvent& b) const {
    const Event& x = newest_first ? b.event : a.event;
    const Event& y = newest_first ? a.event : b.event;
    if (x.time_unix_nanos != y.time_unix_nanos) return x.time_unix_nanos < y.time_unix_nanos;
    return x.id < y.id;
  }
};

// A Source over an object in a Store, reading `block` bytes at a time and keeping the last block, so
// the pages of a column chunk cost one request rather than one each.
class StoreSource final : public parquet::Source {
 public:
  StoreSource(objstore::Store* store, std::string key, uint64_t size, uint64_t block)
      : store_(store), key_(std::move(key)), size_(size), block_(block) {}
  uint64_t size() const override { return size_; }
  Status ReadAt(uint64_t offset, size_t n, std::string* out) const override {
    if (offset > size_ || n > size_ - offset) {
      return DataLoss("read past the end of " + key_);
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (offset >= cached_offset_ && offset + n <= cached_offset_ + cached_.size()) {
      out->assign(cached_, offset - cached_offset_, n);
      return OkStatus();
    }
    uint64_t want = std::min<uint64_t>(std::max<uint64_t>(n, block_), size_ - offset);
    auto bytes = store_->GetRange(key_, offset, want);
    if (!bytes.ok()) return bytes.status();
    if (bytes->size() < n) return DataLoss("short read of " + key_);
    cached_ = std::move(*bytes);
    cached_offset_ = offset;
    out->assign(cached_, 0, n);
    return OkStatus();
  }

 private:
  objstore::Store* store_;
  std::string key_;
  uint64_t size_;
  uint64_t block_;
  mutable std::mutex mu_;
  mutable std::string cached_;
  mutable uint64_t cached_offset_ = 0;
};

Result<std::vector<ArchiveFile>> FilesFromRows(const db::Rows& rows) {
  std::vector<ArchiveFile> files;
  files.reserve(rows.size());
  for (int r = 0; r < rows.size(); ++r) {
    ArchiveFile f;
    GOVERN_ASSIGN_OR_RETURN(f.org, rows.String(r, 0));
    GOVERN_ASSIGN_OR_RETURN(f.hour_ns, rows.Int64(r, 1));
    GOVERN_ASSIGN_OR_RETURN(f.seq, rows.Int64(r, 2));
    GOVERN_ASSIGN_OR_RETURN(f.object_key, rows.String(r, 3));
    GOVERN_ASSIGN_OR_RETURN(f.rows, rows.Int64(r, 4));
    GOVERN_ASSIGN_OR_RETURN(f.bytes, rows.Int64(r, 5));
    GOVERN_ASSIGN_OR_RETURN(f.min_time_ns, rows.Int64(r, 6));
    GOVERN_ASSIGN_OR_RETURN(f.max_time_ns, rows.Int64(r, 7));
    files.push_back(std::move(f));
  }
  return files;
}

constexpr const char* kFileColumns = "org, hour_ns, seq, object_key, rows, bytes, min_time_ns, max_time_ns";

}  // namespace

const parquet::Schema& EventParquetSchema() {
  using parquet::Type;
  static const parquet::Schema schema = {
      {"org", Type::kString},
      {"time_ns", Type::kInt64},
      {"id", Type::kString},
      {"observed_ns", Type::kInt64},
      {"received_ns", Type::kInt64},
      {"type", Type::kString},
      {"severity_text", Type::kString},
      {"severity_number", Type::kInt32},
      {"body_kind", Type::kInt32},
      {"body", Type::kString},
      {"attributes", Type::kString},
      {"resource_attributes", Type::kString},
      {"service_name", Type::kString},
      {"scope_name", Type::kString},
      {"scope_version", Type::kString},
      {"trace_id", Type::kString},
      {"span_id", Type::kString},
      {"flags", Type::kInt64},
      {"dropped_attributes", Type::kInt64},
  };
  return schema;
}

parquet::WriterOptions EventWriterOptions(std::string_view org, int64_t hour_ns, int64_t row_group_rows) {
  parquet::WriterOptions o;
  o.compression = parquet::Compression::kZstd;
  o.row_group_rows = std::max<int64_t>(1, row_group_rows);
  // Measured on the bench generator's events (bench/telemetry telemetry_archive_size, 200,000 events of
  // one organisation): 116.3 bytes per event with 2,048-row pages, ZSTD 3 and PLAIN times; 104.9 with
  // the choices below, at half the writer CPU.
  // - ZSTD level 1: on this data (hex ids, JSON with varying numbers) it compresses better than 2 or 3
  //   and takes half the time of 3; higher levels gain a few percent at 3-100x the CPU.
  // - One page per row group (up to 1 MiB of values): ZSTD sees 16,384 rows at once instead of 2,048.
  //   Readers take whole column chunks anyway, so a larger page costs a query nothing.
  // - The dictionary is judged after a column's first 2,048 values: ids, trace and span ids and free
  //   text drop it there (no dictionary page, no more hashing in later row groups).
  // - Times and counters not dictionary-encoded are DELTA_BINARY_PACKED (DuckDB reads it).
  o.zstd_level = 1;
  o.page_rows = 1'000'000;
  o.page_bytes = 1 << 20;
  // The probe runs in a chunk's first page only, so it must fit in a row group (small ones in tests).
  o.dictionary_probe_values = std::min<int64_t>(2048, o.row_group_rows);
  o.delta_integers = true;
  // - Strings not dictionary-encoded (ids, span ids, bodies, attributes) are DELTA_LENGTH_BYTE_ARRAY:
  //   no 4-byte length between each two values for ZSTD to spend literals on (DuckDB reads it).
  o.delta_strings = true;
  o.metadata = {{"govern.telemetry.org", std::string(org)},
                {"govern.telemetry.hour_ns", std::to_string(hour_ns)},
                {"govern.telemetry.layout", std::to_string(kLayoutVersion)}};
  return o;
}

int64_t HourOf(int64_t time_ns) {
  int64_t h = time_ns / kNanosPerHour;
  if (time_ns % kNanosPerHour < 0) --h;
  return h * kNanosPerHour;
}

std::string HourLabel(int64_t hour_ns) {
  std::time_t secs = static_cast<std::time_t>(HourOf(hour_ns) / kNanosPerSecond);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour);
  return buf;
}

std::string ArchiveObjectKey(std::string_view org, int64_t hour_ns, int64_t seq) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string key = "events/org=";
  for (unsigned char c : org) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.') {
      key.push_back(static_cast<char>(c));
    } else {
      key.push_back('%');
      key.push_back(kHex[c >> 4]);
      key.push_back(kHex[c & 15]);
    }
  }
  if (org.empty()) key.append("%00");  // never an empty segment
  key.append("/hour=").append(HourLabel(hour_ns)).append("/").append(std::to_string(seq)).append(".parquet");
  return key;
}

namespace {

// Whether CompactJson would change `json`: a space outside its strings (one scan, no copy).
bool HasSpaceOutsideStrings(std::string_view json) {
  size_t i = 0;
  while (i < json.size()) {
    const char ch = json[i];
    if (ch == '"') {
      i = SkipString(json, i);
      if (i == std::string_view::npos) return false;
    } else if (IsJsonSpace(ch)) {
      return true;
    } else {
      ++i;
    }
  }
  return false;
}

}  // namespace

std::string CompactJson(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  size_t i = 0;
  while (i < json.size()) {
    // Copy the run up to the next space or string in one append, then the string whole.
    size_t j = i;
    while (j < json.size() && json[j] != '"' && !IsJsonSpace(json[j])) ++j;
    out.append(json.data() + i, j - i);
    if (j == json.size()) break;
    if (json[j] == '"') {
      size_t end = SkipString(json, j);
      if (end == std::string_view::npos) end = json.size();
      out.append(json.data() + j, end - j);
      i = end;
    } else {
      i = j + 1;
    }
  }
  return out;
}

Result<std::vector<Attribute>> AttributesFromJson(std::string_view json) {
  std::string compact;
  if (std::any_of(json.begin(), json.end(), IsJsonSpace)) {
    compact = CompactJson(json);
    json = compact;
  }
  auto bad = [] { return InvalidArgument("attributes are not a JSON object"); };
  if (json.size() < 2 || json.front() != '{' || json.back() != '}') return bad();
  std::vector<Attribute> out;
  size_t i = 1;
  if (json[i] == '}') return i + 1 == json.size() ? Result<std::vector<Attribute>>(std::move(out)) : bad();
  while (true) {
    if (i >= json.size() || json[i] != '"') return bad();
    size_t key_end = SkipString(json, i);
    if (key_end == std::string_view::npos || key_end >= json.size() || json[key_end] != ':') return bad();
    Attribute a;
    GOVERN_ASSIGN_OR_RETURN(a.key, DecodeKey(json.substr(i, key_end - i)));
    size_t v = key_end + 1;
    size_t v_end = SkipValue(json, v);
    if (v_end == std::string_view::npos || v_end >= json.size()) return bad();
    a.value_json.assign(json.substr(v, v_end - v));
    out.push_back(std::move(a));
    if (json[v_end] == '}') {
      if (v_end + 1 != json.size()) return bad();
      return out;
    }
    if (json[v_end] != ',') return bad();
    i = v_end + 1;
  }
}

std::string AttributesToJson(const std::vector<Attribute>& attributes) {
  std::string out;
  AttributesObjectJson(attributes, &out);
  return out;
}

EventColumns::EventColumns() {
  for (const auto& c : EventParquetSchema()) columns_.emplace_back(c.type);
}

void EventColumns::Clear() {
  for (auto& c : columns_) c.Clear();
}

Status EventColumns::AppendPgRow(const db::Rows& rows, int row, int first) {
  const auto& schema = EventParquetSchema();
  // Parse every number first, so a bad row appends nothing.
  int64_t ints[kEventColumnsInFile] = {};
  std::string_view texts[kEventColumnsInFile];  // each cell looked up once (Rows::Text is not free)
  for (size_t c = 0; c < kEventColumnsInFile; ++c) texts[c] = rows.Text(row, first + static_cast<int>(c));
  for (size_t c = 0; c < kEventColumnsInFile; ++c) {
    if (schema[c].type == parquet::Type::kString) continue;
    std::string_view text = texts[c];
    if (!ParseInt(text, &ints[c])) {
      return InvalidArgument("telemetry_events." + schema[c].name + ": not an integer: " + std::string(text));
    }
  }
  for (size_t c = 0; c < kEventColumnsInFile; ++c) {
    std::string_view text = texts[c];
    switch (schema[c].type) {
      case parquet::Type::kString:
        if ((c == kColAttributes || c == kColResourceAttributes) && HasSpaceOutsideStrings(text)) {
          // jsonb text ({"a": 1}); json columns return the compact text ingest stored, kept as is.
          columns_[c].AppendString(CompactJson(text));
        } else {
          columns_[c].AppendString(text);
        }
        break;
      case parquet::Type::kInt32:
        columns_[c].AppendInt32(static_cast<int32_t>(ints[c]));
        break;
      default:
        columns_[c].AppendInt64(ints[c]);
    }
  }
  return OkStatus();
}

void EventColumns::Append(const StoredEvent& s) {
  const Event& e = s.event;
  columns_[kColOrg].AppendString(e.org);
  columns_[kColTimeNs].AppendInt64(e.time_unix_nanos);
  columns_[kColId].AppendString(e.id);
  columns_[kColObservedNs].AppendInt64(e.observed_unix_nanos);
  columns_[kColReceivedNs].AppendInt64(s.received_ns);
  columns_[kColType].AppendString(e.type);
  columns_[kColSeverityText].AppendString(e.severity_text);
  columns_[kColSeverityNumber].AppendInt32(e.severity_number);
  columns_[kColBodyKind].AppendInt32(static_cast<int32_t>(e.body_kind));
  columns_[kColBody].AppendString(e.body);
  columns_[kColAttributes].AppendString(AttributesToJson(e.attributes));
  columns_[kColResourceAttributes].AppendString(AttributesToJson(e.resource_attributes));
  columns_[kColServiceName].AppendString(e.service_name);
  columns_[kColScopeName].AppendString(e.scope_name);
  columns_[kColScopeVersion].AppendString(e.scope_version);
  columns_[kColTraceId].AppendString(e.trace_id_hex);
  columns_[kColSpanId].AppendString(e.span_id_hex);
  columns_[kColFlags].AppendInt64(e.flags);
  columns_[kColDroppedAttributes].AppendInt64(e.dropped_attributes_count);
}

Result<StoredEvent> EventFromColumns(const std::vector<parquet::ColumnVector>& c, size_t row) {
  if (c.size() != kEventColumnsInFile) return DataLoss("archive row group has the wrong column count");
  StoredEvent s;
  Event& e = s.event;
  e.org = c[kColOrg].GetString(row);
  e.time_unix_nanos = c[kColTimeNs].GetInt64(row);
  e.id = c[kColId].GetString(row);
  e.observed_unix_nanos = c[kColObservedNs].GetInt64(row);
  s.received_ns = c[kColReceivedNs].GetInt64(row);
  e.type = c[kColType].GetString(row);
  e.severity_text = c[kColSeverityText].GetString(row);
  e.severity_number = c[kColSeverityNumber].GetInt32(row);
  e.body_kind = static_cast<BodyKind>(c[kColBodyKind].GetInt32(row));
  e.body = c[kColBody].GetString(row);
  auto attrs = AttributesFromJson(c[kColAttributes].GetString(row));
  if (!attrs.ok()) return DataLoss("archived event " + e.id + ": " + attrs.status().message());
  e.attributes = std::move(*attrs);
  auto res = AttributesFromJson(c[kColResourceAttributes].GetString(row));
  if (!res.ok()) return DataLoss("archived event " + e.id + ": resource " + res.status().message());
  e.resource_attributes = std::move(*res);
  e.service_name = c[kColServiceName].GetString(row);
  e.scope_name = c[kColScopeName].GetString(row);
  e.scope_version = c[kColScopeVersion].GetString(row);
  e.trace_id_hex = c[kColTraceId].GetString(row);
  e.span_id_hex = c[kColSpanId].GetString(row);
  e.flags = static_cast<uint32_t>(c[kColFlags].GetInt64(row));
  e.dropped_attributes_count = static_cast<uint32_t>(c[kColDroppedAttributes].GetInt64(row));
  return s;
}

Archive::Archive(db::Pool* pool, objstore::Store* store, ArchiveOptions options)
    : pool_(pool), store_(store), options_(std::move(options)) {}

Archive::~Archive() = default;

size_t Archive::cached_files() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

Result<std::shared_ptr<const parquet::Reader>> Archive::OpenFile(const ArchiveFile& file) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(file.object_key);
    if (it != cache_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  std::unique_ptr<parquet::Source> source;
  // A local directory: read the file with pread, no copy through the Store.
  if (auto* local = dynamic_cast<objstore::LocalStore*>(store_)) {
    auto src = parquet::OpenFileSource(local->root() + "/" + file.object_key);
    if (!src.ok()) return src.status();
    source = std::move(*src);
  } else {
    source = std::make_unique<StoreSource>(store_, file.object_key, static_cast<uint64_t>(file.bytes),
                                           options_.read_block_bytes);
  }
  auto reader = parquet::Reader::Open(std::move(source), options_.reader);
  if (!reader.ok()) {
    return Status(reader.status().code(), file.object_key + ": " + reader.status().message());
  }
  if (reader.value()->schema().size() != kEventColumnsInFile) {
    return DataLoss(file.object_key + ": not a telemetry archive file (wrong columns)");
  }
  std::shared_ptr<const parquet::Reader> shared(std::move(*reader));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(file.object_key);
  if (it != cache_.end()) return it->second->second;
  lru_.emplace_front(file.object_key, shared);
  cache_[file.object_key] = lru_.begin();
  while (cache_.size() > std::max<size_t>(1, options_.footer_cache_files)) {
    cache_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return shared;
}

Result<std::vector<ArchiveFile>> Archive::ListFiles(db::Connection& conn, std::string_view org,
                                                    int64_t from_ns, int64_t to_ns) {
  if (from_ns >= to_ns) return std::vector<ArchiveFile>{};
  // hour_ns bounds let the primary key (org, hour_ns, seq) do the work; the time bounds prune the rest.
  int64_t hour_lo = from_ns < INT64_MIN + kNanosPerHour ? INT64_MIN : from_ns - kNanosPerHour;
  auto rows = conn.ExecPrepared(std::string("SELECT ") + kFileColumns +
                                    " FROM telemetry_archive_files WHERE org = $1 AND hour_ns > $2 AND "
                                    "hour_ns < $3 AND max_time_ns >= $4 AND min_time_ns < $3 "
                                    "ORDER BY min_time_ns, seq",
                                db::Params(org, hour_lo, to_ns, from_ns));
  if (!rows.ok()) return rows.status();
  return FilesFromRows(*rows);
}

Result<std::vector<StoredEvent>> Archive::Scan(const EventQuery& q) {
  std::vector<StoredEvent> results;
  if (q.limit == 0 || q.from_ns >= q.to_ns) return results;
  const KeyOrder order{q.newest_first};
  // Inclusive time bounds of what can still qualify.
  int64_t lo = q.from_ns;
  int64_t hi = q.to_ns - 1;
  if (q.after) {
    if (q.newest_first) {
      hi = std::min(hi, q.after->time_ns);
    } else {
      lo = std::max(lo, q.after->time_ns);
    }
  }
  if (lo > hi) return results;

  std::vector<std::pair<std::string, nlohmann::json>> attr_filters;
  for (const auto& a : q.attributes) {
    auto v = nlohmann::json::parse(a.value_json, nullptr, /*allow_exceptions=*/false);
    if (v.is_discarded()) return InvalidArgument("attribute filter " + a.key + ": value is not JSON");
    attr_filters.emplace_back(a.key, std::move(v));
  }

  std::vector<ArchiveFile> files;
  {
    auto lease = pool_->Checkout();
    if (!lease.ok()) return lease.status();
    GOVERN_ASSIGN_OR_RETURN(files, ListFiles(**lease, q.org, lo, hi == INT64_MAX ? hi : hi + 1));
  }
  if (q.newest_first) {
    std::stable_sort(files.begin(), files.end(), [](const ArchiveFile& a, const ArchiveFile& b) {
      return a.max_time_ns > b.max_time_ns;
    });
  }

  auto before = [&](const StoredEvent& a, const StoredEvent& b) { return order.Before(a, b); };
  // results[0, sorted) is in order; the rest was just appended. Merging (not sorting) keeps a page of
  // a whole day linear: files and row groups mostly arrive in order already.
  auto merge_and_trim = [&](size_t sorted) {
    auto mid = results.begin() + static_cast<ptrdiff_t>(sorted);
    if (!std::is_sorted(mid, results.end(), before)) std::sort(mid, results.end(), before);
    if (sorted > 0 && mid != results.end() && before(*mid, *(mid - 1))) {
      std::inplace_merge(results.begin(), mid, results.end(), before);
    }
    if (results.size() > q.limit) results.resize(q.limit);
  };
  // When the page is full, an event must come before the current last one to matter.
  auto full = [&] { return results.size() >= q.limit; };
  std::vector<size_t> picked;
  std::vector<parquet::ColumnVector> cols(kEventColumnsInFile);
  std::vector<bool> loaded(kEventColumnsInFile);

  for (const ArchiveFile& file : files) {
    if (full()) {
      int64_t worst = results.back().event.time_unix_nanos;
      // Files are ordered by the bound that meets the page first: no later file can do better.
      if (q.newest_first ? file.max_time_ns < worst : file.min_time_ns > worst) break;
    }
    GOVERN_ASSIGN_OR_RETURN(auto reader, OpenFile(file));
    std::vector<size_t> groups = reader->RowGroupsOverlapping(kColTimeNs, lo, hi);
    if (q.newest_first) std::reverse(groups.begin(), groups.end());
    for (size_t g : groups) {
      if (full()) {
        int64_t worst = results.back().event.time_unix_nanos;
        const auto& st = reader->row_groups()[g].columns[kColTimeNs].statistics;
        if (q.newest_first && st.max && std::holds_alternative<int64_t>(*st.max) &&
            std::get<int64_t>(*st.max) < worst) {
          continue;
        }
        if (!q.newest_first && st.min && std::holds_alternative<int64_t>(*st.min) &&
            std::get<int64_t>(*st.min) > worst) {
          continue;
        }
      }
      std::fill(loaded.begin(), loaded.end(), false);
      auto load = [&](size_t c) -> Status {
        if (loaded[c]) return OkStatus();
        auto v = reader->ReadColumn(g, c);
        if (!v.ok()) return Status(v.status().code(), file.object_key + ": " + v.status().message());
        cols[c] = std::move(*v);
        loaded[c] = true;
        return OkStatus();
      };
      GOVERN_RETURN_IF_ERROR(load(kColTimeNs));
      GOVERN_RETURN_IF_ERROR(load(kColId));
      if (!q.type.empty()) GOVERN_RETURN_IF_ERROR(load(kColType));
      const size_t n = cols[kColTimeNs].size();
      if (cols[kColId].size() != n || cols[kColTimeNs].type() != parquet::Type::kInt64 ||
          cols[kColId].type() != parquet::Type::kString) {
        return DataLoss(file.object_key + ": not a telemetry archive file (column types)");
      }
      picked.clear();
      std::optional<EventKey> worst;
      if (full()) worst = results.back().key();
      EventKey key;
      for (size_t r = 0; r < n; ++r) {
        int64_t t = cols[kColTimeNs].GetInt64(r);
        if (t < lo || t > hi) continue;
        if (q.after || worst) {
          key.time_ns = t;
          key.id.assign(cols[kColId].GetString(r));
          if (q.after && !order.Before(*q.after, key)) continue;
          if (worst && !order.Before(key, *worst)) continue;
        }
        if (!q.type.empty() && cols[kColType].GetString(r) != q.type) continue;
        picked.push_back(r);
      }
      if (!picked.empty() && !attr_filters.empty()) {
        GOVERN_RETURN_IF_ERROR(load(kColAttributes));
        std::erase_if(picked, [&](size_t r) {
          auto attrs = nlohmann::json::parse(cols[kColAttributes].GetString(r), nullptr, false);
          if (!attrs.is_object()) return true;
          for (const auto& [k, want] : attr_filters) {
            auto it = attrs.find(k);
            if (it == attrs.end() || *it != want) return true;
          }
          return false;
        });
      }
      if (picked.empty()) continue;
      // Only the rows that can still make the page: in the query's order, at most `limit`.
      if (q.newest_first) std::reverse(picked.begin(), picked.end());
      if (picked.size() > q.limit) picked.resize(q.limit);
      for (size_t c = 0; c < kEventColumnsInFile; ++c) GOVERN_RETURN_IF_ERROR(load(c));
      for (size_t c = 0; c < kEventColumnsInFile; ++c) {
        if (cols[c].size() != n || cols[c].type() != EventParquetSchema()[c].type) {
          return DataLoss(file.object_key + ": not a telemetry archive file (column types)");
        }
      }
      const size_t sorted = results.size();
      for (size_t r : picked) {
        auto ev = EventFromColumns(cols, r);
        if (!ev.ok()) return Status(ev.status().code(), file.object_key + ": " + ev.status().message());
        results.push_back(std::move(*ev));
      }
      merge_and_trim(sorted);
    }
  }
  return results;
}

Result<std::vector<StoredEvent>> Archive::ReadFile(const ArchiveFile& file) {
  GOVERN_ASSIGN_OR_RETURN(auto reader, OpenFile(file));
  std::vector<StoredEvent> out;
  for (size_t g = 0; g < reader->row_groups().size(); ++g) {
    auto cols = reader->ReadRowGroup(g);
    if (!cols.ok()) return Status(cols.status().code(), file.object_key + ": " + cols.status().message());
    for (size_t c = 0; c < cols->size(); ++c) {
      if ((*cols)[c].type() != EventParquetSchema()[c].type) {
        return DataLoss(file.object_key + ": not a telemetry archive file (column types)");
      }
    }
    for (size_t r = 0; r < (*cols)[0].size(); ++r) {
      GOVERN_ASSIGN_OR_RETURN(auto ev, EventFromColumns(*cols, r));
      out.push_back(std::move(ev));
    }
  }
  return out;
}

Status Archive::ExportHour(db::Connection& conn, std::string_view org, int64_t hour_ns,
                           const std::string& path) {
  hour_ns = HourOf(hour_ns);
  const int64_t end = hour_ns + kNanosPerHour;
  std::vector<StoredEvent> events;
  // PostgreSQL's rows of the hour, a page at a time.
  {
    EventColumns batch;
    auto rows = conn.ExecPrepared(std::string("SELECT ") + kEventColumns +
                                      " FROM telemetry_events WHERE org = $1 AND time_ns >= $2 AND "
                                      "time_ns < $3 ORDER BY time_ns, id",
                                  db::Params(org, hour_ns, end));
    if (!rows.ok()) return rows.status();
    for (int r = 0; r < rows->size(); ++r) GOVERN_RETURN_IF_ERROR(batch.AppendPgRow(*rows, r));
    for (size_t r = 0; r < batch.size(); ++r) {
      GOVERN_ASSIGN_OR_RETURN(auto ev, EventFromColumns(batch.columns(), r));
      events.push_back(std::move(ev));
    }
  }
  auto files =
      conn.ExecPrepared(std::string("SELECT ") + kFileColumns +
                            " FROM telemetry_archive_files WHERE org = $1 AND hour_ns = $2 ORDER BY seq",
                        db::Params(org, hour_ns));
  if (!files.ok()) return files.status();
  GOVERN_ASSIGN_OR_RETURN(auto listed, FilesFromRows(*files));
  for (const auto& f : listed) {
    GOVERN_ASSIGN_OR_RETURN(auto from_file, ReadFile(f));
    for (auto& ev : from_file) events.push_back(std::move(ev));
  }
  std::sort(events.begin(), events.end(),
            [](const StoredEvent& a, const StoredEvent& b) { return a.key() < b.key(); });
  // An event is in one place only; should a copy ever be in both, export it once.
  events.erase(std::unique(events.begin(), events.end(),
                           [](const StoredEvent& a, const StoredEvent& b) { return a.key() == b.key(); }),
               events.end());
  auto writer = parquet::Writer::Open(path, EventParquetSchema(), EventWriterOptions(org, hour_ns, 65536));
  if (!writer.ok()) return writer.status();
  EventColumns batch;
  for (size_t i = 0; i < events.size(); ++i) {
    batch.Append(events[i]);
    if (batch.size() == 8192 || i + 1 == events.size()) {
      GOVERN_RETURN_IF_ERROR((*writer)->Write(batch.columns()));
      batch.Clear();
    }
  }
  auto summary = (*writer)->Close();
  return summary.status();
}

}  // namespace govern::telemetry
