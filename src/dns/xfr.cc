#include "dns/xfr.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "dns/answer.h"
#include "dns/message.h"
#include "dns/rdata.h"
#include "dns/rrl.h"
#include "dns/wire.h"

namespace govern::dns {
namespace {

constexpr uint16_t kFlagQR = 0x8000, kFlagAA = 0x0400;
constexpr size_t kSoftLimit = 16 * 1024;    // start a new message past this size
constexpr size_t kHardLimit = 65535 - 512;  // room for the TSIG record

std::vector<std::string_view> Fields(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    size_t j = i;
    while (j < text.size() && text[j] != ' ' && text[j] != '\t') ++j;
    if (j > i) out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

Result<std::string> ZoneKey(std::string_view text) {
  if (text == "*") return std::string();
  GOVERN_ASSIGN_OR_RETURN(std::string w,
                          NameFromText(text.ends_with('.') ? std::string(text) : std::string(text) + "."));
  LowerName(w);
  return w;
}

std::string RecordKey(const Record& r) {
  std::string k = r.owner;
  LowerName(k);
  uint8_t b[6];
  Put16(b, r.type);
  Put32(b + 2, r.ttl);
  k.append(reinterpret_cast<char*>(b), 6);
  k += CanonicalRdata(r.type, r.rdata);
  return k;
}

// The RRSIGs of a version, by (lower owner, covered type), to reuse over unchanged RRsets.
struct SigIndex {
  struct Entry {
    uint32_t ttl = 0;
    std::vector<std::string> rdatas;  // canonical, sorted
    std::vector<const std::string*> sigs;
  };
  std::unordered_map<std::string, Entry> by_set;
  explicit SigIndex(const TransferVersion& v) {
    for (const auto& r : v.records) {
      std::string owner = r.owner;
      LowerName(owner);
      if (r.type == kRRSIG) {
        if (r.rdata.size() < 18) continue;
        uint16_t covered = Get16(reinterpret_cast<const uint8_t*>(r.rdata.data()));
        by_set[Key(owner, covered)].sigs.push_back(&r.rdata);
      } else {
        Entry& e = by_set[Key(owner, r.type)];
        e.ttl = r.ttl;
        e.rdatas.push_back(CanonicalRdata(r.type, r.rdata));
      }
    }
    for (auto& [k, e] : by_set) std::sort(e.rdatas.begin(), e.rdatas.end());
  }
  static std::string Key(std::string_view owner, uint16_t type) {
    std::string k(owner);
    k.push_back(static_cast<char>(type >> 8));
    k.push_back(static_cast<char>(type));
    return k;
  }
  const std::string* Reuse(std::string_view owner, uint16_t type, uint32_t ttl,
                           std::span<const std::string> rdatas, const SigningKey& key, uint32_t now) const {
    auto it = by_set.find(Key(owner, type));
    if (it == by_set.end() || it->second.ttl != ttl || it->second.rdatas.size() != rdatas.size())
      return nullptr;
    std::vector<std::string> mine;
    mine.reserve(rdatas.size());
    for (const auto& rd : rdatas) mine.push_back(CanonicalRdata(type, rd));
    std::sort(mine.begin(), mine.end());
    if (mine != it->second.rdatas) return nullptr;
    Validity fresh = ValidityAt(now);
    for (const std::string* sig : it->second.sigs) {
      const auto* p = reinterpret_cast<const uint8_t*>(sig->data());
      uint32_t expiration = Get32(p + 8), inception = Get32(p + 12);
      uint16_t tag = Get16(p + 16);
      if (p[2] != static_cast<uint8_t>(key.algorithm()) || tag != key.key_tag()) continue;
      // Reuse while at least half the validity a fresh signature would have is left.
      if (inception <= now && expiration >= fresh.refresh_at) return sig;
    }
    return nullptr;
  }
};

std::shared_ptr<const TransferVersion> MakeVersion(const Zone& zone, uint32_t now,
                                                   const TransferVersion* prev) {
  auto v = std::make_shared<TransferVersion>();
  v->serial = zone.serial();
  std::vector<Record> all;
  if (zone.signed_zone()) {
    std::unique_ptr<SigIndex> index;
    if (prev) index = std::make_unique<SigIndex>(*prev);
    Zone::SignatureReuse reuse;
    if (index)
      reuse = [&](std::string_view owner, uint16_t type, uint32_t ttl, std::span<const std::string> rdatas,
                  const SigningKey& key) { return index->Reuse(owner, type, ttl, rdatas, key, now); };
    all = zone.SignedRecords(now, &reuse);
  } else {
    all = zone.Records();
  }
  // The SOA first (with the zone's serial, as Records() gives it), then the rest in their order.
  auto soa = std::find_if(all.begin(), all.end(), [&](const Record& r) {
    if (r.type != kSOA) return false;
    std::string o = r.owner;
    LowerName(o);
    return o == zone.apex();
  });
  if (soa != all.end()) {
    v->records.push_back(*soa);
    all.erase(soa);
  }
  for (auto& r : all) v->records.push_back(std::move(r));
  v->keys.reserve(v->records.size());
  for (const auto& r : v->records) v->keys.push_back(RecordKey(r));
  return v;
}

// A response without records (errors, REFUSED): header + question.
std::vector<uint8_t> Bare(const Message& m, uint8_t rcode, bool aa) {
  // Sized once and filled in place (GCC 12 warns falsely on inserts into a 12-byte vector).
  size_t qlen = m.has_question ? m.qname_raw.size() + 4 : 0;
  std::vector<uint8_t> out(kHeaderSize + qlen, 0);
  Put16(out.data(), m.id);
  uint16_t flags =
      static_cast<uint16_t>(kFlagQR | (m.opcode << 11) | (m.flags & 0x0100) | (aa ? kFlagAA : 0) | rcode);
  Put16(&out[2], flags);
  if (m.has_question) {
    Put16(&out[4], 1);
    std::memcpy(&out[kHeaderSize], m.qname_raw.data(), m.qname_raw.size());
    Put16(&out[kHeaderSize + m.qname_raw.size()], m.qtype);
    Put16(&out[kHeaderSize + m.qname_raw.size() + 2], m.qclass);
  }
  return out;
}

uint32_t SoaSerial(std::string_view rdata) {
  if (rdata.size() < 20) return 0;
  return Get32(reinterpret_cast<const uint8_t*>(rdata.data()) + rdata.size() - 20);
}

}  // namespace

// ---- config ----

Result<Netblock> Netblock::Parse(std::string_view text) {
  Netblock n;
  std::string addr(text);
  int prefix = -1;
  size_t slash = addr.find('/');
  if (slash != std::string::npos) {
    std::string p = addr.substr(slash + 1);
    addr.resize(slash);
    if (p.empty() || p.size() > 3 || !std::all_of(p.begin(), p.end(), ::isdigit))
      return InvalidArgument("bad prefix length in '" + std::string(text) + "'");
    prefix = std::stoi(p);
  }
  if (inet_pton(AF_INET, addr.c_str(), n.addr) == 1) {
    n.family = AF_INET;
    n.prefix = prefix < 0 ? 32 : prefix;
    if (n.prefix > 32) return InvalidArgument("prefix over 32 in '" + std::string(text) + "'");
  } else if (inet_pton(AF_INET6, addr.c_str(), n.addr) == 1) {
    n.family = AF_INET6;
    n.prefix = prefix < 0 ? 128 : prefix;
    if (n.prefix > 128) return InvalidArgument("prefix over 128 in '" + std::string(text) + "'");
  } else {
    return InvalidArgument("not an address: '" + std::string(text) + "'");
  }
  return n;
}

bool Netblock::Contains(const sockaddr* peer) const {
  if (peer == nullptr) return false;
  const uint8_t* a = nullptr;
  uint8_t mapped[4];
  if (peer->sa_family == AF_INET) {
    a = reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in*>(peer)->sin_addr);
    if (family != AF_INET) return false;
  } else if (peer->sa_family == AF_INET6) {
    const auto* in6 = &reinterpret_cast<const sockaddr_in6*>(peer)->sin6_addr;
    if (family == AF_INET && IN6_IS_ADDR_V4MAPPED(in6)) {
      std::memcpy(mapped, reinterpret_cast<const uint8_t*>(in6) + 12, 4);
      a = mapped;
    } else if (family == AF_INET6) {
      a = reinterpret_cast<const uint8_t*>(in6);
    } else {
      return false;
    }
  } else {
    return false;
  }
  int full = prefix / 8, rest = prefix % 8;
  if (std::memcmp(a, addr, static_cast<size_t>(full)) != 0) return false;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a[full] & mask) == (addr[full] & mask);
}

