// The Parquet writer: per column chunk, values are encoded into pages as they arrive; at the end of a
// row group each chunk's dictionary page and data pages go to the sink, and the footer follows at Close.
#include "storage/parquet/writer.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <unordered_map>

#include "storage/parquet/codec.h"
#include "storage/parquet/delta.h"
#include "storage/parquet/metadata.h"
#include "storage/parquet/rle.h"

namespace govern::parquet {

static_assert(std::endian::native == std::endian::little, "PLAIN encoding is written with memcpy");

namespace {

constexpr std::string_view kMagic = "PAR1";

int32_t PhysicalTypeOf(Type type) {
  switch (type) {
    case Type::kBoolean:
      return format::kBoolean;
    case Type::kInt32:
      return format::kInt32;
    case Type::kInt64:
    case Type::kTimestampMicros:
      return format::kInt64;
    case Type::kDouble:
      return format::kDouble;
    case Type::kString:
      return format::kByteArray;
  }
  return format::kInt64;
}

int32_t CodecOf(Compression c) {
  switch (c) {
    case Compression::kUncompressed:
      return format::kUncompressed;
    case Compression::kSnappy:
      return format::kSnappy;
    case Compression::kZstd:
      return format::kZstd;
  }
  return format::kUncompressed;
}

// Largest prefix of s no longer than `limit` bytes that ends on a UTF-8 character boundary.
size_t Utf8Prefix(std::string_view s, size_t limit) {
  if (s.size() <= limit) return s.size();
  size_t n = limit;
  while (n > 0 && (static_cast<uint8_t>(s[n]) & 0xc0) == 0x80) --n;
  return n;
}

// A lower bound for min: a prefix at a character boundary.
std::string TruncateMin(std::string_view s, size_t limit, bool* exact) {
  size_t n = Utf8Prefix(s, limit);
  *exact = n == s.size();
  return std::string(s.substr(0, n));
}

// An upper bound for max: a prefix whose last ASCII byte below 0x7f is incremented, which keeps it
// valid UTF-8 and greater than every string it stands for. Without such a byte, the exact value.
std::string TruncateMax(std::string_view s, size_t limit, bool* exact) {
  size_t n = Utf8Prefix(s, limit);
  *exact = true;
  if (n == s.size()) return std::string(s);
  for (size_t i = n; i-- > 0;) {
    auto b = static_cast<uint8_t>(s[i]);
    if (b < 0x7f) {
      std::string out(s.substr(0, i + 1));
      out.back() = static_cast<char>(b + 1);
      *exact = false;
      return out;
    }
  }
  return std::string(s);
}

// Statistics of one page or chunk for values of type T (uint8_t for bools, std::string_view for strings).
template <typename T>
struct Stats {
  using Stored = std::conditional_t<std::is_same_v<T, std::string_view>, std::string, T>;
  bool has = false;
  Stored min{};
  Stored max{};
  int64_t nulls = 0;

  void Add(T v) {
    if constexpr (std::is_same_v<T, double>) {
      if (std::isnan(v)) return;  // NaN never bounds a range
    }
    if (!has) {
      min = Stored(v);
      max = Stored(v);
      has = true;
      return;
    }
    if (v < min) min = Stored(v);
    if (max < v) max = Stored(v);
  }
  void Merge(const Stats& o) {
    nulls += o.nulls;
    if (!o.has) return;
    if (!has) {
      min = o.min;
      max = o.max;
      has = true;
      return;
    }
    if (o.min < min) min = o.min;
    if (max < o.max) max = o.max;
  }
};

template <typename T>
void PutPlain(T v, std::string* out) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out->append(buf, sizeof(T));
}

void PutPlainString(std::string_view v, std::string* out) {
  PutPlain(static_cast<uint32_t>(v.size()), out);
  out->append(v);
}

template <typename T>
format::Statistics EncodeStats(const Stats<T>& s, size_t string_limit) {
  format::Statistics out;
  out.null_count = s.nulls;
  if (!s.has) return out;
  if constexpr (std::is_same_v<T, std::string_view>) {
    bool min_exact = true, max_exact = true;
    out.min_value = TruncateMin(s.min, string_limit, &min_exact);
    out.max_value = TruncateMax(s.max, string_limit, &max_exact);
    out.is_min_value_exact = min_exact;
    out.is_max_value_exact = max_exact;
  } else if constexpr (std::is_same_v<T, double>) {
    // parquet.thrift: a zero min is written as -0.0 and a zero max as +0.0.
    double lo = s.min == 0 ? -0.0 : s.min;
    double hi = s.max == 0 ? 0.0 : s.max;
    out.min_value.emplace();
    out.max_value.emplace();
    PutPlain(lo, &*out.min_value);
    PutPlain(hi, &*out.max_value);
  } else {
    out.min_value.emplace();
    out.max_value.emplace();
    PutPlain(s.min, &*out.min_value);
    PutPlain(s.max, &*out.max_value);
    out.is_min_value_exact = true;
    out.is_max_value_exact = true;
  }
  return out;
}

}  // namespace

