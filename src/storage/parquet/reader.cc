// The Parquet reader: footer and metadata validation on Open, page-by-page decoding of column chunks.
#include "storage/parquet/reader.h"

#include <cstring>

#include "storage/parquet/codec.h"
#include "storage/parquet/delta.h"
#include "storage/parquet/metadata.h"
#include "storage/parquet/rle.h"

namespace govern::parquet {

namespace {

constexpr char kMagic[] = "PAR1";

uint32_t LoadU32(const uint8_t* p) {
  uint32_t v = 0;
  std::memcpy(&v, p, 4);
  return v;
}

std::string EncodingName(int32_t e) {
  switch (e) {
    case format::kPlain:
      return "PLAIN";
    case format::kPlainDictionary:
      return "PLAIN_DICTIONARY";
    case format::kRle:
      return "RLE";
    case format::kBitPacked:
      return "BIT_PACKED";
    case format::kDeltaBinaryPacked:
      return "DELTA_BINARY_PACKED";
    case format::kDeltaLengthByteArray:
      return "DELTA_LENGTH_BYTE_ARRAY";
    case format::kDeltaByteArray:
      return "DELTA_BYTE_ARRAY";
    case format::kRleDictionary:
      return "RLE_DICTIONARY";
    case format::kByteStreamSplit:
      return "BYTE_STREAM_SPLIT";
    default:
      return "encoding " + std::to_string(e);
  }
}

Result<Type> ColumnType(const format::SchemaElement& e) {
  switch (*e.type) {
    case format::kBoolean:
      return Type::kBoolean;
    case format::kInt32:
      return Type::kInt32;
    case format::kInt64: {
      bool micros =
          (e.logical_type.kind == format::LogicalType::kTimestamp && e.logical_type.timestamp_unit == 1) ||
          (e.logical_type.kind == format::LogicalType::kNone && e.converted_type &&
           *e.converted_type == format::kTimestampMicros);
      return micros ? Type::kTimestampMicros : Type::kInt64;
    }
    case format::kDouble:
      return Type::kDouble;
    case format::kByteArray:
      return Type::kString;
    default:
      return Unimplemented("parquet: column " + e.name + " has physical type " + std::to_string(*e.type) +
                           ", which Govern does not read");
  }
}

std::optional<Scalar> DecodeScalar(Type type, const std::optional<std::string>& bytes) {
  if (!bytes) return std::nullopt;
  const std::string& b = *bytes;
  switch (type) {
    case Type::kBoolean:
      if (b.size() != 1) return std::nullopt;
      return Scalar(b[0] != 0);
    case Type::kInt32: {
      if (b.size() != 4) return std::nullopt;
      int32_t v = 0;
      std::memcpy(&v, b.data(), 4);
      return Scalar(v);
    }
    case Type::kInt64:
    case Type::kTimestampMicros: {
      if (b.size() != 8) return std::nullopt;
      int64_t v = 0;
      std::memcpy(&v, b.data(), 8);
      return Scalar(v);
    }
    case Type::kDouble: {
      if (b.size() != 8) return std::nullopt;
      double v = 0;
      std::memcpy(&v, b.data(), 8);
      if (v != v) return std::nullopt;  // a NaN bound bounds nothing
      return Scalar(v);
    }
    case Type::kString:
      return Scalar(b);
  }
  return std::nullopt;
}

// Appends src's row k (never null) to out.
void AppendFrom(ColumnVector& out, const ColumnVector& src, size_t k) {
  switch (out.type()) {
    case Type::kBoolean:
      out.AppendBool(src.GetBool(k));
      break;
    case Type::kInt32:
      out.AppendInt32(src.GetInt32(k));
      break;
    case Type::kInt64:
    case Type::kTimestampMicros:
      out.AppendInt64(src.GetInt64(k));
      break;
    case Type::kDouble:
      out.AppendDouble(src.GetDouble(k));
      break;
    case Type::kString:
      out.AppendString(src.GetString(k));
      break;
  }
}

// Decodes `count` PLAIN values from [p, p+size) into out (no nulls). Sets *used to the bytes consumed.
Status DecodePlain(const uint8_t* p, size_t size, size_t count, ColumnVector* out, uint64_t max_bytes) {
  auto fixed = [&](size_t width) -> Status {
    if (count > size / width) return DataLoss("parquet: PLAIN values run past the page");
    return OkStatus();
  };
  switch (out->type()) {
    case Type::kBoolean:
      if (count > size * 8) return DataLoss("parquet: PLAIN booleans run past the page");
      for (size_t i = 0; i < count; ++i) out->AppendBool((p[i >> 3] >> (i & 7)) & 1);
      return OkStatus();
    case Type::kInt32:
      GOVERN_RETURN_IF_ERROR(fixed(4));
      for (size_t i = 0; i < count; ++i) {
        int32_t v = 0;
        std::memcpy(&v, p + 4 * i, 4);
        out->AppendInt32(v);
      }
      return OkStatus();
    case Type::kInt64:
    case Type::kTimestampMicros:
      GOVERN_RETURN_IF_ERROR(fixed(8));
      for (size_t i = 0; i < count; ++i) {
        int64_t v = 0;
        std::memcpy(&v, p + 8 * i, 8);
        out->AppendInt64(v);
      }
      return OkStatus();
    case Type::kDouble:
      GOVERN_RETURN_IF_ERROR(fixed(8));
      for (size_t i = 0; i < count; ++i) {
        double v = 0;
        std::memcpy(&v, p + 8 * i, 8);
        out->AppendDouble(v);
      }
      return OkStatus();
    case Type::kString: {
      if (count > size / 4) return DataLoss("parquet: PLAIN strings run past the page");
      size_t pos = 0;
      for (size_t i = 0; i < count; ++i) {
        if (size - pos < 4) return DataLoss("parquet: PLAIN string length runs past the page");
        uint32_t len = LoadU32(p + pos);
        pos += 4;
        if (len > size - pos) return DataLoss("parquet: PLAIN string runs past the page");
        if (out->string_bytes() + len > max_bytes) {
          return ResourceExhausted("parquet: column holds more string bytes than the reader allows");
        }
        out->AppendString(std::string_view(reinterpret_cast<const char*>(p + pos), len));
        pos += len;
      }
      return OkStatus();
    }
  }
  return Internal("parquet: unknown type");
}

}  // namespace

class Reader::Impl {
 public:
  struct Chunk {
    uint64_t start = 0;
    uint64_t length = 0;
    int32_t codec = 0;
  };

