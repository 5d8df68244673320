// Fuzz target: what a credentials source reads from outside (aws_credentials.h): a shared credentials
// file, a container endpoint's or IMDS's JSON answer, an Expiration time and a container endpoint URL.
// The first byte picks the parser. Nothing may crash or throw; a set that parses has both keys, and no
// line break in any value; a container URL accepted is one the HTTP client parses, and over plain http
// the host it connects to (net::ParseUrl's) is on the allowed list.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "net/url.h"
#include "services/gateway/aws_credentials.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::gateway;
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto check = [](const govern::Result<AwsCredentialSet>& r, bool lines) {
    if (!r.ok()) return;
    if (r->credentials.access_key_id.empty() || r->credentials.secret_access_key.empty()) std::abort();
    if (lines) {
      for (const auto* v : {&r->credentials.access_key_id, &r->credentials.secret_access_key,
                            &r->credentials.session_token}) {
        if (v->find_first_of("\r\n") != std::string::npos) std::abort();
      }
    }
  };
  switch (data[0] % 4) {
    case 0: {
      size_t nl = in.find('\n');
      std::string_view profile = nl == std::string_view::npos ? in : in.substr(0, nl);
      check(ParseAwsCredentialsFile(in, profile), true);
      break;
    }
    case 1:
      check(ParseAwsCredentialsJson(in), true);
      break;
    case 2:
      (void)ParseIso8601Millis(in);
      break;
    default: {
      size_t nl = in.find('\n');
      auto url = ContainerCredentialsUrl(in.substr(0, nl == std::string_view::npos ? in.size() : nl),
                                         nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1));
      if (url.ok()) {
        auto parsed = govern::net::ParseUrl(*url);
        if (!parsed.ok()) std::abort();
        if (!parsed->tls && !AllowedContainerHost(parsed->host)) std::abort();
      }
    }
  }
  return 0;
}