// ---- Column chunk writers

class ColumnWriter {
 public:
  ColumnWriter(const Column& column, const WriterOptions& options)
      : column_(column), options_(options), compressor_(CodecOf(options.compression), options.zstd_level) {}
  virtual ~ColumnWriter() = default;

  virtual Status Append(const ColumnVector& values, size_t begin, size_t end) = 0;
  // Encoded bytes buffered for this chunk so far (compressed pages plus the open page's estimate).
  virtual int64_t BufferedBytes() const = 0;
  // Closes the open page, writes the chunk to the sink at *offset and fills its metadata.
  virtual Status FinishChunk(Sink* sink, int64_t* offset, format::ColumnChunk* chunk) = 0;

 protected:
  // Compresses a page body and appends header and body to *out.
  Status EmitPage(format::PageHeader header, std::string_view body, std::string* out) {
    GOVERN_RETURN_IF_ERROR(compressor_.Compress(body, &compressed_));
    if (body.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()) ||
        compressed_.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
      return InvalidArgument("parquet: page larger than 2 GiB in column " + column_.name);
    }
    header.uncompressed_page_size = static_cast<int32_t>(body.size());
    header.compressed_page_size = static_cast<int32_t>(compressed_.size());
    size_t before = out->size();
    format::EncodePageHeader(header, out);
    size_t header_bytes = out->size() - before;
    out->append(compressed_);
    uncompressed_bytes_ += static_cast<int64_t>(header_bytes + body.size());
    compressed_bytes_ += static_cast<int64_t>(header_bytes + compressed_.size());
    return OkStatus();
  }

  const Column column_;
  const WriterOptions& options_;
  Compressor compressor_;
  std::string compressed_;  // scratch
  int64_t uncompressed_bytes_ = 0;
  int64_t compressed_bytes_ = 0;
};

namespace {

// T is uint8_t (booleans), int32_t, int64_t, double or std::string_view.
template <typename T>
class TypedColumnWriter final : public ColumnWriter {
 public:
  TypedColumnWriter(const Column& column, const WriterOptions& options) : ColumnWriter(column, options) {
    ResetChunk();
  }

  Status Append(const ColumnVector& v, size_t begin, size_t end) override {
    const bool may_be_null = v.null_count() > 0;
    for (size_t i = begin; i < end; ++i) {
      ++page_rows_;  // before Put, which may close the page this row belongs to
      if (may_be_null && v.IsNull(i)) {
        def_levels_.push_back(0);
        ++page_stats_.nulls;
      } else {
        if (column_.optional) def_levels_.push_back(1);
        GOVERN_RETURN_IF_ERROR(Put(Get(v, i)));
      }
      if (page_value_bytes_ >= options_.page_bytes || page_rows_ >= options_.page_rows) {
        GOVERN_RETURN_IF_ERROR(FinishPage());
      }
    }
    return OkStatus();
  }

  int64_t BufferedBytes() const override {
    return static_cast<int64_t>(pages_.size() + dict_plain_.size()) + page_value_bytes_;
  }

