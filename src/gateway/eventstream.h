// The AWS event-stream framing (application/vnd.amazon.eventstream): what Bedrock's ConverseStream
// answers in, instead of SSE. A message is
//
//   total length (u32 BE) | headers length (u32 BE) | prelude CRC32 (u32 BE, of the 8 bytes before it)
//   | headers | payload | message CRC32 (u32 BE, of every byte before it)
//
// and a header is name length (u8), name, value type (u8), value: 0 true, 1 false (no bytes), 2 byte,
// 3 int16, 4 int32, 5 int64, 8 timestamp (ms, int64), 9 uuid (16 bytes), 6 bytes and 7 string (u16 BE
// length, then the bytes). Integers are big-endian; CRC32 is the IEEE one (zlib's).
//
// Decoder is a parser of outside input (the provider's bytes): it takes the stream in any chunking and
// never throws or reads out of bounds. A CRC mismatch, a length below the 16-byte minimum or above the
// limits (kMaxMessageBytes, kMaxHeadersBytes), headers that overrun their section, an unknown value type
// or a repeated header name is an InvalidArgument naming what was wrong; after an error the decoder
// refuses everything (a framing error leaves nothing to resynchronise on). A stream that ends inside a
// message is seen with `partial()`.
//
// Encode is the inverse, for the model stub and tests. Plain values; not synchronised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::gateway::eventstream {

// AWS's own limits: a message of at most 16 MiB, headers of at most 128 KiB.
inline constexpr uint32_t kMaxMessageBytes = 16u << 20;
inline constexpr uint32_t kMaxHeadersBytes = 128u << 10;
inline constexpr uint32_t kPreludeBytes = 12;  // two lengths and the prelude CRC
inline constexpr uint32_t kMinMessageBytes = 16;

struct Header {
  enum class Type : uint8_t {
    kTrue = 0,
    kFalse = 1,
    kByte = 2,
    kShort = 3,
    kInt = 4,
    kLong = 5,
    kBytes = 6,
    kString = 7,
    kTimestamp = 8,
    kUuid = 9,
  };
  std::string name;
  Type type = Type::kString;
  int64_t number = 0;  // kByte, kShort, kInt, kLong, kTimestamp
  std::string bytes;   // kBytes, kString, kUuid (16 bytes)

  static Header String(std::string name, std::string value) {
    return {std::move(name), Type::kString, 0, std::move(value)};
  }
};

struct Message {
  std::vector<Header> headers;
  std::string payload;
  // The string value of header `name` (type string), or nullopt.
  std::optional<std::string_view> StringHeader(std::string_view name) const;
};

// CRC32 (IEEE 802.3, as zlib computes it) of `data`, continuing from `crc`.
uint32_t Crc32(std::string_view data, uint32_t crc = 0);

// The framed bytes of one message. Errors: a header name over 255 bytes, a string/bytes value over
// 65535, a uuid that is not 16 bytes, or a message over the limits.
Result<std::string> Encode(const Message& m);

class Decoder {
 public:
  // Appends each complete message in `bytes` (after what was fed before) to `out`. Errors are sticky.
  Status Feed(std::string_view bytes, std::vector<Message>& out);
  // Bytes of an unfinished message are held (the stream ended inside a message if it ends now).
  bool partial() const { return !buffer_.empty(); }
  // The bytes held at most: one message (and so never more than kMaxMessageBytes).
  size_t buffered() const { return buffer_.size(); }

 private:
  Status Fail(std::string message);
  std::string buffer_;
  Status error_;
};

}  // namespace govern::gateway::eventstream
