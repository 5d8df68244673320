#include "dns/wire.h"

#include <cstring>

namespace govern::dns {
namespace {
inline char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }
inline uint8_t LowerU(uint8_t c) { return (c >= 'A' && c <= 'Z') ? static_cast<uint8_t>(c + 32) : c; }
}  // namespace

Result<std::string> NameFromText(std::string_view text, std::string_view origin_wire) {
  if (text.empty()) return InvalidArgument("empty name");
  if (text == "@") {
    if (origin_wire.empty()) return InvalidArgument("'@' without an origin");
    return std::string(origin_wire);
  }
  if (text == ".") return std::string(1, '\0');
  std::string out;
  std::string label;
  bool absolute = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '.') {
      if (label.empty()) return InvalidArgument("empty label in name '" + std::string(text) + "'");
      if (label.size() > 63) return InvalidArgument("label longer than 63 octets");
      out.push_back(static_cast<char>(label.size()));
      out += label;
      label.clear();
      if (i + 1 == text.size()) absolute = true;
      continue;
    }
    if (c == '\\') {
      if (i + 1 >= text.size()) return InvalidArgument("dangling backslash in name");
      if (text[i + 1] >= '0' && text[i + 1] <= '9') {
        if (i + 3 >= text.size()) return InvalidArgument("short \\DDD escape in name");
        int v = 0;
        for (int k = 1; k <= 3; ++k) {
          char d = text[i + k];
          if (d < '0' || d > '9') return InvalidArgument("bad \\DDD escape in name");
          v = v * 10 + (d - '0');
        }
        if (v > 255) return InvalidArgument("\\DDD escape above 255");
        label.push_back(static_cast<char>(v));
        i += 3;
      } else {
        label.push_back(text[i + 1]);
        ++i;
      }
      continue;
    }
    label.push_back(c);
  }
  if (!label.empty()) {
    if (label.size() > 63) return InvalidArgument("label longer than 63 octets");
    out.push_back(static_cast<char>(label.size()));
    out += label;
  }
  if (absolute) {
    out.push_back('\0');
  } else {
    if (origin_wire.empty())
      return InvalidArgument("relative name '" + std::string(text) + "' without an origin");
    out += origin_wire;
  }
  if (out.size() > kMaxName) return InvalidArgument("name longer than 255 octets");
  return out;
}

std::string NameToText(std::string_view wire) {
  if (wire.empty() || wire[0] == 0) return ".";
  std::string out;
  size_t i = 0;
  while (i < wire.size() && wire[i] != 0) {
    size_t len = static_cast<uint8_t>(wire[i]);
    for (size_t k = 1; k <= len && i + k < wire.size(); ++k) {
      uint8_t c = static_cast<uint8_t>(wire[i + k]);
      if (c == '.' || c == '\\' || c == '"' || c == '(' || c == ')' || c == ';' || c == '@' || c == '$') {
        out.push_back('\\');
        out.push_back(static_cast<char>(c));
      } else if (c <= 0x20 || c >= 0x7f) {
        char buf[5];
        buf[0] = '\\';
        buf[1] = static_cast<char>('0' + c / 100);
        buf[2] = static_cast<char>('0' + c / 10 % 10);
        buf[3] = static_cast<char>('0' + c % 10);
        out.append(buf, 4);
      } else {
        out.push_back(static_cast<char>(c));
      }
    }
    out.push_back('.');
    i += len + 1;
  }
  return out;
}

void LowerName(std::string& wire) { LowerNameInto(wire, wire.data()); }

void LowerNameInto(std::string_view wire, char* out) {
  size_t i = 0;
  while (i < wire.size()) {
    size_t len = static_cast<uint8_t>(wire[i]);
    out[i] = wire[i];
    if (len == 0) break;
    for (size_t k = 1; k <= len && i + k < wire.size(); ++k) out[i + k] = Lower(wire[i + k]);
    i += len + 1;
  }
}

int LabelCount(std::string_view wire) {
  int n = 0;
  size_t i = 0;
  while (i < wire.size() && wire[i] != 0) {
    ++n;
    i += static_cast<uint8_t>(wire[i]) + 1;
  }
  return n;
}

