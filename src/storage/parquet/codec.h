// Page compression: UNCOMPRESSED, SNAPPY (raw block format) and ZSTD, as parquet-format's
// Compression.md defines them. Internal to the parquet folder. A Compressor keeps a ZSTD context
// between pages; it is not thread-safe. Decompress is a free function and is.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace govern::parquet {

class Compressor {
 public:
  Compressor(int32_t codec, int zstd_level);
  ~Compressor();
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;

  // Replaces *out with the compressed form of `in` (a copy for UNCOMPRESSED).
  Status Compress(std::string_view in, std::string* out);

 private:
  int32_t codec_;
  int level_;
  void* zstd_ = nullptr;  // ZSTD_CCtx*
};

// Decompresses a page whose header promises `uncompressed_size` bytes; anything else is DataLoss.
// The caller bounds uncompressed_size before calling.
Status Decompress(int32_t codec, std::string_view in, size_t uncompressed_size, std::string* out);

}  // namespace govern::parquet