Status TransferConfig::AddKey(std::string_view text) {
  GOVERN_ASSIGN_OR_RETURN(TsigKey key, TsigKey::FromText(text));
  std::vector<TsigKey> keys = keyring.keys();
  for (const auto& k : keys)
    if (k.name == key.name) return InvalidArgument("TSIG key " + NameToText(key.name) + " given twice");
  keys.push_back(std::move(key));
  keyring = TsigKeyring(std::move(keys));
  return OkStatus();
}

Status TransferConfig::AddAcl(std::string_view text) {
  auto f = Fields(text);
  if (f.size() < 2)
    return InvalidArgument("transfer ACL '" + std::string(text) + "': ZONE ADDR[/PREFIX]... [key=NAME]");
  GOVERN_ASSIGN_OR_RETURN(std::string zone, ZoneKey(f[0]));
  ZoneTransferPolicy& p = acl[zone];
  for (size_t i = 1; i < f.size(); ++i) {
    if (f[i].starts_with("key=")) {
      std::string_view name = f[i].substr(4);
      auto w = NameFromText(name.ends_with('.') ? std::string(name) : std::string(name) + ".");
      if (!w.ok()) return InvalidArgument("transfer ACL: key name: " + w.status().message());
      LowerName(*w);
      if (!allow_unknown_keys && !keyring.Find(*w))
        return InvalidArgument("transfer ACL: unknown TSIG key " + std::string(name));
      p.keys.push_back(*w);
    } else {
      GOVERN_ASSIGN_OR_RETURN(Netblock n, Netblock::Parse(f[i]));
      p.allow.push_back(n);
    }
  }
  return OkStatus();
}

