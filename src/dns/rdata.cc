#include "dns/rdata.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <ctime>

#include "crypto/encoding.h"
#include "dns/wire.h"

namespace govern::dns {
namespace {

struct TypeName {
  uint16_t type;
  const char* name;
};
constexpr TypeName kTypes[] = {
    {kA, "A"},           {kNS, "NS"},     {kCNAME, "CNAME"}, {kSOA, "SOA"},       {kPTR, "PTR"},
    {kHINFO, "HINFO"},   {kMX, "MX"},     {kTXT, "TXT"},     {kAAAA, "AAAA"},     {kSRV, "SRV"},
    {kDNAME, "DNAME"},   {kOPT, "OPT"},   {kDS, "DS"},       {kRRSIG, "RRSIG"},   {kNSEC, "NSEC"},
    {kDNSKEY, "DNSKEY"}, {kSVCB, "SVCB"}, {kHTTPS, "HTTPS"}, {kNXNAME, "NXNAME"}, {kAXFR, "AXFR"},
    {kIXFR, "IXFR"},     {kANY, "ANY"},   {kCAA, "CAA"},     {kCDS, "CDS"},       {kCDNSKEY, "CDNSKEY"},
};

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

template <typename T>
bool ParseNum(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Undoes \X and \DDD in a character-string.
Result<std::string> Unescape(std::string_view t) {
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '\\') {
      out.push_back(t[i]);
      continue;
    }
    if (i + 1 >= t.size()) return InvalidArgument("dangling backslash");
    if (std::isdigit(static_cast<unsigned char>(t[i + 1]))) {
      if (i + 3 >= t.size()) return InvalidArgument("short \\DDD escape");
      int v = 0;
      for (int k = 1; k <= 3; ++k) {
        if (!std::isdigit(static_cast<unsigned char>(t[i + k]))) return InvalidArgument("bad \\DDD escape");
        v = v * 10 + (t[i + k] - '0');
      }
      if (v > 255) return InvalidArgument("\\DDD escape above 255");
      out.push_back(static_cast<char>(v));
      i += 3;
    } else {
      out.push_back(t[++i]);
    }
  }
  return out;
}

Status AppendCharString(std::string& out, const Token& t) {
  GOVERN_ASSIGN_OR_RETURN(std::string s, Unescape(t.text));
  if (s.size() > 255) return InvalidArgument("character-string longer than 255 octets");
  out.push_back(static_cast<char>(s.size()));
  out += s;
  return OkStatus();
}

std::string QuoteCharString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c >= 0x7f) {
      char b[5];
      std::snprintf(b, sizeof b, "\\%03u", c);
      out += b;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
  return out;
}

Result<std::string> HexDecode(std::string_view h) {
  std::string out;
  if (h.size() % 2) return InvalidArgument("odd number of hex digits");
  for (size_t i = 0; i < h.size(); i += 2) {
    unsigned v;
    auto [p, ec] = std::from_chars(h.data() + i, h.data() + i + 2, v, 16);
    if (ec != std::errc() || p != h.data() + i + 2) return InvalidArgument("bad hex digit");
    out.push_back(static_cast<char>(v));
  }
  return out;
}

std::string Hex(std::string_view b) {
  static const char* d = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : b) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

std::string B64(std::string_view b) {
  return crypto::Base64Encode(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(b.data()), b.size()));
}

Result<std::string> B64Decode(std::span<const Token> f) {
  std::string joined;
  for (const auto& t : f) joined += t.text;
  GOVERN_ASSIGN_OR_RETURN(auto v, crypto::Base64Decode(joined));
  return std::string(v.begin(), v.end());
}

// RRSIG times: YYYYMMDDHHmmSS or a plain number of seconds.
bool ParseTime(std::string_view s, uint32_t& out) {
  if (s.size() == 14) {
    struct tm tm {};
    int v[6];
    const int w[6] = {4, 2, 2, 2, 2, 2};
    size_t o = 0;
    for (int i = 0; i < 6; ++i) {
      if (!ParseNum(s.substr(o, w[i]), v[i])) return false;
      o += w[i];
    }
    tm.tm_year = v[0] - 1900;
    tm.tm_mon = v[1] - 1;
    tm.tm_mday = v[2];
    tm.tm_hour = v[3];
    tm.tm_min = v[4];
    tm.tm_sec = v[5];
    out = static_cast<uint32_t>(timegm(&tm));
    return true;
  }
  return ParseNum(s, out);
}

