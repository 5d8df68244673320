#include "services/dns/store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <thread>

#include "db/connection.h"
#include "db/migrator.h"
#include "db/pool.h"
#include "db/testing.h"
#include "dns/rdata.h"
#include "dns/wire.h"
#include "services/dns/api_json.h"

namespace govern::dns_service {
namespace {

class DnsStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_ = std::make_unique<db::testing::TestDatabase>(std::move(*db));
    auto pool = db::Pool::Create({.conninfo = db_->conninfo(), .max_size = 4});
    ASSERT_TRUE(pool.ok()) << pool.status().message();
    pool_ = std::move(*pool);
    auto applied = db::Migrator("dns", Migrations()).Apply(*pool_);
    ASSERT_TRUE(applied.ok()) << applied.status().message();
    auto key = crypto::Aes256GcmKey::Generate();
    ASSERT_TRUE(key.ok());
    key_ = std::make_shared<const crypto::Aes256GcmKey>(std::move(*key));
    store_ = std::make_unique<Store>(pool_.get(), key_);
    auto l = db::Connection::Connect(db_->conninfo());
    ASSERT_TRUE(l.ok()) << l.status().message();
    listener_ = std::move(*l);
    ASSERT_TRUE(listener_->Listen(kNotifyChannel).ok());
  }

  int64_t Serial(const std::string& zone) {
    auto zones = store_->ListZones();
    EXPECT_TRUE(zones.ok());
    for (const auto& z : *zones) {
      if (z.name == zone) return z.serial;
    }
    return -1;
  }
  std::string NextNotify() {
    auto n = listener_->WaitForNotification(std::chrono::seconds(5));
    if (!n.ok() || !n->has_value()) return "";
    return (*n)->payload;
  }

  std::unique_ptr<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Pool> pool_;
  std::shared_ptr<const crypto::Aes256GcmKey> key_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<db::Connection> listener_;
};

TEST_F(DnsStoreTest, ChangesBumpSerialAndNotify) {
  ASSERT_TRUE(store_->CreateZone({.name = "Example.COM"}).ok());
  EXPECT_EQ(NextNotify(), "example.com.");
  EXPECT_EQ(Serial("example.com."), 1);
  ASSERT_TRUE(store_->ReplaceRRset("example.com.", "www", "A", 300, {"192.0.2.1", "192.0.2.2"}).ok());
  EXPECT_EQ(NextNotify(), "example.com.");
  EXPECT_EQ(Serial("example.com."), 2);
  auto zone = store_->LoadZone("example.com");
  ASSERT_TRUE(zone.ok()) << zone.status().message();
  EXPECT_EQ((*zone)->serial(), 2u);
  auto www = dns::NameFromText("www.example.com.");
  const dns::Node* node = (*zone)->Find(*www);
  ASSERT_NE(node, nullptr);
  ASSERT_NE(node->Find(1), nullptr);
  EXPECT_EQ(node->Find(1)->rdatas.size(), 2u);
  // Replace, then delete.
  ASSERT_TRUE(store_->ReplaceRRset("example.com.", "www.example.com.", "A", 300, {"192.0.2.9"}).ok());
  EXPECT_EQ(Serial("example.com."), 3);
  ASSERT_TRUE(store_->ReplaceRRset("example.com.", "www", "A", 300, {}).ok());
  EXPECT_EQ(Serial("example.com."), 4);
  zone = store_->LoadZone("example.com");
  ASSERT_TRUE(zone.ok());
  EXPECT_EQ((*zone)->Find(*www), nullptr);
}

