// POSIX ustar (IEEE 1003.1-1988 as refined by POSIX.1-2001 "ustar") and gzip via zlib, bounded.
#include "bundle/tar.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <set>

namespace govern::bundle {
namespace {

constexpr size_t kBlock = 512;

// Field offsets and widths of a ustar header block.
struct Field {
  size_t off;
  size_t len;
};
constexpr Field kName{0, 100};
constexpr Field kMode{100, 8};
constexpr Field kUid{108, 8};
constexpr Field kGid{116, 8};
constexpr Field kSize{124, 12};
constexpr Field kMtime{136, 12};
constexpr Field kChksum{148, 8};
constexpr size_t kTypeflag = 156;
constexpr Field kMagic{257, 6};
constexpr Field kVersion{263, 2};
constexpr Field kDevMajor{329, 8};
constexpr Field kDevMinor{337, 8};
constexpr Field kPrefix{345, 155};

using Block = std::array<char, kBlock>;

std::string At(size_t offset) { return " at byte " + std::to_string(offset); }

// Writes `value` as zero-padded octal filling all but the last byte of the field, then NUL.
bool PutOctal(Block& b, Field f, uint64_t value) {
  size_t digits = f.len - 1;
  for (size_t i = digits; i-- > 0;) {
    b[f.off + i] = static_cast<char>('0' + (value & 7));
    value >>= 3;
  }
  b[f.off + digits] = '\0';
  return value == 0;
}

// Parses an octal numeric field: optional leading spaces, at least one octal digit, then only NULs or
// spaces. The base-256 (GNU) form and anything else is refused.
bool GetOctal(const char* block, Field f, uint64_t* out) {
  size_t i = 0;
  while (i < f.len && block[f.off + i] == ' ') ++i;
  uint64_t v = 0;
  size_t digits = 0;
  for (; i < f.len && block[f.off + i] >= '0' && block[f.off + i] <= '7'; ++i, ++digits) {
    if (v >> 61) return false;  // would overflow 64 bits
    v = (v << 3) | static_cast<uint64_t>(block[f.off + i] - '0');
  }
  if (digits == 0) return false;
  for (; i < f.len; ++i) {
    if (block[f.off + i] != '\0' && block[f.off + i] != ' ') return false;
  }
  *out = v;
  return true;
}

uint64_t Checksum(const char* block) {
  uint64_t sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    bool in_chksum = i >= kChksum.off && i < kChksum.off + kChksum.len;
    sum += in_chksum ? uint64_t{' '} : static_cast<unsigned char>(block[i]);
  }
  return sum;
}

bool AllZero(const char* p, size_t n) {
  return std::all_of(p, p + n, [](char c) { return c == '\0'; });
}

// The NUL-terminated (or field-filling) string of a field; false when bytes follow the NUL.
bool GetString(const char* block, Field f, std::string* out) {
  const char* p = block + f.off;
  size_t n = strnlen(p, f.len);
  if (!AllZero(p + n, f.len - n)) return false;
  out->assign(p, n);
  return true;
}

}  // namespace

