// Screener (see screening.h).
#include "streams/screening.h"

#include <lz4frame.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <set>

#include "dlp/rule_set.h"
#include "storage/crc32c.h"
#include "streams/batch.h"
#include "streams/wire.h"

namespace govern::streams {

Result<ScreenMode> ParseScreenMode(std::string_view s) {
  if (s == "off") return ScreenMode::kOff;
  if (s == "flag") return ScreenMode::kFlag;
  if (s == "block") return ScreenMode::kBlock;
  return InvalidArgument("screening mode must be off, flag or block, not \"" + std::string(s) + "\"");
}

Result<std::vector<std::pair<std::string, ScreenMode>>> ParseTopicModes(std::string_view spec) {
  std::vector<std::pair<std::string, ScreenMode>> out;
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    while (item.starts_with(' ')) item.remove_prefix(1);
    while (item.ends_with(' ')) item.remove_suffix(1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return InvalidArgument("screening topics: want <topic or prefix*>=<mode>, got \"" + std::string(item) +
                             "\"");
    GOVERN_ASSIGN_OR_RETURN(ScreenMode m, ParseScreenMode(item.substr(eq + 1)));
    out.emplace_back(std::string(item.substr(0, eq)), m);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Codecs

namespace {

Status Gunzip(std::string_view in, size_t limit, std::string* out) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) return Internal("zlib init");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  char buf[65536];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      return FailedPrecondition("gzip records do not decompress");
    }
    out->append(buf, sizeof buf - z.avail_out);
    if (out->size() > limit) {
      inflateEnd(&z);
      return FailedPrecondition("decompressed records exceed the screening limit");
    }
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      return FailedPrecondition("gzip records are truncated");
    }
  }
  inflateEnd(&z);
  return OkStatus();
}

Status Gzip(std::string_view in, std::string* out) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return Internal("zlib init");
  out->resize(deflateBound(&z, static_cast<uLong>(in.size())) + 32);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out->data());
  z.avail_out = static_cast<uInt>(out->size());
  int rc = deflate(&z, Z_FINISH);
  out->resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END ? OkStatus() : Internal("gzip compress failed");
}

Status Unsnappy(std::string_view in, size_t limit, std::string* out) {
  // Java clients use the xerial framing: magic, version, compat, then (int32 length, block)*.
  static constexpr char kXerial[8] = {'\x82', 'S', 'N', 'A', 'P', 'P', 'Y', '\0'};
  if (in.size() >= 16 && std::equal(kXerial, kXerial + 8, in.data())) {
    Reader r(in.substr(16));
    while (r.remaining() > 0) {
      int32_t n = r.Int32();
      std::string_view block = r.Bytes(n < 0 ? SIZE_MAX : static_cast<size_t>(n));
      if (!r.ok()) return FailedPrecondition("snappy (xerial) records are truncated");
      size_t len = 0;
      if (!snappy::GetUncompressedLength(block.data(), block.size(), &len) || out->size() + len > limit)
        return FailedPrecondition("snappy records do not decompress within the screening limit");
      std::string part;
      if (!snappy::Uncompress(block.data(), block.size(), &part))
        return FailedPrecondition("snappy records do not decompress");
      out->append(part);
    }
    return OkStatus();
  }
  size_t len = 0;
  if (!snappy::GetUncompressedLength(in.data(), in.size(), &len) || len > limit)
    return FailedPrecondition("snappy records do not decompress within the screening limit");
  if (!snappy::Uncompress(in.data(), in.size(), out))
    return FailedPrecondition("snappy records do not decompress");
  return OkStatus();
}

Status Unlz4(std::string_view in, size_t limit, std::string* out) {
  LZ4F_dctx* ctx = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION))) return Internal("lz4 init");
  char buf[65536];
  const char* src = in.data();
  size_t left = in.size();
  size_t hint = 1;
  while (left > 0 && hint != 0) {
    size_t dst = sizeof buf, consumed = left;
    hint = LZ4F_decompress(ctx, buf, &dst, src, &consumed, nullptr);
    if (LZ4F_isError(hint)) {
      LZ4F_freeDecompressionContext(ctx);
      return FailedPrecondition("lz4 records do not decompress");
    }
    out->append(buf, dst);
    src += consumed;
    left -= consumed;
    if (out->size() > limit) {
      LZ4F_freeDecompressionContext(ctx);
      return FailedPrecondition("decompressed records exceed the screening limit");
    }
    if (consumed == 0 && dst == 0) break;
  }
  LZ4F_freeDecompressionContext(ctx);
  if (hint != 0) return FailedPrecondition("lz4 records are truncated");
  return OkStatus();
}

