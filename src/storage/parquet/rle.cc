// RLE / bit-packing hybrid encoder and decoder (Encodings.md, "Run Length Encoding / Bit-Packing Hybrid").
#include "storage/parquet/rle.h"

#include <algorithm>
#include <cstring>

namespace govern::parquet {

int BitWidth(uint64_t max_value) {
  int bits = 0;
  while (max_value != 0) {
    ++bits;
    max_value >>= 1;
  }
  return bits;
}

namespace {

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Appends values[0..n) bit-packed, least significant bit first, padded with zeros to whole groups of 8.
void BitPack(const uint32_t* values, size_t n, int bit_width, std::string* out) {
  size_t groups = (n + 7) / 8;
  size_t start = out->size();
  out->resize(start + groups * static_cast<size_t>(bit_width), '\0');
  auto* dst = reinterpret_cast<uint8_t*>(out->data() + start);
  uint64_t bit = 0;
  for (size_t i = 0; i < n; ++i, bit += static_cast<uint64_t>(bit_width)) {
    uint64_t v = values[i];
    for (int b = 0; b < bit_width;) {
      uint64_t pos = bit + static_cast<uint64_t>(b);
      int in_byte = static_cast<int>(pos & 7);
      int take = std::min(8 - in_byte, bit_width - b);
      dst[pos >> 3] |= static_cast<uint8_t>(((v >> b) & ((1u << take) - 1)) << in_byte);
      b += take;
    }
  }
}

}  // namespace

void EncodeRleHybrid(const uint32_t* values, size_t n, int bit_width, std::string* out) {
  const size_t value_bytes = static_cast<size_t>((bit_width + 7) / 8);
  size_t literal_start = 0;  // values[literal_start..i) wait to be bit-packed, a multiple of 8
  size_t i = 0;
  auto flush_literals = [&](size_t end) {
    size_t count = end - literal_start;
    if (count == 0) return;
    PutVarint(((count + 7) / 8) << 1 | 1, out);
    BitPack(values + literal_start, count, bit_width, out);
  };
  while (i < n) {
    size_t run = 1;
    while (i + run < n && values[i + run] == values[i]) ++run;
    if (run >= 8 || (i + run == n && i == literal_start)) {
      flush_literals(i);
      PutVarint(static_cast<uint64_t>(run) << 1, out);
      uint32_t v = values[i];
      for (size_t b = 0; b < value_bytes; ++b) out->push_back(static_cast<char>((v >> (8 * b)) & 0xff));
      i += run;
      literal_start = i;
    } else {
      // A group of 8 literals (the last group may be short: the reader knows the value count).
      i = std::min(n, i + 8);
    }
  }
  flush_literals(n);
}

Status RleDecoder::NextRun() {
  uint64_t header = 0;
  for (int shift = 0;; shift += 7) {
    if (shift >= 64) return DataLoss("parquet: RLE run header too long");
    if (p_ >= end_) return DataLoss("parquet: RLE data ends before all values were read");
    uint8_t b = *p_++;
    header |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) break;
  }
  if (header & 1) {
    const uint64_t groups = header >> 1;
    const uint64_t bytes_left = static_cast<uint64_t>(end_ - p_);
    const auto width = static_cast<uint64_t>(bit_width_);
    uint64_t values = groups * 8;
    uint64_t bytes = groups * width;
    if (width > 0 && (groups > bytes_left || bytes > bytes_left)) {
      // Cut short at the end of the data: keep only the values whose bits are all present.
      values = bytes_left * 8 / width;
      bytes = bytes_left;
      if (values == 0) return DataLoss("parquet: bit-packed run without data");
    }
    packed_ = p_;
    packed_bit_ = 0;
    packed_left_ = values;
    p_ += bytes;
    return OkStatus();
  }
  rle_left_ = header >> 1;
  size_t value_bytes = static_cast<size_t>((bit_width_ + 7) / 8);
  if (static_cast<size_t>(end_ - p_) < value_bytes) return DataLoss("parquet: truncated RLE run");
  uint32_t v = 0;
  for (size_t b = 0; b < value_bytes; ++b) v |= static_cast<uint32_t>(p_[b]) << (8 * b);
  p_ += value_bytes;
  if (bit_width_ < 32 && (v >> bit_width_) != 0)
    return DataLoss("parquet: RLE value wider than its bit width");
  rle_value_ = v;
  return OkStatus();
}

Status RleDecoder::Decode(uint32_t* out, size_t n) {
  if (bit_width_ < 0 || bit_width_ > 32) return DataLoss("parquet: bit width above 32");
  size_t i = 0;
  while (i < n) {
    if (rle_left_ > 0) {
      size_t take = static_cast<size_t>(std::min<uint64_t>(rle_left_, n - i));
      std::fill(out + i, out + i + take, rle_value_);
      i += take;
      rle_left_ -= take;
      continue;
    }
    if (packed_left_ > 0) {
      size_t take = static_cast<size_t>(std::min<uint64_t>(packed_left_, n - i));
      const uint64_t mask = bit_width_ == 32 ? 0xffffffffu : ((uint64_t{1} << bit_width_) - 1);
      if (bit_width_ == 0) {
        std::fill(out + i, out + i + take, 0u);
      } else {
        for (size_t k = 0; k < take; ++k) {
          uint64_t pos = packed_bit_;
          // Gather up to 5 bytes covering the value (bit offset < 8, width <= 32).
          uint64_t byte = pos >> 3;
          uint64_t last = (pos + static_cast<uint64_t>(bit_width_) - 1) >> 3;
          uint64_t word = 0;
          for (uint64_t b = byte; b <= last; ++b)
            word |= static_cast<uint64_t>(packed_[b]) << (8 * (b - byte));
          out[i + k] = static_cast<uint32_t>((word >> (pos & 7)) & mask);
          packed_bit_ += static_cast<uint64_t>(bit_width_);
        }
      }
      i += take;
      packed_left_ -= take;
      continue;
    }
    GOVERN_RETURN_IF_ERROR(NextRun());
  }
  return OkStatus();
}

void PackBools(const uint8_t* values, size_t n, std::string* out) {
  size_t start = out->size();
  out->resize(start + (n + 7) / 8, '\0');
  auto* dst = reinterpret_cast<uint8_t*>(out->data() + start);
  for (size_t i = 0; i < n; ++i) {
    if (values[i]) dst[i >> 3] |= static_cast<uint8_t>(1u << (i & 7));
  }
}

}  // namespace govern::parquet