  Impl(std::unique_ptr<Source> source, ReaderOptions options)
      : source_(std::move(source)), options_(options) {}

  Status Load() {
    const uint64_t size = source_->size();
    if (size < 12) return InvalidArgument("parquet: not a Parquet file (" + std::to_string(size) + " bytes)");
    std::string head, tail;
    GOVERN_RETURN_IF_ERROR(source_->ReadAt(0, 4, &head));
    if (head != kMagic) return InvalidArgument("parquet: not a Parquet file (no PAR1 at the start)");
    GOVERN_RETURN_IF_ERROR(source_->ReadAt(size - 8, 8, &tail));
    if (tail.compare(4, 4, "PARE") == 0) return Unimplemented("parquet: encrypted footers are not supported");
    if (tail.compare(4, 4, kMagic) != 0) {
      return DataLoss("parquet: no PAR1 at the end: the file is truncated or corrupt");
    }
    uint64_t footer_len = LoadU32(reinterpret_cast<const uint8_t*>(tail.data()));
    if (footer_len > size - 12) {
      return DataLoss("parquet: footer length " + std::to_string(footer_len) + " exceeds the file (" +
                      std::to_string(size) + " bytes)");
    }
    if (footer_len > options_.max_footer_bytes) {
      return ResourceExhausted("parquet: footer of " + std::to_string(footer_len) +
                               " bytes exceeds the limit");
    }
    footer_start_ = size - 8 - footer_len;
    std::string footer;
    GOVERN_RETURN_IF_ERROR(source_->ReadAt(footer_start_, footer_len, &footer));
    format::FileMetaData meta;
    GOVERN_RETURN_IF_ERROR(
        format::DecodeFileMetaData(reinterpret_cast<const uint8_t*>(footer.data()), footer.size(), &meta));
    GOVERN_RETURN_IF_ERROR(LoadSchema(meta));
    GOVERN_RETURN_IF_ERROR(LoadRowGroups(meta));
    for (format::KeyValue& kv : meta.key_value_metadata) {
      kv_.push_back({std::move(kv.key), kv.value.value_or("")});
    }
    created_by_ = meta.created_by.value_or("");
    return OkStatus();
  }