Status TransferConfig::AddNotify(std::string_view text) {
  auto f = Fields(text);
  if (f.size() < 2 || f.size() > 3)
    return InvalidArgument("notify target '" + std::string(text) + "': ZONE ADDR:PORT [key=NAME]");
  GOVERN_ASSIGN_OR_RETURN(std::string zone, ZoneKey(f[0]));
  NotifyTarget t;
  std::string_view hp = f[1];
  std::string host;
  std::string_view port;
  if (hp.starts_with('[')) {
    size_t close = hp.find(']');
    if (close == std::string_view::npos || close + 1 >= hp.size() || hp[close + 1] != ':')
      return InvalidArgument("notify target: [V6]:PORT");
    host = std::string(hp.substr(1, close - 1));
    port = hp.substr(close + 2);
  } else {
    size_t c = hp.rfind(':');
    if (c == std::string_view::npos) return InvalidArgument("notify target: ADDR:PORT");
    host = std::string(hp.substr(0, c));
    port = hp.substr(c + 1);
  }
  GOVERN_ASSIGN_OR_RETURN(Netblock check, Netblock::Parse(host));
  (void)check;
  if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit) ||
      std::stoi(std::string(port)) > 65535 || std::stoi(std::string(port)) == 0)
    return InvalidArgument("notify target: bad port '" + std::string(port) + "'");
  t.address = host;
  t.port = static_cast<uint16_t>(std::stoi(std::string(port)));
  if (f.size() == 3) {
    if (!f[2].starts_with("key=")) return InvalidArgument("notify target: third field is key=NAME");
    std::string_view name = f[2].substr(4);
    auto w = NameFromText(name.ends_with('.') ? std::string(name) : std::string(name) + ".");
    if (!w.ok()) return InvalidArgument("notify target: key name: " + w.status().message());
    LowerName(*w);
    if (!allow_unknown_keys && !keyring.Find(*w))
      return InvalidArgument("notify target: unknown TSIG key " + std::string(name));
    t.key = *w;
  }
  notify[zone].push_back(std::move(t));
  return OkStatus();
}