Status Unzstd(std::string_view in, size_t limit, std::string* out) {
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  if (!ctx) return Internal("zstd init");
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  char buf[65536];
  size_t rc = 1;
  while (ib.pos < ib.size || rc != 0) {
    ZSTD_outBuffer ob{buf, sizeof buf, 0};
    rc = ZSTD_decompressStream(ctx, &ob, &ib);
    if (ZSTD_isError(rc)) {
      ZSTD_freeDCtx(ctx);
      return FailedPrecondition("zstd records do not decompress");
    }
    out->append(buf, ob.pos);
    if (out->size() > limit) {
      ZSTD_freeDCtx(ctx);
      return FailedPrecondition("decompressed records exceed the screening limit");
    }
    if (ib.pos == ib.size && ob.pos < ob.size && rc != 0) {
      ZSTD_freeDCtx(ctx);
      return FailedPrecondition("zstd records are truncated");
    }
  }
  ZSTD_freeDCtx(ctx);
  return OkStatus();
}

}  // namespace

Status DecompressRecords(int codec, std::string_view in, size_t limit, std::string* out) {
  out->clear();
  switch (codec) {
    case 0:
      out->assign(in);
      return OkStatus();
    case 1:
      return Gunzip(in, limit, out);
    case 2:
      return Unsnappy(in, limit, out);
    case 3:
      return Unlz4(in, limit, out);
    case 4:
      return Unzstd(in, limit, out);
    default:
      return FailedPrecondition("unknown compression codec " + std::to_string(codec));
  }
}

Status CompressRecords(int codec, std::string_view in, std::string* out) {
  out->clear();
  switch (codec) {
    case 0:
      out->assign(in);
      return OkStatus();
    case 1:
      return Gzip(in, out);
    case 2:
      snappy::Compress(in.data(), in.size(), out);  // raw block: every client reads it
      return OkStatus();
    case 3: {
      LZ4F_preferences_t prefs{};
      out->resize(LZ4F_compressFrameBound(in.size(), &prefs));
      size_t n = LZ4F_compressFrame(out->data(), out->size(), in.data(), in.size(), &prefs);
      if (LZ4F_isError(n)) return Internal("lz4 compress failed");
      out->resize(n);
      return OkStatus();
    }
    case 4: {
      out->resize(ZSTD_compressBound(in.size()));
      size_t n = ZSTD_compress(out->data(), out->size(), in.data(), in.size(), 3);
      if (ZSTD_isError(n)) return Internal("zstd compress failed");
      out->resize(n);
      return OkStatus();
    }
    default:
      return FailedPrecondition("unknown compression codec " + std::to_string(codec));
  }
}

// ---------------------------------------------------------------------------------------------------

namespace {

void PutVarlong(std::string* out, int64_t v) {
  uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (z >= 0x80) {
    out->push_back(static_cast<char>((z & 0x7f) | 0x80));
    z >>= 7;
  }
  out->push_back(static_cast<char>(z));
}

struct RecordView {
  std::string_view whole;  // the record body (after its length)
  std::string_view key, value;
  bool key_null = true, value_null = true;
  size_t headers_count_pos = 0;  // offset in `whole` of the header count
  int32_t headers = 0;
  std::vector<std::string_view> header_values;  // non-empty values, screened like key and value
};

// Reads one record body; false when malformed.
bool ReadRecord(std::string_view body, RecordView* rv) {
  Reader r(body);
  rv->whole = body;
  r.Int8();
  r.Varlong();
  r.Varint();
  int32_t kl = r.Varint();
  rv->key_null = kl < 0;
  if (kl > 0) rv->key = r.Bytes(static_cast<size_t>(kl));
  int32_t vl = r.Varint();
  rv->value_null = vl < 0;
  if (vl > 0) rv->value = r.Bytes(static_cast<size_t>(vl));
  rv->headers_count_pos = r.position();
  rv->headers = r.Varint();
  if (!r.ok() || rv->headers < 0) return false;
  for (int32_t i = 0; i < rv->headers; i++) {
    int32_t hk = r.Varint();
    if (hk < 0) return false;
    r.Bytes(static_cast<size_t>(hk));
    int32_t hv = r.Varint();
    if (hv > 0) rv->header_values.push_back(r.Bytes(static_cast<size_t>(hv)));
    if (!r.ok()) return false;
  }
  return r.ok() && r.remaining() == 0;
}

}  // namespace

Screener::Screener(ScreeningOptions options, std::shared_ptr<const dlp::RuleSet> rules)
    : options_(std::move(options)), rules_(std::move(rules)) {}

