#include "dns/tsig.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "crypto/encoding.h"
#include "dns/message.h"
#include "dns/wire.h"

namespace govern::dns {
namespace {

void Append48(std::string& s, uint64_t v) {
  for (int shift = 40; shift >= 0; shift -= 8) s.push_back(static_cast<char>(v >> shift));
}
void AppendBytes(std::vector<uint8_t>& out, std::string_view s) { out.insert(out.end(), s.begin(), s.end()); }

// The TSIG variables of RFC 8945 section 4.3.3 (all of them, or the timers only).
std::string Variables(std::string_view key_name, std::string_view algorithm, uint64_t time_signed,
                      uint16_t fudge, uint16_t error, std::string_view other, bool timers_only) {
  std::string v;
  if (!timers_only) {
    v += key_name;
    Append16(v, kClassANY);
    v.append(4, '\0');  // TTL 0
    v += algorithm;
  }
  Append48(v, time_signed);
  Append16(v, fudge);
  if (!timers_only) {
    Append16(v, error);
    Append16(v, static_cast<uint16_t>(other.size()));
    v += other;
  }
  return v;
}

// The message as it was signed: without the TSIG record, ARCOUNT one less, the original id.
std::string Unsigned(std::span<const uint8_t> message, const TsigRecord& t) {
  std::string m(reinterpret_cast<const char*>(message.data()), t.offset);
  uint16_t ar = Get16(&message[10]);
  Put16(reinterpret_cast<uint8_t*>(m.data()) + 10, static_cast<uint16_t>(ar - 1));
  Put16(reinterpret_cast<uint8_t*>(m.data()), t.original_id);
  return m;
}

std::string MacPrefix(std::string_view mac) {
  std::string s;
  if (mac.empty()) return s;
  Append16(s, static_cast<uint16_t>(mac.size()));
  s += mac;
  return s;
}

const std::string kSha256Name = std::string("\x0bhmac-sha256\0", 13);
const std::string kSha512Name = std::string("\x0bhmac-sha512\0", 13);

void AppendTsigRecord(std::vector<uint8_t>& message, std::string_view key_name, std::string_view algorithm,
                      uint64_t time_signed, uint16_t fudge, std::string_view mac, uint16_t original_id,
                      uint16_t error, std::string_view other) {
  std::string rr(key_name);
  Append16(rr, kTSIG);
  Append16(rr, kClassANY);
  rr.append(4, '\0');
  std::string rdata(algorithm);
  Append48(rdata, time_signed);
  Append16(rdata, fudge);
  Append16(rdata, static_cast<uint16_t>(mac.size()));
  rdata += mac;
  Append16(rdata, original_id);
  Append16(rdata, error);
  Append16(rdata, static_cast<uint16_t>(other.size()));
  rdata += other;
  Append16(rr, static_cast<uint16_t>(rdata.size()));
  rr += rdata;
  AppendBytes(message, rr);
  Put16(&message[10], static_cast<uint16_t>(Get16(&message[10]) + 1));
}

}  // namespace

Result<TsigKey> TsigKey::FromText(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    size_t c = text.find(':', start);
    parts.push_back(text.substr(start, c == std::string_view::npos ? std::string_view::npos : c - start));
    if (c == std::string_view::npos) break;
    start = c + 1;
  }
  TsigKey key;
  std::string_view name, secret, alg = "hmac-sha256";
  if (parts.size() == 2) {
    name = parts[0];
    secret = parts[1];
  } else if (parts.size() == 3) {
    bool first_is_alg = parts[0].starts_with("hmac-");
    alg = first_is_alg ? parts[0] : parts[1];
    name = first_is_alg ? parts[1] : parts[0];
    secret = parts[2];
  } else {
    return InvalidArgument("TSIG key: expected name:hmac-sha256:BASE64");
  }
  if (alg == "hmac-sha256") {
    key.algorithm = TsigAlgorithm::kHmacSha256;
  } else if (alg == "hmac-sha512") {
    key.algorithm = TsigAlgorithm::kHmacSha512;
  } else {
    return InvalidArgument("TSIG key: algorithm '" + std::string(alg) + "' (hmac-sha256 or hmac-sha512)");
  }
  auto n = NameFromText(name.ends_with('.') ? std::string(name) : std::string(name) + ".");
  if (!n.ok()) return InvalidArgument("TSIG key name: " + n.status().message());
  key.name = std::move(*n);
  LowerName(key.name);
  auto s = crypto::Base64Decode(secret);
  if (!s.ok() || s->empty()) return InvalidArgument("TSIG key secret: not base64");
  key.secret.assign(s->begin(), s->end());
  return key;
}

std::string TsigKey::algorithm_name() const {
  return algorithm == TsigAlgorithm::kHmacSha256 ? kSha256Name : kSha512Name;
}

const TsigKey* TsigKeyring::Find(std::string_view lower_name) const {
  for (const auto& k : keys_)
    if (k.name == lower_name) return &k;
  return nullptr;
}

std::string TsigMac(const TsigKey& key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const EVP_MD* md = key.algorithm == TsigAlgorithm::kHmacSha256 ? EVP_sha256() : EVP_sha512();
  if (!HMAC(md, key.secret.data(), static_cast<int>(key.secret.size()),
            reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len))
    return {};
  return std::string(reinterpret_cast<char*>(out), len);
}