std::string_view ParentName(std::string_view wire) {
  if (wire.empty() || wire[0] == 0) return wire;
  return wire.substr(static_cast<uint8_t>(wire[0]) + 1);
}

bool IsSubdomain(std::string_view name, std::string_view zone) {
  while (true) {
    if (name.size() == zone.size()) return name == zone;
    if (name.size() < zone.size() || name[0] == 0) return false;
    name = ParentName(name);
  }
}

int CanonicalCompare(std::string_view a, std::string_view b) {
  // Split into labels, compare from the rightmost.
  const char* la[128];
  const char* lb[128];
  int na = 0, nb = 0;
  for (size_t i = 0; i < a.size() && a[i] != 0 && na < 128; i += static_cast<uint8_t>(a[i]) + 1)
    la[na++] = &a[i];
  for (size_t i = 0; i < b.size() && b[i] != 0 && nb < 128; i += static_cast<uint8_t>(b[i]) + 1)
    lb[nb++] = &b[i];
  while (na > 0 && nb > 0) {
    const uint8_t* x = reinterpret_cast<const uint8_t*>(la[--na]);
    const uint8_t* y = reinterpret_cast<const uint8_t*>(lb[--nb]);
    size_t lx = x[0], ly = y[0];
    size_t m = lx < ly ? lx : ly;
    for (size_t k = 1; k <= m; ++k) {
      uint8_t cx = LowerU(x[k]), cy = LowerU(y[k]);
      if (cx != cy) return cx < cy ? -1 : 1;
    }
    if (lx != ly) return lx < ly ? -1 : 1;
  }
  if (na == nb) return 0;
  return na < nb ? -1 : 1;
}

size_t WireNameLength(std::string_view data) {
  size_t i = 0;
  while (i < data.size()) {
    uint8_t len = static_cast<uint8_t>(data[i]);
    if (len == 0) return i + 1 <= kMaxName ? i + 1 : 0;
    if (len > 63) return 0;
    i += len + 1;
    if (i > kMaxName) return 0;
  }
  return 0;
}

ParseResult ParseQuery(std::span<const uint8_t> p, Query& q) {
  ParseResult r;
  q = Query{};
  if (p.size() < kHeaderSize) return r;  // no answer possible
  q.id = Get16(&p[0]);
  q.flags = Get16(&p[2]);
  q.opcode = (q.flags >> 11) & 0xf;
  r.header_ok = true;
  r.rcode = kFormErr;
  if (q.flags & 0x8000) return r;  // a response: FORMERR (the server drops these before answering)
  uint16_t qd = Get16(&p[4]), an = Get16(&p[6]), ns = Get16(&p[8]), ar = Get16(&p[10]);
  if (q.opcode != 0) {
    r.rcode = kNotImp;
    return r;
  }
  if (qd != 1 || an != 0 || ns != 0 || ar > 1) return r;
  std::string_view rest(reinterpret_cast<const char*>(p.data()) + kHeaderSize, p.size() - kHeaderSize);
  size_t nl = WireNameLength(rest);  // compression pointers (>= 0xc0) are refused: nothing to point at
  if (nl == 0 || rest.size() < nl + 4) return r;
  q.qname = rest.substr(0, nl);
  const uint8_t* t = p.data() + kHeaderSize + nl;
  q.qtype = Get16(t);
  q.qclass = Get16(t + 2);
  r.question_ok = true;
  size_t pos = kHeaderSize + nl + 4;
  if (ar == 1) {
    // The one additional record must be OPT at the root.
    if (p.size() < pos + 11) return r;
    if (p[pos] != 0) return r;
    uint16_t type = Get16(&p[pos + 1]);
    if (type != kOPT) return r;
    uint16_t payload = Get16(&p[pos + 3]);
    uint32_t ttl = Get32(&p[pos + 5]);
    uint16_t rdlen = Get16(&p[pos + 9]);
    if (p.size() != pos + 11 + rdlen) return r;
    // Options must be well-formed TLVs; their content is ignored (RFC 6891 section 6.1.2).
    size_t o = pos + 11, end = o + rdlen;
    while (o < end) {
      if (end - o < 4) return r;
      uint16_t olen = Get16(&p[o + 2]);
      if (end - o - 4 < olen) return r;
      o += 4 + olen;
    }
    q.has_edns = true;
    q.edns_version = static_cast<uint8_t>(ttl >> 16);
    q.dnssec_ok = (ttl & 0x8000) != 0;
    q.compact_ok = (ttl & 0x4000) != 0;
    q.udp_payload = payload < 512 ? 512 : (payload > kDefaultUdpPayload ? kDefaultUdpPayload : payload);
    if (q.edns_version != 0) {
      r.rcode = kBadVers;
      return r;
    }
  } else if (p.size() != pos) {
    return r;  // trailing garbage
  }
  if (q.qtype == kOPT || q.qtype == kNXNAME || (q.qtype >= 128 && q.qtype <= 250 && q.qtype != kNXNAME)) {
    // Meta types cannot be asked for (RFC 6895 section 3.1; NXNAME: RFC 9824 section 3.5).
    if (q.qtype == kOPT || q.qtype == kNXNAME) return r;
  }
  r.ok = true;
  r.rcode = kNoError;
  return r;
}

