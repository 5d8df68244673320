// What one passkey sign-in costs the server (VerifyAssertion: parsing, checks, SHA-256 and the
// signature check) per algorithm, beside its parts; and one TOTP check (three HMAC-SHA1).
#include <benchmark/benchmark.h>

#include "webauthn/ceremony.h"
#include "webauthn/testing_authenticator.h"
#include "webauthn/totp.h"

namespace govern::webauthn {
namespace {

struct Fixture {
  explicit Fixture(Algorithm alg) : key(alg) {
    challenge.assign(32, 7);
    resp.client_data_json = testing::ClientDataJson("webauthn.get", challenge, "https://example.com");
    resp.authenticator_data = testing::AuthData("example.com", 0x05, 10);
    resp.signature =
        key.Sign(testing::Concat(resp.authenticator_data, *crypto::Sha256(resp.client_data_json)));
    resp.raw_id = {1, 2, 3, 4};
    stored.id = resp.raw_id;
    stored.public_key_cose = key.Cose();
    stored.sign_count = 9;
    options.rp = {"example.com", {"https://example.com"}, false};
    options.challenge = challenge;
    options.allow_credentials = {resp.raw_id};
  }
  testing::TestKey key;
  std::vector<uint8_t> challenge;
  AssertionResponse resp;
  StoredCredential stored;
  AssertionOptions options;
};

void BM_VerifyAssertion(benchmark::State& state) {
  Fixture f(static_cast<Algorithm>(state.range(0)));
  for (auto _ : state) {
    auto r = VerifyAssertion(f.options, f.stored, f.resp);
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_VerifyAssertion)->Arg(-7)->Arg(-8)->Arg(-257);

void BM_CoseKeyParse(benchmark::State& state) {
  Fixture f(static_cast<Algorithm>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(PublicKey::FromCose(f.stored.public_key_cose));
}
BENCHMARK(BM_CoseKeyParse)->Arg(-7)->Arg(-8)->Arg(-257);

void BM_ParseClientData(benchmark::State& state) {
  Fixture f(Algorithm::kEdDsa);
  for (auto _ : state) benchmark::DoNotOptimize(ParseClientData(f.resp.client_data_json));
}
BENCHMARK(BM_ParseClientData);

void BM_VerifyTotp(benchmark::State& state) {
  std::vector<uint8_t> secret(20, 3);
  std::string code = *Totp(secret, 1700000000);
  for (auto _ : state) benchmark::DoNotOptimize(VerifyTotp(secret, code, 1700000000, std::nullopt));
}
BENCHMARK(BM_VerifyTotp);

}  // namespace
}  // namespace govern::webauthn

BENCHMARK_MAIN();