std::string TimeText(uint32_t t) {
  time_t tt = t;
  struct tm tm {};
  gmtime_r(&tt, &tm);
  char b[32];
  std::snprintf(b, sizeof b, "%04d%02d%02d%02d%02d%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec);
  return b;
}

struct SvcKey {
  uint16_t key;
  const char* name;
};
constexpr SvcKey kSvcKeys[] = {{0, "mandatory"}, {1, "alpn"}, {2, "no-default-alpn"}, {3, "port"},
                               {4, "ipv4hint"},  {5, "ech"},  {6, "ipv6hint"}};

Result<uint16_t> SvcKeyFromText(std::string_view k) {
  for (auto& s : kSvcKeys)
    if (k == s.name) return s.key;
  uint16_t n;
  if (k.size() > 3 && k.substr(0, 3) == "key" && ParseNum(k.substr(3), n)) return n;
  return InvalidArgument("unknown SvcParamKey '" + std::string(k) + "'");
}
std::string SvcKeyText(uint16_t k) {
  for (auto& s : kSvcKeys)
    if (k == s.key) return s.name;
  return "key" + std::to_string(k);
}

// RFC 9460 appendix A.1: a value list, after presentation unescaping, splits on commas; "\," and
// "\\" are a literal comma and backslash inside an item.
std::vector<std::string> SplitComma(std::string_view v) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '\\' && i + 1 < v.size()) {
      cur.push_back(v[++i]);
    } else if (v[i] == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(v[i]);
    }
  }
  out.push_back(cur);
  return out;
}

Result<std::string> SvcParamValue(uint16_t key, std::string_view text) {
  std::string out;
  GOVERN_ASSIGN_OR_RETURN(std::string unescaped, Unescape(text));
  std::string_view v = unescaped;
  switch (key) {
    case 0:
      for (auto& k : SplitComma(v)) {
        GOVERN_ASSIGN_OR_RETURN(uint16_t n, SvcKeyFromText(k));
        Append16(out, n);
      }
      return out;
    case 1:
      for (auto& s : SplitComma(v)) {
        if (s.empty() || s.size() > 255) return InvalidArgument("bad alpn id");
        out.push_back(static_cast<char>(s.size()));
        out += s;
      }
      return out;
    case 3: {
      uint16_t port;
      if (!ParseNum(v, port)) return InvalidArgument("bad port");
      Append16(out, port);
      return out;
    }
    case 4:
      for (auto& a : SplitComma(v)) {
        uint8_t b[4];
        if (inet_pton(AF_INET, a.c_str(), b) != 1) return InvalidArgument("bad ipv4hint");
        out.append(reinterpret_cast<char*>(b), 4);
      }
      return out;
    case 6:
      for (auto& a : SplitComma(v)) {
        uint8_t b[16];
        if (inet_pton(AF_INET6, a.c_str(), b) != 1) return InvalidArgument("bad ipv6hint");
        out.append(reinterpret_cast<char*>(b), 16);
      }
      return out;
    case 5: {
      GOVERN_ASSIGN_OR_RETURN(auto d, crypto::Base64Decode(v));
      return std::string(d.begin(), d.end());
    }
    default:
      return unescaped;
  }
}

Result<std::string> ParseName(const Token& t, std::string_view origin) {
  return NameFromText(t.text, origin);
}

Status Need(std::span<const Token> f, size_t n, const char* what) {
  if (f.size() != n)
    return InvalidArgument(std::string(what) + " takes " + std::to_string(n) + " fields, got " +
                           std::to_string(f.size()));
  return OkStatus();
}

}  // namespace

Result<uint16_t> TypeFromText(std::string_view text) {
  for (auto& t : kTypes)
    if (IEquals(text, t.name)) return t.type;
  if (text.size() > 4 && IEquals(text.substr(0, 4), "TYPE")) {
    uint16_t n;
    if (ParseNum(text.substr(4), n)) return n;
  }
  return InvalidArgument("unknown type '" + std::string(text) + "'");
}

std::string TypeToText(uint16_t type) {
  for (auto& t : kTypes)
    if (t.type == type) return t.name;
  return "TYPE" + std::to_string(type);
}

std::string TypeBitmap(std::span<const uint16_t> types) {
  std::string out;
  AppendTypeBitmap(types, &out);
  return out;
}

