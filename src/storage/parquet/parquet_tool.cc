// parquet_tool: writes Parquet files with known content (for the DuckDB interop test), dumps any
// Parquet file as JSON through govern's Reader, and regenerates the fuzz seeds and broken fixtures.
//
//   parquet_tool write-interop DIR   DIR/<name>.parquet and DIR/<name>.expected.json for each variant
//   parquet_tool dump FILE           {"columns":…, "num_rows":…, "row_groups":[…], "metadata":{…},
//   "rows":[…]} parquet_tool seeds DIR           small valid files for fuzz/corpus/parquet_reader_fuzz
//   parquet_tool broken DIR          the malformed fixtures of testdata/broken
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "storage/parquet/metadata.h"
#include "storage/parquet/reader.h"
#include "storage/parquet/writer.h"

namespace govern::parquet {
namespace {

using nlohmann::json;

Schema SampleSchema() {
  return {
      {"flag", Type::kBoolean, true},
      {"small", Type::kInt32, false},
      {"big", Type::kInt64, true},
      {"ratio", Type::kDouble, true},
      {"service", Type::kString, false},
      {"message", Type::kString, true},
      {"time", Type::kTimestampMicros, false},
      {"maybe", Type::kInt32, true},
      {"trace", Type::kString, true},  // one length throughout: DELTA_LENGTH_BYTE_ARRAY when not a dictionary
  };
}

// Deterministic rows covering nulls, repeats (dictionary), unique values (PLAIN fallback), extremes,
// empty strings and non-ASCII text.
std::vector<ColumnVector> SampleRows(size_t rows) {
  Schema schema = SampleSchema();
  std::vector<ColumnVector> cols;
  for (const Column& c : schema) cols.emplace_back(c.type);
  const char* services[] = {"gateway", "policy", "zürich-服务", "audit", "", "dns"};
  for (size_t i = 0; i < rows; ++i) {
    const auto n = static_cast<int64_t>(i);
    if (i % 7 == 3)
      cols[0].AppendNull();
    else
      cols[0].AppendBool(i % 3 == 0);
    cols[1].AppendInt32(static_cast<int32_t>(n % 100 - 50));
    if (i % 5 == 1) {
      cols[2].AppendNull();
    } else if (i == 2) {
      cols[2].AppendInt64(std::numeric_limits<int64_t>::min());
    } else if (i == 4) {
      cols[2].AppendInt64(std::numeric_limits<int64_t>::max());
    } else {
      cols[2].AppendInt64(n * 1'000'000'007LL - 123'456'789'012LL);
    }
    if (i % 9 == 2) {
      cols[3].AppendNull();
    } else if (i == 5) {
      cols[3].AppendDouble(-0.0);
    } else if (i == 6) {
      cols[3].AppendDouble(1e308);
    } else {
      cols[3].AppendDouble(static_cast<double>(n) / 3.0 - 100.25);
    }
    cols[4].AppendString(services[i % 6]);
    if (i % 11 == 4) {
      cols[5].AppendNull();
    } else if (i % 13 == 0) {
      cols[5].AppendString("");
    } else {
      cols[5].AppendString("request " + std::to_string(i * 7919 % 100'000) + " took " +
                           std::to_string(i % 1000) + " ms ✓ \"quoted\" \\ tab\t");
    }
    cols[6].AppendInt64(1'767'225'600'000'000LL + n * 1'000'003LL);  // 2026-01-01T00:00:00Z onwards
    if (i % 2 == 0)
      cols[7].AppendNull();
    else
      cols[7].AppendInt32(static_cast<int32_t>(n));
    if (i % 4 == 1) {
      cols[8].AppendNull();
    } else {
      char hex[33];
      const unsigned long long u = i;
      std::snprintf(hex, sizeof hex, "%016llx%016llx", u * 0x9E3779B97F4A7C15ULL, ~u);
      cols[8].AppendString(hex);
    }
  }
  return cols;
}

json CellJson(const ColumnVector& v, size_t i) {
  if (v.IsNull(i)) return nullptr;
  switch (v.type()) {
    case Type::kBoolean:
      return v.GetBool(i);
    case Type::kInt32:
      return v.GetInt32(i);
    case Type::kInt64:
    case Type::kTimestampMicros:
      return std::to_string(v.GetInt64(i));  // exact in JSON as a string
    case Type::kDouble: {
      double d = v.GetDouble(i);
      if (std::isnan(d)) return "NaN";
      if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
      return d;
    }
    case Type::kString:
      return std::string(v.GetString(i));
  }
  return nullptr;
}

json ScalarJson(const std::optional<Scalar>& s) {
  if (!s) return nullptr;
  return std::visit(
      [](const auto& x) -> json {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, int64_t>) {
          return std::to_string(x);
        } else {
          return x;
        }
      },
      *s);
}

json SchemaJson(const Schema& schema) {
  json cols = json::array();
  for (const Column& c : schema) {
    cols.push_back({{"name", c.name}, {"type", std::string(TypeName(c.type))}, {"optional", c.optional}});
  }
  return cols;
}

void AppendRows(const std::vector<ColumnVector>& cols, json* rows) {
  for (size_t i = 0; i < cols[0].size(); ++i) {
    json row = json::array();
    for (const ColumnVector& c : cols) row.push_back(CellJson(c, i));
    rows->push_back(std::move(row));
  }
}

bool WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

int Fail(const Status& s) {
  std::cerr << "parquet_tool: " << s.ToString() << "\n";
  return 1;
}

struct Variant {
  std::string name;
  WriterOptions options;
  size_t rows;
};

std::vector<Variant> InteropVariants() {
  std::vector<Variant> v;
  WriterOptions zstd;  // dictionary on, small pages and groups so every path is taken
  zstd.row_group_rows = 1000;
  zstd.page_rows = 300;
  zstd.dictionary_page_bytes = 4096;
  zstd.metadata = {{"govern.org", "org-42"}, {"govern.hour", "2026-01-01T00"}};
  v.push_back({"zstd", zstd, 3500});
  WriterOptions plain = zstd;
  plain.dictionary = false;
  plain.compression = Compression::kUncompressed;
  v.push_back({"plain_uncompressed", plain, 2100});
  WriterOptions snappy = zstd;
  snappy.compression = Compression::kSnappy;
  snappy.row_group_rows = 100'000;
  v.push_back({"snappy_one_group", snappy, 5000});
  // Every column but BOOLEAN and DOUBLE in a DELTA encoding: integers DELTA_BINARY_PACKED, `trace` (one
  // length) DELTA_LENGTH_BYTE_ARRAY; strings of varying lengths stay PLAIN.
  WriterOptions delta = zstd;
  delta.dictionary = false;
  delta.delta_integers = true;
  delta.delta_strings = true;
  v.push_back({"delta_zstd", delta, 2600});
  WriterOptions empty = zstd;
  v.push_back({"empty", empty, 0});
  return v;
}

Status WriteVariant(const std::string& path, const Variant& v, json* expected) {
  std::vector<ColumnVector> cols = SampleRows(v.rows);
  GOVERN_ASSIGN_OR_RETURN(auto writer, Writer::Open(path, SampleSchema(), v.options));
  // Half column-wise in uneven batches, the rest row by row, so both input paths are covered.
  size_t half = v.rows / 2;
  for (size_t begin = 0; begin < half;) {
    size_t end = std::min(half, begin + 777);
    std::vector<ColumnVector> batch;
    for (const ColumnVector& c : cols) {
      ColumnVector part(c.type());
      for (size_t i = begin; i < end; ++i) {
        if (c.IsNull(i)) {
          part.AppendNull();
          continue;
        }
        switch (c.type()) {
          case Type::kBoolean:
            part.AppendBool(c.GetBool(i));
            break;
          case Type::kInt32:
            part.AppendInt32(c.GetInt32(i));
            break;
          case Type::kInt64:
          case Type::kTimestampMicros:
            part.AppendInt64(c.GetInt64(i));
            break;
          case Type::kDouble:
            part.AppendDouble(c.GetDouble(i));
            break;
          case Type::kString:
            part.AppendString(c.GetString(i));
            break;
        }
      }
      batch.push_back(std::move(part));
    }
    GOVERN_RETURN_IF_ERROR(writer->Write(batch));
    begin = end;
  }
  for (size_t i = half; i < v.rows; ++i) {
    std::vector<Value> row;
    for (const ColumnVector& c : cols) {
      if (c.IsNull(i)) {
        row.emplace_back(std::monostate{});
        continue;
      }
      switch (c.type()) {
        case Type::kBoolean:
          row.emplace_back(c.GetBool(i));
          break;
        case Type::kInt32:
          row.emplace_back(c.GetInt32(i));
          break;
        case Type::kInt64:
        case Type::kTimestampMicros:
          row.emplace_back(c.GetInt64(i));
          break;
        case Type::kDouble:
          row.emplace_back(c.GetDouble(i));
          break;
        case Type::kString:
          row.emplace_back(c.GetString(i));
          break;
      }
    }
    GOVERN_RETURN_IF_ERROR(writer->AppendRow(row));
  }
  GOVERN_ASSIGN_OR_RETURN(WriteSummary summary, writer->Close());
  json rows = json::array();
  AppendRows(cols, &rows);
  json meta = json::object();
  for (const KeyValue& kv : v.options.metadata) meta[kv.key] = kv.value;
  *expected = {{"columns", SchemaJson(SampleSchema())},
               {"rows", rows},
               {"row_groups", summary.row_groups},
               {"row_group_rows", v.options.row_group_rows},
               {"compression", v.options.compression == Compression::kZstd     ? "ZSTD"
                               : v.options.compression == Compression::kSnappy ? "SNAPPY"
                                                                               : "UNCOMPRESSED"},
               {"dictionary", v.options.dictionary},
               {"delta", v.options.delta_strings && v.options.delta_integers},
               {"metadata", meta}};
  return OkStatus();
}

int WriteInterop(const std::string& dir) {
  for (const Variant& v : InteropVariants()) {
    json expected;
    Status s = WriteVariant(dir + "/" + v.name + ".parquet", v, &expected);
    if (!s.ok()) return Fail(s);
    if (!WriteText(dir + "/" + v.name + ".expected.json",
                   expected.dump(1, ' ', false, json::error_handler_t::strict))) {
      return Fail(Internal("cannot write expected json"));
    }
  }
  return 0;
}

int Dump(const std::string& path) {
  auto reader = Reader::Open(path);
  if (!reader.ok()) return Fail(reader.status());
  const Reader& r = **reader;
  json out;
  out["columns"] = SchemaJson(r.schema());
  out["num_rows"] = r.num_rows();
  out["created_by"] = r.created_by();
  json meta = json::object();
  for (const KeyValue& kv : r.key_value_metadata()) meta[kv.key] = kv.value;
  out["metadata"] = meta;
  json groups = json::array();
  json rows = json::array();
  for (size_t g = 0; g < r.row_groups().size(); ++g) {
    const RowGroupInfo& info = r.row_groups()[g];
    json stats = json::array();
    for (const ColumnChunkInfo& c : info.columns) {
      stats.push_back(
          {{"null_count", c.statistics.null_count ? json(*c.statistics.null_count) : json(nullptr)},
           {"min", ScalarJson(c.statistics.min)},
           {"max", ScalarJson(c.statistics.max)},
           {"codec", c.codec},
           {"dictionary", c.has_dictionary}});
    }
    groups.push_back({{"num_rows", info.num_rows}, {"columns", stats}});
    auto cols = r.ReadRowGroup(g);
    if (!cols.ok()) return Fail(cols.status());
    AppendRows(*cols, &rows);
  }
  out["row_groups"] = groups;
  out["rows"] = rows;
  std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  return 0;
}

Result<std::string> SampleFile(size_t rows, WriterOptions options) {
  std::string bytes;
  GOVERN_ASSIGN_OR_RETURN(auto writer,
                          Writer::Create(std::make_unique<StringSink>(&bytes), SampleSchema(), options));
  std::vector<ColumnVector> cols = SampleRows(rows);
  GOVERN_RETURN_IF_ERROR(writer->Write(cols));
  GOVERN_RETURN_IF_ERROR(writer->Close().status());
  return bytes;
}

int Seeds(const std::string& dir) {
  struct Seed {
    const char* name;
    size_t rows;
    Compression compression;
    bool dictionary;
    bool delta = false;  // DELTA_BINARY_PACKED integers, DELTA_LENGTH_BYTE_ARRAY strings
  };
  const Seed seeds[] = {{"zstd_dict", 40, Compression::kZstd, true},
                        {"uncompressed_plain", 30, Compression::kUncompressed, false},
                        {"uncompressed_dict", 30, Compression::kUncompressed, true},
                        {"snappy_dict", 25, Compression::kSnappy, true},
                        {"uncompressed_delta", 30, Compression::kUncompressed, false, true},
                        {"empty", 0, Compression::kZstd, true}};
  for (const Seed& s : seeds) {
    WriterOptions o;
    o.compression = s.compression;
    o.dictionary = s.dictionary;
    o.delta_integers = s.delta;
    o.delta_strings = s.delta;
    o.row_group_rows = 16;
    o.page_rows = 7;
    o.dictionary_page_bytes = 200;
    o.metadata = {{"k", "v"}};
    auto bytes = SampleFile(s.rows, o);
    if (!bytes.ok()) return Fail(bytes.status());
    if (!WriteText(dir + "/" + s.name + ".parquet", *bytes)) return Fail(Internal("cannot write seed"));
  }
  return 0;
}

// Location of the first data page of column `column` in row group 0 of a file in memory.
struct PageSpot {
  size_t header = 0;  // offset of the page header
  size_t header_len = 0;
  size_t body = 0;  // offset of the page body
  size_t body_len = 0;
};

Result<PageSpot> FirstDataPage(const std::string& file, size_t column) {
  uint32_t footer_len = 0;
  std::memcpy(&footer_len, file.data() + file.size() - 8, 4);
  format::FileMetaData meta;
  GOVERN_RETURN_IF_ERROR(format::DecodeFileMetaData(
      reinterpret_cast<const uint8_t*>(file.data()) + file.size() - 8 - footer_len, footer_len, &meta));
  PageSpot spot;
  spot.header = static_cast<size_t>(meta.row_groups.at(0).columns.at(column).meta_data->data_page_offset);
  format::PageHeader h;
  GOVERN_RETURN_IF_ERROR(format::DecodePageHeader(reinterpret_cast<const uint8_t*>(file.data()) + spot.header,
                                                  file.size() - spot.header, &h, &spot.header_len));
  spot.body = spot.header + spot.header_len;
  spot.body_len = static_cast<size_t>(h.compressed_page_size);
  return spot;
}

int Broken(const std::string& dir) {
  WriterOptions zstd;
  zstd.row_group_rows = 50;
  WriterOptions raw = zstd;
  raw.compression = Compression::kUncompressed;
  raw.dictionary = false;
  WriterOptions raw_dict = zstd;
  raw_dict.compression = Compression::kUncompressed;
  auto good = SampleFile(120, zstd);
  auto plain = SampleFile(120, raw);
  auto dict = SampleFile(120, raw_dict);
  if (!good.ok() || !plain.ok() || !dict.ok()) return Fail(Internal("cannot build the base files"));
  auto put = [&](const std::string& name, const std::string& bytes) {
    return WriteText(dir + "/" + name + ".parquet", bytes);
  };
  bool ok = true;
  // Not Parquet at all.
  ok &= put("too_short", "PAR1PAR1");
  std::string bad_head = *good;
  bad_head.replace(0, 4, "PAR2");
  ok &= put("bad_magic", bad_head);
  // Cut off in the middle: no footer, no closing magic.
  ok &= put("truncated", good->substr(0, good->size() / 2));
  // The footer length says more than the file holds.
  std::string lying_footer = *good;
  const uint32_t huge = 0x7ffffff0;
  std::memcpy(lying_footer.data() + lying_footer.size() - 8, &huge, 4);
  ok &= put("footer_length_too_large", lying_footer);
  // The footer length says less: metadata is decoded from the wrong place.
  std::string short_footer = *good;
  uint32_t len = 0;
  std::memcpy(&len, short_footer.data() + short_footer.size() - 8, 4);
  len -= 9;
  std::memcpy(short_footer.data() + short_footer.size() - 8, &len, 4);
  ok &= put("footer_length_too_small", short_footer);
  // The footer's first byte becomes a stop: FileMetaData lacks its required fields.
  std::string empty_meta = *good;
  std::memcpy(&len, empty_meta.data() + empty_meta.size() - 8, 4);
  empty_meta[empty_meta.size() - 8 - len] = 0;
  ok &= put("footer_missing_fields", empty_meta);
  // A page header made of a bare stop byte.
  auto spot = FirstDataPage(*good, 1);
  if (!spot.ok()) return Fail(spot.status());
  std::string bad_header = *good;
  bad_header[spot->header] = 0;
  ok &= put("corrupt_page_header", bad_header);
  // A zstd page whose bytes are not a zstd frame.
  std::string bad_zstd = *good;
  for (size_t i = 0; i < spot->body_len; ++i) bad_zstd[spot->body + i] = static_cast<char>(0xa5);
  ok &= put("corrupt_zstd_page", bad_zstd);
  // A page claiming more bytes than its column chunk has: the compressed size field is rewritten to
  // the largest value its varint length allows (the header is 0x15 type, 0x15 size, 0x15 size...).
  auto pspot = FirstDataPage(*plain, 4);
  if (!pspot.ok()) return Fail(pspot.status());
  std::string lying_page = *plain;
  {
    auto skip_varint = [&](size_t p) {
      while (static_cast<uint8_t>(lying_page[p]) & 0x80) ++p;
      return p + 1;
    };
    size_t p = pspot->header + 1;  // after the field header of type
    p = skip_varint(p) + 1;        // after the field header of uncompressed_page_size
    p = skip_varint(p) + 1;        // after the field header of compressed_page_size
    size_t end = skip_varint(p) - 1;
    for (size_t q = p; q < end; ++q) lying_page[q] = static_cast<char>(0xfe);
    lying_page[end] = 0x7e;  // even zigzag: a large positive size, same varint length
  }
  ok &= put("page_size_too_large", lying_page);
  // A PLAIN string whose 4-byte length runs past its page (column "service", required, no levels).
  std::string lying_string = *plain;
  const uint32_t big_len = 0x7ffffff0;
  std::memcpy(lying_string.data() + pspot->body, &big_len, 4);
  ok &= put("string_length_too_large", lying_string);
  // Dictionary indices with a bit width byte above 32 (column "small", required, dictionary-encoded).
  auto dspot = FirstDataPage(*dict, 1);
  if (!dspot.ok()) return Fail(dspot.status());
  std::string bad_width = *dict;
  bad_width[dspot->body] = 40;
  ok &= put("dictionary_bit_width", bad_width);
  if (!ok) return Fail(Internal("cannot write fixtures"));
  return 0;
}

}  // namespace
}  // namespace govern::parquet

int main(int argc, char** argv) {
  using namespace govern::parquet;
  if (argc == 3) {
    std::string cmd = argv[1];
    if (cmd == "write-interop") return WriteInterop(argv[2]);
    if (cmd == "dump") return Dump(argv[2]);
    if (cmd == "seeds") return Seeds(argv[2]);
    if (cmd == "broken") return Broken(argv[2]);
  }
  std::cerr << "usage: parquet_tool write-interop DIR | dump FILE | seeds DIR | broken DIR\n";
  return 2;
}
