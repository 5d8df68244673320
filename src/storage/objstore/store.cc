// Key validation shared by every Store implementation.
#include "storage/objstore/store.h"

#include <string>

namespace govern::objstore {
namespace {

// Length of the UTF-8 sequence starting at s[i], or 0 when it is not valid (overlong forms,
// surrogates and code points above U+10FFFF are refused).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  // C1 control characters (U+0080..U+009F) are as unwelcome in a key as C0 ones.
  if (cp >= 0x80 && cp <= 0x9F) return 0;
  return n;
}

Status Check(std::string_view key, bool is_prefix) {
  const char* what = is_prefix ? "prefix" : "key";
  auto bad = [&](std::string_view why) {
    return InvalidArgument(std::string("object ") + what + " \"" + std::string(key.substr(0, 200)) +
                           "\": " + std::string(why));
  };
  if (key.empty()) {
    if (is_prefix) return OkStatus();
    return InvalidArgument("object key is empty");
  }
  if (key.size() > kMaxKeyBytes) return bad("longer than 1024 bytes");
  for (size_t i = 0; i < key.size();) {
    const unsigned char c = static_cast<unsigned char>(key[i]);
    if (c < 0x20 || c == 0x7F) return bad("contains a control character at byte " + std::to_string(i));
    if (c == '\\') return bad("contains a backslash");
    const size_t n = Utf8SequenceLength(key, i);
    if (n == 0) return bad("is not valid UTF-8 (at byte " + std::to_string(i) + ")");
    i += n;
  }
  if (key.front() == '/') return bad("starts with '/'");
  if (key.back() == '/' && !is_prefix) return bad("ends with '/'");
  // Segments: a prefix may end in the middle of a segment, so its last piece is only checked for the
  // reserved temp name when it is complete.
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    const bool last = end == std::string_view::npos;
    if (last) end = key.size();
    const std::string_view seg = key.substr(start, end - start);
    if (seg.empty() && !(last && is_prefix)) return bad("has an empty path segment");
    if (!(last && is_prefix)) {
      if (seg == "." || seg == "..") return bad("has a \".\" or \"..\" segment");
    }
    if (seg.starts_with(".govern-tmp")) return bad("uses the reserved name \".govern-tmp\"");
    if (last) break;
    start = end + 1;
  }
  return OkStatus();
}

}  // namespace

Status ValidateKey(std::string_view key) { return Check(key, false); }
Status ValidatePrefix(std::string_view prefix) { return Check(prefix, true); }

}  // namespace govern::objstore
