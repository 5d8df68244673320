// DELTA_BINARY_PACKED encoder and decoder (see delta.h).
#include "storage/parquet/delta.h"

#include <algorithm>
#include <cstring>

#include "storage/parquet/rle.h"

namespace govern::parquet {

namespace {

constexpr uint64_t kBlockValues = 128;
constexpr uint64_t kMiniblocks = 4;
constexpr uint64_t kMiniblockValues = kBlockValues / kMiniblocks;

void PutUleb(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1)); }

// Wraps a 64-bit quantity to the value width and sign-extends it back.
int64_t Wrap(uint64_t v, int width_bits) {
  if (width_bits == 32) return static_cast<int32_t>(static_cast<uint32_t>(v));
  return static_cast<int64_t>(v);
}

// Appends values[0..32) of `bits` bits each, LSB first, as 4 * bits bytes.
void PackMiniblock(const uint64_t* values, int bits, std::string* out) {
  if (bits == 0) return;
  const size_t bytes = kMiniblockValues * static_cast<size_t>(bits) / 8;
  const size_t start = out->size();
  out->resize(start + bytes, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out->data() + start);
  uint64_t bit = 0;
  for (size_t i = 0; i < kMiniblockValues; ++i) {
    uint64_t v = values[i];
    int left = bits;
    while (left > 0) {
      const uint64_t byte = bit >> 3;
      const int shift = static_cast<int>(bit & 7);
      const int take = std::min(left, 8 - shift);
      p[byte] |= static_cast<uint8_t>((v & ((uint64_t{1} << take) - 1)) << shift);
      v >>= take;
      left -= take;
      bit += static_cast<uint64_t>(take);
    }
  }
}

Status GetUleb(const uint8_t*& p, const uint8_t* end, uint64_t* v) {
  uint64_t out = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (p >= end) return DataLoss("parquet: delta encoding ends inside a number");
    const uint8_t b = *p++;
    if (shift == 63 && (b & 0x7e) != 0) return DataLoss("parquet: delta encoding number overflows");
    out |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *v = out;
      return OkStatus();
    }
  }
  return DataLoss("parquet: delta encoding number too long");
}

}  // namespace

void EncodeDeltaBinaryPacked(const int64_t* values, size_t n, int width_bits, std::string* out) {
  PutUleb(kBlockValues, out);
  PutUleb(kMiniblocks, out);
  PutUleb(n, out);
  PutUleb(ZigZag(n > 0 ? values[0] : 0), out);
  uint64_t deltas[kBlockValues];
  uint64_t packed[kMiniblockValues];
  for (size_t i = 1; i < n; i += kBlockValues) {
    const size_t count = std::min<size_t>(kBlockValues, n - i);
    int64_t min_delta = 0;
    for (size_t k = 0; k < count; ++k) {
      const int64_t d =
          Wrap(static_cast<uint64_t>(values[i + k]) - static_cast<uint64_t>(values[i + k - 1]), width_bits);
      deltas[k] = static_cast<uint64_t>(d);
      if (k == 0 || d < min_delta) min_delta = d;
    }
    PutUleb(ZigZag(min_delta), out);
    const size_t used = (count + kMiniblockValues - 1) / kMiniblockValues;
    uint8_t widths[kMiniblocks] = {0, 0, 0, 0};
    // Deltas less the minimum, at the value width (the format's arithmetic wraps there).
    const uint64_t mask = width_bits == 32 ? 0xffffffffULL : ~uint64_t{0};
    for (size_t k = 0; k < count; ++k) deltas[k] = (deltas[k] - static_cast<uint64_t>(min_delta)) & mask;
    for (size_t m = 0; m < used; ++m) {
      uint64_t max = 0;
      for (size_t k = m * kMiniblockValues; k < std::min(count, (m + 1) * kMiniblockValues); ++k)
        max = std::max(max, deltas[k]);
      widths[m] = static_cast<uint8_t>(max == 0 ? 0 : 64 - __builtin_clzll(max));
    }
    out->append(reinterpret_cast<const char*>(widths), kMiniblocks);
    for (size_t m = 0; m < used; ++m) {
      for (size_t k = 0; k < kMiniblockValues; ++k) {
        const size_t at = m * kMiniblockValues + k;
        packed[k] = at < count ? deltas[at] : 0;  // padding of the last miniblock
      }
      PackMiniblock(packed, widths[m], out);
    }
  }
}

Status DecodeDeltaBinaryPacked(const uint8_t* data, size_t size, size_t n, int width_bits, int64_t* out,
                               size_t* consumed) {
  const uint8_t* p = data;
  const uint8_t* end = data + size;
  uint64_t block = 0, miniblocks = 0, total = 0, first = 0;
  GOVERN_RETURN_IF_ERROR(GetUleb(p, end, &block));
  GOVERN_RETURN_IF_ERROR(GetUleb(p, end, &miniblocks));
  GOVERN_RETURN_IF_ERROR(GetUleb(p, end, &total));
  GOVERN_RETURN_IF_ERROR(GetUleb(p, end, &first));
  if (block == 0 || block % 128 != 0 || block > (1u << 20) || miniblocks == 0 || block % miniblocks != 0 ||
      (block / miniblocks) % 32 != 0) {
    return DataLoss("parquet: bad delta block layout");
  }
  if (total != n) {
    return DataLoss("parquet: delta encoding holds " + std::to_string(total) + " values, the page " +
                    std::to_string(n));
  }
  const uint64_t per_mini = block / miniblocks;
  const uint64_t mask = width_bits == 32 ? 0xffffffffULL : ~uint64_t{0};
  uint64_t value = static_cast<uint64_t>(UnZigZag(first));
  if (n > 0) out[0] = Wrap(value, width_bits);
  size_t done = n > 0 ? 1 : 0;
  while (done < n) {
    uint64_t zz = 0;
    GOVERN_RETURN_IF_ERROR(GetUleb(p, end, &zz));
    const uint64_t min_delta = static_cast<uint64_t>(UnZigZag(zz));
    if (static_cast<uint64_t>(end - p) < miniblocks) return DataLoss("parquet: delta bit widths cut short");
    const uint8_t* widths = p;
    p += miniblocks;
    for (uint64_t m = 0; m < miniblocks && done < n; ++m) {
      const int bits = widths[m];
      if (bits > width_bits) return DataLoss("parquet: delta bit width above the value width");
      const uint64_t bytes = per_mini * static_cast<uint64_t>(bits) / 8;
      const uint64_t take = std::min<uint64_t>(per_mini, n - done);
      // The last miniblock may be cut short by writers that stop at the last value's byte.
      const uint64_t need = (take * static_cast<uint64_t>(bits) + 7) / 8;
      if (static_cast<uint64_t>(end - p) < need) return DataLoss("parquet: delta miniblock cut short");
      uint64_t bit = 0;
      for (uint64_t k = 0; k < take; ++k) {
        uint64_t d = 0;
        int got = 0;
        while (got < bits) {
          const uint64_t byte = bit >> 3;
          const int shift = static_cast<int>(bit & 7);
          const int t = std::min(bits - got, 8 - shift);
          d |= static_cast<uint64_t>((p[byte] >> shift) & ((1u << t) - 1)) << got;
          got += t;
          bit += static_cast<uint64_t>(t);
        }
        value = (value + ((min_delta + d) & mask)) & mask;
        out[done++] = Wrap(value, width_bits);
      }
      p += std::min<uint64_t>(bytes, static_cast<uint64_t>(end - p));
    }
  }
  *consumed = static_cast<size_t>(p - data);
  return OkStatus();
}

}  // namespace govern::parquet