bool Writer::Start(uint16_t id, uint16_t flags, std::string_view qname, uint16_t qtype, uint16_t qclass) {
  size_t need = kHeaderSize + qname.size() + 4;
  if (need > limit_) return false;
  std::memset(out_, 0, kHeaderSize);
  Put16(out_, id);
  Put16(out_ + 2, flags);
  pos_ = kHeaderSize;
  ntargets_ = 0;
  if (!qname.empty()) {
    Put16(out_ + 4, 1);
    if (!PutName(qname, true)) return false;
    Put16(out_ + pos_, qtype);
    Put16(out_ + pos_ + 2, qclass);
    pos_ += 4;
  }
  return true;
}

void Writer::SetFlags(uint16_t flags) { Put16(out_ + 2, flags); }
uint16_t Writer::Flags() const { return Get16(out_ + 2); }

void Writer::AddCount(int section) {
  uint8_t* c = out_ + 6 + 2 * section;
  Put16(c, static_cast<uint16_t>(Get16(c) + 1));
}

void Writer::Truncate(size_t pos) {
  pos_ = pos;
  while (ntargets_ > 0 && targets_[ntargets_ - 1] >= pos) --ntargets_;
}

// Finds a name already in the buffer equal to `suffix` (uncompressed wire), comparing case-insensitively
// and following pointers. Only the first `ntargets` targets are eligible: they belong to names written
// completely, while the labels of the name being written are not yet terminated in the buffer.
size_t Writer::FindSuffix(std::string_view suffix, int ntargets) const {
  for (int t = 0; t < ntargets; ++t) {
    size_t off = targets_[t];
    size_t i = 0;
    bool match = true;
    int hops = 0;
    while (true) {
      uint8_t len = out_[off];
      if ((len & 0xc0) == 0xc0) {
        off = static_cast<size_t>((len & 0x3f) << 8 | out_[off + 1]);
        if (++hops > 64) {
          match = false;
          break;
        }
        continue;
      }
      if (i >= suffix.size() || static_cast<uint8_t>(suffix[i]) != len) {
        match = false;
        break;
      }
      if (len == 0) break;
      for (size_t k = 1; k <= len; ++k) {
        if (LowerU(out_[off + k]) != LowerU(static_cast<uint8_t>(suffix[i + k]))) {
          match = false;
          break;
        }
      }
      if (!match) break;
      i += len + 1;
      off += len + 1;
    }
    if (match && i + 1 == suffix.size()) return targets_[t];
  }
  return SIZE_MAX;
}

