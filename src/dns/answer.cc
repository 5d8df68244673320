#include "dns/answer.h"

#include <algorithm>
#include <cstring>

#include "dns/rdata.h"
#include "dns/wire.h"

namespace govern::dns {
namespace {

constexpr uint16_t kFlagQR = 0x8000, kFlagAA = 0x0400, kFlagTC = 0x0200, kFlagRD = 0x0100, kFlagCD = 0x0010;
constexpr size_t kMaxMessage = 65535;

thread_local uint8_t scratch[kMaxMessage];

// Offsets of the labels of a wire name; returns the count.
int LabelOffsets(std::string_view name, uint8_t (&offs)[128]) {
  int n = 0;
  for (size_t i = 0; i < name.size() && name[i] != 0 && n < 128; i += static_cast<uint8_t>(name[i]) + 1)
    offs[n++] = static_cast<uint8_t>(i);
  return n;
}

struct Render {
  const Zone& z;
  bool dnssec;
  uint32_t now;
  Writer w;
  uint16_t qtype;
  uint32_t refresh_at = 0;
  bool overflow = false;
  size_t prefix_len = 0;
  bool cacheable = false;
  bool compact_ok = false;
  bool nsec3;  // deny from the zone's NSEC3 chain (RFC 5155) rather than compactly (RFC 9824)
  // Up to two per wildcard step of a chain (8 steps) and three for a closing denial.
  const Nsec3Record* nsec3_put[20] = {};
  int nsec3_count = 0;

  Render(const Zone& zone, bool d, uint32_t t, uint16_t qt)
      : z(zone), dnssec(d), now(t), w(scratch, kMaxMessage), qtype(qt), nsec3(d && zone.online_nsec3()) {}

