// The streams service from its configuration: starts a broker on the configured address and data
// directory with its group coordinator, reports its endpoint, and refuses a bad listen address and
// inverted session-timeout bounds.
#include "services/streams/service.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/clock.h"

namespace govern::streams_service {
namespace {

namespace fs = std::filesystem;

Result<config::Config> Load(const config::Schema& schema,
                            std::vector<std::pair<std::string, std::string>> flags) {
  config::LoadOptions lo;
  lo.flags = std::move(flags);
  return config::Config::Load(schema, lo);
}

TEST(StreamsService, StartsFromConfig) {
  char tmpl[] = "/tmp/streams_service_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  auto svc = NewStreamsService();
  EXPECT_EQ(svc->name(), "streams");
  EXPECT_FALSE(svc->needs_database());
  config::Schema schema;
  svc->DeclareConfig(schema);
  auto cfg = Load(schema, {{"streams.listen", "127.0.0.1:0"}, {"streams.default_partitions", "3"}});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  services::Context ctx;
  ctx.config = &*cfg;
  ctx.data_dir = dir;
  ASSERT_TRUE(svc->Start(ctx).ok());
  auto eps = svc->Endpoints();
  ASSERT_EQ(eps.size(), 1u);
  EXPECT_EQ(eps[0].protocol, "kafka");
  EXPECT_NE(eps[0].address, "127.0.0.1:0");
  EXPECT_TRUE(fs::is_directory(dir + "/streams"));
  EXPECT_TRUE(fs::is_directory(dir + "/streams/groups"));  // the group coordinator's offsets
  svc->Stop();
  svc->Stop();  // twice is harmless
  EXPECT_TRUE(svc->Endpoints().empty());

  EXPECT_FALSE(Load(schema, {{"streams.listen", "not an address"}}).ok());
  EXPECT_FALSE(Load(schema, {{"streams.default_partitions", "0"}}).ok());
  auto inverted = Load(schema, {{"streams.listen", "127.0.0.1:0"},
                                {"streams.groups.min_session_timeout", "10m"},
                                {"streams.groups.max_session_timeout", "1m"}});
  ASSERT_TRUE(inverted.ok());
  ctx.config = &*inverted;
  EXPECT_FALSE(svc->Start(ctx).ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace govern::streams_service