  Status FinishChunk(Sink* sink, int64_t* offset, format::ColumnChunk* chunk) override {
    GOVERN_RETURN_IF_ERROR(FinishPage());
    format::ColumnMetaData& meta = chunk->meta_data.emplace();
    meta.type = PhysicalTypeOf(column_.type);
    meta.path_in_schema = {column_.name};
    meta.codec = CodecOf(options_.compression);
    meta.num_values = chunk_rows_;
    std::string dict_page;
    if (dict_used_) {
      format::PageHeader h;
      h.type = format::kDictionaryPage;
      h.dictionary_page_header.emplace();
      h.dictionary_page_header->num_values = static_cast<int32_t>(dict_size_);
      h.dictionary_page_header->encoding = format::kPlain;
      GOVERN_RETURN_IF_ERROR(EmitPage(std::move(h), dict_plain_, &dict_page));
      meta.dictionary_page_offset = *offset;
    }
    meta.data_page_offset = *offset + static_cast<int64_t>(dict_page.size());
    // Encodings in the order readers usually list them: dictionary page, levels, data pages.
    if (dict_used_ || used_plain_) meta.encodings.push_back(format::kPlain);
    meta.encodings.push_back(format::kRle);
    if (dict_used_) meta.encodings.push_back(format::kRleDictionary);
    if (used_delta_) meta.encodings.push_back(format::kDeltaBinaryPacked);
    if (used_delta_length_) meta.encodings.push_back(format::kDeltaLengthByteArray);
    meta.total_uncompressed_size = uncompressed_bytes_;
    meta.total_compressed_size = compressed_bytes_;
    meta.statistics = EncodeStats(chunk_stats_, options_.statistics_string_bytes);
    chunk->file_offset = 0;  // parquet.thrift: 0 when no ColumnMetaData is written outside the footer

    GOVERN_RETURN_IF_ERROR(sink->Append(dict_page));
    GOVERN_RETURN_IF_ERROR(sink->Append(pages_));
    *offset += static_cast<int64_t>(dict_page.size() + pages_.size());
    ResetChunk();
    return OkStatus();
  }

 private:
  static T Get(const ColumnVector& v, size_t i) {
    if constexpr (std::is_same_v<T, uint8_t>) {
      return v.bool_data()[i];
    } else if constexpr (std::is_same_v<T, int32_t>) {
      return v.GetInt32(i);
    } else if constexpr (std::is_same_v<T, int64_t>) {
      return v.GetInt64(i);
    } else if constexpr (std::is_same_v<T, double>) {
      return v.GetDouble(i);
    } else {
      return v.GetString(i);
    }
  }

  // The dictionary key of a fixed-width value: its bit pattern, so -0.0, 0.0 and NaNs stay distinct.
  static uint64_t Key(T v) {
    if constexpr (std::is_same_v<T, double>) {
      return std::bit_cast<uint64_t>(v);
    } else if constexpr (std::is_same_v<T, int32_t>) {
      return static_cast<uint32_t>(v);
    } else if constexpr (std::is_same_v<T, int64_t>) {
      return static_cast<uint64_t>(v);
    } else {
      return 0;
    }
  }

  static void Plain(T v, std::string* out) {
    if constexpr (std::is_same_v<T, std::string_view>) {
      PutPlainString(v, out);
    } else {
      PutPlain(v, out);
    }
  }

  static size_t PlainSize(T v) {
    if constexpr (std::is_same_v<T, std::string_view>) {
      return 4 + v.size();
    } else {
      return sizeof(T);
    }
  }

