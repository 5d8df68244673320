#include "services/dns/store.h"

#include <gtest/gtest.h>

#include <chrono>

#include "db/connection.h"
#include "db/migrator.h"
#include "db/pool.h"
#include "db/testing.h"
#include "dns/wire.h"

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

}  // namespace
}  // namespace govern::dns_service