ScreenMode Screener::ModeFor(std::string_view topic) const {
  ScreenMode mode = options_.default_mode;
  size_t best = 0;
  bool exact = false;
  for (const auto& [pattern, m] : options_.topics) {
    if (pattern.ends_with('*')) {
      std::string_view prefix = std::string_view(pattern).substr(0, pattern.size() - 1);
      if (!exact && topic.starts_with(prefix) && prefix.size() + 1 > best) {
        best = prefix.size() + 1;
        mode = m;
      }
    } else if (pattern == topic) {
      exact = true;
      mode = m;
    }
  }
  return rules_ ? mode : ScreenMode::kOff;
}

Result<ScreenVerdict> Screener::Screen(std::string_view batch, ScreenMode mode) const {
  ScreenVerdict verdict;
  if (mode == ScreenMode::kOff || !rules_) return verdict;
  BatchHeader h = PeekHeader(batch);
  std::string_view section = batch.substr(kBatchHeaderSize);
  std::string plain;
  std::string_view records = section;
  if (h.codec() != 0) {
    GOVERN_RETURN_IF_ERROR(DecompressRecords(h.codec(), section, options_.max_decompressed_bytes, &plain));
    records = plain;
  }
  Reader r(records);
  std::vector<dlp::Finding> findings;
  std::set<std::string_view> all;  // detector ids over the batch
  std::string out;                 // rewritten records (flag mode, once something matched)
  bool rewriting = false;
  size_t copied_upto = 0;  // bytes of `records` already copied into out
  for (int32_t i = 0; i < h.records_count; i++) {
    size_t start = r.position();
    int32_t len = r.Varint();
    if (!r.ok() || len < 0) return FailedPrecondition("record " + std::to_string(i) + " is malformed");
    std::string_view body = r.Bytes(static_cast<size_t>(len));
    RecordView rv;
    if (!r.ok() || !ReadRecord(body, &rv))
      return FailedPrecondition("record " + std::to_string(i) + " is malformed");
    std::set<std::string_view> hit;
    auto scan = [&](std::string_view text) {
      if (text.empty()) return;
      rules_->Scan(text, &findings);
      for (const auto& f : findings) hit.insert(f.detector);
    };
    scan(rv.key);
    scan(rv.value);
    // Header values carry data too (trace baggage, user ids, e-mail addresses): screened the same way.
    for (std::string_view hv : rv.header_values) scan(hv);
    if (hit.empty()) continue;
    all.insert(hit.begin(), hit.end());
    if (mode == ScreenMode::kBlock) continue;  // keep going to name every detector in the batch
    if (!rewriting) {
      rewriting = true;
      out.reserve(records.size() + 64);
    }
    out.append(records.substr(copied_upto, start - copied_upto));
    std::string names;
    for (auto d : hit) {
      if (!names.empty()) names.push_back(',');
      names.append(d);
    }
    // New body: everything up to the header count, count + 1, old headers, our header.
    std::string nb(body.substr(0, rv.headers_count_pos));
    PutVarlong(&nb, rv.headers + 1);
    Reader hr(body.substr(rv.headers_count_pos));
    hr.Varint();
    nb.append(body.substr(rv.headers_count_pos + hr.position()));
    PutVarlong(&nb, static_cast<int64_t>(kDlpHeader.size()));
    nb.append(kDlpHeader);
    PutVarlong(&nb, static_cast<int64_t>(names.size()));
    nb.append(names);
    PutVarlong(&out, static_cast<int64_t>(nb.size()));
    out.append(nb);
    copied_upto = r.position();
  }
  if (r.remaining() != 0) return FailedPrecondition("trailing bytes after the records");
  for (auto d : all) {
    if (!verdict.detectors.empty()) verdict.detectors.push_back(',');
    verdict.detectors.append(d);
  }
  if (mode == ScreenMode::kBlock) {
    verdict.blocked = !all.empty();
    return verdict;
  }
  if (!rewriting) return verdict;
  out.append(records.substr(copied_upto));
  std::string compressed;
  GOVERN_RETURN_IF_ERROR(CompressRecords(h.codec(), out, &compressed));
  std::string nbatch(batch.substr(0, kBatchHeaderSize));
  nbatch.append(compressed);
  StoreBe32(nbatch.data() + kBatchLengthOffset, static_cast<uint32_t>(nbatch.size() - kBatchLogOverhead));
  uint32_t crc = storage::Crc32c(nbatch.data() + kBatchCrcStart, nbatch.size() - kBatchCrcStart);
  StoreBe32(nbatch.data() + 17, crc);
  verdict.rewritten = std::move(nbatch);
  return verdict;
}

}  // namespace govern::streams