void AppendTypeBitmap(std::span<const uint16_t> types, std::string* out_ptr) {
  std::string& out = *out_ptr;
  int window = -1;
  uint8_t bits[32];
  int maxbyte = -1;
  auto flush = [&] {
    if (window < 0) return;
    out.push_back(static_cast<char>(window));
    out.push_back(static_cast<char>(maxbyte + 1));
    out.append(reinterpret_cast<char*>(bits), maxbyte + 1);
  };
  for (uint16_t t : types) {
    int w = t >> 8;
    if (w != window) {
      flush();
      window = w;
      std::memset(bits, 0, sizeof bits);
      maxbyte = -1;
    }
    int b = (t & 0xff) / 8;
    bits[b] |= static_cast<uint8_t>(0x80 >> (t & 7));
    if (b > maxbyte) maxbyte = b;
  }
  flush();
}

Result<std::string> RdataFromText(uint16_t type, std::span<const Token> f, std::string_view origin) {
  std::string out;
  if (!f.empty() && !f[0].quoted && f[0].text == "\\#") {
    if (f.size() < 2) return InvalidArgument("\\# needs a length");
    size_t len;
    if (!ParseNum(f[1].text, len)) return InvalidArgument("bad \\# length");
    std::string hex;
    for (size_t i = 2; i < f.size(); ++i) hex += f[i].text;
    GOVERN_ASSIGN_OR_RETURN(out, HexDecode(hex));
    if (out.size() != len) return InvalidArgument("\\# length does not match the data");
    if (!RdataValid(type, out))
      return InvalidArgument("\\# data is not valid " + TypeToText(type) + " RDATA");
    return out;
  }
  switch (type) {
    case kA: {
      GOVERN_RETURN_IF_ERROR(Need(f, 1, "A"));
      uint8_t b[4];
      if (inet_pton(AF_INET, f[0].text.c_str(), b) != 1)
        return InvalidArgument("bad IPv4 address '" + f[0].text + "'");
      return std::string(reinterpret_cast<char*>(b), 4);
    }
    case kAAAA: {
      GOVERN_RETURN_IF_ERROR(Need(f, 1, "AAAA"));
      uint8_t b[16];
      if (inet_pton(AF_INET6, f[0].text.c_str(), b) != 1)
        return InvalidArgument("bad IPv6 address '" + f[0].text + "'");
      return std::string(reinterpret_cast<char*>(b), 16);
    }
    case kNS:
    case kCNAME:
    case kPTR:
    case kDNAME: {
      GOVERN_RETURN_IF_ERROR(Need(f, 1, TypeToText(type).c_str()));
      return ParseName(f[0], origin);
    }
    case kMX: {
      GOVERN_RETURN_IF_ERROR(Need(f, 2, "MX"));
      uint16_t pref;
      if (!ParseNum(f[0].text, pref)) return InvalidArgument("bad MX preference");
      Append16(out, pref);
      GOVERN_ASSIGN_OR_RETURN(std::string n, ParseName(f[1], origin));
      return out + n;
    }
    case kTXT: {
      if (f.empty()) return InvalidArgument("TXT needs at least one string");
      for (auto& t : f) GOVERN_RETURN_IF_ERROR(AppendCharString(out, t));
      return out;
    }
    case kHINFO: {
      GOVERN_RETURN_IF_ERROR(Need(f, 2, "HINFO"));
      for (auto& t : f) GOVERN_RETURN_IF_ERROR(AppendCharString(out, t));
      return out;
    }
    case kSOA: {
      GOVERN_RETURN_IF_ERROR(Need(f, 7, "SOA"));
      GOVERN_ASSIGN_OR_RETURN(std::string m, ParseName(f[0], origin));
      GOVERN_ASSIGN_OR_RETURN(std::string r, ParseName(f[1], origin));
      out = m + r;
      for (int i = 2; i < 7; ++i) {
        uint32_t v;
        if (!ParseNum(f[i].text, v)) return InvalidArgument("bad SOA number '" + f[i].text + "'");
        Append32(out, v);
      }
      return out;
    }
    case kSRV: {
      GOVERN_RETURN_IF_ERROR(Need(f, 4, "SRV"));
      for (int i = 0; i < 3; ++i) {
        uint16_t v;
        if (!ParseNum(f[i].text, v)) return InvalidArgument("bad SRV number '" + f[i].text + "'");
        Append16(out, v);
      }
      GOVERN_ASSIGN_OR_RETURN(std::string n, ParseName(f[3], origin));
      return out + n;
    }
    case kCAA: {
      GOVERN_RETURN_IF_ERROR(Need(f, 3, "CAA"));
      uint8_t flags;
      if (!ParseNum(f[0].text, flags)) return InvalidArgument("bad CAA flags");
      const std::string& tag = f[1].text;
      if (tag.empty() || tag.size() > 255) return InvalidArgument("bad CAA tag");
      for (char c : tag)
        if (!std::isalnum(static_cast<unsigned char>(c)))
          return InvalidArgument("CAA tag must be alphanumeric");
      GOVERN_ASSIGN_OR_RETURN(std::string v, Unescape(f[2].text));
      out.push_back(static_cast<char>(flags));
      out.push_back(static_cast<char>(tag.size()));
      return out + tag + v;
    }
    case kSVCB:
    case kHTTPS: {
      if (f.size() < 2) return InvalidArgument("SVCB/HTTPS needs a priority and a target");
      uint16_t prio;
      if (!ParseNum(f[0].text, prio)) return InvalidArgument("bad SvcPriority");
      Append16(out, prio);
      GOVERN_ASSIGN_OR_RETURN(std::string target, ParseName(f[1], origin));
      out += target;
      std::vector<std::pair<uint16_t, std::string>> params;
      for (size_t i = 2; i < f.size(); ++i) {
        std::string_view kv = f[i].text;
        size_t eq = kv.find('=');
        std::string_view k = kv.substr(0, eq);
        std::string_view v = eq == std::string_view::npos ? std::string_view() : kv.substr(eq + 1);
        if (eq != std::string_view::npos && v.empty() && i + 1 < f.size() && f[i + 1].quoted) v = f[++i].text;
        if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
        GOVERN_ASSIGN_OR_RETURN(uint16_t key, SvcKeyFromText(k));
        GOVERN_ASSIGN_OR_RETURN(std::string val, SvcParamValue(key, v));
        for (auto& p : params)
          if (p.first == key) return InvalidArgument("SvcParamKey repeated");
        params.emplace_back(key, std::move(val));
      }
      std::sort(params.begin(), params.end());
      for (auto& [k, v] : params) {
        Append16(out, k);
        Append16(out, static_cast<uint16_t>(v.size()));
        out += v;
      }
      return out;
    }
    case kDS:
    case kCDS: {
      if (f.size() < 4) return InvalidArgument("DS needs key tag, algorithm, digest type and digest");
      uint16_t tag;
      uint8_t alg, dt;
      if (!ParseNum(f[0].text, tag) || !ParseNum(f[1].text, alg) || !ParseNum(f[2].text, dt))
        return InvalidArgument("bad DS number");
      Append16(out, tag);
      out.push_back(static_cast<char>(alg));
      out.push_back(static_cast<char>(dt));
      std::string hex;
      for (size_t i = 3; i < f.size(); ++i) hex += f[i].text;
      GOVERN_ASSIGN_OR_RETURN(std::string d, HexDecode(hex));
      return out + d;
    }
    case kDNSKEY:
    case kCDNSKEY: {
      if (f.size() < 4) return InvalidArgument("DNSKEY needs flags, protocol, algorithm and key");
      uint16_t flags;
      uint8_t proto, alg;
      if (!ParseNum(f[0].text, flags) || !ParseNum(f[1].text, proto) || !ParseNum(f[2].text, alg))
        return InvalidArgument("bad DNSKEY number");
      Append16(out, flags);
      out.push_back(static_cast<char>(proto));
      out.push_back(static_cast<char>(alg));
      GOVERN_ASSIGN_OR_RETURN(std::string k, B64Decode(f.subspan(3)));
      return out + k;
    }
    case kRRSIG: {
      if (f.size() < 9) return InvalidArgument("RRSIG needs nine fields");
      GOVERN_ASSIGN_OR_RETURN(uint16_t covered, TypeFromText(f[0].text));
      uint8_t alg, labels;
      uint32_t ttl, exp, inc;
      uint16_t tag;
      if (!ParseNum(f[1].text, alg) || !ParseNum(f[2].text, labels) || !ParseNum(f[3].text, ttl) ||
          !ParseTime(f[4].text, exp) || !ParseTime(f[5].text, inc) || !ParseNum(f[6].text, tag))
        return InvalidArgument("bad RRSIG field");
      Append16(out, covered);
      out.push_back(static_cast<char>(alg));
      out.push_back(static_cast<char>(labels));
      Append32(out, ttl);
      Append32(out, exp);
      Append32(out, inc);
      Append16(out, tag);
      GOVERN_ASSIGN_OR_RETURN(std::string signer, ParseName(f[7], origin));
      GOVERN_ASSIGN_OR_RETURN(std::string sig, B64Decode(f.subspan(8)));
      return out + signer + sig;
    }
    case kNSEC: {
      if (f.empty()) return InvalidArgument("NSEC needs a next name");
      GOVERN_ASSIGN_OR_RETURN(out, ParseName(f[0], origin));
      std::vector<uint16_t> types;
      for (size_t i = 1; i < f.size(); ++i) {
        GOVERN_ASSIGN_OR_RETURN(uint16_t t, TypeFromText(f[i].text));
        types.push_back(t);
      }
      std::sort(types.begin(), types.end());
      types.erase(std::unique(types.begin(), types.end()), types.end());
      return out + TypeBitmap(types);
    }
    default:
      return InvalidArgument("type " + TypeToText(type) + " needs the \\# form");
  }
}

