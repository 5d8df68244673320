#include "services/dns/swap.h"

#include <gtest/gtest.h>

#include "dns/wire.h"
#include "dns/zonefile.h"

namespace govern::dns_service {
namespace {

std::shared_ptr<const dns::Zone> Make(const std::string& apex, const std::string& ip) {
  auto records =
      dns::ParseZoneFile("@ 300 IN SOA ns1 h 1 2 3 4 5\n@ 300 IN NS ns1\nwww 300 IN A " + ip + "\n", apex);
  EXPECT_TRUE(records.ok()) << records.status().message();
  auto z = dns::Zone::Build(apex, std::move(*records));
  EXPECT_TRUE(z.ok()) << z.status().message();
  return *z;
}

TEST(WithZoneTest, ReplacesOnlyTheChangedZone) {
  auto a = Make("a.test.", "192.0.2.1");
  auto b = Make("b.test.", "192.0.2.2");
  dns::ZoneSet set({a, b});
  auto a2 = Make("a.test.", "192.0.2.9");
  auto next = WithZone(set, a2->apex(), a2);
  ASSERT_EQ(next->zones().size(), 2u);
  auto a_wire = *dns::NameFromText("www.a.test.");
  auto b_wire = *dns::NameFromText("www.b.test.");
  EXPECT_EQ(next->Find(a_wire), a2.get());
  EXPECT_EQ(next->Find(b_wire), b.get());  // the same object: its caches carry over
  EXPECT_EQ(set.Find(a_wire), a.get());    // the old snapshot is untouched
  // A new zone is added; a null replacement drops it.
  auto c = Make("c.test.", "192.0.2.3");
  auto with_c = WithZone(*next, c->apex(), c);
  EXPECT_EQ(with_c->zones().size(), 3u);
  auto without_b = WithZone(*with_c, b->apex(), nullptr);
  EXPECT_EQ(without_b->zones().size(), 2u);
  EXPECT_EQ(without_b->Find(b_wire), nullptr);
  EXPECT_EQ(without_b->Find(a_wire), a2.get());
}

}  // namespace
}  // namespace govern::dns_service
