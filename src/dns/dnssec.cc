#include "dns/dnssec.h"

// EC_KEY and ECDSA_do_sign are deprecated in OpenSSL 3.0 but still there, and they are the fastest way
// to one hedged P-256 signature: no provider dispatch, no DER encoding to take apart again (about 0.8 us
// of a 22 us signature; see SignDigestP256). The library uses them here alone (dns_benchmark compares).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <vector>

#include "crypto/bytes.h"
#include "crypto/encoding.h"
#include "crypto/sha256.h"
#include "crypto/signature.h"
#include "dns/rdata.h"
#include "dns/wire.h"

namespace govern::dns {

namespace {
std::atomic<uint64_t> next_key_id{1};

// Per-thread signing contexts for P-256 keys, initialised once per (thread, key): OpenSSL 3 fetches
// the algorithm and builds a context on every EVP_DigestSign*Init, which costs about a quarter of a
// signature; the NXDOMAIN path signs once per query, so it reuses them. A context holds its own
// reference to the key, so a key freed while cached stays valid until the entry is evicted.
struct SignContexts {
  struct Entry {
    uint64_t id = 0;
    EVP_PKEY_CTX* ctx = nullptr;
  };
  Entry entries[4];
  int next = 0;
  ~SignContexts() {
    for (auto& e : entries) EVP_PKEY_CTX_free(e.ctx);
  }
  EVP_PKEY_CTX* For(uint64_t id, EVP_PKEY* key) {
    for (auto& e : entries)
      if (e.id == id) return e.ctx;
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new(key, nullptr);
    if (!ctx || EVP_PKEY_sign_init(ctx) <= 0) {
      EVP_PKEY_CTX_free(ctx);
      ERR_clear_error();
      return nullptr;
    }
    Entry& slot = entries[next];
    next = (next + 1) % 4;
    EVP_PKEY_CTX_free(slot.ctx);
    slot = Entry{id, ctx};
    return ctx;
  }
};
thread_local SignContexts sign_contexts;

// One P-256 signature over a SHA-256 digest, with OpenSSL's hedged nonce: k is derived from the
// private key, the digest and fresh random bytes, so a random generator that repeats itself (a VM
// snapshot restored twice, a cloned container) still never reuses a nonce, which would give the key
// away. Drawing k straight from the DRBG (ECDSA_sign_setup + ECDSA_do_sign_ex) is about 1.1 us of a
// 19-20 us signature faster (BM_SignHedgedP256 against the setup path, docs/benchmarks.md), and was
// measured and declined: a DNSSEC key is long-lived and servers run in VMs.
ECDSA_SIG* SignDigestP256(const unsigned char (&digest)[SHA256_DIGEST_LENGTH], EC_KEY* ec) {
  return ECDSA_do_sign(digest, SHA256_DIGEST_LENGTH, ec);
}
}  // namespace

struct SigningKey::Impl {
  Algorithm alg;
  uint16_t flags;
  std::optional<crypto::EcdsaP256PrivateKey> p256;
  std::optional<crypto::Ed25519PrivateKey> ed;
  std::string dnskey;
  uint16_t tag = 0;
  uint64_t id = next_key_id.fetch_add(1);
  EVP_PKEY* evp = nullptr;  // the P-256 key again, as OpenSSL's own object for the fast path
  EC_KEY* ec = nullptr;     // and as the legacy EC_KEY for ECDSA_do_sign (read-only while signing)
  ~Impl() {
    EC_KEY_free(ec);
    EVP_PKEY_free(evp);
  }
};

SigningKey::SigningKey(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SigningKey::SigningKey(SigningKey&&) noexcept = default;
SigningKey& SigningKey::operator=(SigningKey&&) noexcept = default;
SigningKey::~SigningKey() = default;

uint16_t KeyTag(std::string_view r) {
  uint32_t ac = 0;
  for (size_t i = 0; i < r.size(); ++i)
    ac += (i & 1) ? static_cast<uint8_t>(r[i]) : static_cast<uint32_t>(static_cast<uint8_t>(r[i])) << 8;
  ac += (ac >> 16) & 0xffff;
  return static_cast<uint16_t>(ac & 0xffff);
}

struct SigningKeyBuilder {
  static Result<SigningKey> Build(Algorithm alg, uint16_t flags,
                                  std::optional<crypto::EcdsaP256PrivateKey> p256,
                                  std::optional<crypto::Ed25519PrivateKey> ed) {
    auto impl = std::make_unique<SigningKey::Impl>();
    impl->alg = alg;
    impl->flags = flags;
    std::string pub;
    if (p256) {
      GOVERN_ASSIGN_OR_RETURN(auto pk, p256->PublicKey());
      GOVERN_ASSIGN_OR_RETURN(auto u, pk.Uncompressed());
      pub.assign(u.begin() + 1, u.end());  // RFC 6605: X || Y without the 0x04 prefix
    } else {
      GOVERN_ASSIGN_OR_RETURN(auto pk, ed->PublicKey());
      auto raw = pk.Raw();
      pub.assign(raw.begin(), raw.end());
    }
    impl->dnskey.push_back(static_cast<char>(flags >> 8));
    impl->dnskey.push_back(static_cast<char>(flags));
    impl->dnskey.push_back(3);
    impl->dnskey.push_back(static_cast<char>(alg));
    impl->dnskey += pub;
    impl->tag = KeyTag(impl->dnskey);
    // The same key as an EVP_PKEY for SignP256 (loaded from its PKCS#8 form).
    if (p256) {
      GOVERN_ASSIGN_OR_RETURN(auto pem, p256->Pkcs8Pem());
      BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
      impl->evp = bio ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr;
      BIO_free(bio);
      if (impl->evp) impl->ec = EVP_PKEY_get1_EC_KEY(impl->evp);
      ERR_clear_error();
    }
    impl->p256 = std::move(p256);
    impl->ed = std::move(ed);
    return SigningKey(std::move(impl));
  }
};

Result<SigningKey> SigningKey::Generate(Algorithm alg, uint16_t flags) {
  if (alg == Algorithm::kEcdsaP256Sha256) {
    GOVERN_ASSIGN_OR_RETURN(auto k, crypto::EcdsaP256PrivateKey::Generate());
    return SigningKeyBuilder::Build(alg, flags, std::move(k), std::nullopt);
  }
  GOVERN_ASSIGN_OR_RETURN(auto k, crypto::Ed25519PrivateKey::Generate());
  return SigningKeyBuilder::Build(alg, flags, std::nullopt, std::move(k));
}

Result<SigningKey> SigningKey::FromPrivate(Algorithm alg, uint16_t flags, std::string_view text) {
  if (alg == Algorithm::kEcdsaP256Sha256) {
    GOVERN_ASSIGN_OR_RETURN(auto k, crypto::EcdsaP256PrivateKey::FromPkcs8Pem(text));
    return SigningKeyBuilder::Build(alg, flags, std::move(k), std::nullopt);
  }
  GOVERN_ASSIGN_OR_RETURN(auto seed, crypto::Base64Decode(text));
  GOVERN_ASSIGN_OR_RETURN(auto k, crypto::Ed25519PrivateKey::FromRaw(seed));
  return SigningKeyBuilder::Build(alg, flags, std::nullopt, std::move(k));
}

Result<std::string> SigningKey::Private() const {
  if (impl_->p256) {
    GOVERN_ASSIGN_OR_RETURN(auto pem, impl_->p256->Pkcs8Pem());
    return std::string(reinterpret_cast<const char*>(pem.data()), pem.size());
  }
  GOVERN_ASSIGN_OR_RETURN(auto raw, impl_->ed->Raw());
  return crypto::Base64Encode(raw.span());
}

Algorithm SigningKey::algorithm() const { return impl_->alg; }
uint16_t SigningKey::flags() const { return impl_->flags; }
uint16_t SigningKey::key_tag() const { return impl_->tag; }
const std::string& SigningKey::dnskey_rdata() const { return impl_->dnskey; }

std::string SigningKey::DsRdata(std::string_view owner) const { return DsRdataFor(owner, impl_->dnskey); }

std::string DsRdataFor(std::string_view owner, std::string_view dnskey) {
  std::string lower(owner);
  LowerName(lower);
  std::string data = lower + std::string(dnskey);
  auto d = crypto::Sha256(data);
  uint16_t tag = KeyTag(dnskey);
  std::string out;
  out.push_back(static_cast<char>(tag >> 8));
  out.push_back(static_cast<char>(tag));
  out.push_back(dnskey.size() > 3 ? dnskey[3] : 0);
  out.push_back(2);
  if (d.ok()) out.append(reinterpret_cast<const char*>(d->data()), d->size());
  return out;
}

Status SigningKey::SignAppend(std::string_view data, std::string* out) const {
  auto bytes = crypto::AsBytes(data);
  // SHA-256 through the low-level context: in OpenSSL 3.0 the one-shot SHA256() fetches the algorithm
  // from the provider and allocates a context on every call (~320 ns against ~110 ns for an NSEC-sized
  // RRSIG input here; EVP_Digest on a fetched EVP_MD ~150 ns), once per compact-denial answer.
  unsigned char digest[SHA256_DIGEST_LENGTH];
  if (impl_->ec || impl_->evp) {
    SHA256_CTX sha;
    SHA256_Init(&sha);
    SHA256_Update(&sha, bytes.data(), bytes.size());
    SHA256_Final(digest, &sha);
  }
  if (impl_->ec) {
    // ECDSA on the digest; r || s, 32 bytes each, as RFC 6605 wants.
    ECDSA_SIG* sig = SignDigestP256(digest, impl_->ec);
    if (sig) {
      const BIGNUM *r = nullptr, *s = nullptr;
      ECDSA_SIG_get0(sig, &r, &s);
      unsigned char rs[64];
      bool ok = BN_bn2binpad(r, rs, 32) == 32 && BN_bn2binpad(s, rs + 32, 32) == 32;
      ECDSA_SIG_free(sig);
      if (ok) {
        out->append(reinterpret_cast<const char*>(rs), sizeof rs);
        return OkStatus();
      }
    }
    ERR_clear_error();  // fall through to the EVP path
  }
  if (impl_->evp) {
    EVP_PKEY_CTX* ctx = sign_contexts.For(impl_->id, impl_->evp);
    unsigned char der[80];
    size_t der_len = sizeof der;
    if (ctx && EVP_PKEY_sign(ctx, der, &der_len, digest, sizeof digest) > 0) {
      auto raw = crypto::EcdsaDerToRaw(std::span<const uint8_t>(der, der_len));
      if (raw.ok()) {
        out->append(reinterpret_cast<const char*>(raw->data()), raw->size());
        return OkStatus();
      }
    }
    ERR_clear_error();  // fall through to the slow path
  }
  if (impl_->p256) {
    GOVERN_ASSIGN_OR_RETURN(auto sig, impl_->p256->SignRaw(bytes));
    out->append(reinterpret_cast<const char*>(sig.data()), sig.size());
    return OkStatus();
  }
  GOVERN_ASSIGN_OR_RETURN(auto sig, impl_->ed->Sign(bytes));
  out->append(reinterpret_cast<const char*>(sig.data()), sig.size());
  return OkStatus();
}

Result<std::string> SigningKey::Sign(std::string_view data) const {
  std::string out;
  GOVERN_RETURN_IF_ERROR(SignAppend(data, &out));
  return out;
}

namespace {
// The RRSIG RDATA up to the signer's name (RFC 4034 section 3.1), appended to `out`.
void AppendRrsigPrefix(std::string* out, const SigningKey& key, uint16_t type, int labels, uint32_t ttl,
                       uint32_t inception, uint32_t expiration, std::string_view lower_signer) {
  uint8_t h[18];
  Put16(h, type);
  h[2] = static_cast<uint8_t>(key.algorithm());
  h[3] = static_cast<uint8_t>(labels);
  Put32(h + 4, ttl);
  Put32(h + 8, expiration);
  Put32(h + 12, inception);
  Put16(h + 16, key.key_tag());
  out->append(reinterpret_cast<char*>(h), sizeof h);
  out->append(lower_signer);
}

// Types whose RDATA holds no name that canonical form lowers (RFC 4034 section 6.2, RFC 6840 5.1).
bool RdataIsCanonical(uint16_t type) {
  return type != kNS && type != kCNAME && type != kPTR && type != kDNAME && type != kMX && type != kSRV &&
         type != kSOA;
}
}  // namespace

namespace {
// The one signing path (RFC 4034 sections 3.1.8.1 and 6): the RRSIG RDATA up to the signer into
// `rrsig`, then the signature over that prefix and each record of the RRset in canonical form.
// `canonical` holds the RDATAs already canonical, sorted and without duplicates. The signed data is
// built in a per-thread buffer, so once it and `rrsig` have grown nothing is allocated here.
Status SignCanonical(const SigningKey& key, std::string_view signer, std::string_view owner, uint16_t type,
                     uint32_t ttl, std::span<const std::string_view> canonical, uint32_t inception,
                     uint32_t expiration, std::string* rrsig) {
  if (owner.size() > kMaxName || signer.size() > kMaxName) return InvalidArgument("name too long");
  char lower_owner[kMaxName + 1], lower_signer[kMaxName + 1];
  LowerNameInto(owner, lower_owner);
  LowerNameInto(signer, lower_signer);
  std::string_view lo(lower_owner, owner.size()), ls(lower_signer, signer.size());
  int labels = LabelCount(lo);
  if (lo.size() > 2 && lo[0] == 1 && lo[1] == '*') --labels;
  thread_local std::string data;
  data.clear();
  AppendRrsigPrefix(&data, key, type, labels, ttl, inception, expiration, ls);
  size_t prefix = data.size();
  for (std::string_view rdata : canonical) {
    data.append(lo);
    uint8_t h[10];
    Put16(h, type);
    Put16(h + 2, kClassIN);
    Put32(h + 4, ttl);
    Put16(h + 8, static_cast<uint16_t>(rdata.size()));
    data.append(reinterpret_cast<char*>(h), 10);
    data.append(rdata);
  }
  rrsig->assign(data, 0, prefix);
  return key.SignAppend(data, rrsig);
}
}  // namespace

Status SignOneInto(const SigningKey& key, std::string_view signer, std::string_view owner, uint16_t type,
                   uint32_t ttl, std::string_view rdata, uint32_t inception, uint32_t expiration,
                   std::string* rrsig) {
  // Denial signs NSEC records, whose RDATA is canonical already (RFC 6840 section 5.1): no copy.
  std::string canonical;
  std::string_view one[1] = {rdata};
  if (!RdataIsCanonical(type)) {
    canonical = CanonicalRdata(type, rdata);
    one[0] = canonical;
  }
  return SignCanonical(key, signer, owner, type, ttl, one, inception, expiration, rrsig);
}

Result<std::string> SignRRset(const SigningKey& key, std::string_view signer, std::string_view owner,
                              uint16_t type, uint32_t ttl, std::span<const std::string_view> rdatas,
                              uint32_t inception, uint32_t expiration) {
  std::vector<std::string> canon;
  canon.reserve(rdatas.size());
  for (auto r : rdatas) canon.push_back(CanonicalRdata(type, r));
  std::sort(canon.begin(), canon.end());
  canon.erase(std::unique(canon.begin(), canon.end()), canon.end());
  std::vector<std::string_view> views(canon.begin(), canon.end());
  std::string rrsig;
  GOVERN_RETURN_IF_ERROR(SignCanonical(key, signer, owner, type, ttl, views, inception, expiration, &rrsig));
  return rrsig;
}

Result<std::string> SignRRset(const SigningKey& key, std::string_view signer, std::string_view owner,
                              uint16_t type, uint32_t ttl, std::span<const std::string> rdatas,
                              uint32_t inception, uint32_t expiration) {
  std::vector<std::string_view> v(rdatas.begin(), rdatas.end());
  return SignRRset(key, signer, owner, type, ttl, v, inception, expiration);
}

}  // namespace govern::dns