bool RdataValid(uint16_t type, std::string_view r) {
  auto name_at = [&](size_t o) -> size_t { return o <= r.size() ? WireNameLength(r.substr(o)) : 0; };
  switch (type) {
    case kA:
      return r.size() == 4;
    case kAAAA:
      return r.size() == 16;
    case kNS:
    case kCNAME:
    case kPTR:
    case kDNAME:
      return name_at(0) == r.size();
    case kMX:
      return r.size() > 2 && name_at(2) == r.size() - 2;
    case kSRV:
      return r.size() > 6 && name_at(6) == r.size() - 6;
    case kSOA: {
      size_t a = name_at(0);
      size_t b = a ? name_at(a) : 0;
      return a && b && r.size() == a + b + 20;
    }
    case kTXT:
    case kHINFO: {
      if (r.empty()) return false;
      size_t o = 0;
      while (o < r.size()) o += static_cast<uint8_t>(r[o]) + 1;
      return o == r.size();
    }
    default:
      return true;
  }
}

std::string RdataToText(uint16_t type, std::string_view r) {
  auto generic = [&] { return "\\# " + std::to_string(r.size()) + (r.empty() ? "" : " " + Hex(r)); };
  if (!RdataValid(type, r)) return generic();
  auto u16 = [&](size_t o) { return Get16(reinterpret_cast<const uint8_t*>(r.data()) + o); };
  auto u32 = [&](size_t o) { return Get32(reinterpret_cast<const uint8_t*>(r.data()) + o); };
  switch (type) {
    case kA:
    case kAAAA: {
      char b[INET6_ADDRSTRLEN];
      inet_ntop(type == kA ? AF_INET : AF_INET6, r.data(), b, sizeof b);
      return b;
    }
    case kNS:
    case kCNAME:
    case kPTR:
    case kDNAME:
      return NameToText(r);
    case kMX:
      return std::to_string(u16(0)) + " " + NameToText(r.substr(2));
    case kSRV:
      return std::to_string(u16(0)) + " " + std::to_string(u16(2)) + " " + std::to_string(u16(4)) + " " +
             NameToText(r.substr(6));
    case kSOA: {
      size_t a = WireNameLength(r), b = WireNameLength(r.substr(a));
      std::string s = NameToText(r.substr(0, a)) + " " + NameToText(r.substr(a, b));
      for (int i = 0; i < 5; ++i) s += " " + std::to_string(u32(a + b + 4 * i));
      return s;
    }
    case kTXT:
    case kHINFO: {
      std::string s;
      for (size_t o = 0; o < r.size(); o += static_cast<uint8_t>(r[o]) + 1) {
        if (!s.empty()) s += " ";
        s += QuoteCharString(r.substr(o + 1, static_cast<uint8_t>(r[o])));
      }
      return s;
    }
    case kCAA: {
      if (r.size() < 2 || static_cast<uint8_t>(r[1]) + 2u > r.size() || r[1] == 0) return generic();
      size_t tl = static_cast<uint8_t>(r[1]);
      return std::to_string(static_cast<uint8_t>(r[0])) + " " + std::string(r.substr(2, tl)) + " " +
             QuoteCharString(r.substr(2 + tl));
    }
    case kDS:
    case kCDS:
      if (r.size() < 5) return generic();
      return std::to_string(u16(0)) + " " + std::to_string(static_cast<uint8_t>(r[2])) + " " +
             std::to_string(static_cast<uint8_t>(r[3])) + " " + Hex(r.substr(4));
    case kDNSKEY:
    case kCDNSKEY:
      if (r.size() < 5) return generic();
      return std::to_string(u16(0)) + " " + std::to_string(static_cast<uint8_t>(r[2])) + " " +
             std::to_string(static_cast<uint8_t>(r[3])) + " " + B64(r.substr(4));
    case kRRSIG: {
      if (r.size() < 19) return generic();
      size_t n = WireNameLength(r.substr(18));
      if (!n || 18 + n >= r.size()) return generic();
      return TypeToText(u16(0)) + " " + std::to_string(static_cast<uint8_t>(r[2])) + " " +
             std::to_string(static_cast<uint8_t>(r[3])) + " " + std::to_string(u32(4)) + " " +
             TimeText(u32(8)) + " " + TimeText(u32(12)) + " " + std::to_string(u16(16)) + " " +
             NameToText(r.substr(18, n)) + " " + B64(r.substr(18 + n));
    }
    case kNSEC: {
      size_t n = WireNameLength(r);
      if (!n) return generic();
      std::string s = NameToText(r.substr(0, n));
      size_t o = n;
      while (o < r.size()) {
        if (o + 2 > r.size()) return generic();
        uint8_t w = static_cast<uint8_t>(r[o]), len = static_cast<uint8_t>(r[o + 1]);
        if (len == 0 || len > 32 || o + 2 + len > r.size()) return generic();
        for (int b = 0; b < len; ++b)
          for (int bit = 0; bit < 8; ++bit)
            if (static_cast<uint8_t>(r[o + 2 + b]) & (0x80 >> bit))
              s += " " + TypeToText(static_cast<uint16_t>(w * 256 + b * 8 + bit));
        o += 2 + len;
      }
      return s;
    }
    case kSVCB:
    case kHTTPS: {
      if (r.size() < 3) return generic();
      size_t n = WireNameLength(r.substr(2));
      if (!n) return generic();
      std::string s = std::to_string(u16(0)) + " " + NameToText(r.substr(2, n));
      size_t o = 2 + n;
      while (o < r.size()) {
        if (o + 4 > r.size()) return generic();
        uint16_t k = u16(o), len = u16(o + 2);
        if (o + 4 + len > r.size()) return generic();
        std::string_view v = r.substr(o + 4, len);
        s += " " + SvcKeyText(k);
        if (k == 2) {
        } else if (k == 3 && len == 2) {
          s += "=" + std::to_string(u16(o + 4));
        } else if ((k == 4 && len % 4 == 0) || (k == 6 && len % 16 == 0)) {
          s += "=";
          size_t step = k == 4 ? 4 : 16;
          for (size_t i = 0; i < len; i += step) {
            char b[INET6_ADDRSTRLEN];
            inet_ntop(k == 4 ? AF_INET : AF_INET6, v.data() + i, b, sizeof b);
            if (i) s += ",";
            s += b;
          }
        } else if (k == 0 && len % 2 == 0) {
          s += "=";
          for (size_t i = 0; i < len; i += 2) s += (i ? "," : "") + SvcKeyText(u16(o + 4 + i));
        } else if (k == 1) {
          std::string a;
          for (size_t i = 0; i < len;) {
            size_t l = static_cast<uint8_t>(v[i]);
            if (i + 1 + l > len) return generic();
            if (!a.empty()) a += ",";
            for (char c : v.substr(i + 1, l)) {
              if (c == ',' || c == '\\') a.push_back('\\');
              a.push_back(c);
            }
            i += 1 + l;
          }
          s += "=" + QuoteCharString(a).substr(0);
        } else if (k == 5) {
          s += "=" + B64(v);
        } else {
          s += "=" + QuoteCharString(v);
        }
        o += 4 + len;
      }
      return s;
    }
    default:
      return generic();
  }
}

std::string CanonicalRdata(uint16_t type, std::string_view r) {
  std::string out(r);
  auto lower_at = [&](size_t o) {
    if (o >= out.size()) return o;
    size_t n = WireNameLength(std::string_view(out).substr(o));
    if (n) LowerNameInto(std::string_view(out).substr(o, n), out.data() + o);
    return o + n;
  };
  switch (type) {
    case kNS:
    case kCNAME:
    case kPTR:
    case kDNAME:
      lower_at(0);
      break;
    case kMX:
      lower_at(2);
      break;
    case kSRV:
      lower_at(6);
      break;
    case kSOA:
      lower_at(lower_at(0));
      break;
    default:
      break;
  }
  return out;
}

}  // namespace govern::dns