  Status Put(T v) {
    page_stats_.Add(v);
    ++page_non_null_;
    if constexpr (std::is_same_v<T, uint8_t>) {
      page_bools_.push_back(v);
      ++page_value_bytes_;  // an estimate; bools pack 8 to a byte
      return OkStatus();
    } else {
      if (dict_mode_) {
        uint32_t index = 0;
        bool added = false;
        if constexpr (std::is_same_v<T, std::string_view>) {
          auto it = string_dict_.find(v);
          if (it == string_dict_.end()) {
            std::string_view stored = dict_storage_.emplace_back(v);
            it = string_dict_.emplace(stored, static_cast<uint32_t>(dict_size_)).first;
            added = true;
          }
          index = it->second;
        } else {
          auto [it, inserted] = fixed_dict_.try_emplace(Key(v), static_cast<uint32_t>(dict_size_));
          added = inserted;
          index = it->second;
        }
        if (added) {
          ++dict_size_;
          Plain(v, &dict_plain_);
        }
        page_indices_.push_back(index);
        page_value_bytes_ += 4;
        if (added && static_cast<int64_t>(dict_plain_.size()) > options_.dictionary_page_bytes) {
          // The dictionary has grown too large to pay off: this page keeps it, later ones are PLAIN.
          GOVERN_RETURN_IF_ERROR(FinishPage());
          dict_mode_ = false;
        } else if (options_.dictionary_probe_values > 0 && pages_.empty() &&
                   page_non_null_ == options_.dictionary_probe_values &&
                   2 * int64_t{dict_size_} > page_non_null_) {
          DropDictionary();
        }
        return OkStatus();
      } else {
        PutUnencoded(v);
        return OkStatus();
      }
    }
  }

  // A value of a page without dictionary: PLAIN, or kept for DELTA_BINARY_PACKED, or for
  // DELTA_LENGTH_BYTE_ARRAY or PLAIN, whichever FinishPage picks (the length apart, the bytes back to
  // back).
  void PutUnencoded(T v) {
    if constexpr (kIntegral) {
      if (delta_) {
        page_ints_.push_back(v);
        page_value_bytes_ += static_cast<int64_t>(sizeof(T));
        return;
      }
    }
    if constexpr (kIsString) {
      if (delta_length_) {
        page_ints_.push_back(static_cast<int64_t>(v.size()));
        page_plain_.append(v);
        page_value_bytes_ += static_cast<int64_t>(PlainSize(v));
        return;
      }
    }
    Plain(v, &page_plain_);
    page_value_bytes_ += static_cast<int64_t>(PlainSize(v));
  }

  // Most values of the chunk's first page so far were new (ids, times, free text): the dictionary
  // would not pay off. The open page (the chunk's only one) is re-encoded without it, no dictionary
  // page is written, and later chunks of this column do not try again.
  void DropDictionary() {
    if constexpr (!std::is_same_v<T, uint8_t>) {
      std::vector<uint32_t> indices;
      indices.swap(page_indices_);
      page_value_bytes_ = 0;
      for (uint32_t idx : indices) {
        if constexpr (std::is_same_v<T, std::string_view>) {
          PutUnencoded(std::string_view(dict_storage_[idx]));
        } else {
          T v;
          std::memcpy(&v, dict_plain_.data() + size_t{idx} * sizeof(T), sizeof(T));
          PutUnencoded(v);
        }
      }
      dict_mode_ = false;
      dict_rejected_ = true;
      dict_size_ = 0;
      dict_plain_.clear();
      string_dict_.clear();
      fixed_dict_.clear();
      dict_storage_.clear();
    }
  }

