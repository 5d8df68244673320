// policy.decisions.* keys: declared, defaults, and read back into options.
#include "policy/decisions/decision_config.h"

#include <gtest/gtest.h>

namespace govern::policy {
namespace {

// A Config points into its Schema, which must outlive it.
const config::Schema& TheSchema() {
  static const config::Schema* schema = [] {
    auto* s = new config::Schema;
    DeclareDecisionLogConfig(*s);
    return s;
  }();
  return *schema;
}

Result<config::Config> Load(std::vector<std::pair<std::string, std::string>> flags) {
  config::LoadOptions lo;
  lo.flags = std::move(flags);
  return config::Config::Load(TheSchema(), lo);
}

TEST(DecisionConfigTest, Defaults) {
  auto c = Load({});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto o = DecisionLogOptionsFromConfig(*c, "/var/govern");
  EXPECT_EQ(o.dir, "/var/govern/policy/decisions");
  EXPECT_EQ(o.mode, RecordMode::kBuffered);
  EXPECT_EQ(o.sync_interval, std::chrono::milliseconds(5));
  EXPECT_EQ(o.context, ContextKind::kHash);
  EXPECT_EQ(o.max_retained_bytes, 0u);
  auto ship = ShipperOptionsFromConfig(*c);
  ASSERT_TRUE(ship.ok());
  EXPECT_FALSE(ship->has_value());
}

TEST(DecisionConfigTest, EveryKeyIsRead) {
  auto c = Load({{"policy.decisions.dir", "/d"},
                 {"policy.decisions.mode", "durable"},
                 {"policy.decisions.sync_interval", "20ms"},
                 {"policy.decisions.context", "full"},
                 {"policy.decisions.max_pending", "8MiB"},
                 {"policy.decisions.max_block", "1s"},
                 {"policy.decisions.max_record_bytes", "64KiB"},
                 {"policy.decisions.segment_size", "4MiB"},
                 {"policy.decisions.max_retained", "1GiB"},
                 {"policy.decisions.ship.endpoint", "http://127.0.0.1:4318"},
                 {"policy.decisions.ship.key", "gvk_x"},
                 {"policy.decisions.ship.batch_events", "1000"},
                 {"policy.decisions.ship.batch_bytes", "2MiB"},
                 {"policy.decisions.ship.max_backoff", "5s"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto o = DecisionLogOptionsFromConfig(*c, "/ignored");
  EXPECT_EQ(o.dir, "/d");
  EXPECT_EQ(o.mode, RecordMode::kDurable);
  EXPECT_EQ(o.sync_interval, std::chrono::milliseconds(20));
  EXPECT_EQ(o.context, ContextKind::kFull);
  EXPECT_EQ(o.max_pending_bytes, 8u << 20);
  EXPECT_EQ(o.max_block, std::chrono::seconds(1));
  EXPECT_EQ(o.max_record_bytes, 64u << 10);
  EXPECT_EQ(o.segment_size, 4u << 20);
  EXPECT_EQ(o.max_retained_bytes, 1ull << 30);
  auto ship = ShipperOptionsFromConfig(*c);
  ASSERT_TRUE(ship.ok() && ship->has_value());
  EXPECT_EQ((*ship)->endpoint, "http://127.0.0.1:4318");
  EXPECT_EQ((*ship)->key, "gvk_x");
  EXPECT_EQ((*ship)->batch_events, 1000u);
  EXPECT_EQ((*ship)->batch_bytes, 2u << 20);
  EXPECT_EQ((*ship)->max_backoff, std::chrono::seconds(5));
}

TEST(DecisionConfigTest, BadValuesAreRefused) {
  EXPECT_FALSE(Load({{"policy.decisions.mode", "sometimes"}}).ok());
  EXPECT_FALSE(Load({{"policy.decisions.context", "half"}}).ok());
  EXPECT_FALSE(Load({{"policy.decisions.ship.endpoint", "127.0.0.1:4318"}}).ok());
  EXPECT_FALSE(Load({{"policy.decisions.ship.key", "sk-123"}}).ok());
  EXPECT_FALSE(Load({{"policy.decisions.ship.batch_events", "20000"}}).ok());
  auto c = Load({{"policy.decisions.ship.endpoint", "http://x:1"}});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(ShipperOptionsFromConfig(*c).ok()) << "an endpoint without a key";
}

}  // namespace
}  // namespace govern::policy
