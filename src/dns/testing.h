// Test helpers: build queries and read responses back into presentation text (decompressing names).
// Test-only; not part of the library's API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dns/rdata.h"
#include "dns/wire.h"
#include "dns/zonefile.h"

namespace govern::dns::testing {

inline std::vector<uint8_t> MakeQuery(const std::string& qname_text, uint16_t qtype, bool edns = false,
                                      bool dnssec_ok = false, uint16_t id = 0x1234, uint16_t payload = 1232) {
  std::vector<uint8_t> q(12, 0);
  Put16(q.data(), id);
  Put16(q.data() + 2, 0x0100);
  Put16(q.data() + 4, 1);
  auto name = NameFromText(qname_text);
  std::string n = name.ok() ? *name : std::string(1, '\0');
  q.insert(q.end(), n.begin(), n.end());
  uint8_t t[4];
  Put16(t, qtype);
  Put16(t + 2, kClassIN);
  q.insert(q.end(), t, t + 4);
  if (edns) {
    Put16(q.data() + 10, 1);
    uint8_t o[11] = {0};
    Put16(o + 1, kOPT);
    Put16(o + 3, payload);
    Put32(o + 5, dnssec_ok ? 0x8000 : 0);
    q.insert(q.end(), o, o + 11);
  }
  return q;
}

struct Message {
  uint16_t id = 0, flags = 0;
  std::string qname;
  uint16_t qtype = 0;
  std::vector<Record> sections[3];
  bool has_opt = false;
  uint32_t opt_ttl = 0;
  bool ok = false;
};

// Reads a (possibly compressed) name at off; returns the uncompressed wire form or "" when malformed.
inline std::string ReadName(const std::vector<uint8_t>& m, size_t& off) {
  std::string out;
  size_t o = off;
  bool jumped = false;
  int hops = 0;
  while (o < m.size()) {
    uint8_t len = m[o];
    if ((len & 0xc0) == 0xc0) {
      if (o + 1 >= m.size() || ++hops > 32) return "";
      if (!jumped) off = o + 2;
      jumped = true;
      o = static_cast<size_t>((len & 0x3f) << 8 | m[o + 1]);
      continue;
    }
    if (len > 63 || o + 1 + len > m.size()) return "";
    out.append(reinterpret_cast<const char*>(&m[o]), len + 1);
    o += len + 1;
    if (len == 0) {
      if (!jumped) off = o;
      return out;
    }
  }
  return "";
}

inline Message ReadMessage(const std::vector<uint8_t>& m) {
  Message msg;
  if (m.size() < 12) return msg;
  msg.id = Get16(&m[0]);
  msg.flags = Get16(&m[2]);
  size_t off = 12;
  if (Get16(&m[4]) == 1) {
    msg.qname = ReadName(m, off);
    if (msg.qname.empty() || off + 4 > m.size()) return msg;
    msg.qtype = Get16(&m[off]);
    off += 4;
  }
  for (int s = 0; s < 3; ++s) {
    int count = Get16(&m[6 + 2 * s]);
    for (int i = 0; i < count; ++i) {
      Record r;
      r.owner = ReadName(m, off);
      if (r.owner.empty() || off + 10 > m.size()) return msg;
      r.type = Get16(&m[off]);
      r.ttl = Get32(&m[off + 4]);
      size_t len = Get16(&m[off + 8]);
      off += 10;
      if (off + len > m.size()) return msg;
      if (r.type == kOPT) {
        msg.has_opt = true;
        msg.opt_ttl = r.ttl;
        off += len;
        continue;
      }
      // Decompress names inside the RDATA of the RFC 1035 types.
      size_t end = off + len;
      std::string rd;
      auto name_at = [&](size_t& o) { rd += ReadName(m, o); };
      size_t o = off;
      switch (r.type) {
        case kNS:
        case kCNAME:
        case kPTR:
          name_at(o);
          break;
        case kMX:
          rd.append(reinterpret_cast<const char*>(&m[o]), 2);
          o += 2;
          name_at(o);
          break;
        case kSOA:
          name_at(o);
          name_at(o);
          rd.append(reinterpret_cast<const char*>(&m[o]), end - o);
          break;
        default:
          rd.assign(reinterpret_cast<const char*>(&m[off]), len);
      }
      r.rdata = rd;
      off = end;
      msg.sections[s].push_back(r);
    }
  }
  msg.ok = off == m.size();
  return msg;
}

// A record as text, RRSIGs cut to "covered alg labels original-ttl" and DNSKEYs to "flags protocol
// algorithm", since signatures and keys differ per run.
inline std::string RecordText(const Record& r) {
  std::string s = PrintRecord(r);
  if (r.type == kDNSKEY) return s.substr(0, s.rfind(' '));
  if (r.type == kRRSIG) {
    size_t at = s.find(" RRSIG ");
    size_t cut = at;
    for (int k = 0; k < 5 && cut != std::string::npos; ++k) cut = s.find(' ', cut + 1);
    if (cut != std::string::npos) s = s.substr(0, cut);
  }
  return s;
}

}  // namespace govern::dns::testing
