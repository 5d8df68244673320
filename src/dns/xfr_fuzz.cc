// Fuzz target for the transfer / TSIG slow path (Transfers::Handle): the first input byte picks TCP or
// UDP, the peer (inside or outside the ACL) and whether the rest is signed with the configured key
// before it is handed over (so the fuzzer also reaches the transfer code behind a good TSIG). Nothing
// may crash; every message sent must parse as a whole DNS message with the query's id.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "dns/message.h"
#include "dns/tsig.h"
#include "dns/wire.h"
#include "dns/xfr.h"
#include "dns/zone.h"

namespace {
using namespace govern::dns;

constexpr char kSecret[] = "c2VjcmV0IGtleSBmb3IgdGVzdHMgb25seSAzMiBieXQ=";

struct World {
  std::shared_ptr<const ZoneSet> v1, v2;
  std::unique_ptr<Transfers> transfers;
  TsigKey key;
};

World& Get() {
  static World* w = [] {
    auto* world = new World();
    TransferConfig c;
    if (!c.AddKey(std::string("xfr:hmac-sha256:") + kSecret).ok()) std::abort();
    if (!c.AddAcl("* 127.0.0.0/8 key=xfr").ok() || !c.AddAcl("open.test 127.0.0.1").ok()) std::abort();
    world->key = c.keyring.keys()[0];
    auto key = SigningKey::Generate(Algorithm::kEcdsaP256Sha256, 257);
    if (!key.ok()) std::abort();
    auto k = std::make_shared<const SigningKey>(std::move(*key));
    auto make = [&](int serial) {
      std::vector<std::shared_ptr<const Zone>> zones;
      for (const char* apex : {"fuzz.test.", "open.test.", "signed.test."}) {
        std::string text = "$TTL 300\n@ SOA ns1 hm " + std::to_string(serial) +
                           " 3600 900 604800 60\n@ NS ns1\nns1 A 127.0.0.1\nwww A 192.0.2." +
                           std::to_string(serial) + "\n*.w TXT \"x\"\nsub NS ns.sub\nns.sub A 192.0.2.53\n";
        auto recs = ParseZoneFile(text, apex);
        if (!recs.ok()) std::abort();
        ZoneKeys keys;
        if (std::string(apex) == "signed.test.") keys = ZoneKeys{k, k};
        auto z = Zone::Build(apex, std::move(*recs), keys);
        if (!z.ok()) std::abort();
        zones.push_back(*z);
      }
      return std::make_shared<const ZoneSet>(std::move(zones));
    };
    world->v1 = make(1);
    world->v2 = make(2);
    world->transfers = std::make_unique<Transfers>(std::move(c));
    return world;
  }();
  return *w;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  World& w = Get();
  uint8_t mode = data[0];
  std::vector<uint8_t> packet(data + 1, data + size);
  bool tcp = mode & 1;
  if ((mode & 2) && packet.size() >= kHeaderSize) TsigSigner(w.key, "").Sign(packet, 1700000000);
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  inet_pton(AF_INET, (mode & 4) ? "10.0.0.1" : "127.0.0.1", &peer.sin_addr);
  const ZoneSet& zones = (mode & 8) ? *w.v2 : *w.v1;
  uint16_t id = packet.size() >= 2 ? Get16(packet.data()) : 0;
  w.transfers->Handle(zones, packet, reinterpret_cast<const sockaddr*>(&peer), tcp, 1700000000 + (mode >> 4),
                      [&](std::span<const uint8_t> m) {
                        if (m.size() > 65535 || !ParseMessage(m).ok() || Get16(m.data()) != id) std::abort();
                        return true;
                      });
  return 0;
}
