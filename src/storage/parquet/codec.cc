// ZSTD and Snappy page compression.
#include "storage/parquet/codec.h"

#include <snappy.h>
#include <zstd.h>

#include "storage/parquet/metadata.h"

namespace govern::parquet {

Compressor::Compressor(int32_t codec, int zstd_level) : codec_(codec), level_(zstd_level) {
  if (codec_ == format::kZstd) zstd_ = ZSTD_createCCtx();
}

Compressor::~Compressor() {
  if (zstd_ != nullptr) ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(zstd_));
}

Status Compressor::Compress(std::string_view in, std::string* out) {
  switch (codec_) {
    case format::kUncompressed:
      out->assign(in);
      return OkStatus();
    case format::kSnappy: {
      out->resize(snappy::MaxCompressedLength(in.size()));
      size_t n = 0;
      snappy::RawCompress(in.data(), in.size(), out->data(), &n);
      out->resize(n);
      return OkStatus();
    }
    case format::kZstd: {
      if (zstd_ == nullptr) return Internal("parquet: cannot create a ZSTD context");
      out->resize(ZSTD_compressBound(in.size()));
      size_t n = ZSTD_compressCCtx(static_cast<ZSTD_CCtx*>(zstd_), out->data(), out->size(), in.data(),
                                   in.size(), level_);
      if (ZSTD_isError(n)) return Internal(std::string("parquet: zstd: ") + ZSTD_getErrorName(n));
      out->resize(n);
      return OkStatus();
    }
    default:
      return Unimplemented("parquet: compression codec " + std::to_string(codec_));
  }
}

Status Decompress(int32_t codec, std::string_view in, size_t uncompressed_size, std::string* out) {
  switch (codec) {
    case format::kUncompressed:
      if (in.size() != uncompressed_size) {
        return DataLoss("parquet: uncompressed page sizes disagree");
      }
      out->assign(in);
      return OkStatus();
    case format::kSnappy: {
      size_t n = 0;
      if (!snappy::GetUncompressedLength(in.data(), in.size(), &n) || n != uncompressed_size) {
        return DataLoss("parquet: snappy page length disagrees with its header");
      }
      out->resize(n);
      if (!snappy::RawUncompress(in.data(), in.size(), out->data())) {
        return DataLoss("parquet: corrupt snappy page");
      }
      return OkStatus();
    }
    case format::kZstd: {
      unsigned long long declared = ZSTD_getFrameContentSize(in.data(), in.size());
      if (declared == ZSTD_CONTENTSIZE_ERROR) return DataLoss("parquet: corrupt zstd page");
      // The first frame's size (a page may hold several frames) cannot exceed the whole page's.
      if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared > uncompressed_size) {
        return DataLoss("parquet: zstd page length disagrees with its header");
      }
      out->resize(uncompressed_size);
      size_t n = ZSTD_decompress(out->data(), out->size(), in.data(), in.size());
      if (ZSTD_isError(n))
        return DataLoss(std::string("parquet: corrupt zstd page: ") + ZSTD_getErrorName(n));
      if (n != uncompressed_size) return DataLoss("parquet: zstd page shorter than its header says");
      return OkStatus();
    }
    default:
      return Unimplemented("parquet: compression codec " + std::to_string(codec) + " is not supported");
  }
}

}  // namespace govern::parquet