  Status LoadSchema(const format::FileMetaData& meta) {
    if (meta.schema.empty()) return DataLoss("parquet: empty schema");
    const format::SchemaElement& root = meta.schema[0];
    if (!root.num_children || static_cast<size_t>(*root.num_children) != meta.schema.size() - 1) {
      return Unimplemented("parquet: only flat schemas (top-level primitive columns) are supported");
    }
    for (size_t i = 1; i < meta.schema.size(); ++i) {
      const format::SchemaElement& e = meta.schema[i];
      if ((e.num_children && *e.num_children > 0) || !e.type) {
        return Unimplemented("parquet: column " + e.name + " is nested; only flat schemas are supported");
      }
      if (!e.repetition_type) return DataLoss("parquet: column " + e.name + " has no repetition type");
      if (*e.repetition_type == format::kRepeated) {
        return Unimplemented("parquet: column " + e.name + " is repeated; only flat schemas are supported");
      }
      if (*e.repetition_type != format::kRequired && *e.repetition_type != format::kOptional) {
        return DataLoss("parquet: column " + e.name + " has an unknown repetition type");
      }
      GOVERN_ASSIGN_OR_RETURN(Type type, ColumnType(e));
      schema_.push_back({e.name, type, *e.repetition_type == format::kOptional});
      physical_.push_back(*e.type);
    }
    return OkStatus();
  }

  Status LoadRowGroups(const format::FileMetaData& meta) {
    if (meta.num_rows < 0) return DataLoss("parquet: negative row count");
    int64_t total = 0;
    for (size_t g = 0; g < meta.row_groups.size(); ++g) {
      const format::RowGroup& rg = meta.row_groups[g];
      const std::string where = "parquet: row group " + std::to_string(g);
      if (rg.columns.size() != schema_.size()) {
        return DataLoss(where + " has " + std::to_string(rg.columns.size()) + " columns, the schema " +
                        std::to_string(schema_.size()));
      }
      if (rg.num_rows < 0 || rg.num_rows > meta.num_rows - total) {
        return DataLoss(where + " claims more rows than the file");
      }
      total += rg.num_rows;
      RowGroupInfo info;
      info.num_rows = rg.num_rows;
      std::vector<Chunk> chunks;
      for (size_t c = 0; c < rg.columns.size(); ++c) {
        const format::ColumnChunk& cc = rg.columns[c];
        const format::ColumnMetaData& m = *cc.meta_data;
        const std::string col = where + ", column " + schema_[c].name;
        if (cc.file_path) return Unimplemented(col + " lives in another file");
        if (m.type != physical_[c]) return DataLoss(col + ": type differs from the schema");
        if (m.num_values < 0 || m.total_compressed_size < 0 || m.total_uncompressed_size < 0) {
          return DataLoss(col + ": negative sizes");
        }
        int64_t start = m.data_page_offset;
        if (m.dictionary_page_offset && *m.dictionary_page_offset > 0 && *m.dictionary_page_offset < start) {
          start = *m.dictionary_page_offset;
        }
        if (start < 4 || static_cast<uint64_t>(start) > footer_start_ ||
            static_cast<uint64_t>(m.total_compressed_size) > footer_start_ - static_cast<uint64_t>(start)) {
          return DataLoss(col + ": column chunk lies outside the file's data");
        }
        chunks.push_back(
            {static_cast<uint64_t>(start), static_cast<uint64_t>(m.total_compressed_size), m.codec});
        ColumnChunkInfo& ci = info.columns.emplace_back();
        ci.codec = m.codec;
        ci.encodings = m.encodings;
        ci.num_values = m.num_values;
        ci.compressed_bytes = m.total_compressed_size;
        ci.uncompressed_bytes = m.total_uncompressed_size;
        ci.has_dictionary = m.dictionary_page_offset.value_or(0) > 0;
        if (m.statistics) {
          ci.statistics.null_count = m.statistics->null_count;
          ci.statistics.min = DecodeScalar(schema_[c].type, m.statistics->min_value);
          ci.statistics.max = DecodeScalar(schema_[c].type, m.statistics->max_value);
        }
      }
      row_groups_.push_back(std::move(info));
      chunks_.push_back(std::move(chunks));
    }
    if (total != meta.num_rows) return DataLoss("parquet: row groups hold fewer rows than the file claims");
    num_rows_ = meta.num_rows;
    return OkStatus();
  }