TEST_F(DnsStoreTest, BadInputIsRefusedNamingTheField) {
  ASSERT_TRUE(store_->CreateZone({.name = "example.com"}).ok());
  Status s = store_->ReplaceRRset("example.com.", "www", "A", 300, {"1.2.3"});
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("rdata[0]"), std::string::npos) << s.message();
  s = store_->ReplaceRRset("example.com.", "www", "NOPE", 300, {"1.2.3.4"});
  EXPECT_NE(s.message().find("type"), std::string::npos) << s.message();
  s = store_->ReplaceRRset("example.com.", "www.other.org.", "A", 300, {"1.2.3.4"});
  EXPECT_NE(s.message().find("owner"), std::string::npos) << s.message();
  EXPECT_EQ(store_->ReplaceRRset("nope.com.", "www", "A", 300, {"1.2.3.4"}).code(), Code::kNotFound);
  EXPECT_EQ(store_->CreateZone({.name = "example.com"}).code(), Code::kAlreadyExists);
  EXPECT_EQ(Serial("example.com."), 1);  // nothing refused changed anything
}

TEST_F(DnsStoreTest, ChangeThatWouldNotBuildIsRolledBack) {
  ASSERT_TRUE(store_->CreateZone({.name = "example.com"}).ok());
  ASSERT_TRUE(store_->ReplaceRRset("example.com.", "www", "A", 300, {"192.0.2.1"}).ok());
  ASSERT_EQ(NextNotify(), "example.com.");
  ASSERT_EQ(NextNotify(), "example.com.");
  Status s = store_->ReplaceRRset("example.com.", "www", "CNAME", 300, {"other.example.net."});
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("zone: "), std::string::npos) << s.message();
  s = store_->ReplaceRRset("example.com.", "@", "CNAME", 300, {"other.example.net."});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.message();
  EXPECT_EQ(Serial("example.com."), 2);
  // Nothing was notified for the refused changes.
  auto n = listener_->WaitForNotification(std::chrono::milliseconds(300));
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(n->has_value());
  auto zone = store_->LoadZone("example.com");
  ASSERT_TRUE(zone.ok()) << zone.status().message();
}

TEST_F(DnsStoreTest, ImportExportAndSignedZone) {
  ASSERT_TRUE(store_->CreateZone({.name = "signed.test", .dnssec = true}).ok());
  auto ds = store_->DsRecords("signed.test.");
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  EXPECT_EQ(ds->size(), 1u);
  // The key is stored sealed, and opens only with the same key.
  auto lease = pool_->Checkout();
  ASSERT_TRUE(lease.ok());
  auto rows = (*lease)->Exec("SELECT private_sealed FROM dns_zone_keys");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1);
  EXPECT_EQ(rows->Bytes(0, 0)->find("PRIVATE"), std::string::npos);
  auto other = crypto::Aes256GcmKey::Generate();
  Store wrong(pool_.get(), std::make_shared<const crypto::Aes256GcmKey>(std::move(*other)));
  EXPECT_FALSE(wrong.LoadZone("signed.test.").ok());

  const char* text =
      "$ORIGIN signed.test.\n$TTL 300\n@ SOA ns1 hostmaster 7 3600 600 1209600 300\n@ NS ns1\n"
      "ns1 A 192.0.2.53\nmail MX 10 mx.example.net.\n";
  ASSERT_TRUE(store_->ImportZoneFile("signed.test", text).ok());
  auto exported = store_->ExportZoneFile("signed.test");
  ASSERT_TRUE(exported.ok()) << exported.status().message();
  EXPECT_NE(exported->find("mail.signed.test."), std::string::npos) << *exported;
  EXPECT_NE(exported->find("DNSKEY"), std::string::npos) << *exported;
  EXPECT_NE(exported->find(" 7 3600"), std::string::npos) << *exported;  // the file's serial, above ours
  // A file without an SOA is refused and changes nothing.
  EXPECT_FALSE(store_->ImportZoneFile("signed.test", "www.signed.test. 300 IN A 192.0.2.1\n").ok());
  EXPECT_FALSE(store_->ImportZoneFile("signed.test", "www 300 IN A 1.2\n").ok());
  auto all = store_->LoadAll();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1u);
  ASSERT_TRUE(store_->DeleteZone("signed.test").ok());
  all = store_->LoadAll();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 0u);
}

