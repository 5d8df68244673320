#include "gateway/eventstream.h"

#include <zlib.h>

#include <algorithm>

namespace govern::gateway::eventstream {
namespace {

uint32_t Be32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

uint64_t BeN(const char* p, size_t n) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | u[i];
  return v;
}

void PutBe(std::string& out, uint64_t v, size_t n) {
  for (size_t i = n; i-- > 0;) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// The fixed width of a value type's bytes (0: none), or -1 for a length-prefixed one, or -2 unknown.
int ValueWidth(uint8_t type) {
  switch (static_cast<Header::Type>(type)) {
    case Header::Type::kTrue:
    case Header::Type::kFalse:
      return 0;
    case Header::Type::kByte:
      return 1;
    case Header::Type::kShort:
      return 2;
    case Header::Type::kInt:
      return 4;
    case Header::Type::kLong:
    case Header::Type::kTimestamp:
      return 8;
    case Header::Type::kUuid:
      return 16;
    case Header::Type::kBytes:
    case Header::Type::kString:
      return -1;
  }
  return -2;
}

// Sign-extends the n-byte big-endian integer.
int64_t Signed(uint64_t v, size_t n) {
  if (n == 8) return static_cast<int64_t>(v);
  uint64_t sign = uint64_t{1} << (8 * n - 1);
  return static_cast<int64_t>((v ^ sign) - sign);
}

Status ParseHeaders(std::string_view h, std::vector<Header>& out) {
  size_t pos = 0;
  while (pos < h.size()) {
    size_t name_len = static_cast<unsigned char>(h[pos++]);
    if (name_len == 0) return InvalidArgument("event-stream: a header with an empty name");
    if (h.size() - pos < name_len + 1) return InvalidArgument("event-stream: a header overruns the headers");
    Header hd;
    hd.name.assign(h.substr(pos, name_len));
    pos += name_len;
    uint8_t type = static_cast<uint8_t>(h[pos++]);
    int width = ValueWidth(type);
    if (width == -2)
      return InvalidArgument("event-stream: header `" + hd.name + "` has unknown value type " +
                             std::to_string(type));
    hd.type = static_cast<Header::Type>(type);
    size_t n;
    if (width == -1) {
      if (h.size() - pos < 2) return InvalidArgument("event-stream: a header overruns the headers");
      n = static_cast<size_t>(BeN(h.data() + pos, 2));
      pos += 2;
    } else {
      n = static_cast<size_t>(width);
    }
    if (h.size() - pos < n) return InvalidArgument("event-stream: a header overruns the headers");
    if (width == -1 || hd.type == Header::Type::kUuid) {
      hd.bytes.assign(h.substr(pos, n));
    } else if (n > 0) {
      hd.number = Signed(BeN(h.data() + pos, n), n);
    }
    pos += n;
    for (const Header& seen : out) {
      if (seen.name == hd.name)
        return InvalidArgument("event-stream: header `" + hd.name + "` appears twice");
    }
    out.push_back(std::move(hd));
  }
  return OkStatus();
}

}  // namespace

std::optional<std::string_view> Message::StringHeader(std::string_view name) const {
  for (const Header& h : headers) {
    if (h.name == name && h.type == Header::Type::kString) return std::string_view(h.bytes);
  }
  return std::nullopt;
}

uint32_t Crc32(std::string_view data, uint32_t crc) {
  // zlib takes a uInt length: feed huge inputs in pieces.
  uLong c = crc;
  while (!data.empty()) {
    size_t n = std::min<size_t>(data.size(), 1u << 30);
    c = crc32(c, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(n));
    data.remove_prefix(n);
  }
  return static_cast<uint32_t>(c);
}

Result<std::string> Encode(const Message& m) {
  std::string headers;
  for (const Header& h : m.headers) {
    if (h.name.empty() || h.name.size() > 255)
      return InvalidArgument("event-stream: a header name must be 1..255 bytes");
    headers.push_back(static_cast<char>(h.name.size()));
    headers += h.name;
    int width = ValueWidth(static_cast<uint8_t>(h.type));
    if (width == -2) return InvalidArgument("event-stream: unknown header value type");
    headers.push_back(static_cast<char>(h.type));
    if (width == -1) {
      if (h.bytes.size() > 65535) return InvalidArgument("event-stream: a header value over 65535 bytes");
      PutBe(headers, h.bytes.size(), 2);
      headers += h.bytes;
    } else if (h.type == Header::Type::kUuid) {
      if (h.bytes.size() != 16) return InvalidArgument("event-stream: a uuid header must be 16 bytes");
      headers += h.bytes;
    } else {
      PutBe(headers, static_cast<uint64_t>(h.number), static_cast<size_t>(width));
    }
  }
  if (headers.size() > kMaxHeadersBytes) return InvalidArgument("event-stream: headers over 128 KiB");
  const size_t total = kMinMessageBytes + headers.size() + m.payload.size();
  if (total > kMaxMessageBytes) return InvalidArgument("event-stream: message over 16 MiB");
  std::string out;
  out.reserve(total);
  PutBe(out, total, 4);
  PutBe(out, headers.size(), 4);
  PutBe(out, Crc32(out), 4);
  out += headers;
  out += m.payload;
  PutBe(out, Crc32(out), 4);
  return out;
}

Status Decoder::Fail(std::string message) {
  error_ = InvalidArgument(std::move(message));
  buffer_.clear();
  buffer_.shrink_to_fit();
  return error_;
}

Status Decoder::Feed(std::string_view bytes, std::vector<Message>& out) {
  if (!error_.ok()) return error_;
  buffer_.append(bytes);
  size_t pos = 0;
  while (buffer_.size() - pos >= kPreludeBytes) {
    const char* p = buffer_.data() + pos;
    const uint32_t total = Be32(p);
    const uint32_t headers_len = Be32(p + 4);
    if (Crc32(std::string_view(p, 8)) != Be32(p + 8))
      return Fail("event-stream: prelude CRC mismatch (not an event stream, or corrupted)");
    if (total < kMinMessageBytes)
      return Fail("event-stream: message length " + std::to_string(total) + " is below the minimum of 16");
    if (total > kMaxMessageBytes)
      return Fail("event-stream: message length " + std::to_string(total) + " is over the 16 MiB limit");
    if (headers_len > kMaxHeadersBytes)
      return Fail("event-stream: headers length " + std::to_string(headers_len) +
                  " is over the 128 KiB limit");
    if (headers_len > total - kMinMessageBytes)
      return Fail("event-stream: headers length " + std::to_string(headers_len) +
                  " does not fit in the message");
    if (buffer_.size() - pos < total) break;  // wait for the rest
    if (Crc32(std::string_view(p, total - 4)) != Be32(p + total - 4))
      return Fail("event-stream: message CRC mismatch");
    Message m;
    if (Status s = ParseHeaders(std::string_view(p + kPreludeBytes, headers_len), m.headers); !s.ok())
      return Fail(s.message());
    m.payload.assign(p + kPreludeBytes + headers_len, total - kMinMessageBytes - headers_len);
    out.push_back(std::move(m));
    pos += total;
  }
  buffer_.erase(0, pos);
  return OkStatus();
}

}  // namespace govern::gateway::eventstream