  Result<ColumnVector> ReadColumn(size_t g, size_t c) const {
    if (g >= row_groups_.size() || c >= schema_.size()) {
      return OutOfRange("parquet: no row group " + std::to_string(g) + " column " + std::to_string(c));
    }
    Result<ColumnVector> r = ReadChunk(g, c);
    if (!r.ok()) {
      return r.status().WithContext("row group " + std::to_string(g) + ", column " + schema_[c].name);
    }
    return r;
  }

  Result<ColumnVector> ReadChunk(size_t g, size_t c) const {
    const Column& column = schema_[c];
    const Chunk& chunk = chunks_[g][c];
    const int64_t rows = row_groups_[g].num_rows;
    if (rows > options_.max_row_group_rows) {
      return ResourceExhausted("parquet: row group of " + std::to_string(rows) + " rows exceeds the limit");
    }
    std::string bytes;
    GOVERN_RETURN_IF_ERROR(source_->ReadAt(chunk.start, chunk.length, &bytes));
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
    ColumnVector out(column.type);
    ColumnVector dict(column.type);
    bool have_dict = false;
    std::string page;
    std::vector<uint32_t> levels;
    std::vector<uint32_t> indices;
    std::vector<int64_t> ints;
    ColumnVector values(column.type);
    size_t pos = 0;
    int64_t done = 0;
    while (done < rows) {
      if (pos >= bytes.size()) {
        return DataLoss("parquet: column chunk ends after " + std::to_string(done) + " of " +
                        std::to_string(rows) + " values");
      }
      format::PageHeader h;
      size_t header_len = 0;
      GOVERN_RETURN_IF_ERROR(format::DecodePageHeader(data + pos, bytes.size() - pos, &h, &header_len));
      pos += header_len;
      if (h.compressed_page_size < 0 || h.uncompressed_page_size < 0) {
        return DataLoss("parquet: negative page size");
      }
      if (static_cast<size_t>(h.compressed_page_size) > bytes.size() - pos) {
        return DataLoss("parquet: page runs past the end of its column chunk");
      }
      std::string_view raw(bytes.data() + pos, static_cast<size_t>(h.compressed_page_size));
      pos += raw.size();
      if (h.type == format::kIndexPage) continue;
      if (h.type == format::kDataPageV2) return Unimplemented("parquet: data page v2 is not supported");
      if (h.type != format::kDataPage && h.type != format::kDictionaryPage) {
        return DataLoss("parquet: unknown page type " + std::to_string(h.type));
      }
      if (static_cast<uint64_t>(h.uncompressed_page_size) > options_.max_page_bytes) {
        return ResourceExhausted("parquet: page of " + std::to_string(h.uncompressed_page_size) +
                                 " bytes exceeds the limit");
      }
      GOVERN_RETURN_IF_ERROR(
          Decompress(chunk.codec, raw, static_cast<size_t>(h.uncompressed_page_size), &page));
      const auto* p = reinterpret_cast<const uint8_t*>(page.data());
      size_t left = page.size();

      if (h.type == format::kDictionaryPage) {
        if (!h.dictionary_page_header) return DataLoss("parquet: dictionary page without its header");
        if (have_dict || done > 0) return DataLoss("parquet: dictionary page is not the chunk's first page");
        const format::DictionaryPageHeader& dh = *h.dictionary_page_header;
        if (dh.encoding != format::kPlain && dh.encoding != format::kPlainDictionary) {
          return Unimplemented("parquet: dictionary page in " + EncodingName(dh.encoding));
        }
        if (dh.num_values < 0) return DataLoss("parquet: negative dictionary size");
        GOVERN_RETURN_IF_ERROR(
            DecodePlain(p, left, static_cast<size_t>(dh.num_values), &dict, options_.max_column_bytes));
        have_dict = true;
        continue;
      }

      if (!h.data_page_header) return DataLoss("parquet: data page without its header");
      const format::DataPageHeader& dh = *h.data_page_header;
      if (dh.num_values < 0 || dh.num_values > rows - done) {
        return DataLoss("parquet: data pages hold more values than the row group has rows");
      }
      const auto n = static_cast<size_t>(dh.num_values);
      size_t non_null = n;
      if (column.optional) {
        if (dh.definition_level_encoding != format::kRle) {
          return Unimplemented("parquet: definition levels in " + EncodingName(dh.definition_level_encoding));
        }
        if (left < 4) return DataLoss("parquet: data page too short for its definition levels");
        uint32_t len = LoadU32(p);
        if (len > left - 4) return DataLoss("parquet: definition levels run past the page");
        levels.resize(n);
        GOVERN_RETURN_IF_ERROR(RleDecoder(p + 4, len, 1).Decode(levels.data(), n));
        non_null = 0;
        for (uint32_t l : levels) non_null += l;
        p += 4 + len;
        left -= 4 + len;
      }
      values.Clear();
      if (dh.encoding == format::kPlain) {
        GOVERN_RETURN_IF_ERROR(DecodePlain(p, left, non_null, &values, options_.max_column_bytes));
      } else if (dh.encoding == format::kPlainDictionary || dh.encoding == format::kRleDictionary) {
        if (!have_dict) return DataLoss("parquet: dictionary-encoded page without a dictionary");
        if (non_null > 0) {
          if (left < 1) return DataLoss("parquet: dictionary page indices missing");
          int width = p[0];
          if (width > 32) return DataLoss("parquet: dictionary index bit width above 32");
          indices.resize(non_null);
          GOVERN_RETURN_IF_ERROR(RleDecoder(p + 1, left - 1, width).Decode(indices.data(), non_null));
          for (uint32_t idx : indices) {
            if (idx >= dict.size()) return DataLoss("parquet: dictionary index out of range");
            if (column.type == Type::kString &&
                values.string_bytes() + dict.GetString(idx).size() > options_.max_column_bytes) {
              return ResourceExhausted("parquet: column holds more string bytes than the reader allows");
            }
            AppendFrom(values, dict, idx);
          }
        }
      } else if (dh.encoding == format::kDeltaBinaryPacked &&
                 (column.type == Type::kInt32 || column.type == Type::kInt64 ||
                  column.type == Type::kTimestampMicros)) {
        ints.resize(non_null);
        size_t used = 0;
        const int width = column.type == Type::kInt32 ? 32 : 64;
        GOVERN_RETURN_IF_ERROR(DecodeDeltaBinaryPacked(p, left, non_null, width, ints.data(), &used));
        values.Reserve(non_null);
        if (column.type == Type::kInt32) {
          for (int64_t v : ints) values.AppendInt32(static_cast<int32_t>(v));
        } else {
          for (int64_t v : ints) values.AppendInt64(v);
        }
      } else if (dh.encoding == format::kDeltaLengthByteArray && column.type == Type::kString) {
        // The lengths (DELTA_BINARY_PACKED, 32-bit), then the values back to back.
        ints.resize(non_null);
        size_t used = 0;
        GOVERN_RETURN_IF_ERROR(DecodeDeltaBinaryPacked(p, left, non_null, 32, ints.data(), &used));
        const char* bytes_at = reinterpret_cast<const char*>(p) + used;
        size_t bytes_left = left - used;
        values.Reserve(non_null);
        for (int64_t len : ints) {
          if (len < 0 || static_cast<uint64_t>(len) > bytes_left) {
            return DataLoss("parquet: DELTA_LENGTH_BYTE_ARRAY lengths run past the page");
          }
          values.AppendString(std::string_view(bytes_at, static_cast<size_t>(len)));
          bytes_at += len;
          bytes_left -= static_cast<size_t>(len);
        }
      } else {
        return Unimplemented("parquet: data page in " + EncodingName(dh.encoding));
      }
      if (out.string_bytes() + values.string_bytes() > options_.max_column_bytes) {
        return ResourceExhausted("parquet: column holds more string bytes than the reader allows");
      }
      if (!column.optional) {
        for (size_t k = 0; k < n; ++k) AppendFrom(out, values, k);
      } else {
        size_t k = 0;
        for (size_t i = 0; i < n; ++i) {
          if (levels[i] == 0) {
            out.AppendNull();
          } else {
            AppendFrom(out, values, k++);
          }
        }
      }
      done += dh.num_values;
    }
    return out;
  }

