// A strict, single-pass JSON reader that writes RFC 8785 (JCS) text as it parses.
#include "audit/json_canonical.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <system_error>
#include <utility>

#include "audit/entry.h"

namespace govern::audit {
namespace internal {
namespace {

// Decodes one UTF-8 sequence at s[i]; returns its length or 0 when invalid. `cp` gets the code point.
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t& cp) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  size_t len;
  uint32_t min;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    cp = b0 & 0x1F;
    min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    cp = b0 & 0x0F;
    min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    cp = b0 & 0x07;
    min = 0x10000;
  } else {
    return 0;
  }
  if (s.size() - i < len) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<uint8_t>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// A sort key per code point that orders like UTF-16 code units: supplementary characters (surrogate
// pairs, D800..DBFF first) sort between U+D7FF and U+E000.
uint32_t Utf16Order(uint32_t cp) {
  if (cp < 0xD800) return cp;
  if (cp < 0x10000) return cp + 0x100000;
  return cp - 0x10000 + 0xD800;
}

// a < b in UTF-16 code unit order; both valid UTF-8.
bool Utf16Less(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const auto ca = static_cast<uint8_t>(a[i]), cb = static_cast<uint8_t>(b[j]);
    if (ca < 0x80 && cb < 0x80) {
      if (ca != cb) return ca < cb;
      ++i;
      ++j;
      continue;
    }
    uint32_t pa = 0, pb = 0;
    i += DecodeUtf8(a, i, pa);
    j += DecodeUtf8(b, j, pb);
    if (pa != pb) return Utf16Order(pa) < Utf16Order(pb);
  }
  return i == a.size() && j < b.size();
}

std::string Printable(std::string_view s) {
  std::string out;
  AppendJcsString(out, s.substr(0, 64));
  if (s.size() > 64) out.insert(out.size() - 1, "...");
  return out;
}

class Reader {
 public:
  Reader(std::string_view in, int max_depth, std::string_view what)
      : in_(in), max_depth_(max_depth), what_(what) {}

  Status Error(size_t at, std::string_view msg) const {
    std::string m(what_);
    m += ": at byte ";
    m += std::to_string(at);
    if (!path_.empty()) {
      m += " (in ";
      for (const auto& p : path_) {
        m += '/';
        m += p;
      }
      m += ')';
    }
    m += ": ";
    m += msg;
    return InvalidArgument(std::move(m));
  }

