// policy_capi_bundles OUTDIR: writes signed policy bundles for the C ABI's tests and the Python example.
//   trusted.pub        the public key that signed v1, v2, broken and tampered
//   v1.tar.gz          version 1: research agents may search the web; nothing else is allowed
//   v2.tar.gz          version 2: the same, and support agents may send email
//   untrusted.tar.gz   version 3, signed by a key that trusted.pub is not   -> untrusted_key
//   broken.tar.gz      version 3, a policy that does not parse              -> rejected
//   tampered.tar       version 3, policies.cedar changed after signing      -> file_hash_mismatch
// Keys come from fixed seeds, so the files are the same on every run.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "bundle/keys.h"

namespace {

using govern::bundle::BuildInput;
using govern::bundle::SigningKey;

constexpr const char* kEntities = R"([
 {"uid": {"type": "Team", "id": "research"}, "attrs": {}, "parents": []},
 {"uid": {"type": "Team", "id": "support"}, "attrs": {}, "parents": []},
 {"uid": {"type": "Agent", "id": "ada"}, "attrs": {}, "parents": [{"type": "Team", "id": "research"}]},
 {"uid": {"type": "Agent", "id": "sam"}, "attrs": {}, "parents": [{"type": "Team", "id": "support"}]}
]
)";

constexpr const char* kPoliciesV1 = R"(@id("no-internal-urls")
forbid (principal, action, resource) when { context has url && context.url like "*internal*" };

@id("research-web")
permit (principal in Team::"research", action == Action::"call_tool", resource == Tool::"web_search");
)";

constexpr const char* kPoliciesV2 = R"(@id("no-internal-urls")
forbid (principal, action, resource) when { context has url && context.url like "*internal*" };

@id("research-web")
permit (principal in Team::"research", action == Action::"call_tool", resource == Tool::"web_search");

@id("support-email")
permit (principal in Team::"support", action == Action::"send_message", resource == Tool::"email");
)";

SigningKey Key(uint8_t n) {
  std::vector<uint8_t> seed(32, n);
  auto k = SigningKey::FromSeed(seed);
  if (!k.ok()) {
    std::fprintf(stderr, "key: %s\n", k.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*k);
}

void Write(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

std::string Make(uint64_t version, const char* policies, const SigningKey& key, bool gzip = true) {
  BuildInput in;
  in.kind = "policy";
  in.org = "acme";
  in.version = version;
  in.created = 1795833000;
  in.files["policies.cedar"] = policies;
  in.files["entities.json"] = kEntities;
  in.gzip = gzip;
  auto r = govern::bundle::Build(in, {&key});
  if (!r.ok()) {
    std::fprintf(stderr, "build: %s\n", r.status().ToString().c_str());
    std::exit(1);
  }
  return *r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: policy_capi_bundles OUTDIR\n");
    return 2;
  }
  std::string dir = argv[1];
  SigningKey trusted = Key(1), other = Key(2);
  Write(dir + "/trusted.pub", trusted.Public()->Text());
  Write(dir + "/v1.tar.gz", Make(1, kPoliciesV1, trusted));
  Write(dir + "/v2.tar.gz", Make(2, kPoliciesV2, trusted));
  Write(dir + "/untrusted.tar.gz", Make(3, kPoliciesV2, other));
  Write(dir + "/broken.tar.gz", Make(3, "permit (principal, action, resource) when { ", trusted));
  // A plain tar, so that the policy text can be changed in place after signing.
  std::string tampered = Make(3, kPoliciesV2, trusted, /*gzip=*/false);
  size_t at = tampered.find("Team::\"support\"");
  if (at == std::string::npos) return 1;
  tampered.replace(at, 15, "Team::\"researc\"");
  Write(dir + "/tampered.tar", tampered);
  std::printf("bundles written to %s\n", dir.c_str());
  return 0;
}
