// Fuzz target: the compact JWS / JWT claims parser and a Checker's whole cold path, on outside bytes;
// and the strict JSON reader against nlohmann-json: what the reader accepts must be JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "tokens/checker.h"
#include "tokens/jose.h"
#include "tokens/json_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::tokens;
  std::string_view token(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseCompact(token);
  if (parsed.ok()) (void)ClaimsFromJson(parsed->payload);
  (void)ClaimsFromJson(token);
  // A checker that trusts one fixed HS256 key: the fuzzer can reach every refusal after the parse.
  static const auto* checker = [] {
    static const uint8_t secret[32] = {1, 2, 3};
    auto key = VerifyKey::Hs256("k", secret);
    return new Checker(CheckerOptions{"iss"}, std::make_shared<KeySet>(std::vector<VerifyKey>{*key}));
  }();
  (void)checker->Check(token, "aud");
  govern::tokens::internal::JsonReader reader(token);
  if (reader.Skip().ok() && reader.End().ok() && !nlohmann::json::accept(token.begin(), token.end())) {
    std::abort();  // the reader accepted something that is not JSON
  }
  return 0;
}