Status ValidatePath(std::string_view name) {
  auto bad = [&](std::string_view why) {
    std::string shown;
    for (char c : name.substr(0, 120)) {
      shown += (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    return InvalidArgument("unsafe file name \"" + shown + "\": " + std::string(why));
  };
  if (name.empty()) return bad("empty");
  if (name.size() > kName.len) return bad("longer than 100 bytes");
  for (char c : name) {
    if (c < 0x20 || c > 0x7e) return bad("control or non-ASCII byte");
    if (c == '\\') return bad("backslash");
  }
  if (name.front() == '/') return bad("absolute path");
  size_t start = 0;
  while (true) {
    size_t slash = name.find('/', start);
    std::string_view part = name.substr(start, slash == std::string_view::npos ? name.npos : slash - start);
    if (part.empty()) return bad("empty path component");
    if (part == "." || part == "..") return bad("\".\" or \"..\" component");
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return OkStatus();
}

Result<std::string> WriteTar(const std::vector<TarEntry>& entries, int64_t mtime) {
  std::string out;
  std::set<std::string_view> seen;
  for (const TarEntry& e : entries) {
    GOVERN_RETURN_IF_ERROR(ValidatePath(e.name));
    if (!seen.insert(e.name).second) return AlreadyExists("duplicate file name \"" + e.name + "\"");
    Block b{};
    std::memcpy(b.data() + kName.off, e.name.data(), e.name.size());
    PutOctal(b, kMode, 0644);
    PutOctal(b, kUid, 0);
    PutOctal(b, kGid, 0);
    if (!PutOctal(b, kSize, e.data.size())) return InvalidArgument(e.name + ": too large for ustar");
    PutOctal(b, kMtime, static_cast<uint64_t>(std::max<int64_t>(mtime, 0)));
    b[kTypeflag] = '0';
    std::memcpy(b.data() + kMagic.off, "ustar", 6);  // with its NUL
    std::memcpy(b.data() + kVersion.off, "00", 2);
    PutOctal(b, kDevMajor, 0);
    PutOctal(b, kDevMinor, 0);
    // Six octal digits, NUL, space: the historical layout every tar reads.
    uint64_t sum = Checksum(b.data());
    PutOctal(b, Field{kChksum.off, 7}, sum);
    b[kChksum.off + 7] = ' ';
    out.append(b.data(), kBlock);
    out.append(e.data);
    out.append((kBlock - e.data.size() % kBlock) % kBlock, '\0');
  }
  out.append(2 * kBlock, '\0');
  return out;
}

Result<std::vector<TarEntry>> ReadTar(std::string_view archive, const TarLimits& limits) {
  std::vector<TarEntry> entries;
  std::set<std::string, std::less<>> seen;
  size_t total = 0;
  size_t pos = 0;
  while (true) {
    if (archive.size() - pos < kBlock) {
      return DataLoss("truncated archive: expected a header or the end marker" + At(pos));
    }
    const char* h = archive.data() + pos;
    if (AllZero(h, kBlock)) {
      if (archive.size() - pos < 2 * kBlock || !AllZero(h + kBlock, kBlock)) {
        return DataLoss("truncated archive: incomplete end marker" + At(pos));
      }
      if (!AllZero(archive.data() + pos + 2 * kBlock, archive.size() - pos - 2 * kBlock)) {
        return DataLoss("data after the end marker" + At(pos + 2 * kBlock));
      }
      if ((archive.size() - pos) % kBlock != 0) {
        return DataLoss("archive length is not a multiple of 512");
      }
      return entries;
    }
    uint64_t want_sum = 0;
    if (!GetOctal(h, kChksum, &want_sum) || want_sum != Checksum(h)) {
      return DataLoss("bad header checksum" + At(pos));
    }
    if (std::memcmp(h + kMagic.off, "ustar", 6) != 0 || std::memcmp(h + kVersion.off, "00", 2) != 0) {
      return DataLoss("not a POSIX ustar header" + At(pos));
    }
    std::string name;
    std::string prefix;
    if (!GetString(h, kName, &name) || !GetString(h, kPrefix, &prefix)) {
      return DataLoss("malformed name field" + At(pos));
    }
    if (!prefix.empty()) name = prefix + "/" + name;  // refused just below as over 100 bytes
    char type = h[kTypeflag];
    if (type != '0' && type != '\0') {
      std::string kind = type == '5'   ? "a directory"
                         : type == '2' ? "a symbolic link"
                         : type == '1' ? "a hard link"
                         : (type == 'x' || type == 'g' || type == 'L' || type == 'K')
                             ? "an extended (pax/GNU) header"
                             : "not a regular file";
      return Unimplemented("entry" + At(pos) + " is " + kind + "; bundles hold regular files only");
    }
    if (Status s = ValidatePath(name); !s.ok()) return Status(s.code(), s.message() + At(pos));
    uint64_t size = 0;
    if (!GetOctal(h, kSize, &size)) return DataLoss("malformed size field of \"" + name + "\"" + At(pos));
    if (entries.size() >= limits.max_entries) {
      return ResourceExhausted("more than " + std::to_string(limits.max_entries) + " files");
    }
    if (size > limits.max_entry_bytes) {
      return ResourceExhausted("\"" + name + "\" is " + std::to_string(size) + " bytes, over the limit of " +
                               std::to_string(limits.max_entry_bytes));
    }
    if (size > limits.max_total_bytes - total) {
      return ResourceExhausted("files add up to more than " + std::to_string(limits.max_total_bytes) +
                               " bytes");
    }
    total += size;
    if (!seen.insert(name).second) return AlreadyExists("duplicate file name \"" + name + "\"" + At(pos));
    pos += kBlock;
    size_t padded = size + (kBlock - size % kBlock) % kBlock;
    if (archive.size() - pos < padded) {
      return DataLoss("truncated archive: \"" + name + "\" needs " + std::to_string(padded) + " bytes" +
                      At(pos) + ", " + std::to_string(archive.size() - pos) + " remain");
    }
    if (!AllZero(archive.data() + pos + size, padded - size)) {
      return DataLoss("non-zero padding after \"" + name + "\"" + At(pos + size));
    }
    entries.push_back({std::move(name), std::string(archive.substr(pos, size))});
    pos += padded;
  }
}

bool IsGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

Result<std::string> Gzip(std::string_view data) {
  if (data.size() > UINT32_MAX) return ResourceExhausted("gzip: input over 4 GiB");
  z_stream zs{};
  // windowBits 15 + 16: a gzip wrapper with a zeroed header (no name, mtime 0).
  if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Internal("gzip: deflateInit2 failed");
  }
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  size_t produced = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return Internal("gzip: deflate did not finish");
  out.resize(produced);
  return out;
}

Result<std::string> Gunzip(std::string_view gz, size_t max_out) {
  if (gz.size() > UINT32_MAX) return ResourceExhausted("gzip: input over 4 GiB");
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return Internal("gzip: inflateInit2 failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  std::string out;
  char buf[64 * 1024];
  int rc = Z_OK;
  Status err;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    size_t got = sizeof(buf) - zs.avail_out;
    if (rc != Z_OK && rc != Z_STREAM_END) {
      if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
        err = DataLoss("truncated gzip stream");
      } else {
        err = DataLoss(std::string("corrupt gzip stream: ") + (zs.msg ? zs.msg : "inflate failed"));
      }
      break;
    }
    if (got > max_out - out.size()) {
      err = ResourceExhausted("archive unpacks to more than " + std::to_string(max_out) + " bytes");
      break;
    }
    out.append(buf, got);
    if (rc == Z_OK && got == 0 && zs.avail_in == 0) {
      err = DataLoss("truncated gzip stream");
      break;
    }
  }
  if (err.ok() && zs.avail_in != 0) err = DataLoss("data after the end of the gzip stream");
  inflateEnd(&zs);
  if (!err.ok()) return err;
  return out;
}

}  // namespace govern::bundle