  Status FinishPage() {
    if (page_rows_ == 0) return OkStatus();
    body_.clear();
    if (column_.optional) {
      // Definition levels: a 4-byte little-endian length, then the hybrid runs (bit width 1).
      levels_.assign(def_levels_.begin(), def_levels_.end());
      std::string runs;
      EncodeRleHybrid(levels_.data(), levels_.size(), 1, &runs);
      PutPlain(static_cast<uint32_t>(runs.size()), &body_);
      body_.append(runs);
    }
    int32_t encoding = format::kPlain;
    if constexpr (std::is_same_v<T, uint8_t>) {
      PackBools(page_bools_.data(), page_bools_.size(), &body_);
      used_plain_ = true;
    } else {
      if (!page_indices_.empty()) {
        // Indices: one byte of bit width, then the hybrid runs without a length prefix.
        int width = std::max(1, BitWidth(dict_size_ > 0 ? dict_size_ - 1 : 0));
        body_.push_back(static_cast<char>(width));
        EncodeRleHybrid(page_indices_.data(), page_indices_.size(), width, &body_);
        encoding = format::kRleDictionary;
        dict_used_ = true;
      } else if (delta_ && !dict_mode_) {
        EncodeDeltaBinaryPacked(page_ints_.data(), page_ints_.size(), std::is_same_v<T, int32_t> ? 32 : 64,
                                &body_);
        encoding = format::kDeltaBinaryPacked;
        used_delta_ = true;
      } else if (delta_length_ && !dict_mode_) {
        if (std::adjacent_find(page_ints_.begin(), page_ints_.end(), std::not_equal_to<>()) ==
            page_ints_.end()) {
          // Every value of one length (ids, hashes): lengths that delta-encode to nothing, and the
          // values back to back. Lengths fit 32 bits: a longer value would make the page exceed what
          // EmitPage accepts.
          EncodeDeltaBinaryPacked(page_ints_.data(), page_ints_.size(), 32, &body_);
          body_.append(page_plain_);
          encoding = format::kDeltaLengthByteArray;
          used_delta_length_ = true;
        } else {
          // Text of varying lengths compresses better with each length in front of its value
          // (measured on telemetry bodies and attributes): PLAIN.
          size_t at = 0;
          for (int64_t len : page_ints_) {
            PutPlainString(std::string_view(page_plain_).substr(at, static_cast<size_t>(len)), &body_);
            at += static_cast<size_t>(len);
          }
          used_plain_ = true;
        }
      } else {
        body_.append(page_plain_);
        used_plain_ = true;
      }
    }
    format::PageHeader h;
    h.type = format::kDataPage;
    format::DataPageHeader& d = h.data_page_header.emplace();
    d.num_values = static_cast<int32_t>(page_rows_);
    d.encoding = encoding;
    d.definition_level_encoding = format::kRle;
    d.repetition_level_encoding = format::kRle;
    d.statistics = EncodeStats(page_stats_, options_.statistics_string_bytes);
    const bool first_page = pages_.empty();
    GOVERN_RETURN_IF_ERROR(EmitPage(std::move(h), body_, &pages_));
    if (first_page && dict_mode_ && options_.dictionary_probe_values == 0 && page_non_null_ >= 1000 &&
        2 * int64_t{dict_size_} > page_non_null_) {
      // Most values of the first page were new: a dictionary will not pay off for this chunk (ids,
      // timestamps, free text), so spare the hashing and write PLAIN from here on.
      dict_mode_ = false;
    }
    chunk_stats_.Merge(page_stats_);
    chunk_rows_ += page_rows_;
    page_stats_ = Stats<T>();
    page_rows_ = 0;
    page_non_null_ = 0;
    page_value_bytes_ = 0;
    def_levels_.clear();
    page_bools_.clear();
    page_plain_.clear();
    page_indices_.clear();
    page_ints_.clear();
    return OkStatus();
  }

  void ResetChunk() {
    dict_mode_ = options_.dictionary && !std::is_same_v<T, uint8_t> && !dict_rejected_;
    dict_used_ = false;
    used_plain_ = false;
    used_delta_ = false;
    used_delta_length_ = false;
    dict_size_ = 0;
    dict_plain_.clear();
    string_dict_.clear();
    fixed_dict_.clear();
    dict_storage_.clear();
    pages_.clear();
    chunk_stats_ = Stats<T>();
    chunk_rows_ = 0;
    uncompressed_bytes_ = 0;
    compressed_bytes_ = 0;
  }

  // The open page.
  Stats<T> page_stats_;
  int64_t page_rows_ = 0;
  int64_t page_non_null_ = 0;
  int64_t page_value_bytes_ = 0;
  std::vector<uint8_t> def_levels_;
  std::vector<uint8_t> page_bools_;
  std::string page_plain_;
  std::vector<uint32_t> page_indices_;
  std::vector<int64_t> page_ints_;  // values of a DELTA_BINARY_PACKED page
  std::vector<uint32_t> levels_;    // scratch
  std::string body_;                // scratch