const ZoneTransferPolicy* TransferConfig::PolicyFor(std::string_view apex) const {
  auto it = acl.find(std::string(apex));
  if (it != acl.end()) return &it->second;
  it = acl.find("");
  return it == acl.end() ? nullptr : &it->second;
}

std::vector<NotifyTarget> TransferConfig::NotifyFor(std::string_view apex) const {
  std::vector<NotifyTarget> out;
  for (const char* k : {"", "z"}) {
    auto it = notify.find(k[0] ? std::string(apex) : std::string());
    if (it != notify.end()) out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return out;
}

// ---- journal ----

std::shared_ptr<const TransferVersion> Journal::Current(const Zone& zone, uint32_t now) {
  std::shared_ptr<const TransferVersion> prev;
  {
    std::lock_guard lock(mu_);
    auto& d = zones_[zone.apex()];
    if (!d.empty() && d.back()->serial == zone.serial()) return d.back();
    if (!d.empty()) prev = d.back();
  }
  // Made outside the lock: signing a large zone takes a while and other zones should not wait.
  auto v = MakeVersion(zone, now, prev.get());
  {
    std::lock_guard lock(mu_);
    auto& d = zones_[zone.apex()];
    if (!d.empty() && d.back()->serial == v->serial) return d.back();  // another thread made it first
    d.push_back(v);
    while (d.size() > max_) d.pop_front();
  }
  if (sink_) sink_(zone.apex(), v);
  return v;
}

void Journal::Restore(std::string_view apex, std::vector<std::shared_ptr<const TransferVersion>> versions) {
  std::lock_guard lock(mu_);
  auto& d = zones_[std::string(apex)];
  for (auto it = versions.rbegin(); it != versions.rend(); ++it) {
    bool have = false;
    for (const auto& v : d) have = have || v->serial == (*it)->serial;
    if (!have) d.push_front(*it);
  }
  while (d.size() > max_) d.pop_front();
}

// "GVJ1" serial:u32 count:u32, then per record: owner_len:u8 owner type:u16 ttl:u32 rdlen:u16 rdata.
std::string EncodeVersion(const TransferVersion& v) {
  std::string out = "GVJ1";
  Append32(out, v.serial);
  Append32(out, static_cast<uint32_t>(v.records.size()));
  for (const auto& r : v.records) {
    out.push_back(static_cast<char>(r.owner.size()));
    out += r.owner;
    Append16(out, r.type);
    Append32(out, r.ttl);
    Append16(out, static_cast<uint16_t>(r.rdata.size()));
    out += r.rdata;
  }
  return out;
}

Result<std::shared_ptr<const TransferVersion>> DecodeVersion(std::string_view b) {
  const auto* p = reinterpret_cast<const uint8_t*>(b.data());
  size_t n = b.size(), off = 0;
  if (n < 12 || b.substr(0, 4) != "GVJ1") return InvalidArgument("journal version: bad header");
  auto v = std::make_shared<TransferVersion>();
  v->serial = Get32(p + 4);
  uint32_t count = Get32(p + 8);
  off = 12;
  if (count > (n - off) / 10) return InvalidArgument("journal version: record count past the end");
  v->records.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    if (off + 1 > n) return InvalidArgument("journal version: truncated");
    size_t ol = p[off++];
    if (off + ol + 8 > n) return InvalidArgument("journal version: truncated");
    Record r;
    r.owner.assign(b.data() + off, ol);
    off += ol;
    r.type = Get16(p + off);
    r.ttl = Get32(p + off + 2);
    size_t rl = Get16(p + off + 6);
    off += 8;
    if (off + rl > n) return InvalidArgument("journal version: truncated");
    r.rdata.assign(b.data() + off, rl);
    off += rl;
    // The owner must be a well-formed uncompressed wire name (RecordKey and the transfer writer walk it).
    size_t at = 0;
    while (at < ol && r.owner[at] != 0 && static_cast<uint8_t>(r.owner[at]) <= 63)
      at += 1 + static_cast<uint8_t>(r.owner[at]);
    if (at + 1 != ol || r.owner[at] != 0) return InvalidArgument("journal version: bad owner name");
    if (!RdataValid(r.type, r.rdata)) return InvalidArgument("journal version: bad RDATA");
    v->records.push_back(std::move(r));
  }
  if (off != n) return InvalidArgument("journal version: trailing bytes");
  if (v->records.empty() || v->records[0].type != kSOA)
    return InvalidArgument("journal version: no SOA first");
  v->keys.reserve(v->records.size());
  for (const auto& r : v->records) v->keys.push_back(RecordKey(r));
  return std::shared_ptr<const TransferVersion>(std::move(v));
}