  void SkipSpace() {
    while (pos_ < in_.size()) {
      const char c = in_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  bool AtEnd() {
    SkipSpace();
    return pos_ == in_.size();
  }
  size_t pos() const { return pos_; }

  // One value; its canonical text is appended to `out`. `type` gets its type; for strings `str` gets
  // the decoded text (when not null).
  Status Value(std::string& out, int depth, JsonType* type, std::string* str) {
    SkipSpace();
    if (pos_ >= in_.size()) return Error(pos_, "unexpected end of input, expected a value");
    const char c = in_[pos_];
    switch (c) {
      case '{':
        if (type) *type = JsonType::kObject;
        return Object(out, depth + 1);
      case '[':
        if (type) *type = JsonType::kArray;
        return Array(out, depth + 1);
      case '"': {
        if (type) *type = JsonType::kString;
        std::string local;
        std::string& s = str ? *str : local;
        s.clear();
        GOVERN_RETURN_IF_ERROR(String(s));
        // A member string handed back decoded (str) needs no canonical text: callers use str.
        if (!str) AppendJcsString(out, s);
        return OkStatus();
      }
      case 't':
        if (type) *type = JsonType::kBool;
        return Literal("true", out);
      case 'f':
        if (type) *type = JsonType::kBool;
        return Literal("false", out);
      case 'n':
        if (type) *type = JsonType::kNull;
        return Literal("null", out);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) {
          if (type) *type = JsonType::kNumber;
          return Number(out);
        }
        return Error(pos_, "unexpected character " + Printable(in_.substr(pos_, 1)) + ", expected a value");
    }
  }

  // The members of an object at pos_ (depth 1), for ParseObjectMembers.
  Status Members(std::vector<JsonMember>& members) {
    SkipSpace();
    if (pos_ >= in_.size() || in_[pos_] != '{') return Error(pos_, "expected a JSON object");
    ++pos_;
    members.clear();
    std::vector<size_t> name_offsets;
    SkipSpace();
    if (pos_ < in_.size() && in_[pos_] == '}') {
      ++pos_;
      return OkStatus();
    }
    while (true) {
      JsonMember m;
      SkipSpace();
      const size_t name_at = pos_;
      if (pos_ >= in_.size() || in_[pos_] != '"') return Error(pos_, "expected a member name");
      GOVERN_RETURN_IF_ERROR(String(m.name));
      name_offsets.push_back(name_at);
      SkipSpace();
      if (pos_ >= in_.size() || in_[pos_] != ':') return Error(pos_, "expected ':' after a member name");
      ++pos_;
      SkipSpace();
      const size_t value_at = pos_;
      path_.push_back(m.name);
      GOVERN_RETURN_IF_ERROR(Value(m.canonical, 1, &m.type, &m.str));
      path_.pop_back();
      m.raw = in_.substr(value_at, pos_ - value_at);
      members.push_back(std::move(m));
      SkipSpace();
      if (pos_ >= in_.size()) return Error(pos_, "unexpected end of input in an object");
      if (in_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (in_[pos_] == '}') {
        ++pos_;
        break;
      }
      return Error(pos_, "expected ',' or '}' in an object");
    }
    // Sorting finds duplicates in O(n log n) however many members an outside line has.
    std::vector<size_t> order(members.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return members[a].name < members[b].name; });
    for (size_t i = 1; i < order.size(); ++i) {
      if (members[order[i]].name == members[order[i - 1]].name) {
        const size_t at = name_offsets[std::max(order[i], order[i - 1])];
        return Error(at, "duplicate member name " + Printable(members[order[i]].name));
      }
    }
    return OkStatus();
  }

 private:
  Status Literal(std::string_view word, std::string& out) {
    if (in_.substr(pos_, word.size()) != word) return Error(pos_, "invalid literal");
    pos_ += word.size();
    out += word;
    return OkStatus();
  }

  Status Object(std::string& out, int depth) {
    if (depth > max_depth_) {
      return Error(pos_, "nesting deeper than " + std::to_string(max_depth_) + " levels");
    }
    ++pos_;  // '{'
    struct Member {
      std::string name;
      std::string value;
      size_t at;
    };
    std::vector<Member> members;
    SkipSpace();
    if (pos_ < in_.size() && in_[pos_] == '}') {
      ++pos_;
      out += "{}";
      return OkStatus();
    }
    while (true) {
      SkipSpace();
      Member m;
      m.at = pos_;
      if (pos_ >= in_.size() || in_[pos_] != '"') return Error(pos_, "expected a member name");
      GOVERN_RETURN_IF_ERROR(String(m.name));
      SkipSpace();
      if (pos_ >= in_.size() || in_[pos_] != ':') return Error(pos_, "expected ':' after a member name");
      ++pos_;
      path_.push_back(m.name);
      GOVERN_RETURN_IF_ERROR(Value(m.value, depth, nullptr, nullptr));
      path_.pop_back();
      members.push_back(std::move(m));
      SkipSpace();
      if (pos_ >= in_.size()) return Error(pos_, "unexpected end of input in an object");
      if (in_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (in_[pos_] == '}') {
        ++pos_;
        break;
      }
      return Error(pos_, "expected ',' or '}' in an object");
    }
    std::stable_sort(members.begin(), members.end(),
                     [](const Member& a, const Member& b) { return Utf16Less(a.name, b.name); });
    for (size_t i = 1; i < members.size(); ++i) {
      if (members[i].name == members[i - 1].name) {
        const size_t at = std::max(members[i].at, members[i - 1].at);
        return Error(at, "duplicate member name " + Printable(members[i].name));
      }
    }
    out.push_back('{');
    for (size_t i = 0; i < members.size(); ++i) {
      if (i) out.push_back(',');
      AppendJcsString(out, members[i].name);
      out.push_back(':');
      out += members[i].value;
    }
    out.push_back('}');
    return OkStatus();
  }

  Status Array(std::string& out, int depth) {
    if (depth > max_depth_) {
      return Error(pos_, "nesting deeper than " + std::to_string(max_depth_) + " levels");
    }
    ++pos_;  // '['
    out.push_back('[');
    SkipSpace();
    if (pos_ < in_.size() && in_[pos_] == ']') {
      ++pos_;
      out.push_back(']');
      return OkStatus();
    }
    for (size_t index = 0;; ++index) {
      if (index) out.push_back(',');
      path_.push_back(std::to_string(index));
      GOVERN_RETURN_IF_ERROR(Value(out, depth, nullptr, nullptr));
      path_.pop_back();
      SkipSpace();
      if (pos_ >= in_.size()) return Error(pos_, "unexpected end of input in an array");
      if (in_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (in_[pos_] == ']') {
        ++pos_;
        out.push_back(']');
        return OkStatus();
      }
      return Error(pos_, "expected ',' or ']' in an array");
    }
  }

  Status Hex4(size_t at, uint32_t& v) {
    if (in_.size() - at < 4) return Error(at, "truncated \\u escape");
    v = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char c = in_[at + k];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return Error(at + k, "bad hex digit in a \\u escape");
      }
    }
    return OkStatus();
  }

  // A string at pos_ (the opening quote); decoded into `s`.
  Status String(std::string& s) {
    ++pos_;
    while (true) {
      // Copy a run of plain ASCII at once.
      size_t run = pos_;
      while (run < in_.size()) {
        const auto c = static_cast<uint8_t>(in_[run]);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++run;
      }
      s.append(in_.data() + pos_, run - pos_);
      pos_ = run;
      if (pos_ >= in_.size()) return Error(pos_, "unterminated string");
      const auto c = static_cast<uint8_t>(in_[pos_]);
      if (c == '"') {
        ++pos_;
        return OkStatus();
      }
      if (c < 0x20) return Error(pos_, "unescaped control character in a string");
      if (c >= 0x80) {
        uint32_t cp = 0;
        const size_t len = DecodeUtf8(in_, pos_, cp);
        if (len == 0) return Error(pos_, "invalid UTF-8");
        s.append(in_.data() + pos_, len);
        pos_ += len;
        continue;
      }
      // Backslash.
      if (pos_ + 1 >= in_.size()) return Error(pos_, "unterminated string");
      const char e = in_[pos_ + 1];
      switch (e) {
        case '"':
          s.push_back('"');
          break;
        case '\\':
          s.push_back('\\');
          break;
        case '/':
          s.push_back('/');
          break;
        case 'b':
          s.push_back('\b');
          break;
        case 'f':
          s.push_back('\f');
          break;
        case 'n':
          s.push_back('\n');
          break;
        case 'r':
          s.push_back('\r');
          break;
        case 't':
          s.push_back('\t');
          break;
        case 'u': {
          const size_t at = pos_;
          uint32_t u = 0;
          GOVERN_RETURN_IF_ERROR(Hex4(pos_ + 2, u));
          pos_ += 6;
          if (u >= 0xDC00 && u <= 0xDFFF) return Error(at, "lone low surrogate \\u escape");
          if (u >= 0xD800 && u <= 0xDBFF) {
            if (in_.size() - pos_ < 6 || in_[pos_] != '\\' || in_[pos_ + 1] != 'u') {
              return Error(at, "lone high surrogate \\u escape");
            }
            uint32_t lo = 0;
            GOVERN_RETURN_IF_ERROR(Hex4(pos_ + 2, lo));
            if (lo < 0xDC00 || lo > 0xDFFF) return Error(at, "lone high surrogate \\u escape");
            pos_ += 6;
            u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
          }
          AppendUtf8(s, u);
          continue;
        }
        default:
          return Error(pos_, "invalid escape \\" + Printable(std::string_view(&e, 1)));
      }
      pos_ += 2;
    }
  }

  Status Number(std::string& out) {
    const size_t start = pos_;
    size_t p = pos_;
    auto digit = [&](size_t i) { return i < in_.size() && in_[i] >= '0' && in_[i] <= '9'; };
    if (in_[p] == '-') ++p;
    if (!digit(p)) return Error(start, "invalid number");
    if (in_[p] == '0') {
      ++p;
      if (digit(p)) return Error(start, "invalid number (leading zero)");
    } else {
      while (digit(p)) ++p;
    }
    if (p < in_.size() && in_[p] == '.') {
      ++p;
      if (!digit(p)) return Error(start, "invalid number (no digit after '.')");
      while (digit(p)) ++p;
    }
    if (p < in_.size() && (in_[p] == 'e' || in_[p] == 'E')) {
      ++p;
      if (p < in_.size() && (in_[p] == '+' || in_[p] == '-')) ++p;
      if (!digit(p)) return Error(start, "invalid number (no digit in the exponent)");
      while (digit(p)) ++p;
    }
    double v = 0;
    const char* first = in_.data() + start;
    const char* last = in_.data() + p;
    auto [ptr, ec] = std::from_chars(first, last, v, std::chars_format::general);
    if (ec == std::errc::result_out_of_range || (ec == std::errc() && !std::isfinite(v))) {
      return Error(start, "number " + Printable(std::string_view(first, static_cast<size_t>(last - first))) +
                              " is not a finite double");
    }
    if (ec != std::errc() || ptr != last) return Error(start, "invalid number");
    pos_ = p;
    out += FormatJcsNumber(v);
    return OkStatus();
  }

  std::string_view in_;
  size_t pos_ = 0;
  int max_depth_;
  std::string_view what_;
  std::vector<std::string> path_;
};

Status CheckSize(std::string_view json, size_t max_bytes, std::string_view what) {
  if (json.size() > max_bytes) {
    return InvalidArgument(std::string(what) + ": " + std::to_string(json.size()) +
                           " bytes is over the limit of " + std::to_string(max_bytes));
  }
  return OkStatus();
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    uint32_t cp = 0;
    const size_t len = DecodeUtf8(s, i, cp);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

Status ParseObjectMembers(std::string_view json, size_t max_bytes, int max_depth, std::string_view what,
                          std::vector<JsonMember>& members) {
  GOVERN_RETURN_IF_ERROR(CheckSize(json, max_bytes, what));
  Reader r(json, max_depth, what);
  GOVERN_RETURN_IF_ERROR(r.Members(members));
  if (!r.AtEnd()) return r.Error(r.pos(), "unexpected text after the object");
  return OkStatus();
}

Result<std::string> Canonicalize(std::string_view json, size_t max_bytes, int max_depth,
                                 std::string_view what, bool require_object) {
  GOVERN_RETURN_IF_ERROR(CheckSize(json, max_bytes, what));
  Reader r(json, max_depth, what);
  r.SkipSpace();
  if (require_object && (r.pos() >= json.size() || json[r.pos()] != '{')) {
    return r.Error(r.pos(), "expected a JSON object");
  }
  std::string out;
  out.reserve(json.size());
  GOVERN_RETURN_IF_ERROR(r.Value(out, 0, nullptr, nullptr));
  if (!r.AtEnd()) return r.Error(r.pos(), "unexpected text after the value");
  return out;
}

}  // namespace internal

std::string FormatJcsNumber(double value) {
  if (value == 0) return "0";  // +0 and -0
  std::string out;
  if (value < 0) {
    out.push_back('-');
    value = -value;
  }
  // Shortest round-trip digits in scientific form: d[.ddd]e[+-]xx.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  const size_t e_at = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_at)) {
    if (c != '.') digits.push_back(c);
  }
  int exp10 = 0;
  std::string_view e = sci.substr(e_at + 1);
  const bool neg_exp = e[0] == '-';
  std::from_chars(e.data() + 1, e.data() + e.size(), exp10);
  if (neg_exp) exp10 = -exp10;
  // ECMAScript: value = 0.d1d2...dk x 10^n, with n = exp10 + 1.
  const int k = static_cast<int>(digits.size());
  const int n = exp10 + 1;
  if (k <= n && n <= 21) {
    out += digits;
    out.append(static_cast<size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out.append(digits, 0, static_cast<size_t>(n));
    out.push_back('.');
    out.append(digits, static_cast<size_t>(n));
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-n), '0');
    out += digits;
  } else {
    out.push_back(digits[0]);
    if (k > 1) {
      out.push_back('.');
      out.append(digits, 1);
    }
    out.push_back('e');
    out.push_back(n - 1 < 0 ? '-' : '+');
    out += std::to_string(n - 1 < 0 ? 1 - n : n - 1);
  }
  return out;
}

void AppendJcsString(std::string& out, std::string_view utf8) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t run = 0;
  for (size_t i = 0; i < utf8.size(); ++i) {
    const auto c = static_cast<uint8_t>(utf8[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(utf8.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0xF]);
    }
  }
  out.append(utf8.data() + run, utf8.size() - run);
  out.push_back('"');
}

Result<std::string> CanonicalizeDetails(std::string_view json, size_t max_bytes) {
  return internal::Canonicalize(json, max_bytes, kMaxDetailsDepth, "details", true);
}

}  // namespace govern::audit
