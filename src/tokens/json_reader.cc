// The strict pull reader behind token parsing (see json_reader.h).
#include "tokens/json_reader.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace govern::tokens::internal {

Status JsonReader::Error(std::string_view what) const {
  return InvalidArgument("json: " + std::string(what));
}

void JsonReader::SkipSpace() {
  while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
}

char JsonReader::Peek() {
  SkipSpace();
  return p_ < end_ ? *p_ : '\0';
}

Status JsonReader::BeginObject() {
  if (Peek() != '{') return Error("expected an object");
  if (++depth_ > kMaxDepth) return Error("nested too deeply");
  ++p_;
  first_ = true;
  return OkStatus();
}

Result<bool> JsonReader::NextMember(std::string* key) {
  char c = Peek();
  if (c == '}') {
    ++p_;
    --depth_;
    first_ = false;
    return false;
  }
  if (!first_) {
    if (c != ',') return Error("expected ',' or '}'");
    ++p_;
    c = Peek();
  }
  first_ = false;
  if (c != '"') return Error("expected a member name");
  GOVERN_RETURN_IF_ERROR(ReadString(key));
  if (Peek() != ':') return Error("expected ':'");
  ++p_;
  return true;
}

Status JsonReader::BeginArray() {
  if (Peek() != '[') return Error("expected an array");
  if (++depth_ > kMaxDepth) return Error("nested too deeply");
  ++p_;
  first_ = true;
  return OkStatus();
}

