// streams_token_tool: test helper for tests/e2e/streams/sasl.sh. It plays the auth service's part:
//   keygen DIR                      an ES256 key ring in DIR/ring.json and its public JWKS in DIR/jwks.json
//   mint DIR ISS SUB AUD LIFETIME_S a Govern access token (at+jwt) signed by that ring, on stdout
//                                   (negative LIFETIME_S: issued an hour ago, long expired)
//   users PASSWORD                  a salted SHA-256 users-file hash of PASSWORD, on stdout
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "base/clock.h"
#include "streams/sasl.h"
#include "tokens/issuer.h"

using namespace govern;

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  int64_t now = Clock::Real().UnixMicros() / 1'000'000;
  if (cmd == "keygen" && argc == 3) {
    // Active from two hours ago, so `mint` can also sign tokens that have long expired.
    auto ring = tokens::KeyRing::Create(tokens::Alg::kES256, {}, now - 7200);
    if (!ring.ok()) return std::fprintf(stderr, "%s\n", ring.status().ToString().c_str()), 1;
    auto ser = ring->Serialize();
    auto jwks = ring->JwksAt(now);
    if (!ser.ok() || !jwks.ok()) return 1;
    std::ofstream(std::string(argv[2]) + "/ring.json")
        << std::string(reinterpret_cast<const char*>(ser->data()), ser->size());
    std::ofstream(std::string(argv[2]) + "/jwks.json") << *jwks;
    return 0;
  }
  if (cmd == "mint" && argc == 7) {
    std::ifstream in(std::string(argv[2]) + "/ring.json");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string bytes = ss.str();
    auto ring = tokens::KeyRing::Deserialize(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    if (!ring.ok()) return std::fprintf(stderr, "%s\n", ring.status().ToString().c_str()), 1;
    auto shared = std::make_shared<const tokens::KeyRing>(std::move(*ring));
    // A negative lifetime gives a token issued an hour ago that expired after -LIFETIME_S seconds.
    long life = std::atol(argv[6]);
    ManualClock past((now - 3600 - 1'700'000'000) * 1'000'000'000);
    const Clock& clock = life < 0 ? static_cast<const Clock&>(past) : Clock::Real();
    tokens::Issuer issuer(tokens::IssuerOptions{argv[3]}, shared, nullptr, clock);
    tokens::Claims c;
    c.sub = argv[4];
    c.aud = {argv[5]};
    c.org = "org-test";
    auto t = issuer.IssueAccess(std::move(c), std::chrono::seconds(life < 0 ? -life : life));
    if (!t.ok()) return std::fprintf(stderr, "%s\n", t.status().ToString().c_str()), 1;
    std::printf("%s\n", t->c_str());
    return 0;
  }
  if (cmd == "users" && argc == 3) {
    auto h = streams::HashPasswordSha256(argv[2]);
    if (!h.ok()) return 1;
    std::printf("%s\n", h->c_str());
    return 0;
  }
  std::fprintf(stderr, "usage: streams_token_tool keygen DIR | mint DIR ISS SUB AUD LIFETIME_S | users PW\n");
  return 2;
}