// Online denial per zone: new signed zones answer from an NSEC3 chain, PUT .../denial switches it (a
// change like any other: serial bumped, NOTIFY), the transfer form follows it, bad values are refused.
TEST_F(DnsStoreTest, OnlineDenialPerZone) {
  ASSERT_TRUE(store_->CreateZone({.name = "n3.test", .dnssec = true}).ok());
  EXPECT_EQ(NextNotify(), "n3.test.");
  auto denial_of = [&](const std::string& zone) {
    auto zones = store_->ListZones();
    EXPECT_TRUE(zones.ok());
    for (const auto& z : *zones)
      if (z.name == zone) return z.denial;
    return std::string();
  };
  auto count = [](const std::shared_ptr<const dns::Zone>& z, uint16_t type) {
    int n = 0;
    for (const auto& r : z->SignedRecords(1790000000)) n += r.type == type;
    return n;
  };
  EXPECT_EQ(denial_of("n3.test."), "nsec3");
  auto zone = store_->LoadZone("n3.test.");
  ASSERT_TRUE(zone.ok()) << zone.status().message();
  EXPECT_TRUE((*zone)->online_nsec3());
  EXPECT_FALSE((*zone)->keys().nsec3.opt_out);
  EXPECT_GT(count(*zone, 50), 0);  // NSEC3 in the transfer form too, though dns.transfer.denial is nsec

  ASSERT_TRUE(store_->SetDenial("n3.test", "compact").ok());
  EXPECT_EQ(NextNotify(), "n3.test.");
  EXPECT_EQ(Serial("n3.test."), 2);
  EXPECT_EQ(denial_of("n3.test."), "compact");
  zone = store_->LoadZone("n3.test.");
  ASSERT_TRUE(zone.ok());
  EXPECT_FALSE((*zone)->online_nsec3());
  EXPECT_EQ(count(*zone, 50), 0);
  EXPECT_GT(count(*zone, 47), 0);  // NSEC, as dns.transfer.denial says

  ASSERT_TRUE(store_->SetDenial("n3.test", "nsec3-optout").ok());
  zone = store_->LoadZone("n3.test.");
  ASSERT_TRUE(zone.ok());
  EXPECT_TRUE((*zone)->online_nsec3());
  EXPECT_TRUE((*zone)->keys().nsec3.opt_out);

  EXPECT_EQ(store_->SetDenial("n3.test", "nsec").code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->SetDenial("n3.test", "compact", "other-org").code(), Code::kNotFound);
  EXPECT_EQ(denial_of("n3.test."), "nsec3-optout");  // neither changed it
  EXPECT_EQ(store_->SetDenial("absent.test", "compact").code(), Code::kNotFound);
  EXPECT_EQ(store_->CreateZone({.name = "bad.test", .dnssec = true, .denial = "nsec5"}).code(),
            Code::kInvalidArgument);
  ASSERT_TRUE(store_->CreateZone({.name = "c.test", .dnssec = true, .denial = "compact"}).ok());
  EXPECT_EQ(denial_of("c.test."), "compact");

  auto body = ParseCreateZoneBody(R"({"name":"x.test","dnssec":true,"denial":"nsec3-optout"})");
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(body->denial, "nsec3-optout");
  EXPECT_EQ(ParseCreateZoneBody(R"({"name":"x.test"})")->denial, "nsec3");
  EXPECT_FALSE(ParseCreateZoneBody(R"({"name":"x.test","denial":3})").ok());
  EXPECT_FALSE(ParseCreateZoneBody(R"({"name":"x.test","denial":"nsec"})").ok());
  EXPECT_EQ(*ParseDenialBody(R"({"denial":"compact"})"), "compact");
  EXPECT_FALSE(ParseDenialBody(R"({"denial":"compact","x":1})").ok());
  EXPECT_FALSE(ParseDenialBody("{}").ok());
  EXPECT_FALSE(ParseDenialBody("[]").ok());
}

