// Thrift compact encoding and decoding of the Parquet metadata structures in metadata.h.
#include "storage/parquet/metadata.h"

#include "storage/parquet/thrift.h"

namespace govern::parquet::format {

using thrift::Decoder;
using thrift::Encoder;
using thrift::WireType;

// GOVERN_RETURN_IF_ERROR around a call whose argument is a lambda that itself uses the macro would
// shadow its variable; this one names its variable after the line.
#define PARQUET_RETURN_IF_ERROR(expr)                                                                      \
  do {                                                                                                     \
    ::govern::Status GOVERN_CONCAT_(parquet_status_, __LINE__) = (expr);                                   \
    if (!GOVERN_CONCAT_(parquet_status_, __LINE__).ok()) return GOVERN_CONCAT_(parquet_status_, __LINE__); \
  } while (0)

// ---- Encoding

namespace {

void EncodeStatistics(Encoder& e, const Statistics& s) {
  if (s.max) e.FieldBinary(1, *s.max);
  if (s.min) e.FieldBinary(2, *s.min);
  if (s.null_count) e.FieldI64(3, *s.null_count);
  if (s.distinct_count) e.FieldI64(4, *s.distinct_count);
  if (s.max_value) e.FieldBinary(5, *s.max_value);
  if (s.min_value) e.FieldBinary(6, *s.min_value);
  if (s.is_max_value_exact) e.FieldBool(7, *s.is_max_value_exact);
  if (s.is_min_value_exact) e.FieldBool(8, *s.is_min_value_exact);
}

void EncodeKeyValues(Encoder& e, int16_t id, const std::vector<KeyValue>& kvs) {
  e.FieldList(id, WireType::kStruct, kvs.size());
  for (const KeyValue& kv : kvs) {
    e.BeginStruct();
    e.FieldBinary(1, kv.key);
    if (kv.value) e.FieldBinary(2, *kv.value);
    e.EndStruct();
  }
}

void EncodeSchemaElement(Encoder& e, const SchemaElement& s) {
  e.BeginStruct();
  if (s.type) e.FieldI32(1, *s.type);
  if (s.type_length) e.FieldI32(2, *s.type_length);
  if (s.repetition_type) e.FieldI32(3, *s.repetition_type);
  e.FieldBinary(4, s.name);
  if (s.num_children) e.FieldI32(5, *s.num_children);
  if (s.converted_type) e.FieldI32(6, *s.converted_type);
  if (s.logical_type.kind == LogicalType::kString) {
    e.FieldStruct(10);  // LogicalType
    e.FieldStruct(1);   // STRING: StringType {}
    e.EndStruct();
    e.EndStruct();
  } else if (s.logical_type.kind == LogicalType::kTimestamp) {
    e.FieldStruct(10);  // LogicalType
    e.FieldStruct(8);   // TIMESTAMP: TimestampType
    e.FieldBool(1, s.logical_type.timestamp_utc);
    e.FieldStruct(2);  // unit: TimeUnit
    e.FieldStruct(static_cast<int16_t>(s.logical_type.timestamp_unit + 1));
    e.EndStruct();
    e.EndStruct();
    e.EndStruct();
    e.EndStruct();
  }
  e.EndStruct();
}

void EncodeColumnMetaData(Encoder& e, const ColumnMetaData& m) {
  e.FieldI32(1, m.type);
  e.FieldList(2, WireType::kI32, m.encodings.size());
  for (int32_t enc : m.encodings) e.ListI32(enc);
  e.FieldList(3, WireType::kBinary, m.path_in_schema.size());
  for (const std::string& p : m.path_in_schema) e.ListBinary(p);
  e.FieldI32(4, m.codec);
  e.FieldI64(5, m.num_values);
  e.FieldI64(6, m.total_uncompressed_size);
  e.FieldI64(7, m.total_compressed_size);
  e.FieldI64(9, m.data_page_offset);
  if (m.dictionary_page_offset) e.FieldI64(11, *m.dictionary_page_offset);
  if (m.statistics) {
    e.FieldStruct(12);
    EncodeStatistics(e, *m.statistics);
    e.EndStruct();
  }
}

}  // namespace

void EncodeFileMetaData(const FileMetaData& meta, std::string* out) {
  Encoder e(out);
  e.BeginStruct();
  e.FieldI32(1, meta.version);
  e.FieldList(2, WireType::kStruct, meta.schema.size());
  for (const SchemaElement& s : meta.schema) EncodeSchemaElement(e, s);
  e.FieldI64(3, meta.num_rows);
  e.FieldList(4, WireType::kStruct, meta.row_groups.size());
  for (const RowGroup& rg : meta.row_groups) {
    e.BeginStruct();
    e.FieldList(1, WireType::kStruct, rg.columns.size());
    for (const ColumnChunk& c : rg.columns) {
      e.BeginStruct();
      if (c.file_path) e.FieldBinary(1, *c.file_path);
      e.FieldI64(2, c.file_offset);
      if (c.meta_data) {
        e.FieldStruct(3);
        EncodeColumnMetaData(e, *c.meta_data);
        e.EndStruct();
      }
      e.EndStruct();
    }
    e.FieldI64(2, rg.total_byte_size);
    e.FieldI64(3, rg.num_rows);
    if (rg.file_offset) e.FieldI64(5, *rg.file_offset);
    if (rg.total_compressed_size) e.FieldI64(6, *rg.total_compressed_size);
    e.EndStruct();
  }
  if (!meta.key_value_metadata.empty()) EncodeKeyValues(e, 5, meta.key_value_metadata);
  if (meta.created_by) e.FieldBinary(6, *meta.created_by);
  if (meta.column_orders > 0) {
    e.FieldList(7, WireType::kStruct, meta.column_orders);
    for (size_t i = 0; i < meta.column_orders; ++i) {
      e.BeginStruct();
      e.FieldStruct(1);  // TYPE_ORDER: TypeDefinedOrder {}
      e.EndStruct();
      e.EndStruct();
    }
  }
  e.EndStruct();
}

void EncodePageHeader(const PageHeader& h, std::string* out) {
  Encoder e(out);
  e.BeginStruct();
  e.FieldI32(1, h.type);
  e.FieldI32(2, h.uncompressed_page_size);
  e.FieldI32(3, h.compressed_page_size);
  if (h.crc) e.FieldI32(4, *h.crc);
  if (h.data_page_header) {
    const DataPageHeader& d = *h.data_page_header;
    e.FieldStruct(5);
    e.FieldI32(1, d.num_values);
    e.FieldI32(2, d.encoding);
    e.FieldI32(3, d.definition_level_encoding);
    e.FieldI32(4, d.repetition_level_encoding);
    if (d.statistics) {
      e.FieldStruct(5);
      EncodeStatistics(e, *d.statistics);
      e.EndStruct();
    }
    e.EndStruct();
  }
  if (h.dictionary_page_header) {
    const DictionaryPageHeader& d = *h.dictionary_page_header;
    e.FieldStruct(7);
    e.FieldI32(1, d.num_values);
    e.FieldI32(2, d.encoding);
    if (d.is_sorted) e.FieldBool(3, *d.is_sorted);
    e.EndStruct();
  }
  e.EndStruct();
}

// ---- Decoding

namespace {

// Tracks which required fields of one struct were seen.
class Required {
 public:
  void Saw(int bit) { seen_ |= 1u << bit; }
  Status Check(unsigned want, const char* what) const {
    if ((seen_ & want) != want) return Decoder::Corrupt(std::string(what) + " lacks a required field");
    return OkStatus();
  }

