#include "dns/zonefile.h"

#include <charconv>

#include "dns/rdata.h"
#include "dns/wire.h"

namespace govern::dns {
namespace {

// One logical entry (parentheses joined) with its starting line and whether it began with blank.
struct Entry {
  std::vector<Token> tokens;
  bool leading_blank = false;
  int line = 0;
};

class Lexer {
 public:
  explicit Lexer(std::string_view t) : t_(t) {}
  // Next entry; false at the end. Errors go to `error`.
  bool Next(Entry& e, std::string& error) {
    e = Entry{};
    while (pos_ < t_.size()) {
      e.line = line_;
      e.leading_blank = pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\t');
      int depth = 0;
      while (pos_ < t_.size()) {
        char c = t_[pos_];
        if (c == '\n') {
          ++line_;
          ++pos_;
          if (depth == 0) break;
          continue;
        }
        if (c == ' ' || c == '\t' || c == '\r') {
          ++pos_;
          continue;
        }
        if (c == ';') {
          while (pos_ < t_.size() && t_[pos_] != '\n') ++pos_;
          continue;
        }
        if (c == '(') {
          ++depth;
          ++pos_;
          continue;
        }
        if (c == ')') {
          if (depth == 0) {
            error = "line " + std::to_string(line_) + ": unbalanced ')'";
            return false;
          }
          --depth;
          ++pos_;
          continue;
        }
        Token tok;
        if (c == '"') {
          tok.quoted = true;
          ++pos_;
          bool closed = false;
          while (pos_ < t_.size()) {
            char d = t_[pos_];
            if (d == '\\' && pos_ + 1 < t_.size()) {
              tok.text.push_back(d);
              tok.text.push_back(t_[pos_ + 1]);
              if (t_[pos_ + 1] == '\n') ++line_;
              pos_ += 2;
              continue;
            }
            if (d == '"') {
              closed = true;
              ++pos_;
              break;
            }
            if (d == '\n') ++line_;
            tok.text.push_back(d);
            ++pos_;
          }
          if (!closed) {
            error = "line " + std::to_string(e.line) + ": unterminated quoted string";
            return false;
          }
        } else {
          while (pos_ < t_.size()) {
            char d = t_[pos_];
            if (d == '\\' && pos_ + 1 < t_.size()) {
              tok.text.push_back(d);
              tok.text.push_back(t_[pos_ + 1]);
              pos_ += 2;
              continue;
            }
            if (d == ' ' || d == '\t' || d == '\n' || d == '\r' || d == ';' || d == '(' || d == ')' ||
                d == '"')
              break;
            tok.text.push_back(d);
            ++pos_;
          }
        }
        e.tokens.push_back(std::move(tok));
      }
      if (depth != 0) {
        error = "line " + std::to_string(e.line) + ": '(' not closed";
        return false;
      }
      if (!e.tokens.empty()) return true;
    }
    return false;
  }

 private:
  std::string_view t_;
  size_t pos_ = 0;
  int line_ = 1;
};

// TTLs as seconds or BIND-style units ("1h30m", "2d").
bool ParseTtl(std::string_view s, uint32_t& out) {
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  uint64_t total = 0, cur = 0;
  bool unit_seen = false, digits = false;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      cur = cur * 10 + static_cast<uint64_t>(c - '0');
      digits = true;
      if (cur > 0xffffffffULL) return false;
      continue;
    }
    uint64_t m;
    switch (std::tolower(static_cast<unsigned char>(c))) {
      case 's':
        m = 1;
        break;
      case 'm':
        m = 60;
        break;
      case 'h':
        m = 3600;
        break;
      case 'd':
        m = 86400;
        break;
      case 'w':
        m = 604800;
        break;
      default:
        return false;
    }
    if (!digits) return false;
    total += cur * m;
    cur = 0;
    digits = false;
    unit_seen = true;
  }
  if (digits) {
    if (unit_seen) return false;
    total += cur;
  }
  if (total > 0x7fffffffULL) return false;
  out = static_cast<uint32_t>(total);
  return true;
}

bool IsClass(std::string_view s) {
  return s.size() == 2 && std::toupper(static_cast<unsigned char>(s[0])) == 'I' &&
         std::toupper(static_cast<unsigned char>(s[1])) == 'N';
}
bool IsOtherClass(std::string_view s) {
  auto up = [](std::string_view x, std::string_view y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (std::toupper(static_cast<unsigned char>(x[i])) != y[i]) return false;
    return true;
  };
  return up(s, "CH") || up(s, "HS") || up(s, "CS") || (s.size() > 5 && up(s.substr(0, 5), "CLASS"));
}

}  // namespace