  // The chunk.
  static constexpr bool kIntegral = std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;
  const bool delta_ = kIntegral && options_.delta_integers;
  static constexpr bool kIsString = std::is_same_v<T, std::string_view>;
  const bool delta_length_ = kIsString && options_.delta_strings;
  bool dict_rejected_ = false;  // a probe found this column's values mostly distinct: no more dictionaries
  bool dict_mode_ = false;
  bool dict_used_ = false;
  bool used_plain_ = false;
  bool used_delta_ = false;
  bool used_delta_length_ = false;
  uint32_t dict_size_ = 0;
  std::string dict_plain_;  // the dictionary page body: entries PLAIN-encoded in index order
  std::unordered_map<std::string_view, uint32_t> string_dict_;
  std::unordered_map<uint64_t, uint32_t> fixed_dict_;
  std::deque<std::string> dict_storage_;  // owns string_dict_'s keys; a deque never moves them
  std::string pages_;                     // encoded data pages
  Stats<T> chunk_stats_;
  int64_t chunk_rows_ = 0;
};

std::unique_ptr<ColumnWriter> MakeColumnWriter(const Column& column, const WriterOptions& options) {
  switch (column.type) {
    case Type::kBoolean:
      return std::make_unique<TypedColumnWriter<uint8_t>>(column, options);
    case Type::kInt32:
      return std::make_unique<TypedColumnWriter<int32_t>>(column, options);
    case Type::kInt64:
    case Type::kTimestampMicros:
      return std::make_unique<TypedColumnWriter<int64_t>>(column, options);
    case Type::kDouble:
      return std::make_unique<TypedColumnWriter<double>>(column, options);
    case Type::kString:
      return std::make_unique<TypedColumnWriter<std::string_view>>(column, options);
  }
  return nullptr;
}

format::SchemaElement LeafElement(const Column& c) {
  format::SchemaElement e;
  e.type = PhysicalTypeOf(c.type);
  e.repetition_type = c.optional ? format::kOptional : format::kRequired;
  e.name = c.name;
  if (c.type == Type::kString) {
    e.converted_type = format::kUtf8;
    e.logical_type.kind = format::LogicalType::kString;
  } else if (c.type == Type::kTimestampMicros) {
    e.converted_type = format::kTimestampMicros;
    e.logical_type.kind = format::LogicalType::kTimestamp;
    e.logical_type.timestamp_utc = true;
    e.logical_type.timestamp_unit = 1;  // MICROS
  }
  return e;
}

}  // namespace

// ---- Writer

class Writer::Impl {
 public:
  Impl(std::unique_ptr<Sink> sink, Schema schema, WriterOptions options)
      : sink_(std::move(sink)), schema_(std::move(schema)), options_(std::move(options)) {
    for (const Column& c : schema_) columns_.push_back(MakeColumnWriter(c, options_));
    for (const Column& c : schema_) pending_.emplace_back(c.type);
  }

  Status Start() {
    GOVERN_RETURN_IF_ERROR(sink_->Append(kMagic));
    offset_ = static_cast<int64_t>(kMagic.size());
    return OkStatus();
  }

  Status Write(std::span<const ColumnVector> batch) {
    if (closed_) return FailedPrecondition("parquet: write after Close");
    if (!status_.ok()) return status_;
    GOVERN_RETURN_IF_ERROR(FlushPendingRows());
    if (batch.size() != schema_.size()) {
      return InvalidArgument("parquet: batch has " + std::to_string(batch.size()) + " columns, schema " +
                             std::to_string(schema_.size()));
    }
    const size_t rows = batch.empty() ? 0 : batch[0].size();
    for (size_t c = 0; c < batch.size(); ++c) {
      const Column& col = schema_[c];
      if (batch[c].type() != col.type) {
        return InvalidArgument("parquet: column " + col.name + " is " + std::string(TypeName(col.type)) +
                               ", batch gives " + std::string(TypeName(batch[c].type())));
      }
      if (batch[c].size() != rows) return InvalidArgument("parquet: batch columns differ in length");
      if (!col.optional && batch[c].null_count() > 0) {
        return InvalidArgument("parquet: null in required column " + col.name);
      }
    }
    // Any failure from here on leaves a half-written row group: the writer refuses further work.
    status_ = WriteRows(batch, rows);
    return status_;
  }

