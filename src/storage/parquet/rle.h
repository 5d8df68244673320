// The RLE / bit-packing hybrid encoding of Parquet's Encodings.md, used for definition levels (bit
// width 1, with a 4-byte length prefix in v1 data pages) and dictionary indices (a bit-width byte,
// then the runs). Stateless functions and a decoder over bytes it does not own; not synchronised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace govern::parquet {

// Bits needed to store `max_value` (0 for 0).
int BitWidth(uint64_t max_value);

// Appends the hybrid encoding of values[0..n) (each below 2^bit_width, bit_width <= 32) to *out,
// without any length prefix. Runs of 8 or more equal values become RLE runs, the rest bit-packed groups.
void EncodeRleHybrid(const uint32_t* values, size_t n, int bit_width, std::string* out);

// Decodes runs from hostile bytes. A bit-packed run may be cut short at the end of the data, as some
// writers do, as long as every value asked for is there.
class RleDecoder {
 public:
  RleDecoder(const uint8_t* data, size_t size, int bit_width)
      : p_(data), end_(data + size), bit_width_(bit_width) {}

  // Fills out[0..n) or returns DataLoss when the data ends first.
  Status Decode(uint32_t* out, size_t n);

 private:
  Status NextRun();

  const uint8_t* p_;
  const uint8_t* end_;
  int bit_width_;
  // Current run: an RLE run repeats `rle_value_`; a bit-packed run reads from `packed_`.
  uint64_t rle_left_ = 0;
  uint32_t rle_value_ = 0;
  uint64_t packed_left_ = 0;
  const uint8_t* packed_ = nullptr;
  uint64_t packed_bit_ = 0;
};

// PLAIN booleans: one bit each, least significant bit first.
void PackBools(const uint8_t* values, size_t n, std::string* out);

}  // namespace govern::parquet
