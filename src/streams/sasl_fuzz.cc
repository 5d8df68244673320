// Fuzz target: the SASL client-message parsers (PLAIN, OAUTHBEARER) and the SASL request bodies as the
// broker reads them, and the ACL and users file parsers: no crash, no read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "streams/acl.h"
#include "streams/sasl.h"
#include "streams/security.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)govern::streams::ParsePlain(in);
  (void)govern::streams::ParseOAuthBearer(in);
  (void)govern::streams::Authorizer::Parse(in);
  (void)govern::streams::UserStore::Parse(in);
  static auto* security = new govern::streams::Security(
      {.require_sasl = true,
       .authenticator = std::make_shared<govern::streams::Authenticator>(
           govern::streams::AuthenticatorOptions{},
           std::make_shared<govern::streams::UserStore>(std::map<std::string, std::string, std::less<>>{
               {"u", "sha256:00:0000000000000000000000000000000000000000000000000000000000000000"}}),
           nullptr)});
  for (int16_t v = 0; v <= 2; v++) {
    govern::streams::Session s;
    (void)security->SaslHandshake(s, 1, in);
    (void)security->SaslAuthenticate(s, v, in);
    govern::streams::Session s2;
    std::string hs = std::string("\0\5PLAIN", 7);
    (void)security->SaslHandshake(s2, 1, hs);
    (void)security->SaslAuthenticate(s2, v, in);
  }
  return 0;
}