// Zones made before migration 8 keep the compact denial they answered with.
TEST(DnsMigrationTest, ZonesFromBeforeKeepCompactDenial) {
  auto db = db::testing::TestDatabase::Create();
  ASSERT_TRUE(db.ok()) << db.status().message();
  auto pool = db::Pool::Create({.conninfo = db->conninfo(), .max_size = 2});
  ASSERT_TRUE(pool.ok());
  auto all = Migrations();
  std::vector<db::Migration> before(all.begin(), all.begin() + 7);
  ASSERT_EQ(before.back().version, 7);
  ASSERT_TRUE(db::Migrator("dns", before).Apply(**pool).ok());
  {
    auto c = (*pool)->Checkout();
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(
        (*c)->Exec(
                "INSERT INTO dns_zones (name, serial, dnssec, algorithm) VALUES ('old.test.', 1, true, 13)")
            .ok());
  }
  auto applied = db::Migrator("dns", all).Apply(**pool);
  ASSERT_TRUE(applied.ok()) << applied.status().message();
  EXPECT_EQ(*applied, 1);
  auto c = (*pool)->Checkout();
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(
      (*c)->Exec("INSERT INTO dns_zones (name, serial, dnssec, algorithm) VALUES ('new.test.', 1, true, 13)")
          .ok());
  auto rows = (*c)->Exec("SELECT name, denial FROM dns_zones ORDER BY name");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2);
  EXPECT_EQ(rows->Text(0, 1), "nsec3");    // new.test.
  EXPECT_EQ(rows->Text(1, 1), "compact");  // old.test.
  EXPECT_FALSE((*c)->Exec("UPDATE dns_zones SET denial = 'nsec'").ok());
}

// RFC 1982: serials wrap at 2^32, and an imported serial counts only when it is later in sequence
// space (a secondary would never take a "smaller" one).
TEST_F(DnsStoreTest, SerialsFollowRfc1982) {
  ASSERT_TRUE(store_->CreateZone({.name = "wrap.test"}).ok());
  auto file = [](const std::string& serial) {
    return "$ORIGIN wrap.test.\n$TTL 300\n@ SOA ns1 hostmaster " + serial +
           " 3600 600 1209600 300\n@ NS ns1\nns1 A 192.0.2.53\n";
  };
  // 1 -> 4294967295 would go backwards (it is 2^32 - 2 ahead, more than 2^31): steps of under 2^31.
  ASSERT_TRUE(store_->ImportZoneFile("wrap.test", file("4294967295")).ok());
  EXPECT_EQ(Serial("wrap.test."), 2);
  ASSERT_TRUE(store_->ImportZoneFile("wrap.test", file("2000000000")).ok());
  EXPECT_EQ(Serial("wrap.test."), 2000000000);
  ASSERT_TRUE(store_->ImportZoneFile("wrap.test", file("4000000000")).ok());
  ASSERT_TRUE(store_->ImportZoneFile("wrap.test", file("4294967295")).ok());
  EXPECT_EQ(Serial("wrap.test."), 4294967295);
  ASSERT_TRUE(store_->ReplaceRRset("wrap.test", "www", "A", 300, {"192.0.2.1"}).ok());
  EXPECT_EQ(Serial("wrap.test."), 0);  // wrapped
  auto zone = store_->LoadZone("wrap.test");
  ASSERT_TRUE(zone.ok());
  EXPECT_EQ((*zone)->serial(), 0u);
  // 4294967290 is before 0 in sequence space: ignored, the serial moves on by one.
  ASSERT_TRUE(store_->ImportZoneFile("wrap.test", file("4294967290")).ok());
  EXPECT_EQ(Serial("wrap.test."), 1);
  // 100 is after 1: taken.
  ASSERT_TRUE(store_->ImportZoneFile("wrap.test", file("100")).ok());
  EXPECT_EQ(Serial("wrap.test."), 100);
}