  Status AppendRow(std::span<const Value> row) {
    if (closed_) return FailedPrecondition("parquet: write after Close");
    if (!status_.ok()) return status_;
    if (row.size() != schema_.size()) {
      return InvalidArgument("parquet: row has " + std::to_string(row.size()) + " values, schema " +
                             std::to_string(schema_.size()));
    }
    for (size_t c = 0; c < row.size(); ++c) {
      const Column& col = schema_[c];
      const Value& v = row[c];
      bool ok = false;
      switch (col.type) {
        case Type::kBoolean:
          ok = std::holds_alternative<bool>(v);
          break;
        case Type::kInt32:
          ok = std::holds_alternative<int32_t>(v);
          break;
        case Type::kInt64:
        case Type::kTimestampMicros:
          ok = std::holds_alternative<int64_t>(v);
          break;
        case Type::kDouble:
          ok = std::holds_alternative<double>(v);
          break;
        case Type::kString:
          ok = std::holds_alternative<std::string_view>(v);
          break;
      }
      if (std::holds_alternative<std::monostate>(v)) {
        if (!col.optional) return InvalidArgument("parquet: null in required column " + col.name);
        ok = true;
      }
      if (!ok) return InvalidArgument("parquet: wrong value type for column " + col.name);
    }
    for (size_t c = 0; c < row.size(); ++c) {
      ColumnVector& out = pending_[c];
      std::visit(
          [&out](const auto& x) {
            using X = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<X, std::monostate>) out.AppendNull();
            if constexpr (std::is_same_v<X, bool>) out.AppendBool(x);
            if constexpr (std::is_same_v<X, int32_t>) out.AppendInt32(x);
            if constexpr (std::is_same_v<X, int64_t>) out.AppendInt64(x);
            if constexpr (std::is_same_v<X, double>) out.AppendDouble(x);
            if constexpr (std::is_same_v<X, std::string_view>) out.AppendString(x);
          },
          row[c]);
    }
    if (pending_[0].size() >= 4096) return FlushPendingRows();
    return OkStatus();
  }

  Result<WriteSummary> Close() {
    if (closed_) return FailedPrecondition("parquet: Close called twice");
    if (!status_.ok()) return status_;
    closed_ = true;
    GOVERN_RETURN_IF_ERROR(FlushPendingRows());
    if (group_rows_ > 0) GOVERN_RETURN_IF_ERROR(FlushRowGroup());
    format::FileMetaData meta;
    meta.version = 1;
    meta.schema.reserve(schema_.size() + 1);
    format::SchemaElement root;
    root.name = "schema";
    root.num_children = static_cast<int32_t>(schema_.size());
    meta.schema.push_back(std::move(root));
    for (const Column& c : schema_) meta.schema.push_back(LeafElement(c));
    meta.num_rows = rows_;
    meta.row_groups = std::move(row_groups_);
    for (const KeyValue& kv : options_.metadata) meta.key_value_metadata.push_back({kv.key, kv.value});
    meta.created_by = options_.created_by;
    meta.column_orders = schema_.size();
    std::string footer;
    format::EncodeFileMetaData(meta, &footer);
    uint32_t len = static_cast<uint32_t>(footer.size());
    char len_bytes[4];
    std::memcpy(len_bytes, &len, 4);
    footer.append(len_bytes, 4);
    footer.append(kMagic);
    GOVERN_RETURN_IF_ERROR(sink_->Append(footer));
    offset_ += static_cast<int64_t>(footer.size());
    GOVERN_RETURN_IF_ERROR(sink_->Close());
    return WriteSummary{static_cast<uint64_t>(offset_), rows_, static_cast<int64_t>(meta.row_groups.size())};
  }

  const Schema& schema() const { return schema_; }
  int64_t rows() const {
    return rows_ + group_rows_ + static_cast<int64_t>(pending_.empty() ? 0 : pending_[0].size());
  }

 private:
  Status FlushPendingRows() {
    if (pending_.empty() || pending_[0].size() == 0) return OkStatus();
    std::vector<ColumnVector> batch;
    batch.swap(pending_);
    status_ = WriteRows(batch, batch[0].size());
    for (ColumnVector& v : batch) v.Clear();
    pending_.swap(batch);
    return status_;
  }

  Status WriteRows(std::span<const ColumnVector> batch, size_t rows) {
    size_t begin = 0;
    while (begin < rows) {
      size_t room = static_cast<size_t>(options_.row_group_rows - group_rows_);
      size_t end = std::min(rows, begin + std::max<size_t>(room, 1));
      for (size_t c = 0; c < batch.size(); ++c)
        GOVERN_RETURN_IF_ERROR(columns_[c]->Append(batch[c], begin, end));
      group_rows_ += static_cast<int64_t>(end - begin);
      begin = end;
      int64_t buffered = 0;
      for (const auto& col : columns_) buffered += col->BufferedBytes();
      if (group_rows_ >= options_.row_group_rows || buffered >= options_.row_group_bytes) {
        GOVERN_RETURN_IF_ERROR(FlushRowGroup());
      }
    }
    return OkStatus();
  }

  Status FlushRowGroup() {
    format::RowGroup rg;
    rg.num_rows = group_rows_;
    rg.file_offset = offset_;
    int64_t start = offset_;
    for (auto& col : columns_) {
      format::ColumnChunk& chunk = rg.columns.emplace_back();
      GOVERN_RETURN_IF_ERROR(col->FinishChunk(sink_.get(), &offset_, &chunk));
      rg.total_byte_size += chunk.meta_data->total_uncompressed_size;
    }
    rg.total_compressed_size = offset_ - start;
    rows_ += group_rows_;
    group_rows_ = 0;
    row_groups_.push_back(std::move(rg));
    return OkStatus();
  }

  std::unique_ptr<Sink> sink_;
  Schema schema_;
  WriterOptions options_;
  std::vector<std::unique_ptr<ColumnWriter>> columns_;
  std::vector<ColumnVector> pending_;  // rows from AppendRow not yet encoded
  std::vector<format::RowGroup> row_groups_;
  int64_t offset_ = 0;
  int64_t rows_ = 0;
  int64_t group_rows_ = 0;
  bool closed_ = false;
  Status status_;
};