Result<std::optional<TsigRecord>> FindTsig(std::span<const uint8_t> message) {
  GOVERN_ASSIGN_OR_RETURN(Message m, ParseMessage(message));
  for (const auto* section : {&m.answer, &m.authority})
    for (const auto& r : *section)
      if (r.type == kTSIG) return InvalidArgument("TSIG outside the additional section");
  for (size_t i = 0; i + 1 < m.additional.size(); ++i)
    if (m.additional[i].type == kTSIG) return InvalidArgument("TSIG is not the last record");
  if (m.additional.empty() || m.additional.back().type != kTSIG) return std::optional<TsigRecord>();
  const MessageRecord& r = m.additional.back();
  if (r.klass != kClassANY) return InvalidArgument("TSIG class is not ANY");
  TsigRecord t;
  t.offset = r.start;
  t.key_name = r.owner;
  std::span<const uint8_t> rd = message.subspan(0, r.end);
  // The algorithm name must not be compressed (RFC 8945 section 4.2), but reading it through ReadName
  // keeps us safe either way.
  GOVERN_ASSIGN_OR_RETURN(size_t p, ReadName(rd, r.rdata_start, &t.algorithm));
  auto need = [&](size_t n) { return p + n <= r.end; };
  if (!need(10)) return InvalidArgument("TSIG RDATA truncated");
  t.time_signed = static_cast<uint64_t>(Get16(&message[p])) << 32 | Get32(&message[p + 2]);
  t.fudge = Get16(&message[p + 6]);
  uint16_t mac_size = Get16(&message[p + 8]);
  p += 10;
  if (!need(static_cast<size_t>(mac_size) + 6)) return InvalidArgument("TSIG MAC truncated");
  t.mac.assign(reinterpret_cast<const char*>(&message[p]), mac_size);
  p += mac_size;
  t.original_id = Get16(&message[p]);
  t.error = Get16(&message[p + 2]);
  uint16_t other_len = Get16(&message[p + 4]);
  p += 6;
  if (p + other_len != r.end) return InvalidArgument("TSIG other data length wrong");
  t.other.assign(reinterpret_cast<const char*>(&message[p]), other_len);
  return std::optional<TsigRecord>(std::move(t));
}

TsigCheck VerifyRequest(std::span<const uint8_t> message, const TsigRecord& t, const TsigKeyring& keys,
                        uint64_t now) {
  TsigCheck c;
  const TsigKey* key = keys.Find(t.key_name);
  if (key == nullptr || key->algorithm_name() != t.algorithm) {
    c.error = kBadKey;
    return c;
  }
  c.key = key;
  // RFC 8945 section 5.2.2.1: a MAC shorter than half the hash (and than 10 octets) is malformed
  // (BADSIG); we accept full-length MACs only and say BADTRUNC for shorter acceptable ones.
  size_t full = key->mac_size();
  if (t.mac.size() != full) {
    c.error = t.mac.size() < std::max<size_t>(10, full / 2) || t.mac.size() > full ? kBadSig : kBadTrunc;
    return c;
  }
  std::string data = Unsigned(message, t) +
                     Variables(t.key_name, t.algorithm, t.time_signed, t.fudge, t.error, t.other, false);
  std::string mac = TsigMac(*key, data);
  if (mac.size() != t.mac.size() || CRYPTO_memcmp(mac.data(), t.mac.data(), mac.size()) != 0) {
    c.error = kBadSig;
    return c;
  }
  uint64_t lo = t.time_signed > t.fudge ? t.time_signed - t.fudge : 0;
  if (now < lo || now > t.time_signed + t.fudge) c.error = kBadTime;
  return c;
}

void TsigSigner::Sign(std::vector<uint8_t>& message, uint64_t now, uint16_t error, std::string_view other) {
  std::string alg = key_.algorithm_name();
  std::string data = MacPrefix(prior_mac_);
  data.append(reinterpret_cast<const char*>(message.data()), message.size());
  data += Variables(key_.name, alg, now, kDefaultFudge, error, other, !sign_first_);
  std::string mac = TsigMac(key_, data);
  AppendTsigRecord(message, key_.name, alg, now, kDefaultFudge, mac, Get16(message.data()), error, other);
  prior_mac_ = std::move(mac);
  sign_first_ = false;
}

Status TsigSigner::Verify(std::span<const uint8_t> message, uint64_t now) {
  auto found = FindTsig(message);
  if (!found.ok()) return found.status();
  if (!found->has_value()) {
    if (verify_first_) return PermissionDenied("TSIG: the first answer is not signed");
    if (++unsigned_count_ >= 100) return PermissionDenied("TSIG: 100 answers without a signature");
    unsigned_run_.append(reinterpret_cast<const char*>(message.data()), message.size());
    return OkStatus();
  }
  const TsigRecord& t = **found;
  if (t.key_name != key_.name || t.algorithm != key_.algorithm_name())
    return PermissionDenied("TSIG: answer signed with another key");
  if (t.error != 0) return PermissionDenied("TSIG: the peer answered error " + std::to_string(t.error));
  std::string data =
      MacPrefix(prior_mac_) + unsigned_run_ + Unsigned(message, t) +
      Variables(t.key_name, t.algorithm, t.time_signed, t.fudge, t.error, t.other, !verify_first_);
  std::string mac = TsigMac(key_, data);
  if (mac.size() != t.mac.size() || CRYPTO_memcmp(mac.data(), t.mac.data(), mac.size()) != 0)
    return PermissionDenied("TSIG: bad MAC on the answer");
  uint64_t lo = t.time_signed > t.fudge ? t.time_signed - t.fudge : 0;
  if (now < lo || now > t.time_signed + t.fudge)
    return PermissionDenied("TSIG: answer time outside the fudge");
  prior_mac_ = t.mac;
  verify_first_ = false;
  unsigned_run_.clear();
  unsigned_count_ = 0;
  return OkStatus();
}

void AppendUnsignedTsigError(std::vector<uint8_t>& message, const TsigRecord& request, uint16_t error,
                             uint64_t now) {
  AppendTsigRecord(message, request.key_name, request.algorithm, now, kDefaultFudge, {},
                   Get16(message.data()), error, {});
}

}  // namespace govern::dns