std::shared_ptr<const TransferVersion> Journal::Find(std::string_view apex, uint32_t serial) const {
  std::lock_guard lock(mu_);
  auto it = zones_.find(apex);
  if (it == zones_.end()) return nullptr;
  for (const auto& v : it->second)
    if (v->serial == serial) return v;
  return nullptr;
}

void Diff(const TransferVersion& from, const TransferVersion& to, std::vector<const Record*>& deleted,
          std::vector<const Record*>& added) {
  std::unordered_set<std::string_view> in_from(from.keys.begin(), from.keys.end());
  std::unordered_set<std::string_view> in_to(to.keys.begin(), to.keys.end());
  for (size_t i = 0; i < from.records.size(); ++i)
    if (from.records[i].type != kSOA && !in_to.count(from.keys[i])) deleted.push_back(&from.records[i]);
  for (size_t i = 0; i < to.records.size(); ++i)
    if (to.records[i].type != kSOA && !in_from.count(to.keys[i])) added.push_back(&to.records[i]);
}

// ---- the slow path ----

bool NeedsSlowPath(std::span<const uint8_t> p) {
  if (p.size() < kHeaderSize) return false;
  if (p[2] & 0x80) return false;  // responses are dropped by the fast path
  uint16_t qd = Get16(&p[4]), an = Get16(&p[6]), ns = Get16(&p[8]), ar = Get16(&p[10]);
  if (an != 0 || ns != 0 || ar > 1) return true;
  if (qd != 1) return false;
  std::string_view rest(reinterpret_cast<const char*>(p.data()) + kHeaderSize, p.size() - kHeaderSize);
  size_t nl = WireNameLength(rest);
  if (nl == 0 || rest.size() < nl + 4) return false;
  uint16_t qtype = Get16(&p[kHeaderSize + nl]);
  if (qtype == kAXFR || qtype == kIXFR) return true;
  if (ar == 1) {
    size_t pos = kHeaderSize + nl + 4;
    if (p.size() < pos + 3) return false;
    return !(p[pos] == 0 && Get16(&p[pos + 1]) == kOPT);
  }
  return false;
}

std::shared_ptr<const TsigKeyring> Transfers::keyring() const {
  std::lock_guard lock(keys_mu_);
  return keys_;
}

void Transfers::SetKeyring(TsigKeyring keys) {
  auto next = std::make_shared<const TsigKeyring>(std::move(keys));
  std::lock_guard lock(keys_mu_);
  keys_ = std::move(next);
}