  std::unique_ptr<Source> source_;
  ReaderOptions options_;
  uint64_t footer_start_ = 0;
  Schema schema_;
  std::vector<int32_t> physical_;
  int64_t num_rows_ = 0;
  std::vector<RowGroupInfo> row_groups_;
  std::vector<std::vector<Chunk>> chunks_;
  std::vector<KeyValue> kv_;
  std::string created_by_;
};

Reader::Reader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Reader::~Reader() = default;

Result<std::unique_ptr<Reader>> Reader::Open(std::unique_ptr<Source> source, ReaderOptions options) {
  auto impl = std::make_unique<Impl>(std::move(source), options);
  GOVERN_RETURN_IF_ERROR(impl->Load());
  return std::unique_ptr<Reader>(new Reader(std::move(impl)));
}

Result<std::unique_ptr<Reader>> Reader::Open(const std::string& path, ReaderOptions options) {
  GOVERN_ASSIGN_OR_RETURN(std::unique_ptr<Source> source, OpenFileSource(path));
  Result<std::unique_ptr<Reader>> r = Open(std::move(source), options);
  if (!r.ok()) return r.status().WithContext(path);
  return r;
}

const Schema& Reader::schema() const { return impl_->schema_; }
int64_t Reader::num_rows() const { return impl_->num_rows_; }
const std::vector<RowGroupInfo>& Reader::row_groups() const { return impl_->row_groups_; }
const std::vector<KeyValue>& Reader::key_value_metadata() const { return impl_->kv_; }
const std::string& Reader::created_by() const { return impl_->created_by_; }

std::vector<size_t> Reader::RowGroupsOverlapping(size_t column, int64_t lo, int64_t hi) const {
  auto as_int = [](const std::optional<Scalar>& s) -> std::optional<int64_t> {
    if (!s) return std::nullopt;
    if (const auto* v = std::get_if<int64_t>(&*s)) return *v;
    if (const auto* v = std::get_if<int32_t>(&*s)) return *v;
    return std::nullopt;
  };
  std::vector<size_t> out;
  const auto& groups = impl_->row_groups_;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (column >= groups[g].columns.size()) break;
    const ColumnStatistics& st = groups[g].columns[column].statistics;
    if (st.null_count && *st.null_count == groups[g].num_rows && groups[g].num_rows > 0)
      continue;  // all null
    std::optional<int64_t> min = as_int(st.min), max = as_int(st.max);
    if (min && max && (*max < lo || *min > hi)) continue;
    if (groups[g].num_rows == 0) continue;
    out.push_back(g);
  }
  return out;
}

Result<ColumnVector> Reader::ReadColumn(size_t row_group, size_t column) const {
  return impl_->ReadColumn(row_group, column);
}

Result<std::vector<ColumnVector>> Reader::ReadRowGroup(size_t row_group) const {
  std::vector<ColumnVector> out;
  for (size_t c = 0; c < impl_->schema_.size(); ++c) {
    GOVERN_ASSIGN_OR_RETURN(ColumnVector v, ReadColumn(row_group, c));
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace govern::parquet