bool Writer::PutName(std::string_view name, bool compress) {
  size_t i = 0;
  size_t start = pos_;
  const int complete = ntargets_;
  while (i < name.size() && name[i] != 0) {
    std::string_view suffix = name.substr(i);
    if (compress) {
      size_t at = FindSuffix(suffix, complete);
      if (at != SIZE_MAX && at < 0x4000) {
        if (pos_ + 2 > limit_) {
          Truncate(start);
          return false;
        }
        Put16(out_ + pos_, static_cast<uint16_t>(0xc000 | at));
        pos_ += 2;
        return true;
      }
    }
    size_t len = static_cast<uint8_t>(name[i]);
    if (pos_ + len + 1 > limit_) {
      Truncate(start);
      return false;
    }
    if (compress && ntargets_ < kMaxTargets && pos_ < 0x4000)
      targets_[ntargets_++] = static_cast<uint16_t>(pos_);
    std::memcpy(out_ + pos_, name.data() + i, len + 1);
    pos_ += len + 1;
    i += len + 1;
  }
  if (pos_ + 1 > limit_) {
    Truncate(start);
    return false;
  }
  out_[pos_++] = 0;
  return true;
}

bool Writer::PutRecord(std::string_view owner, uint16_t type, uint16_t klass, uint32_t ttl,
                       std::string_view rdata) {
  size_t start = pos_;
  if (!PutName(owner, true)) return false;
  if (pos_ + 10 > limit_) {
    Truncate(start);
    return false;
  }
  Put16(out_ + pos_, type);
  Put16(out_ + pos_ + 2, klass);
  Put32(out_ + pos_ + 4, ttl);
  size_t rdlen_at = pos_ + 8;
  pos_ += 10;
  size_t rd_start = pos_;
  auto fail = [&] {
    Truncate(start);
    return false;
  };
  auto raw = [&](std::string_view b) {
    if (pos_ + b.size() > limit_) return false;
    std::memcpy(out_ + pos_, b.data(), b.size());
    pos_ += b.size();
    return true;
  };
  switch (type) {
    case kNS:
    case kCNAME:
    case kPTR:
      if (!PutName(rdata, true)) return fail();
      break;
    case kMX: {
      if (rdata.size() < 3) return fail();
      if (!raw(rdata.substr(0, 2)) || !PutName(rdata.substr(2), true)) return fail();
      break;
    }
    case kSOA: {
      size_t a = WireNameLength(rdata);
      size_t b = a ? WireNameLength(rdata.substr(a)) : 0;
      if (!a || !b || rdata.size() != a + b + 20) return fail();
      if (!PutName(rdata.substr(0, a), true) || !PutName(rdata.substr(a, b), true) ||
          !raw(rdata.substr(a + b)))
        return fail();
      break;
    }
    default:
      if (!raw(rdata)) return fail();
  }
  Put16(out_ + rdlen_at, static_cast<uint16_t>(pos_ - rd_start));
  return true;
}

bool Writer::PutOpt(uint16_t udp_payload, uint8_t ext_rcode, bool dnssec_ok, bool compact_ok) {
  if (pos_ + 11 > limit_) return false;
  uint8_t* p = out_ + pos_;
  p[0] = 0;
  Put16(p + 1, kOPT);
  Put16(p + 3, udp_payload);
  Put32(p + 5,
        static_cast<uint32_t>(ext_rcode) << 24 | (dnssec_ok ? 0x8000u : 0u) | (compact_ok ? 0x4000u : 0u));
  Put16(p + 9, 0);
  pos_ += 11;
  AddCount(2);
  return true;
}

size_t WriteBareResponse(std::span<const uint8_t> packet, const Query& q, const ParseResult& pr,
                         uint16_t rcode, bool aa, bool tc, uint8_t* out, size_t limit) {
  if (!pr.header_ok || limit < kHeaderSize) return 0;
  uint16_t flags = static_cast<uint16_t>(0x8000 | (q.flags & 0x7900) | (q.flags & 0x0010) | (rcode & 0xf));
  if (q.opcode != 0)
    flags = static_cast<uint16_t>(0x8000 | (q.flags & 0x7800) | (q.flags & 0x0100) | (rcode & 0xf));
  if (aa) flags |= 0x0400;
  if (tc) flags |= 0x0200;
  Writer w(out, limit);
  std::string_view qname = pr.question_ok ? q.qname : std::string_view();
  if (!w.Start(q.id, flags, qname, q.qtype, q.qclass)) return 0;
  (void)packet;
  if (q.has_edns) w.PutOpt(kDefaultUdpPayload, static_cast<uint8_t>(rcode >> 4), q.dnssec_ok, q.compact_ok);
  return w.size();
}

}  // namespace govern::dns