// What one zone snapshot publishes and who signs what, for the rollover phases.
struct Published {
  std::vector<int> dnskey;       // key tags in the DNSKEY RRset
  std::vector<int> dnskey_sigs;  // key tags of the RRSIGs over it
  std::vector<int> soa_sigs;     // key tags of the RRSIGs over the SOA (zone data)
  std::vector<int> cds;          // key tags of the CDS records
  std::vector<int> cdnskey;      // key tags of the CDNSKEY records
  std::vector<int> sig_algs;     // algorithms of the SOA's RRSIGs
  std::vector<int> cds_sigs;     // key tags of the RRSIGs over the CDS RRset
};

std::vector<int> Sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

int SigTag(const std::string& rrsig) {
  return (static_cast<uint8_t>(rrsig[16]) << 8) | static_cast<uint8_t>(rrsig[17]);
}

Published Inspect(const dns::Zone& z) {
  Published p;
  const dns::Node* apex = z.Find(z.apex());
  const dns::RRset* dnskey = apex->Find(dns::kDNSKEY);
  for (const auto& rd : dnskey->rdatas) p.dnskey.push_back(dns::KeyTag(rd));
  uint32_t now = static_cast<uint32_t>(std::time(nullptr));
  auto ks = z.SigFor(apex->owner, *dnskey, now);
  p.dnskey_sigs.push_back(SigTag(ks->rrsig));
  for (const auto& m : ks->more) p.dnskey_sigs.push_back(SigTag(m));
  auto ss = z.SigFor(apex->owner, z.soa(), now);
  p.soa_sigs.push_back(SigTag(ss->rrsig));
  p.sig_algs.push_back(static_cast<uint8_t>(ss->rrsig[2]));
  for (const auto& m : ss->more) {
    p.soa_sigs.push_back(SigTag(m));
    p.sig_algs.push_back(static_cast<uint8_t>(m[2]));
  }
  if (const dns::RRset* cds = apex->Find(dns::kCDS)) {
    for (const auto& rd : cds->rdatas)
      p.cds.push_back((static_cast<uint8_t>(rd[0]) << 8) | static_cast<uint8_t>(rd[1]));
    auto cs = z.SigFor(apex->owner, *cds, now);
    p.cds_sigs.push_back(SigTag(cs->rrsig));
    for (const auto& m : cs->more) p.cds_sigs.push_back(SigTag(m));
  }
  if (const dns::RRset* cdnskey = apex->Find(dns::kCDNSKEY))
    for (const auto& rd : cdnskey->rdatas) p.cdnskey.push_back(dns::KeyTag(rd));
  for (auto* v : {&p.dnskey, &p.dnskey_sigs, &p.soa_sigs, &p.cds, &p.cdnskey, &p.sig_algs, &p.cds_sigs})
    *v = Sorted(*v);
  return p;
}

class DnsRolloverTest : public DnsStoreTest {
 protected:
  // Seconds from the phase's start to its deadline, as stored.
  int64_t PhaseLength(const std::string& zone) {
    auto lease = pool_->Checkout();
    EXPECT_TRUE(lease.ok());
    auto rows = (*lease)->ExecPrepared(
        "SELECT round(extract(epoch FROM next_at - phase_started_at))::bigint FROM dns_rollovers WHERE zone "
        "= $1",
        db::Params(zone));
    EXPECT_TRUE(rows.ok() && rows->size() == 1);
    return *rows->Int64(0, 0);
  }
  // Time passes: the current phase is due now.
  void MakeDue(const std::string& zone) {
    auto lease = pool_->Checkout();
    ASSERT_TRUE(lease.ok());
    ASSERT_TRUE(
        (*lease)
            ->ExecPrepared("UPDATE dns_rollovers SET next_at = now() - interval '1 second' WHERE zone = $1",
                           db::Params(zone))
            .ok());
  }
  Published Now(const std::string& zone) {
    auto z = store_->LoadZone(zone);
    EXPECT_TRUE(z.ok()) << z.status().message();
    return Inspect(**z);
  }
  void DrainNotifies() {
    for (;;) {
      auto n = listener_->WaitForNotification(std::chrono::milliseconds(100));
      if (!n.ok() || !n->has_value()) return;
    }
  }
};

