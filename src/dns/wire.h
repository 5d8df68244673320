// DNS wire format (RFC 1035 section 4, RFC 6891 EDNS(0)): names, the strict query parser and the
// response writer with name compression.
//
// Names are held in uncompressed wire form (length-prefixed labels ending in the root's zero octet) in
// a std::string or a string_view into one. ParseQuery reads a query without allocating and rejects
// anything not a well-formed single-question query (RFC 9619). Writer appends records into a
// caller-owned fixed buffer, compressing owner names and the names inside the RDATA of the RFC 1035
// types, and reports when a record does not fit so the caller can truncate. All functions here are
// pure or work on caller-owned objects: safe from any thread on distinct objects.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace govern::dns {

// Types, classes, opcodes and rcodes used by the server.
enum Type : uint16_t {
  kA = 1,
  kNS = 2,
  kCNAME = 5,
  kSOA = 6,
  kPTR = 12,
  kHINFO = 13,
  kMX = 15,
  kTXT = 16,
  kAAAA = 28,
  kSRV = 33,
  kDNAME = 39,
  kOPT = 41,
  kDS = 43,
  kRRSIG = 46,
  kNSEC = 47,
  kDNSKEY = 48,
  kNSEC3 = 50,
  kNSEC3PARAM = 51,
  kCDS = 59,
  kCDNSKEY = 60,
  kSVCB = 64,
  kHTTPS = 65,
  kNXNAME = 128,
  kAXFR = 252,
  kIXFR = 251,
  kANY = 255,
  kCAA = 257,
};
inline constexpr uint16_t kClassIN = 1;
enum Rcode : uint8_t { kNoError = 0, kFormErr = 1, kServFail = 2, kNXDomain = 3, kNotImp = 4, kRefused = 5 };
inline constexpr uint16_t kBadVers = 16;  // extended rcode: upper 8 bits in the OPT TTL
inline constexpr size_t kMaxName = 255;
inline constexpr size_t kHeaderSize = 12;
inline constexpr uint16_t kDefaultUdpPayload = 1232;  // what we advertise and the cap we honour

// ---- names ----
// "www.Example.com." (or relative to origin when it does not end in '.', "@" is the origin) to wire
// form. Backslash escapes \X and \DDD are understood. Errors say why.
Result<std::string> NameFromText(std::string_view text, std::string_view origin_wire = {});
// Wire form to presentation text with a trailing dot, escaping as RFC 1035 section 5.1 asks.
std::string NameToText(std::string_view wire);
// ASCII lower-casing of the labels (RFC 4343), in place on a wire name.
void LowerName(std::string& wire);
void LowerNameInto(std::string_view wire, char* out);
int LabelCount(std::string_view wire);  // root is 0; a leading "*" label counts
// The name with its first label removed; root stays root.
std::string_view ParentName(std::string_view wire);
// True when `name` equals or is below `zone` (both lower-case wire).
bool IsSubdomain(std::string_view name, std::string_view zone);
// RFC 4034 section 6.1 canonical order of two lower-case wire names: <0, 0, >0.
int CanonicalCompare(std::string_view a, std::string_view b);
// Length of a well-formed uncompressed wire name at the start of `data`, or 0 when malformed.
size_t WireNameLength(std::string_view data);

// ---- query parsing ----
struct Query {
  uint16_t id = 0;
  uint16_t flags = 0;  // the whole second header word as received
  uint8_t opcode = 0;
  std::string_view qname;  // points into the packet: original case, uncompressed wire form
  uint16_t qtype = 0;
  uint16_t qclass = 0;
  bool has_edns = false;
  uint8_t edns_version = 0;
  bool dnssec_ok = false;
  bool compact_ok = false;     // EDNS CO flag (RFC 9824 section 4): NXDOMAIN wanted with compact denial
  uint16_t udp_payload = 512;  // the client's advertised size, clamped to [512, kDefaultUdpPayload]
  bool rd() const { return flags & 0x0100; }
  bool cd() const { return flags & 0x0010; }
};

// The outcome of parsing. kOk means `query` is complete. Any other value is the rcode to answer with
// (FORMERR, NOTIMP, BADVERS); `query` then holds whatever header fields could be read (`header_ok`
// says whether the id and flags are valid, so an answer can be sent at all).
struct ParseResult {
  bool ok = false;
  bool header_ok = false;
  bool question_ok = false;  // the question can be echoed
  uint16_t rcode = kNoError;
};
ParseResult ParseQuery(std::span<const uint8_t> packet, Query& query);

// ---- writing ----
// Appends records into out[0, limit). Every Put* returns false (leaving the buffer as it was) when the
// record would not fit. Compression targets are the names already written (owner names and RFC 1035
// RDATA names) up to a fixed table size; names past it are written uncompressed.
class Writer {
 public:
  Writer(uint8_t* out, size_t limit) : out_(out), limit_(limit) {}
  // Header with zero counts and the question; the qname is written as given.
  bool Start(uint16_t id, uint16_t flags, std::string_view qname, uint16_t qtype, uint16_t qclass);
  // A whole resource record. RDATA of types NS, CNAME, PTR, MX, SOA (and DNAME? no: RFC 3597 keeps
  // it uncompressed) has its names compressed; all other RDATA is copied.
  bool PutRecord(std::string_view owner, uint16_t type, uint16_t klass, uint32_t ttl, std::string_view rdata);
  bool PutOpt(uint16_t udp_payload, uint8_t ext_rcode, bool dnssec_ok, bool compact_ok = false);
  void AddCount(int section);  // 0 answer, 1 authority, 2 additional: bumps the header count
  void SetFlags(uint16_t flags);
  uint16_t Flags() const;
  size_t size() const { return pos_; }
  void Truncate(size_t pos);  // back to an earlier size (compression entries past it are dropped)
  uint8_t* data() { return out_; }

 private:
  bool PutName(std::string_view name, bool compress);
  size_t FindSuffix(std::string_view suffix, int ntargets) const;
  uint8_t* out_;
  size_t limit_;
  size_t pos_ = 0;
  static constexpr int kMaxTargets = 64;
  uint16_t targets_[kMaxTargets];  // offsets of label sequences already in the buffer
  int ntargets_ = 0;
};

inline void Put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void Put32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
// Big-endian appends to a growing string (record data, TSIG digests, transfer journals).
inline void Append16(std::string& s, uint16_t v) {
  s.push_back(static_cast<char>(v >> 8));
  s.push_back(static_cast<char>(v));
}
inline void Append32(std::string& s, uint32_t v) {
  Append16(s, static_cast<uint16_t>(v >> 16));
  Append16(s, static_cast<uint16_t>(v));
}
inline uint16_t Get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline uint32_t Get32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
         static_cast<uint32_t>(p[2]) << 8 | p[3];
}

// A minimal response with no records: header + question (when it parsed) + OPT (when the query had
// EDNS). Used for FORMERR, NOTIMP, REFUSED, BADVERS and TC answers. Returns the length (0 if the
// header itself was unreadable: such packets get no answer).
size_t WriteBareResponse(std::span<const uint8_t> packet, const Query& q, const ParseResult& pr,
                         uint16_t rcode, bool aa, bool tc, uint8_t* out, size_t limit);

}  // namespace govern::dns
