// DELTA_BINARY_PACKED (parquet-format Encodings.md, encoding 5) for INT32 and INT64 values: a header
// (block size, miniblocks per block, value count, first value), then blocks of deltas, each with its
// minimum delta and one bit width per miniblock, the deltas less that minimum bit-packed LSB-first.
// Sorted or slowly varying integers (timestamps, counters) shrink to a few bits each. Arithmetic wraps
// (two's complement) at the value's width, as the format says, so any sequence round-trips.
// Stateless functions over bytes they do not own; safe on hostile input (DataLoss, never a crash).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace govern::parquet {

// Appends the encoding of values[0..n) to *out: blocks of 128 values, 4 miniblocks of 32.
// `width_bits` is 32 for INT32 values (each must fit in int32_t) and 64 for INT64.
void EncodeDeltaBinaryPacked(const int64_t* values, size_t n, int width_bits, std::string* out);

// Decodes exactly `n` values from data[0..size) into out[0..n) (INT32 values sign-extended), and sets
// *consumed to the bytes used. DataLoss when the data is malformed, holds a different count or ends first.
Status DecodeDeltaBinaryPacked(const uint8_t* data, size_t size, size_t n, int width_bits, int64_t* out,
                               size_t* consumed);

}  // namespace govern::parquet