// Every phase of a CSK rollover, as data: what the zone publishes and who signs what (docs/dns.md "Key
// rollover"), the waits each phase stores, and that every step bumps the serial and NOTIFYs.
TEST_F(DnsRolloverTest, EveryPhase) {
  struct Case {
    int from, to;
  };
  for (Case c : {Case{13, 13}, Case{13, 15}, Case{15, 13}}) {
    SCOPED_TRACE(std::to_string(c.from) + " -> " + std::to_string(c.to));
    std::string zone = "roll" + std::to_string(c.from) + "-" + std::to_string(c.to) + ".test.";
    ASSERT_TRUE(
        store_->CreateZone({.name = zone, .dnssec = true, .algorithm = c.from, .dnskey_ttl = 600}).ok());
    ASSERT_TRUE(store_->ReplaceRRset(zone, "www", "A", 7200, {"192.0.2.1"}).ok());
    auto keys = store_->Keys(zone);
    ASSERT_TRUE(keys.ok()) << keys.status().message();
    ASSERT_EQ(keys->keys.size(), 1u);
    EXPECT_FALSE(keys->rollover_present);
    int old_tag = keys->keys[0].key_tag;
    Published p = Now(zone);
    EXPECT_EQ(p.dnskey, std::vector<int>{old_tag});
    EXPECT_TRUE(p.cds.empty());  // no CDS before the first rollover
    DrainNotifies();

    // publish: both keys in DNSKEY and signing it; data by the old key (and by the new one when the
    // algorithm changes); CDS/CDNSKEY for both. Lasts the DNSKEY TTL + propagation.
    int64_t serial = Serial(zone);
    ASSERT_TRUE(
        store_->StartRollover(zone, {.algorithm = c.to, .propagation_delay = 30, .parent_delay = 5000}).ok());
    EXPECT_EQ(NextNotify(), zone);
    EXPECT_EQ(Serial(zone), serial + 1);
    keys = store_->Keys(zone);
    ASSERT_EQ(keys->keys.size(), 2u);
    int new_tag = keys->keys[1].key_tag;
    EXPECT_EQ(keys->keys[0].state, "active");
    EXPECT_EQ(keys->keys[1].state, "incoming");
    EXPECT_EQ(keys->keys[1].algorithm, c.to);
    EXPECT_EQ(keys->rollover.phase, "publish");
    EXPECT_EQ(PhaseLength(zone), 600 + 30);
    std::vector<int> both = Sorted({old_tag, new_tag});
    p = Now(zone);
    EXPECT_EQ(p.dnskey, both);
    EXPECT_EQ(p.dnskey_sigs, both);
    EXPECT_EQ(p.soa_sigs, c.from == c.to ? std::vector<int>{old_tag} : both);
    EXPECT_EQ(p.cds, both);
    EXPECT_EQ(p.cdnskey, both);
    EXPECT_EQ(p.cds_sigs, both);
    // A second rollover waits for this one; nothing is due yet.
    EXPECT_EQ(store_->StartRollover(zone, {}).code(), Code::kFailedPrecondition);
    auto moved = store_->AdvanceRollovers();
    ASSERT_TRUE(moved.ok());
    EXPECT_TRUE(moved->empty());

    // switch: the new key signs the data; the old one stays in DNSKEY and signs it; CDS for the new key
    // only. Lasts max(largest TTL + propagation, parent delay) = max(7200 + 30, 5000).
    MakeDue(zone);
    serial = Serial(zone);
    moved = store_->AdvanceRollovers();
    ASSERT_TRUE(moved.ok()) << moved.status().message();
    EXPECT_EQ(*moved, std::vector<std::string>{zone});
    EXPECT_EQ(NextNotify(), zone);
    EXPECT_EQ(Serial(zone), serial + 1);
    keys = store_->Keys(zone);
    EXPECT_EQ(keys->rollover.phase, "switch");
    EXPECT_EQ(keys->keys[0].state, "retiring");
    EXPECT_EQ(keys->keys[1].state, "active");
    EXPECT_EQ(PhaseLength(zone), 7230);
    p = Now(zone);
    EXPECT_EQ(p.dnskey, both);
    EXPECT_EQ(p.dnskey_sigs, both);
    EXPECT_EQ(p.soa_sigs, c.from == c.to ? std::vector<int>{new_tag} : both);
    EXPECT_EQ(p.cds, std::vector<int>{new_tag});
    EXPECT_EQ(p.cdnskey, std::vector<int>{new_tag});
    // Signed as DNSKEY is: by the old key too, which the parent's DS may still name alone.
    EXPECT_EQ(p.cds_sigs, both);
    auto zones = store_->ListZones();
    for (const auto& z : *zones)
      if (z.name == zone) {
        EXPECT_EQ(z.algorithm, c.to);
      }

    // Its time up, switch still waits for the parent's DS (await_ds, the default): nothing moves.
    EXPECT_TRUE(keys->rollover.await_ds);
    EXPECT_TRUE(keys->rollover.ds_seen_at.empty());
    MakeDue(zone);
    serial = Serial(zone);
    moved = store_->AdvanceRollovers();
    ASSERT_TRUE(moved.ok());
    EXPECT_TRUE(moved->empty());
    EXPECT_EQ(Serial(zone), serial);
    EXPECT_EQ(store_->Keys(zone)->rollover.phase, "switch");
    EXPECT_EQ(store_->ConfirmDs(zone, "other").code(), Code::kNotFound);
    ASSERT_TRUE(store_->ConfirmDs(zone).ok());
    EXPECT_FALSE(store_->Keys(zone)->rollover.ds_seen_at.empty());

    // done: the old key is gone; CDS/CDNSKEY for the new one stay.
    MakeDue(zone);
    serial = Serial(zone);
    moved = store_->AdvanceRollovers();
    ASSERT_TRUE(moved.ok());
    EXPECT_EQ(moved->size(), 1u);
    EXPECT_EQ(NextNotify(), zone);
    EXPECT_EQ(Serial(zone), serial + 1);
    keys = store_->Keys(zone);
    EXPECT_EQ(keys->rollover.phase, "done");
    EXPECT_FALSE(keys->rollover.completed_at.empty());
    ASSERT_EQ(keys->keys.size(), 1u);
    EXPECT_EQ(keys->keys[0].key_tag, new_tag);
    p = Now(zone);
    EXPECT_EQ(p.dnskey, std::vector<int>{new_tag});
    EXPECT_EQ(p.dnskey_sigs, std::vector<int>{new_tag});
    EXPECT_EQ(p.soa_sigs, std::vector<int>{new_tag});
    EXPECT_EQ(p.sig_algs, std::vector<int>{c.to});
    EXPECT_EQ(p.cds, std::vector<int>{new_tag});
    auto ds = store_->DsRecords(zone);
    ASSERT_TRUE(ds.ok());
    ASSERT_EQ(ds->size(), 1u);
    EXPECT_EQ(((static_cast<uint8_t>((*ds)[0].rdata[0]) << 8) | static_cast<uint8_t>((*ds)[0].rdata[1])),
              new_tag);
    // Nothing more to do; a new rollover may start.
    moved = store_->AdvanceRollovers();
    EXPECT_TRUE(moved->empty());
    EXPECT_EQ(store_->ConfirmDs(zone).code(), Code::kFailedPrecondition);
    EXPECT_TRUE(store_->StartRollover(zone, {.propagation_delay = 0, .parent_delay = 0}).ok());
    keys = store_->Keys(zone);
    EXPECT_EQ(keys->rollover.phase, "publish");
    EXPECT_EQ(keys->rollover.to_algorithm, c.to);  // 0: the active key's algorithm
  }
}