 private:
  unsigned seen_ = 0;
};

template <typename T>
Status ReadOptionalI32(Decoder& d, WireType t, std::optional<T>* out) {
  int32_t v = 0;
  GOVERN_RETURN_IF_ERROR(d.ReadI32(t, &v));
  *out = v;
  return OkStatus();
}

Status ReadOptionalI64(Decoder& d, WireType t, std::optional<int64_t>* out) {
  int64_t v = 0;
  GOVERN_RETURN_IF_ERROR(d.ReadI64(t, &v));
  *out = v;
  return OkStatus();
}

Status ReadOptionalBinary(Decoder& d, WireType t, std::optional<std::string>* out) {
  std::string v;
  GOVERN_RETURN_IF_ERROR(d.ReadBinary(t, &v));
  *out = std::move(v);
  return OkStatus();
}

Status ReadOptionalBool(Decoder& d, WireType t, std::optional<bool>* out) {
  bool v = false;
  GOVERN_RETURN_IF_ERROR(d.ReadBool(t, &v));
  *out = v;
  return OkStatus();
}

Status DecodeStatistics(Decoder& d, WireType t, Statistics* s) {
  GOVERN_RETURN_IF_ERROR(d.CheckStruct(t));
  return d.ReadStruct([&](int16_t id, WireType ft) -> Status {
    switch (id) {
      case 1:
        return ReadOptionalBinary(d, ft, &s->max);
      case 2:
        return ReadOptionalBinary(d, ft, &s->min);
      case 3:
        return ReadOptionalI64(d, ft, &s->null_count);
      case 4:
        return ReadOptionalI64(d, ft, &s->distinct_count);
      case 5:
        return ReadOptionalBinary(d, ft, &s->max_value);
      case 6:
        return ReadOptionalBinary(d, ft, &s->min_value);
      case 7:
        return ReadOptionalBool(d, ft, &s->is_max_value_exact);
      case 8:
        return ReadOptionalBool(d, ft, &s->is_min_value_exact);
      default:
        return d.Skip(ft);
    }
  });
}

// A union is a struct with exactly one field set; returns that field's id (0 when empty).
Status DecodeUnionEmptyMember(Decoder& d, WireType t, int16_t* member) {
  GOVERN_RETURN_IF_ERROR(d.CheckStruct(t));
  *member = 0;
  return d.ReadStruct([&](int16_t id, WireType ft) -> Status {
    *member = id;
    return d.Skip(ft);
  });
}

Status DecodeLogicalType(Decoder& d, WireType t, LogicalType* lt) {
  GOVERN_RETURN_IF_ERROR(d.CheckStruct(t));
  return d.ReadStruct([&](int16_t id, WireType ft) -> Status {
    if (id == 1) {
      lt->kind = LogicalType::kString;
      return d.Skip(ft);
    }
    if (id == 8) {
      lt->kind = LogicalType::kTimestamp;
      GOVERN_RETURN_IF_ERROR(d.CheckStruct(ft));
      return d.ReadStruct([&](int16_t tid, WireType tft) -> Status {
        if (tid == 1) return d.ReadBool(tft, &lt->timestamp_utc);
        if (tid == 2) {
          int16_t unit = 0;
          GOVERN_RETURN_IF_ERROR(DecodeUnionEmptyMember(d, tft, &unit));
          lt->timestamp_unit = unit - 1;
          return OkStatus();
        }
        return d.Skip(tft);
      });
    }
    lt->kind = LogicalType::kOther;
    return d.Skip(ft);
  });
}

Status DecodeSchemaElement(Decoder& d, SchemaElement* s) {
  Required req;
  PARQUET_RETURN_IF_ERROR(d.ReadStruct([&](int16_t id, WireType ft) -> Status {
    switch (id) {
      case 1:
        return ReadOptionalI32(d, ft, &s->type);
      case 2:
        return ReadOptionalI32(d, ft, &s->type_length);
      case 3:
        return ReadOptionalI32(d, ft, &s->repetition_type);
      case 4:
        req.Saw(0);
        return d.ReadBinary(ft, &s->name);
      case 5:
        return ReadOptionalI32(d, ft, &s->num_children);
      case 6:
        return ReadOptionalI32(d, ft, &s->converted_type);
      case 10:
        return DecodeLogicalType(d, ft, &s->logical_type);
      default:
        return d.Skip(ft);
    }
  }));
  return req.Check(1, "SchemaElement");
}

Status DecodeKeyValues(Decoder& d, WireType t, std::vector<KeyValue>* out) {
  WireType elem = WireType::kStop;
  size_t n = 0;
  GOVERN_RETURN_IF_ERROR(d.ReadList(t, &elem, &n));
  GOVERN_RETURN_IF_ERROR(d.CheckStruct(elem));
  for (size_t i = 0; i < n; ++i) {
    KeyValue& kv = out->emplace_back();
    Required req;
    PARQUET_RETURN_IF_ERROR(d.ReadStruct([&](int16_t id, WireType ft) -> Status {
      if (id == 1) {
        req.Saw(0);
        return d.ReadBinary(ft, &kv.key);
      }
      if (id == 2) return ReadOptionalBinary(d, ft, &kv.value);
      return d.Skip(ft);
    }));
    GOVERN_RETURN_IF_ERROR(req.Check(1, "KeyValue"));
  }
  return OkStatus();
}

Status DecodeColumnMetaData(Decoder& d, WireType t, ColumnMetaData* m) {
  GOVERN_RETURN_IF_ERROR(d.CheckStruct(t));
  Required req;
  PARQUET_RETURN_IF_ERROR(d.ReadStruct([&](int16_t id, WireType ft) -> Status {
    switch (id) {
      case 1:
        req.Saw(0);
        return d.ReadI32(ft, &m->type);
      case 2: {
        req.Saw(1);
        WireType elem = WireType::kStop;
        size_t n = 0;
        GOVERN_RETURN_IF_ERROR(d.ReadList(ft, &elem, &n));
        if (elem != WireType::kI32) return Decoder::Corrupt("encodings is not a list of i32");
        m->encodings.resize(n);
        for (int32_t& enc : m->encodings) GOVERN_RETURN_IF_ERROR(d.ReadListI32(&enc));
        return OkStatus();
      }
      case 3: {
        req.Saw(2);
        WireType elem = WireType::kStop;
        size_t n = 0;
        GOVERN_RETURN_IF_ERROR(d.ReadList(ft, &elem, &n));
        if (elem != WireType::kBinary) return Decoder::Corrupt("path_in_schema is not a list of strings");
        m->path_in_schema.resize(n);
        for (std::string& p : m->path_in_schema) GOVERN_RETURN_IF_ERROR(d.ReadListBinary(&p));
        return OkStatus();
      }
      case 4:
        req.Saw(3);
        return d.ReadI32(ft, &m->codec);
      case 5:
        req.Saw(4);
        return d.ReadI64(ft, &m->num_values);
      case 6:
        req.Saw(5);
        return d.ReadI64(ft, &m->total_uncompressed_size);
      case 7:
        req.Saw(6);
        return d.ReadI64(ft, &m->total_compressed_size);
      case 9:
        req.Saw(7);
        return d.ReadI64(ft, &m->data_page_offset);
      case 11:
        return ReadOptionalI64(d, ft, &m->dictionary_page_offset);
      case 12:
        m->statistics.emplace();
        return DecodeStatistics(d, ft, &*m->statistics);
      default:
        return d.Skip(ft);
    }
  }));
  return req.Check(0xff, "ColumnMetaData");
}

Status DecodeRowGroup(Decoder& d, RowGroup* rg) {
  Required req;
  PARQUET_RETURN_IF_ERROR(d.ReadStruct([&](int16_t id, WireType ft) -> Status {
    switch (id) {
      case 1: {
        req.Saw(0);
        WireType elem = WireType::kStop;
        size_t n = 0;
        GOVERN_RETURN_IF_ERROR(d.ReadList(ft, &elem, &n));
        GOVERN_RETURN_IF_ERROR(d.CheckStruct(elem));
        // Grown one by one (not resized up front) so memory follows the bytes actually decoded.
        for (size_t i = 0; i < n; ++i) {
          ColumnChunk& c = rg->columns.emplace_back();
          PARQUET_RETURN_IF_ERROR(d.ReadStruct([&](int16_t cid, WireType cft) -> Status {
            switch (cid) {
              case 1:
                return ReadOptionalBinary(d, cft, &c.file_path);
              case 2:
                return d.ReadI64(cft, &c.file_offset);
              case 3:
                c.meta_data.emplace();
                return DecodeColumnMetaData(d, cft, &*c.meta_data);
              default:
                return d.Skip(cft);
            }
          }));
          if (!c.meta_data) return Decoder::Corrupt("ColumnChunk without meta_data");
        }
        return OkStatus();
      }
      case 2:
        req.Saw(1);
        return d.ReadI64(ft, &rg->total_byte_size);
      case 3:
        req.Saw(2);
        return d.ReadI64(ft, &rg->num_rows);
      case 5:
        return ReadOptionalI64(d, ft, &rg->file_offset);
      case 6:
        return ReadOptionalI64(d, ft, &rg->total_compressed_size);
      default:
        return d.Skip(ft);
    }
  }));
  return req.Check(0x7, "RowGroup");
}

}  // namespace

Status DecodeFileMetaData(const uint8_t* data, size_t size, FileMetaData* meta) {
  Decoder d(data, size);
  Required req;
  PARQUET_RETURN_IF_ERROR(d.ReadStruct([&](int16_t id, WireType ft) -> Status {
    switch (id) {
      case 1:
        req.Saw(0);
        return d.ReadI32(ft, &meta->version);
      case 2: {
        req.Saw(1);
        WireType elem = WireType::kStop;
        size_t n = 0;
        GOVERN_RETURN_IF_ERROR(d.ReadList(ft, &elem, &n));
        GOVERN_RETURN_IF_ERROR(d.CheckStruct(elem));
        for (size_t i = 0; i < n; ++i) {
          GOVERN_RETURN_IF_ERROR(DecodeSchemaElement(d, &meta->schema.emplace_back()));
        }
        return OkStatus();
      }
      case 3:
        req.Saw(2);
        return d.ReadI64(ft, &meta->num_rows);
      case 4: {
        req.Saw(3);
        WireType elem = WireType::kStop;
        size_t n = 0;
        GOVERN_RETURN_IF_ERROR(d.ReadList(ft, &elem, &n));
        GOVERN_RETURN_IF_ERROR(d.CheckStruct(elem));
        for (size_t i = 0; i < n; ++i) {
          GOVERN_RETURN_IF_ERROR(DecodeRowGroup(d, &meta->row_groups.emplace_back()));
        }
        return OkStatus();
      }
      case 5:
        return DecodeKeyValues(d, ft, &meta->key_value_metadata);
      case 6:
        return ReadOptionalBinary(d, ft, &meta->created_by);
      case 7: {
        WireType elem = WireType::kStop;
        size_t n = 0;
        GOVERN_RETURN_IF_ERROR(d.ReadList(ft, &elem, &n));
        for (size_t i = 0; i < n; ++i) GOVERN_RETURN_IF_ERROR(d.Skip(elem));
        meta->column_orders = n;
        return OkStatus();
      }
      default:
        return d.Skip(ft);
    }
  }));
  return req.Check(0xf, "FileMetaData");
}

Status DecodePageHeader(const uint8_t* data, size_t size, PageHeader* h, size_t* consumed) {
  Decoder d(data, size);
  Required req;
  PARQUET_RETURN_IF_ERROR(d.ReadStruct([&](int16_t id, WireType ft) -> Status {
    switch (id) {
      case 1:
        req.Saw(0);
        return d.ReadI32(ft, &h->type);
      case 2:
        req.Saw(1);
        return d.ReadI32(ft, &h->uncompressed_page_size);
      case 3:
        req.Saw(2);
        return d.ReadI32(ft, &h->compressed_page_size);
      case 4:
        return ReadOptionalI32(d, ft, &h->crc);
      case 5: {
        GOVERN_RETURN_IF_ERROR(d.CheckStruct(ft));
        DataPageHeader& dp = h->data_page_header.emplace();
        Required dreq;
        PARQUET_RETURN_IF_ERROR(d.ReadStruct([&](int16_t did, WireType dft) -> Status {
          switch (did) {
            case 1:
              dreq.Saw(0);
              return d.ReadI32(dft, &dp.num_values);
            case 2:
              dreq.Saw(1);
              return d.ReadI32(dft, &dp.encoding);
            case 3:
              dreq.Saw(2);
              return d.ReadI32(dft, &dp.definition_level_encoding);
            case 4:
              dreq.Saw(3);
              return d.ReadI32(dft, &dp.repetition_level_encoding);
            case 5:
              dp.statistics.emplace();
              return DecodeStatistics(d, dft, &*dp.statistics);
            default:
              return d.Skip(dft);
          }
        }));
        return dreq.Check(0xf, "DataPageHeader");
      }
      case 7: {
        GOVERN_RETURN_IF_ERROR(d.CheckStruct(ft));
        DictionaryPageHeader& dp = h->dictionary_page_header.emplace();
        Required dreq;
        PARQUET_RETURN_IF_ERROR(d.ReadStruct([&](int16_t did, WireType dft) -> Status {
          switch (did) {
            case 1:
              dreq.Saw(0);
              return d.ReadI32(dft, &dp.num_values);
            case 2:
              dreq.Saw(1);
              return d.ReadI32(dft, &dp.encoding);
            case 3:
              return ReadOptionalBool(d, dft, &dp.is_sorted);
            default:
              return d.Skip(dft);
          }
        }));
        return dreq.Check(0x3, "DictionaryPageHeader");
      }
      default:
        return d.Skip(ft);
    }
  }));
  GOVERN_RETURN_IF_ERROR(req.Check(0x7, "PageHeader"));
  *consumed = d.position();
  return OkStatus();
}

}  // namespace govern::parquet::format
