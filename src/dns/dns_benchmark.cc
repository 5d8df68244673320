// Answer rendering per core, without the network: simple A (cached), signed A with DO (cached with
// its RRSIG), signed NXDOMAIN with DO (compact denial: one fresh P-256 or Ed25519 signature each; NSEC3
// denial: three hashes, binary searches and cached NSEC3 signatures, nothing signed), unsigned NXDOMAIN
// (never cached), a wildcard answer with DO (one signature for the proof), and the P-256 signature alone.
#include <benchmark/benchmark.h>
// ECDSA_do_sign on an EC_KEY, as dnssec.cc uses it (deprecated in OpenSSL 3.0, still the fast path).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/sha.h>

#include <string>

#include "crypto/signature.h"
#include "dns/answer.h"
#include "dns/testing.h"
#include "dns/zone.h"

namespace {
using namespace govern::dns;

const ZoneSet& Zones() {
  static std::shared_ptr<const ZoneSet> set = [] {
    std::string text =
        "$TTL 300\n@ SOA ns1 hm 1 3600 900 604800 60\n@ NS ns1\nns1 A 127.0.0.1\nwww A 192.0.2.1\n*.wild A "
        "192.0.2.9\n";
    for (int i = 0; i < 1000; ++i)
      text += "h" + std::to_string(i) + " A 10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256) +
              "\n";
    std::vector<std::shared_ptr<const Zone>> zones;
    struct Spec {
      const char* apex;
      int alg;
      bool nsec3;
    };
    for (auto [apex, alg, nsec3] : {Spec{"plain.test.", 0, false}, Spec{"signed.test.", 13, false},
                                    Spec{"ed.test.", 15, false}, Spec{"n3.test.", 13, true}}) {
      auto recs = ParseZoneFile(text, apex);
      ZoneKeys keys;
      if (alg) {
        auto k = SigningKey::Generate(static_cast<Algorithm>(alg), 257);
        keys.ksk = keys.zsk = std::make_shared<const SigningKey>(std::move(*k));
      }
      if (nsec3) keys.online_denial = OnlineDenial::kNsec3;
      zones.push_back(*Zone::Build(apex, std::move(*recs), keys));
    }
    return std::make_shared<const ZoneSet>(std::move(zones));
  }();
  return *set;
}

void Run(benchmark::State& state, const std::string& name, uint16_t type, bool dnssec, bool vary) {
  const ZoneSet& set = Zones();
  std::vector<uint8_t> out(65535);
  std::vector<std::vector<uint8_t>> qs;
  for (int i = 0; i < 1000; ++i) {
    std::string n = name;
    if (vary)
      n = "r" + std::to_string(i * 7919) + "x" + name;
    else if (name.rfind("h#", 0) == 0)
      n = "h" + std::to_string(i) + name.substr(2);
    qs.push_back(govern::dns::testing::MakeQuery(n, type, true, dnssec));
  }
  size_t i = 0;
  uint32_t now = 1790000000;
  for (auto _ : state) {
    // Names that do not exist get a fresh label each time, as from a random-subdomain flood.
    auto& q = qs[i++ % qs.size()];
    benchmark::DoNotOptimize(Answer(set, q, AnswerOptions{false, now}, out.data(), out.size()));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_SimpleA(benchmark::State& s) { Run(s, "h#.plain.test.", kA, false, false); }
void BM_SignedA(benchmark::State& s) { Run(s, "h#.signed.test.", kA, true, false); }
void BM_UnsignedNx(benchmark::State& s) { Run(s, ".plain.test.", kA, false, true); }
void BM_SignedNxP256(benchmark::State& s) { Run(s, ".signed.test.", kA, true, true); }
void BM_SignedNxEd25519(benchmark::State& s) { Run(s, ".ed.test.", kA, true, true); }
void BM_SignedWildcardP256(benchmark::State& s) { Run(s, ".wild.signed.test.", kA, true, true); }
// NSEC3 denial from the chain (1,004 names): every NSEC3 signature is made on first need (the first
// iterations) and then reused, so the steady state signs nothing.
void BM_SignedNxNsec3P256(benchmark::State& s) { Run(s, ".n3.test.", kA, true, true); }
void BM_SignedWildcardNsec3P256(benchmark::State& s) { Run(s, ".wild.n3.test.", kA, true, true); }
// The signature alone (SHA-256 + ECDSA P-256 over an NSEC-sized RRSIG input), so the NX rows minus
// this row is what everything else on the denial path costs.
void BM_SignOnlyP256(benchmark::State& state) {
  auto key = SigningKey::Generate(Algorithm::kEcdsaP256Sha256, 257);
  std::string data(120, 'x'), out;
  for (auto _ : state) {
    out.clear();
    data[0] = static_cast<char>(data[0] + 1);
    benchmark::DoNotOptimize(key->SignAppend(data, &out));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

// The declined faster path, for comparison with SignOnlyP256 (hedged, ECDSA_do_sign): k drawn from the
// DRBG alone through ECDSA_sign_setup, then ECDSA_do_sign_ex (dnssec.cc, SignDigestP256, says why not).
void BM_SignSetupNonceP256(benchmark::State& state) {
  EC_KEY* ec = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1);
  EC_KEY_generate_key(ec);
  BN_CTX* ctx = BN_CTX_new();
  std::string data(120, 'x');
  for (auto _ : state) {
    data[0] = static_cast<char>(data[0] + 1);
    unsigned char digest[32];
    SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
    BIGNUM *kinv = nullptr, *r0 = nullptr;
    ECDSA_sign_setup(ec, ctx, &kinv, &r0);
    ECDSA_SIG* sig = ECDSA_do_sign_ex(digest, sizeof digest, kinv, r0, ec);
    BN_clear_free(kinv);
    BN_clear_free(r0);
    const BIGNUM *r = nullptr, *s = nullptr;
    ECDSA_SIG_get0(sig, &r, &s);
    unsigned char rs[64];
    BN_bn2binpad(r, rs, 32);
    BN_bn2binpad(s, rs + 32, 32);
    benchmark::DoNotOptimize(rs);
    ECDSA_SIG_free(sig);
  }
  BN_CTX_free(ctx);
  EC_KEY_free(ec);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

// The signature as SigningKey made it before (for comparison): EVP_PKEY_sign on a per-thread context,
// then the DER signature taken apart into r || s.
void BM_SignEvpP256(benchmark::State& state) {
  auto key = SigningKey::Generate(Algorithm::kEcdsaP256Sha256, 257);
  auto pem = key->Private();
  BIO* bio = BIO_new_mem_buf(pem->data(), static_cast<int>(pem->size()));
  EVP_PKEY* pkey = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new(pkey, nullptr);
  EVP_PKEY_sign_init(ctx);
  std::string data(120, 'x'), out;
  for (auto _ : state) {
    data[0] = static_cast<char>(data[0] + 1);
    unsigned char digest[32], der[80];
    unsigned int dlen = 0;
    size_t der_len = sizeof der;
    EVP_Digest(data.data(), data.size(), digest, &dlen, EVP_sha256(), nullptr);
    EVP_PKEY_sign(ctx, der, &der_len, digest, dlen);
    auto raw = govern::crypto::EcdsaDerToRaw(std::span<const uint8_t>(der, der_len));
    out.assign(reinterpret_cast<const char*>(raw->data()), raw->size());
    benchmark::DoNotOptimize(out);
  }
  EVP_PKEY_CTX_free(ctx);
  EVP_PKEY_free(pkey);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

BENCHMARK(BM_SimpleA);
BENCHMARK(BM_SignedA);
BENCHMARK(BM_UnsignedNx);
BENCHMARK(BM_SignEvpP256);
BENCHMARK(BM_SignSetupNonceP256);
BENCHMARK(BM_SignOnlyP256);
BENCHMARK(BM_SignedNxP256);
BENCHMARK(BM_SignedNxEd25519);
BENCHMARK(BM_SignedWildcardP256);
BENCHMARK(BM_SignedNxNsec3P256);
BENCHMARK(BM_SignedWildcardNsec3P256);
}  // namespace

BENCHMARK_MAIN();