TEST_F(DnsRolloverTest, Refusals) {
  ASSERT_TRUE(store_->CreateZone({.name = "plain.test"}).ok());
  ASSERT_TRUE(store_->CreateZone({.name = "signed.test", .org = "acme", .dnssec = true}).ok());
  EXPECT_EQ(store_->StartRollover("plain.test.", {}).code(), Code::kFailedPrecondition);
  EXPECT_EQ(store_->StartRollover("missing.test.", {}).code(), Code::kNotFound);
  EXPECT_EQ(store_->StartRollover("signed.test.", {}, "other").code(), Code::kNotFound);
  EXPECT_EQ(store_->Keys("signed.test.", "other").status().code(), Code::kNotFound);
  EXPECT_EQ(store_->StartRollover("signed.test.", {.algorithm = 8}).code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->StartRollover("signed.test.", {.propagation_delay = -1}).code(), Code::kInvalidArgument);
  // CDS and CDNSKEY are the server's, as DNSKEY is.
  EXPECT_EQ(store_->ReplaceRRset("signed.test.", "@", "CDS", 300, {"1 13 2 00"}).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(Serial("signed.test."), 1);
  // The rollover body: defaults kept for absent fields, unknown fields and bad values refused.
  RolloverRequest d{.algorithm = 0, .propagation_delay = 7, .parent_delay = 9};
  auto b = ParseRolloverBody("", d);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->propagation_delay, 7);
  b = ParseRolloverBody(R"({"algorithm":15,"parent_delay":3})", d);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->algorithm, 15);
  EXPECT_EQ(b->parent_delay, 3);
  EXPECT_EQ(b->propagation_delay, 7);
  EXPECT_FALSE(ParseRolloverBody(R"({"algorithm":14})", d).ok());
  EXPECT_FALSE(ParseRolloverBody(R"({"parent_delay":-1})", d).ok());
  EXPECT_FALSE(ParseRolloverBody(R"({"parent_delay":18446744073709551615})", d).ok());
  EXPECT_FALSE(ParseRolloverBody(R"({"delay":1})", d).ok());
  EXPECT_TRUE(b->await_ds);
  b = ParseRolloverBody(R"({"await_ds":false})", d);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->await_ds);
  EXPECT_FALSE(ParseRolloverBody(R"({"await_ds":"no"})", d).ok());
  EXPECT_FALSE(ParseRolloverBody("[1]", d).ok());
}

// Two servers moving the same due rollover at once: exactly one moves it (the row is locked and the
// deadline re-checked), so the serial goes up once.
TEST_F(DnsRolloverTest, ConcurrentAdvanceMovesOnce) {
  ASSERT_TRUE(store_->CreateZone({.name = "race.test", .dnssec = true}).ok());
  ASSERT_TRUE(store_->StartRollover("race.test.", {.propagation_delay = 0, .parent_delay = 0}).ok());
  MakeDue("race.test.");
  int64_t serial = Serial("race.test.");
  Store other(pool_.get(), key_);
  Result<std::vector<std::string>> a = std::vector<std::string>{}, b = std::vector<std::string>{};
  std::thread t([&] { a = store_->AdvanceRollovers(); });
  b = other.AdvanceRollovers();
  t.join();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size() + b->size(), 1u);
  EXPECT_EQ(Serial("race.test."), serial + 1);
}

}  // namespace
}  // namespace govern::dns_service
