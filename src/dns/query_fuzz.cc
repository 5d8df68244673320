// Fuzz target for the query path: any packet, over UDP and TCP, against an unsigned and a signed zone.
// Nothing may crash; every response must fit the limit, parse back as a DNS message and carry the
// query's id.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "dns/answer.h"
#include "dns/testing.h"
#include "dns/zone.h"

namespace {
using namespace govern::dns;

const char* kZone = R"($TTL 300
@ SOA ns1 hm 1 3600 900 604800 60
@ NS ns1
ns1 A 127.0.0.1
www A 192.0.2.1
www AAAA 2001:db8::1
@ MX 10 mail
mail A 192.0.2.2
alias CNAME www
loop1 CNAME loop2
loop2 CNAME loop1
*.wild A 192.0.2.9
*.wild TXT "t"
a.b.c TXT "deep"
sub NS ns.sub
ns.sub A 192.0.2.53
)";

std::shared_ptr<const ZoneSet> MakeZones() {
  std::vector<std::shared_ptr<const Zone>> zones;
  for (const char* apex : {"fuzz.test.", "signed.test."}) {
    auto recs = ParseZoneFile(kZone, apex);
    if (!recs.ok()) std::abort();
    ZoneKeys keys;
    if (std::string_view(apex) == "signed.test.") {
      auto k = SigningKey::Generate(Algorithm::kEcdsaP256Sha256, 257);
      if (!k.ok()) std::abort();
      keys.ksk = keys.zsk = std::make_shared<const SigningKey>(std::move(*k));
    }
    auto z = Zone::Build(apex, std::move(*recs), keys);
    if (!z.ok()) std::abort();
    zones.push_back(*z);
  }
  return std::make_shared<const ZoneSet>(std::move(zones));
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static auto zones = MakeZones();
  static std::vector<uint8_t> out(65535);
  for (bool tcp : {false, true}) {
    size_t n = Answer(*zones, std::span<const uint8_t>(data, size), AnswerOptions{tcp, 1790000000},
                      out.data(), out.size());
    if (n == 0) continue;
    if (!tcp && n > kDefaultUdpPayload) std::abort();
    std::vector<uint8_t> resp(out.begin(), out.begin() + static_cast<long>(n));
    auto m = govern::dns::testing::ReadMessage(resp);
    if (!m.ok || size < 2 || m.id != Get16(data)) std::abort();
  }
  return 0;
}
