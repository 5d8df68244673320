// The streams service's security keys (docs/streams-security.md): bad values are refused when the config
// loads or the service starts; a SASL listener with users, ACLs and screening starts; an issuer whose
// auth service is unreachable does not keep the broker from starting (keys are pulled again later).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "services/streams/service.h"
#include "streams/sasl.h"

namespace govern::streams_service {
namespace {

namespace fs = std::filesystem;

Result<config::Config> Load(const config::Schema& schema,
                            std::vector<std::pair<std::string, std::string>> flags) {
  config::LoadOptions lo;
  lo.flags = std::move(flags);
  return config::Config::Load(schema, lo);
}

TEST(StreamsServiceSecurity, ConfigKeys) {
  char tmpl[] = "/tmp/streams_sec_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  std::ofstream(dir + "/users") << "alice " << *streams::HashPasswordSha256("pw") << "\n";
  std::ofstream(dir + "/acl") << "allow User:alice all topic:*\n";
  std::ofstream(dir + "/bad-acl") << "allow alice all topic:*\n";
  auto svc = NewStreamsService();
  config::Schema schema;
  svc->DeclareConfig(schema);
  EXPECT_FALSE(Load(schema, {{"streams.auth.mode", "maybe"}}).ok());
  EXPECT_FALSE(Load(schema, {{"streams.screening.default", "loud"}}).ok());
  EXPECT_FALSE(Load(schema, {{"streams.screening.topics", "orders"}}).ok());
  EXPECT_FALSE(Load(schema, {{"streams.auth.reload_interval", "soon"}}).ok());

  auto start = [&](std::vector<std::pair<std::string, std::string>> flags) {
    flags.emplace_back("streams.listen", "127.0.0.1:0");
    flags.emplace_back("streams.data_dir", dir + "/data");
    auto cfg = Load(schema, flags);
    EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
    if (!cfg.ok()) return cfg.status();
    services::Context ctx;
    ctx.config = &*cfg;
    ctx.data_dir = dir;
    Status s = svc->Start(ctx);
    svc->Stop();
    return s;
  };
  EXPECT_FALSE(start({{"streams.auth.mode", "sasl"}}).ok());  // nobody could authenticate
  EXPECT_FALSE(start({{"streams.auth.users_file", dir + "/missing"}}).ok());
  EXPECT_FALSE(start({{"streams.auth.acl_file", dir + "/bad-acl"}}).ok());
  EXPECT_TRUE(start({{"streams.auth.mode", "sasl"},
                     {"streams.auth.users_file", dir + "/users"},
                     {"streams.auth.acl_file", dir + "/acl"},
                     {"streams.screening.topics", "pii=block,logs-*=flag"}})
                  .ok());
  // The reloader polls the files while the service runs (off with 0).
  EXPECT_TRUE(start({{"streams.auth.users_file", dir + "/users"},
                     {"streams.auth.acl_file", dir + "/acl"},
                     {"streams.auth.reload_interval", "10ms"}})
                  .ok());
  EXPECT_TRUE(start({{"streams.auth.acl_file", dir + "/acl"}, {"streams.auth.reload_interval", "0s"}}).ok());
  EXPECT_TRUE(start({{"streams.auth.mode", "sasl"}, {"streams.auth.issuer", "http://127.0.0.1:1"}}).ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace govern::streams_service