Writer::Writer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Writer::~Writer() = default;

Result<std::unique_ptr<Writer>> Writer::Create(std::unique_ptr<Sink> sink, Schema schema,
                                               WriterOptions options) {
  if (schema.empty()) return InvalidArgument("parquet: a schema needs at least one column");
  for (size_t i = 0; i < schema.size(); ++i) {
    if (schema[i].name.empty())
      return InvalidArgument("parquet: column " + std::to_string(i) + " has no name");
    for (size_t j = 0; j < i; ++j) {
      if (schema[j].name == schema[i].name)
        return InvalidArgument("parquet: duplicate column " + schema[i].name);
    }
  }
  if (options.row_group_rows < 1 || options.page_rows < 1 || options.page_bytes < 1 ||
      options.row_group_bytes < 1) {
    return InvalidArgument("parquet: row group and page sizes must be positive");
  }
  auto impl = std::make_unique<Impl>(std::move(sink), std::move(schema), std::move(options));
  GOVERN_RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<Writer>(new Writer(std::move(impl)));
}

Result<std::unique_ptr<Writer>> Writer::Open(const std::string& path, Schema schema, WriterOptions options) {
  GOVERN_ASSIGN_OR_RETURN(std::unique_ptr<DurableFile> file, DurableFile::Create(path));
  return Create(std::move(file), std::move(schema), std::move(options));
}

Status Writer::Write(std::span<const ColumnVector> batch) { return impl_->Write(batch); }
Status Writer::AppendRow(std::span<const Value> row) { return impl_->AppendRow(row); }
Result<WriteSummary> Writer::Close() { return impl_->Close(); }
const Schema& Writer::schema() const { return impl_->schema(); }
int64_t Writer::rows_written() const { return impl_->rows(); }

}  // namespace govern::parquet