  void Put(std::string_view owner, uint16_t type, uint32_t ttl, std::string_view rdata, int section) {
    if (overflow) return;
    if (!w.PutRecord(owner, type, kClassIN, ttl, rdata)) {
      overflow = true;
      return;
    }
    w.AddCount(section);
  }
  void Sig(std::string_view out_owner, std::string_view sign_owner, const RRset& set, int section) {
    if (!dnssec) return;
    auto sig = z.SigFor(sign_owner, set, now);
    if (!sig) return;
    if (refresh_at == 0 || sig->refresh_at < refresh_at) refresh_at = sig->refresh_at;
    Put(out_owner, kRRSIG, set.ttl, sig->rrsig, section);
    for (const auto& more : sig->more) Put(out_owner, kRRSIG, set.ttl, more, section);
  }
  void PutSet(std::string_view out_owner, std::string_view sign_owner, const RRset& set, int section) {
    for (const auto& rd : set.rdatas) Put(out_owner, set.type, set.ttl, rd, section);
    Sig(out_owner, sign_owner, set, section);
  }
  void PutSoa() {
    const Node* a = &z.apex_node();
    Put(a->owner, kSOA, z.negative_ttl(), z.soa().rdatas[0], 1);
    if (dnssec) {
      auto sig = z.SigFor(a->owner, z.soa(), now);
      if (sig) {
        if (refresh_at == 0 || sig->refresh_at < refresh_at) refresh_at = sig->refresh_at;
        // The RRSIG keeps the SOA's own TTL as original TTL; the record TTL follows the negative TTL.
        Put(a->owner, kRRSIG, z.negative_ttl(), sig->rrsig, 1);
        for (const auto& more : sig->more) Put(a->owner, kRRSIG, z.negative_ttl(), more, 1);
      }
    }
  }
  // An NSEC owned by `owner` (lower or not) with next `next` and the types of `node` (or `extra`), signed.
  void PutNsec(std::string_view owner, std::string_view next, const Node* node, uint16_t extra) {
    if (!dnssec || next.size() > kMaxName) return;
    uint16_t types[64];
    int n = 0;
    if (node)
      for (auto& s : node->rrsets)
        if (n < 60) types[n++] = s.type;
    types[n++] = kRRSIG;
    types[n++] = kNSEC;
    if (extra) types[n++] = extra;
    std::sort(types, types + n);
    int m = static_cast<int>(std::unique(types, types + n) - types);
    // Per-thread buffers: once grown, denial allocates nothing besides what OpenSSL does inside.
    thread_local std::string rdata, sig;
    rdata.assign(next);
    AppendTypeBitmap(std::span<const uint16_t>(types, m), &rdata);
    uint32_t ttl = z.negative_ttl();
    Put(owner, kNSEC, ttl, rdata, 1);
    size_t signers = z.Signers(kNSEC).size();
    for (size_t i = 0; i < signers; ++i)
      if (z.SignOnceInto(owner, kNSEC, ttl, rdata, now, i, &sig)) Put(owner, kRRSIG, ttl, sig, 1);
  }
  void DenyAt(std::string_view owner_out, const Node* node, uint16_t extra) {
    if (!dnssec) return;
    char next[kMaxName + 2];
    next[0] = 1;
    next[1] = 0;
    std::memcpy(next + 2, owner_out.data(), std::min(owner_out.size(), kMaxName));
    PutNsec(owner_out, std::string_view(next, owner_out.size() + 2), node, extra);
  }
  // The white-lie NSEC that proves a wildcard-answered name does not exist itself: owner just before
  // the name's first label, next just after it, both siblings of the name (RFC 4470 style), so the
  // closest encloser a validator derives is the wildcard's parent.
  void WildcardProof(std::string_view qname) {
    if (!dnssec || qname.empty() || qname[0] == 0) return;
    size_t len = static_cast<uint8_t>(qname[0]);
    std::string label(qname.substr(1, len));
    for (auto& c : label) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string_view parent = ParentName(qname);
    std::string pred = label, succ = label;
    if (static_cast<uint8_t>(pred.back()) == 0) {
      pred.pop_back();
    } else {
      pred.back() = static_cast<char>(static_cast<uint8_t>(pred.back()) - 1);
      if (pred.size() < 63) pred.push_back(static_cast<char>(0xff));
    }
    if (succ.size() >= 63) return;
    succ.push_back('\0');
    std::string owner = pred.empty()
                            ? std::string(parent)
                            : std::string(1, static_cast<char>(pred.size())) + pred + std::string(parent);
    std::string next = std::string(1, static_cast<char>(succ.size())) + succ + std::string(parent);
    if (owner.size() > kMaxName || next.size() > kMaxName) return;
    PutNsec(owner, next, nullptr, 0);
  }
  // --- Online NSEC3 denial (RFC 5155 section 7.2) from the chain Build made: the query's names are
  // hashed here (0 iterations: one SHA-1 each), the NSEC3 found by binary search, and its RRSIG comes
  // from the cache (Zone::SigFor): nothing is signed per answer.
  void PutNsec3(const Nsec3Record* rec) {
    if (!rec) return;
    for (int i = 0; i < nsec3_count; ++i)
      if (nsec3_put[i] == rec) return;  // one NSEC3 may serve two parts of a proof
    if (nsec3_count < 20) nsec3_put[nsec3_count++] = rec;
    Put(rec->owner, kNSEC3, rec->set.ttl, rec->set.rdatas[0], 1);
    Sig(rec->owner, rec->owner, rec->set, 1);
  }
  std::string_view HashOf(std::string_view lower, uint8_t (&h)[kNsec3HashSize]) const {
    const Nsec3Params& p = z.keys().nsec3;
    Nsec3HashInto(lower, p.salt, p.iterations, h);
    return std::string_view(reinterpret_cast<const char*>(h), kNsec3HashSize);
  }
  const Nsec3Record* Matching(std::string_view lower) const {
    uint8_t h[kNsec3HashSize];
    return z.Nsec3Matching(HashOf(lower, h));
  }
  const Nsec3Record* Covering(std::string_view lower) const {
    uint8_t h[kNsec3HashSize];
    return z.Nsec3Covering(HashOf(lower, h));
  }
  // `name` with `labels` labels (a suffix of it), e.g. the next closer name of a closest encloser.
  static std::string_view Suffix(std::string_view name, int labels) {
    uint8_t offs[128];
    int n = LabelOffsets(name, offs);
    return labels >= n ? name : name.substr(offs[n - labels]);
  }
  // The closest provable encloser proof for `name` (section 7.2.1): the NSEC3 matching the nearest
  // ancestor at or above `from` (an ancestor of `name`) that has one, and the NSEC3 covering the next
  // closer name. Returns that encloser. Under opt-out the names between may be off the chain; the
  // next closer's cover then carries the opt-out flag.
  std::string_view CloserProof(std::string_view name, std::string_view from) {
    std::string_view ce = from;
    const Nsec3Record* match = Matching(ce);
    while (!match && ce.size() > z.apex().size()) {
      ce = ParentName(ce);
      match = Matching(ce);
    }
    PutNsec3(match);
    int c = LabelCount(ce);
    if (LabelCount(name) > c) PutNsec3(Covering(Suffix(name, c + 1)));
    return ce;
  }
  static std::string_view WildcardOf(std::string_view ce, char (&buf)[kMaxName + 3]) {
    buf[0] = 1;
    buf[1] = '*';
    size_t n = std::min(ce.size(), kMaxName);
    std::memcpy(buf + 2, ce.data(), n);
    return std::string_view(buf, n + 2);
  }
  // Name error (section 7.2.2): the closest encloser proof and the cover of the wildcard at the
  // closest encloser.
  void Nsec3NameError(std::string_view name, std::string_view from) {
    std::string_view ce = CloserProof(name, from);
    char buf[kMaxName + 3];
    if (ce.size() + 2 <= kMaxName) PutNsec3(Covering(WildcardOf(ce, buf)));
  }
  // No data at `name`, which exists (sections 7.2.3, 7.2.4, 7.2.7): the NSEC3 matching it, or when it
  // is off the chain (opt-out: an insecure delegation, an empty non-terminal only those make) the
  // closest provable encloser proof.
  void Nsec3NoData(std::string_view name) {
    if (const Nsec3Record* m = Matching(name)) {
      PutNsec3(m);
    } else if (name.size() > z.apex().size()) {
      CloserProof(name, ParentName(name));
    }
  }
  // Wildcard no data (section 7.2.5): the closest encloser proof and the NSEC3 matching the wildcard.
  void Nsec3WildcardNoData(std::string_view name, std::string_view ce) {
    std::string_view proved = CloserProof(name, ce);
    char buf[kMaxName + 3];
    if (proved.size() + 2 <= kMaxName) PutNsec3(Matching(WildcardOf(proved, buf)));
  }
  // Wildcard answer (section 7.2.6): the NSEC3 covering the next closer name (the RRSIG's label count
  // tells the validator the closest encloser).
  void Nsec3WildcardAnswer(std::string_view name, std::string_view ce) {
    PutNsec3(Covering(Suffix(name, LabelCount(ce) + 1)));
  }