Result<bool> JsonReader::NextElement() {
  char c = Peek();
  if (c == ']') {
    ++p_;
    --depth_;
    first_ = false;
    return false;
  }
  if (!first_) {
    if (c != ',') return Error("expected ',' or ']'");
    ++p_;
  }
  first_ = false;
  return true;
}

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Length of the valid UTF-8 sequence starting at p (lead byte >= 0x80), or 0 (RFC 3629: no overlongs,
// no surrogates, nothing above U+10FFFF).
size_t Utf8Length(const unsigned char* p, const unsigned char* end) {
  unsigned char c = p[0];
  size_t n;
  uint32_t min;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, min = 0x80, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, min = 0x800, cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, min = 0x10000, cp = c & 0x07;
  } else {
    return 0;
  }
  if (static_cast<size_t>(end - p) < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

Status JsonReader::ReadString(std::string* out) {
  if (Peek() != '"') return Error("expected a string");
  ++p_;
  out->clear();
  // Fast path: copy runs of plain ASCII at once.
  while (true) {
    const char* run = p_;
    while (p_ < end_) {
      auto c = static_cast<unsigned char>(*p_);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
      ++p_;
    }
    out->append(run, static_cast<size_t>(p_ - run));
    if (p_ >= end_) return Error("unterminated string");
    auto c = static_cast<unsigned char>(*p_);
    if (c == '"') {
      ++p_;
      return OkStatus();
    }
    if (c < 0x20) return Error("control character in a string");
    if (c >= 0x80) {
      size_t n = Utf8Length(reinterpret_cast<const unsigned char*>(p_),
                            reinterpret_cast<const unsigned char*>(end_));
      if (n == 0) return Error("invalid UTF-8 in a string");
      out->append(p_, n);
      p_ += n;
      continue;
    }
    // An escape.
    if (++p_ >= end_) return Error("unterminated escape");
    switch (*p_++) {
      case '"':
        out->push_back('"');
        break;
      case '\\':
        out->push_back('\\');
        break;
      case '/':
        out->push_back('/');
        break;
      case 'b':
        out->push_back('\b');
        break;
      case 'f':
        out->push_back('\f');
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'u': {
        auto hex4 = [&](uint32_t* v) -> bool {
          if (end_ - p_ < 4) return false;
          *v = 0;
          for (int i = 0; i < 4; ++i) {
            int d = HexDigit(p_[i]);
            if (d < 0) return false;
            *v = (*v << 4) | static_cast<uint32_t>(d);
          }
          p_ += 4;
          return true;
        };
        uint32_t cp;
        if (!hex4(&cp)) return Error("bad \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t lo;
          if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return Error("unpaired surrogate");
          p_ += 2;
          if (!hex4(&lo) || lo < 0xDC00 || lo > 0xDFFF) return Error("unpaired surrogate");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return Error("unpaired surrogate");
        }
        AppendUtf8(out, cp);
        break;
      }
      default:
        return Error("bad escape");
    }
  }
}

Status JsonReader::ReadNumber(double* out, bool* integral, int64_t* as_int) {
  SkipSpace();
  const char* start = p_;
  if (p_ < end_ && *p_ == '-') ++p_;
  if (p_ >= end_ || *p_ < '0' || *p_ > '9') return Error("expected a number");
  if (*p_ == '0') {
    ++p_;
    if (p_ < end_ && *p_ >= '0' && *p_ <= '9') return Error("leading zero in a number");
  } else {
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
  }
  *integral = true;
  if (p_ < end_ && *p_ == '.') {
    *integral = false;
    ++p_;
    if (p_ >= end_ || *p_ < '0' || *p_ > '9') return Error("digit expected after '.'");
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
  }
  if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
    *integral = false;
    ++p_;
    if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
    if (p_ >= end_ || *p_ < '0' || *p_ > '9') return Error("digit expected in exponent");
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
  }
  size_t len = static_cast<size_t>(p_ - start);
  if (len > 64) return Error("number too long");
  if (*integral && len <= 18) {
    // The common case (a NumericDate): 18 digits always fit an int64, so no strtod.
    const char* q = start;
    bool negative = *q == '-';
    if (negative) ++q;
    int64_t v = 0;
    for (; q < p_; ++q) v = v * 10 + (*q - '0');
    *as_int = negative ? -v : v;
    *out = static_cast<double>(*as_int);
    return OkStatus();
  }
  char buf[65];
  std::memcpy(buf, start, len);
  buf[len] = '\0';
  *out = std::strtod(buf, nullptr);
  if (!std::isfinite(*out)) return Error("number out of range");
  *as_int = 0;
  *integral = false;  // longer integers are read as doubles only
  return OkStatus();
}

Status JsonReader::Literal(std::string_view word) {
  if (static_cast<size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0) {
    return Error("unexpected character");
  }
  p_ += word.size();
  return OkStatus();
}

Status JsonReader::SkipValue(int depth) {
  if (depth > kMaxDepth) return Error("nested too deeply");
  char c = Peek();
  std::string scratch;
  switch (c) {
    case '"':
      return ReadString(&scratch);
    case 't':
      return Literal("true");
    case 'f':
      return Literal("false");
    case 'n':
      return Literal("null");
    case '{': {
      GOVERN_RETURN_IF_ERROR(BeginObject());
      std::vector<std::string> names;  // duplicates are refused at every depth, skipped or not
      while (true) {
        GOVERN_ASSIGN_OR_RETURN(bool more, NextMember(&scratch));
        if (!more) return OkStatus();
        for (const auto& n : names) {
          if (n == scratch) return Error("duplicate member name");
        }
        names.push_back(scratch);
        GOVERN_RETURN_IF_ERROR(SkipValue(depth + 1));
      }
    }
    case '[': {
      GOVERN_RETURN_IF_ERROR(BeginArray());
      while (true) {
        GOVERN_ASSIGN_OR_RETURN(bool more, NextElement());
        if (!more) return OkStatus();
        GOVERN_RETURN_IF_ERROR(SkipValue(depth + 1));
      }
    }
    default: {
      double d;
      bool integral;
      int64_t i;
      return ReadNumber(&d, &integral, &i);
    }
  }
}

Status JsonReader::Skip() { return SkipValue(depth_); }

Status JsonReader::End() {
  SkipSpace();
  if (p_ != end_) return Error("trailing characters after the value");
  return OkStatus();
}

}  // namespace govern::tokens::internal