void Transfers::Handle(const ZoneSet& zones, std::span<const uint8_t> packet, const sockaddr* peer, bool tcp,
                       uint32_t now, const std::function<bool(std::span<const uint8_t>)>& send) const {
  auto parsed = ParseMessage(packet);
  if (!parsed.ok()) {
    if (packet.size() < kHeaderSize || (packet[2] & 0x80)) return;
    Message h;
    h.id = Get16(&packet[0]);
    h.flags = Get16(&packet[2]);
    h.opcode = (h.flags >> 11) & 0xf;
    auto out = Bare(h, kFormErr, false);
    send(out);
    return;
  }
  const Message& m = *parsed;
  if (m.flags & kFlagQR) return;
  auto tsig = FindTsig(packet);
  if (!tsig.ok()) {
    auto out = Bare(m, kFormErr, false);
    send(out);
    return;
  }
  std::optional<TsigSigner> signer;
  std::vector<uint8_t> stripped(packet.begin(), packet.end());
  if (tsig->has_value()) {
    const TsigRecord& t = **tsig;
    std::shared_ptr<const TsigKeyring> keys = keyring();  // check.key points into it: keep it alive
    TsigCheck check = VerifyRequest(packet, t, *keys, now);
    if (check.error == kBadKey || check.error == kBadSig || check.error == kBadTrunc) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      auto out = Bare(m, kNotAuth, false);
      AppendUnsignedTsigError(out, t, check.error, now);
      send(out);
      return;
    }
    if (check.error == kBadTime) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      auto out = Bare(m, kNotAuth, false);
      std::string other(6, '\0');
      for (int i = 0; i < 6; ++i)
        other[static_cast<size_t>(i)] = static_cast<char>(static_cast<uint64_t>(now) >> (40 - 8 * i));
      TsigSigner(*check.key, t.mac).Sign(out, t.time_signed, kBadTime, other);
      send(out);
      return;
    }
    signer.emplace(*check.key, t.mac);
    stripped.resize(t.offset);
    Put16(&stripped[10], static_cast<uint16_t>(Get16(&stripped[10]) - 1));
  }
  auto emit = [&](std::vector<uint8_t>& msg) {
    if (signer) signer->Sign(msg, now);
    return send(msg);
  };
  bool transfer = m.opcode == 0 && m.has_question && (m.qtype == kAXFR || m.qtype == kIXFR);
  if (!transfer) {
    // A signed query (a secondary's SOA refresh) or something the fast path refuses: the answer engine
    // decides, and the answer is signed when the query was.
    std::vector<uint8_t> out(65535);
    size_t n = Answer(zones, stripped, AnswerOptions{tcp, now}, out.data(), tcp ? 65535 : 4096);
    if (n == 0) return;
    out.resize(n);
    if (!tcp && signer) {
      // The TSIG must fit in the client's UDP size too (RFC 8945 section 5.3): if it does not, the
      // answer goes out truncated (header and question, TC) and signed, and the client retries over TCP.
      size_t limit = 512;
      for (const auto& r : m.additional)
        if (r.type == kOPT) limit = std::clamp<size_t>(r.klass, 512, kDefaultUdpPayload);
      TsigSigner attempt = *signer;
      std::vector<uint8_t> signed_out = out;
      attempt.Sign(signed_out, now);
      if (signed_out.size() > limit) {
        out.resize(RateLimiter::Truncate(out.data(), out.size()));
        // Keep the OPT out of it: a bare TC answer needs none.
      }
    }
    emit(out);
    return;
  }
  if (m.qclass != kClassIN) {
    auto out = Bare(m, kRefused, false);
    emit(out);
    return;
  }
  const Zone* zone = zones.Find(m.qname);
  if (zone == nullptr || zone->apex() != m.qname) {
    auto out = Bare(m, kNotAuth, false);
    emit(out);
    return;
  }
  const ZoneTransferPolicy* policy = config_.PolicyFor(zone->apex());
  bool allowed = false;
  if (policy) {
    for (const auto& n : policy->allow)
      if (n.Contains(peer)) allowed = true;
    if (allowed && !policy->keys.empty()) {
      allowed = signer &&
                std::find(policy->keys.begin(), policy->keys.end(), (**tsig).key_name) != policy->keys.end();
    }
  }
  if (!allowed) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    auto out = Bare(m, kRefused, false);
    emit(out);
    return;
  }
  uint32_t client_serial = 0;
  bool ixfr = m.qtype == kIXFR;
  if (ixfr) {
    const MessageRecord* soa = nullptr;
    for (const auto& r : m.authority)
      if (r.type == kSOA) soa = &r;
    if (soa == nullptr || soa->rdlength < 22) {
      auto out = Bare(m, kFormErr, false);
      emit(out);
      return;
    }
    client_serial = Get32(&packet[soa->rdata_start + soa->rdlength - 20]);
  }
  if (!tcp && !ixfr) {  // AXFR needs TCP (RFC 5936 section 4.2)
    auto out = Bare(m, kFormErr, false);
    emit(out);
    return;
  }
  auto current = journal_.Current(*zone, now);
  if (current->records.empty() || current->records[0].type != kSOA) {
    auto out = Bare(m, kServFail, false);
    emit(out);
    return;
  }
  const Record& soa = current->records[0];

  // Messages: header (QR, AA, the query's id), the question, then as many records as fit.
  std::vector<uint8_t> buf(65535);
  auto writer = std::make_unique<Writer>(buf.data(), kHardLimit);
  bool ok = true;
  auto start = [&] {
    writer = std::make_unique<Writer>(buf.data(), kHardLimit);
    writer->Start(m.id, static_cast<uint16_t>(kFlagQR | kFlagAA), m.qname_raw, m.qtype, m.qclass);
  };
  int in_message = 0;
  auto flush = [&] {
    std::vector<uint8_t> msg(buf.begin(), buf.begin() + static_cast<long>(writer->size()));
    if (!emit(msg)) ok = false;
    start();
    in_message = 0;
  };
  auto put = [&](const Record& r) {
    if (!ok) return;
    if (in_message > 0 && writer->size() > kSoftLimit) flush();
    if (!writer->PutRecord(r.owner, r.type, kClassIN, r.ttl, r.rdata)) {
      if (in_message == 0) {
        ok = false;  // one record larger than a message: cannot happen with valid RDATA
        return;
      }
      flush();
      if (!writer->PutRecord(r.owner, r.type, kClassIN, r.ttl, r.rdata)) {
        ok = false;
        return;
      }
    }
    writer->AddCount(0);
    ++in_message;
  };
  start();
  if (ixfr && !SerialLess(client_serial, current->serial)) {
    put(soa);  // up to date (or ahead): the current SOA alone
    if (ok) flush();
    return;
  }
  if (ixfr && !tcp) {
    put(soa);  // RFC 1995 section 2: a UDP answer that would not fit is the current SOA: retry over TCP
    if (ok) flush();
    return;
  }
  transfers_.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<const TransferVersion> old;
  if (ixfr) old = journal_.Find(zone->apex(), client_serial);
  if (old && old->records.size() > 0 && old->records[0].type == kSOA) {
    incremental_.fetch_add(1, std::memory_order_relaxed);
    std::vector<const Record*> deleted, added;
    Diff(*old, *current, deleted, added);
    put(soa);
    put(old->records[0]);
    for (const Record* r : deleted) put(*r);
    put(soa);
    for (const Record* r : added) put(*r);
    put(soa);
  } else {
    for (const Record& r : current->records) put(r);
    put(soa);
  }
  if (ok && in_message > 0) flush();
  (void)SoaSerial;
}

}  // namespace govern::dns