  // A and AAAA (signed when authoritative) for names in the zone that NS/MX/SRV records name.
  void Additional(const RRset& set) {
    for (const auto& rd : set.rdatas) {
      std::string_view target = rd;
      if (set.type == kMX)
        target = target.substr(2);
      else if (set.type == kSRV)
        target = target.substr(6);
      else if (set.type != kNS)
        return;
      char lower[kMaxName + 1];
      if (target.size() > kMaxName) continue;
      LowerNameInto(target, lower);
      std::string_view lt(lower, target.size());
      if (!IsSubdomain(lt, z.apex())) continue;
      const Node* n = z.Find(lt);
      if (!n) continue;
      bool glue = FindCut(lt) != nullptr;
      for (uint16_t t : {kA, kAAAA}) {
        const RRset* s = n->Find(t);
        if (!s) continue;
        for (const auto& r : s->rdatas) Put(n->owner, t, s->ttl, r, 2);
        if (!glue) Sig(n->owner, n->owner, *s, 2);
      }
    }
  }
  // The delegation point (a node with NS below the apex) at or above `name`, or null. It looks up each
  // name from just below the apex down to `name` itself, so when it finds no cut it also says what the
  // caller would look up next: `exact`, the node at `name` (null if none), and `encloser`, the deepest
  // node above `name` (the apex if none), the closest encloser of a name that does not exist.
  const Node* FindCut(std::string_view name, const Node** exact = nullptr,
                      const Node** encloser = nullptr) const {
    uint8_t offs[128];
    int n = LabelOffsets(name, offs);
    int a = LabelCount(z.apex());
    const Node* deepest = &z.apex_node();
    const Node* node = n == a ? &z.apex_node() : nullptr;
    for (int k = a + 1; k <= n; ++k) {
      node = z.Find(name.substr(offs[n - k]));
      if (node && node->Find(kNS)) return node;
      if (node && k < n) deepest = node;
    }
    if (exact) *exact = node;
    if (encloser) *encloser = deepest;
    return nullptr;
  }
};

// Renders the response for (qname, qtype, DO) into scratch; returns flags to put in the header.
void Resolve(Render& r, std::string_view qname_out, std::string_view qn) {
  uint16_t flags = kFlagQR | kFlagAA;
  uint16_t rcode = kNoError;
  r.w.Start(0, flags, qname_out, r.qtype, kClassIN);
  std::string_view name_out = qname_out;
  std::string_view name = qn;
  char lower_buf[kMaxName + 1];
  char wild_buf[kMaxName + 3];
  // Each step of the chain a wildcard answered: its name (lower; stable: the query or chain[]), the name
  // as written out (for the compact white lie), and its closest encloser. Every wildcard-expanded RRset
  // needs its own proof that the name itself does not exist (RFC 4035 section 5.3.4, RFC 5155 section
  // 7.2.6), not just the first.
  struct WildStep {
    std::string_view name, name_out, ce;
  };
  WildStep wild[8];
  int wild_count = 0;
  // The proofs for the wildcard steps, but the one at `skip` (a wildcard NODATA proves that one).
  auto wild_proofs = [&](std::string_view skip) {
    for (int i = 0; i < wild_count; ++i) {
      if (wild[i].name == skip) continue;
      if (r.nsec3)
        r.Nsec3WildcardAnswer(wild[i].name, wild[i].ce);
      else
        r.WildcardProof(wild[i].name_out);
    }
  };
  const RRset* additional_for = nullptr;
  for (int step = 0; step < 8; ++step) {
    const Node* exact = nullptr;
    const Node* encloser = nullptr;
    const Node* cut = r.FindCut(name, &exact, &encloser);
    if (cut && !(r.qtype == kDS && cut->name == name)) {
      if (step == 0) {
        // Referral: NS of the cut in authority, DS or its absence proved, glue in additional.
        flags &= static_cast<uint16_t>(~kFlagAA);
        r.cacheable = r.z.Find(name) != nullptr;
        const RRset* ns = cut->Find(kNS);
        for (const auto& rd : ns->rdatas) r.Put(cut->owner, kNS, ns->ttl, rd, 1);
        if (r.dnssec) {
          if (const RRset* ds = cut->Find(kDS)) {
            r.PutSet(cut->owner, cut->owner, *ds, 1);
          } else if (r.nsec3) {
            r.Nsec3NoData(cut->name);  // section 7.2.7
          } else {
            r.DenyAt(cut->owner, cut, 0);
          }
        }
        r.prefix_len = r.w.size();
        r.Additional(*ns);
        r.w.SetFlags(flags);
        return;
      }
      break;  // a CNAME into a delegated child: the resolver follows it there
    }
    // Past a cut only when the cut is the name itself (DS asked at a delegation).
    const Node* node = cut ? cut : exact;
    if (step == 0) r.cacheable = node != nullptr;
    bool wild_here = false;
    if (!node) {
      // Closest encloser (FindCut found it on its way down: no cut, so `encloser` is set), then the
      // wildcard below it (RFC 4592 section 3.3.1).
      const Node* ce = encloser;
      const Node* wnode = nullptr;
      if (ce && r.z.has_wildcard() && ce->name.size() + 2 <= kMaxName) {
        wild_buf[0] = 1;
        wild_buf[1] = '*';
        std::memcpy(wild_buf + 2, ce->name.data(), ce->name.size());
        wnode = r.z.Find(std::string_view(wild_buf, ce->name.size() + 2));
      }
      // A wildcard applies below the apex too (the apex's NS is no cut); below a cut FindCut answered.
      bool ce_is_cut = ce && ce != &r.z.apex_node() && ce->Find(kNS);
      if (!wnode || !ce || ce_is_cut) {
        // Name error. Signed: compact denial (RFC 9824): NOERROR, NSEC at the name with NXNAME; with
        // the CO flag the rcode says NXDOMAIN as well (section 4). Or NSEC3 denial: NXDOMAIN with the
        // closest encloser proof (RFC 5155 section 7.2.2).
        if (r.nsec3) {
          rcode = kNXDomain;
          r.PutSoa();
          r.Nsec3NameError(name, ce ? std::string_view(ce->name) : std::string_view(r.z.apex()));
          wild_proofs({});
        } else if (r.dnssec) {
          if (r.compact_ok) rcode = kNXDomain;
          r.PutSoa();
          r.DenyAt(name_out, nullptr, kNXNAME);
          wild_proofs({});
        } else {
          rcode = kNXDomain;
          r.PutSoa();
        }
        r.prefix_len = r.w.size();
        r.w.SetFlags(static_cast<uint16_t>(flags | rcode));
        return;
      }
      node = wnode;
      wild_here = true;
      if (r.dnssec) {
        bool seen = false;  // a chain that loops back meets a name twice: one proof
        for (int i = 0; i < wild_count; ++i) seen = seen || wild[i].name == name;
        if (!seen) wild[wild_count++] = WildStep{name, name_out, ce->name};
      }
    }
    const RRset* cname = node->Find(kCNAME);
    if (cname && r.qtype != kCNAME) {
      r.PutSet(name_out, node->owner, *cname, 0);
      std::string_view target = cname->rdatas[0];
      if (target.size() > kMaxName) break;
      LowerNameInto(target, lower_buf);
      std::string_view lt(lower_buf, target.size());
      if (!IsSubdomain(lt, r.z.apex()) || lt == name) break;
      // The next step reads the target in lower_buf; copy it out since the loop reuses the buffer.
      static thread_local char chain[8][kMaxName + 1];
      std::memcpy(chain[step], lower_buf, lt.size());
      name = std::string_view(chain[step], lt.size());
      name_out = target;
      continue;
    }
    const RRset* set = nullptr;
    if (r.qtype == kANY) {
      // RFC 8482: one RRset is enough.
      for (const auto& s : node->rrsets)
        if (s.type != kRRSIG && s.type != kNSEC) {
          set = &s;
          break;
        }
    } else {
      set = node->Find(r.qtype);
    }
    if (set) {
      r.PutSet(name_out, node->owner, *set, 0);
      additional_for = set;
      wild_proofs({});
    } else {
      // NODATA (RFC 2308 section 2.2).
      r.PutSoa();
      if (r.nsec3) {
        if (wild_here)
          r.Nsec3WildcardNoData(name, ParentName(node->name));
        else
          r.Nsec3NoData(node->name);
      } else {
        r.DenyAt(name_out, node, 0);
      }
      // A wildcard NODATA's own step is proved above (compact: the NSEC at the name is the lie).
      wild_proofs(wild_here ? name : std::string_view());
    }
    r.prefix_len = r.w.size();
    if (additional_for) r.Additional(*additional_for);
    r.w.SetFlags(static_cast<uint16_t>(flags | rcode));
    return;
  }
  // The chain left the zone or ran too long: the answer so far.
  wild_proofs({});
  r.prefix_len = r.w.size();
  r.w.SetFlags(static_cast<uint16_t>(flags | rcode));
}

// Copies a rendered response into out, fitting it to the client's limit, with the query's id, flags
// and qname patched in and the OPT record appended.
size_t Finish(const uint8_t* rendered, size_t len, size_t prefix_len, const Query& q, size_t limit,
              uint8_t* out, size_t out_size, std::span<const uint8_t> packet, const ParseResult& pr) {
  size_t opt = q.has_edns ? 11 : 0;
  if (limit > out_size) limit = out_size;
  size_t take;
  bool drop_additional = false;
  if (len + opt <= limit) {
    take = len;
  } else if (prefix_len + opt <= limit) {
    take = prefix_len;
    drop_additional = true;
  } else {
    bool aa = Get16(rendered + 2) & kFlagAA;
    return WriteBareResponse(packet, q, pr, Get16(rendered + 2) & 0xf, aa, true, out, limit);
  }
  std::memcpy(out, rendered, take);
  Put16(out, q.id);
  Put16(out + 2, static_cast<uint16_t>(Get16(rendered + 2) | (q.flags & (kFlagRD | kFlagCD))));
  std::memcpy(out + kHeaderSize, q.qname.data(), q.qname.size());
  if (drop_additional) Put16(out + 10, 0);
  if (q.has_edns) {
    Writer w(out, limit);
    w.Truncate(take);
    w.PutOpt(kDefaultUdpPayload, 0, q.dnssec_ok, q.compact_ok);
    take = w.size();
  }
  return take;
}

}  // namespace

size_t Answer(const ZoneSet& zones, std::span<const uint8_t> packet, const AnswerOptions& opt, uint8_t* out,
              size_t out_size) {
  Query q;
  ParseResult pr = ParseQuery(packet, q);
  if (!pr.header_ok || (q.flags & kFlagQR)) return 0;
  size_t limit = opt.tcp ? kMaxMessage : (q.has_edns ? q.udp_payload : 512);
  if (limit > out_size) limit = out_size;
  if (!pr.ok) return WriteBareResponse(packet, q, pr, pr.rcode, false, false, out, limit);
  if (q.qclass != kClassIN) return WriteBareResponse(packet, q, pr, kRefused, false, false, out, limit);
  if (q.qtype == kAXFR || q.qtype == kIXFR)
    return WriteBareResponse(packet, q, pr, kNotImp, false, false, out, limit);
  char lower[kMaxName + 4];
  LowerNameInto(q.qname, lower);
  std::string_view qn(lower, q.qname.size());
  const Zone* z = zones.Find(qn);
  if (!z) return WriteBareResponse(packet, q, pr, kRefused, false, false, out, limit);
  bool dnssec = q.dnssec_ok && z->signed_zone();
  // Cache key: lower qname, qtype, DO.
  lower[qn.size()] = static_cast<char>(q.qtype >> 8);
  lower[qn.size() + 1] = static_cast<char>(q.qtype);
  lower[qn.size() + 2] = static_cast<char>((dnssec ? 1 : 0) | (dnssec && q.compact_ok ? 2 : 0));
  std::string_view key(lower, qn.size() + 3);
  if (auto hit = z->CacheLookup(key, opt.now)) {
    return Finish(reinterpret_cast<const uint8_t*>(hit->bytes.data()), hit->bytes.size(), hit->prefix_len, q,
                  limit, out, out_size, packet, pr);
  }
  Render r(*z, dnssec, opt.now, q.qtype);
  r.compact_ok = q.compact_ok;
  Resolve(r, qn, qn);  // rendered lower-case: Finish copies the query's own qname over it
  if (r.overflow) {
    // Larger than any message: answer what fits in TCP terms with TC.
    return WriteBareResponse(packet, q, pr, kServFail, false, false, out, limit);
  }
  if (r.cacheable) {
    auto a = std::make_shared<CachedAnswer>();
    a->bytes.assign(reinterpret_cast<const char*>(scratch), r.w.size());
    a->prefix_len = r.prefix_len;
    a->refresh_at = r.refresh_at;
    z->CacheStore(key, std::move(a));
  }
  return Finish(scratch, r.w.size(), r.prefix_len, q, limit, out, out_size, packet, pr);
}

}  // namespace govern::dns
