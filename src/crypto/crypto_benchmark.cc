// Microbenchmarks for src/crypto, and the measurement behind HmacSha256Key's design: precomputed
// inner/outer SHA-256 states (what the library does) against duplicating a keyed EVP_MAC_CTX and
// against keying HMAC afresh for every message. Run: build/release/src/crypto/crypto_benchmark
#include <benchmark/benchmark.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <string>
#include <vector>

#include "crypto/aead.h"
#include "crypto/password.h"
#include "crypto/random.h"
#include "crypto/sha256.h"
#include "crypto/signature.h"

namespace govern::crypto {
namespace {

std::vector<uint8_t> Message(size_t n) { return std::vector<uint8_t>(n, 0x5a); }
const std::vector<uint8_t> kKey(32, 0x0b);

void BM_Sha256(benchmark::State& state) {
  auto msg = Message(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(Sha256(msg));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Sha256)->Arg(64)->Arg(1024)->Arg(16384);

// The library: copies of precomputed inner/outer states.
void BM_HmacPrekeyedStates(benchmark::State& state) {
  auto key = *HmacSha256Key::Create(kKey);
  auto msg = Message(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(key.Mac(msg));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_HmacPrekeyedStates)->Arg(64)->Arg(1024);

// The alternative: one keyed EVP_MAC_CTX, duplicated for each message.
void BM_HmacMacCtxDup(benchmark::State& state) {
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  EVP_MAC_CTX* keyed = EVP_MAC_CTX_new(mac);
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  EVP_MAC_init(keyed, kKey.data(), kKey.size(), params);
  auto msg = Message(static_cast<size_t>(state.range(0)));
  uint8_t out[32];
  for (auto _ : state) {
    EVP_MAC_CTX* ctx = EVP_MAC_CTX_dup(keyed);
    size_t len = 0;
    EVP_MAC_update(ctx, msg.data(), msg.size());
    EVP_MAC_final(ctx, out, &len, sizeof out);
    EVP_MAC_CTX_free(ctx);
    benchmark::DoNotOptimize(out);
  }
  EVP_MAC_CTX_free(keyed);
  EVP_MAC_free(mac);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_HmacMacCtxDup)->Arg(64)->Arg(1024);

// The baseline: key HMAC for every message (EVP_Q_mac).
void BM_HmacKeyEachTime(benchmark::State& state) {
  auto msg = Message(static_cast<size_t>(state.range(0)));
  uint8_t out[32];
  char digest[] = "SHA256";
  for (auto _ : state) {
    size_t len = 0;
    EVP_Q_mac(nullptr, "HMAC", nullptr, digest, nullptr, kKey.data(), kKey.size(), msg.data(), msg.size(),
              out, sizeof out, &len);
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_HmacKeyEachTime)->Arg(64)->Arg(1024);

void BM_Ed25519Sign(benchmark::State& state) {
  auto key = *Ed25519PrivateKey::Generate();
  auto msg = Message(256);
  for (auto _ : state) benchmark::DoNotOptimize(key.Sign(msg));
}
BENCHMARK(BM_Ed25519Sign);

void BM_Ed25519Verify(benchmark::State& state) {
  auto key = *Ed25519PrivateKey::Generate();
  auto pub = *key.PublicKey();
  auto msg = Message(256);
  auto sig = *key.Sign(msg);
  for (auto _ : state) benchmark::DoNotOptimize(pub.Verify(msg, sig));
}
BENCHMARK(BM_Ed25519Verify);

void BM_EcdsaP256SignRaw(benchmark::State& state) {
  auto key = *EcdsaP256PrivateKey::Generate();
  auto msg = Message(256);
  for (auto _ : state) benchmark::DoNotOptimize(key.SignRaw(msg));
}
BENCHMARK(BM_EcdsaP256SignRaw);

void BM_EcdsaP256VerifyRaw(benchmark::State& state) {
  auto key = *EcdsaP256PrivateKey::Generate();
  auto pub = *key.PublicKey();
  auto msg = Message(256);
  auto sig = *key.SignRaw(msg);
  for (auto _ : state) benchmark::DoNotOptimize(pub.VerifyRaw(msg, sig));
}
BENCHMARK(BM_EcdsaP256VerifyRaw);

void BM_Aes256GcmSeal(benchmark::State& state) {
  auto key = *Aes256GcmKey::Generate();
  auto msg = Message(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(key.Seal(msg));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Aes256GcmSeal)->Arg(64)->Arg(16384);

void BM_RandomBytes16(benchmark::State& state) {
  uint8_t buf[16];
  for (auto _ : state) {
    benchmark::DoNotOptimize(RandomBytes(buf));
    benchmark::DoNotOptimize(buf);
  }
}
BENCHMARK(BM_RandomBytes16);

// The peer: RAND_bytes for every draw.
void BM_RandBytesDirect16(benchmark::State& state) {
  uint8_t buf[16];
  for (auto _ : state) {
    benchmark::DoNotOptimize(RAND_bytes(buf, sizeof buf));
    benchmark::DoNotOptimize(buf);
  }
}
BENCHMARK(BM_RandBytesDirect16);

void BM_Argon2idDefaultHash(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(HashPassword("correct horse battery staple"));
}
BENCHMARK(BM_Argon2idDefaultHash)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace
}  // namespace govern::crypto

BENCHMARK_MAIN();