Result<std::vector<Record>> ParseZoneFile(std::string_view text, std::string_view origin_text) {
  std::string origin;
  if (!origin_text.empty()) {
    GOVERN_ASSIGN_OR_RETURN(origin, NameFromText(origin_text));
  }
  std::vector<Record> out;
  Lexer lex(text);
  Entry e;
  std::string error;
  std::string last_owner;
  bool have_default_ttl = false, have_last_ttl = false;
  uint32_t default_ttl = 0, last_ttl = 0;
  auto fail = [&](int line, const std::string& msg) {
    return InvalidArgument("line " + std::to_string(line) + ": " + msg);
  };
  while (lex.Next(e, error)) {
    auto& tk = e.tokens;
    if (!tk[0].quoted && !tk[0].text.empty() && tk[0].text[0] == '$') {
      const std::string& d = tk[0].text;
      if (d == "$ORIGIN") {
        if (tk.size() != 2) return fail(e.line, "$ORIGIN takes one name");
        auto n = NameFromText(tk[1].text, origin);
        if (!n.ok()) return fail(e.line, n.status().message());
        origin = *n;
      } else if (d == "$TTL") {
        if (tk.size() != 2 || !ParseTtl(tk[1].text, default_ttl)) return fail(e.line, "$TTL takes one TTL");
        have_default_ttl = true;
      } else if (d == "$INCLUDE") {
        return fail(e.line, "$INCLUDE is not supported");
      } else {
        return fail(e.line, "unknown directive " + d);
      }
      continue;
    }
    size_t i = 0;
    Record r;
    if (e.leading_blank) {
      if (last_owner.empty()) return fail(e.line, "no previous owner name to repeat");
      r.owner = last_owner;
    } else {
      auto n = NameFromText(tk[0].text, origin);
      if (!n.ok()) return fail(e.line, n.status().message());
      r.owner = *n;
      i = 1;
    }
    bool have_ttl = false;
    // [TTL] [class] or [class] [TTL], then type.
    for (int k = 0; k < 2 && i < tk.size(); ++k) {
      uint32_t t;
      if (!have_ttl && !tk[i].quoted && ParseTtl(tk[i].text, t)) {
        r.ttl = t;
        have_ttl = true;
        ++i;
      } else if (IsClass(tk[i].text)) {
        ++i;
      } else if (IsOtherClass(tk[i].text)) {
        return fail(e.line, "only class IN is served");
      }
    }
    if (i >= tk.size()) return fail(e.line, "missing type");
    auto type = TypeFromText(tk[i].text);
    if (!type.ok()) return fail(e.line, type.status().message());
    r.type = *type;
    if (r.type == kOPT || r.type == kANY || r.type == kAXFR || r.type == kIXFR || r.type == kNXNAME)
      return fail(e.line, "type " + tk[i].text + " cannot appear in a zone");
    ++i;
    if (!have_ttl) {
      if (have_default_ttl) {
        r.ttl = default_ttl;
      } else if (have_last_ttl) {
        r.ttl = last_ttl;
      } else if (r.type == kSOA && tk.size() - i == 7) {
        ParseTtl(tk[tk.size() - 1].text, r.ttl);  // RFC 2308: the SOA minimum serves as default
      } else {
        return fail(e.line, "no TTL and no $TTL before it");
      }
    }
    auto rd = RdataFromText(r.type, std::span<const Token>(tk).subspan(i), origin);
    if (!rd.ok()) return fail(e.line, rd.status().message());
    r.rdata = std::move(*rd);
    if (r.owner.size() > kMaxName) return fail(e.line, "owner name too long");
    if (r.rdata.size() > 65535) return fail(e.line, "RDATA longer than 65535 octets");
    last_owner = r.owner;
    last_ttl = r.ttl;
    have_last_ttl = true;
    out.push_back(std::move(r));
  }
  if (!error.empty()) return InvalidArgument(error);
  return out;
}

std::string PrintRecord(const Record& r) {
  return NameToText(r.owner) + " " + std::to_string(r.ttl) + " IN " + TypeToText(r.type) + " " +
         RdataToText(r.type, r.rdata);
}

std::string PrintZoneFile(const std::vector<Record>& records) {
  std::string out;
  for (const auto& r : records) {
    out += PrintRecord(r);
    out.push_back('\n');
  }
  return out;
}

}  // namespace govern::dns
