// `govern streams` (src/cli/streams_cmd.cc, compiled into this test until the lead wires it into the
// govern binary) against a real broker: topics with offsets, groups with lag, dump-segment of a real
// segment file and of a corrupted copy (exit 1), an unreachable broker (exit 1).
#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <future>

#include "cli/streams_cmd.h"
#include "services/streams/service.h"
#include "streams/broker.h"
#include "streams/group_api.h"

namespace govern {
namespace {

namespace fs = std::filesystem;

class StreamsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("streams-cli-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    streams::BrokerOptions o;
    o.listen_port = 0;
    o.data_dir = dir_.string();
    broker_ = std::make_unique<streams::Broker>(o);
    auto api = streams::GroupApi::Attach(*broker_, {});
    ASSERT_TRUE(api.ok());
    api_ = std::move(*api);
    ASSERT_TRUE(broker_->Start().ok());
    ASSERT_TRUE(broker_->CreateTopic("orders", 2).ok());
    std::string batch = streams::BuildBatch({"a", "b", "c"}, 1700000000000);
    auto h = streams::ParseBatch(batch);
    ASSERT_TRUE(h.ok());
    std::promise<Status> done;
    broker_->Partition("orders", 0)->Append(batch, *h, 0, [&](Status s) { done.set_value(s); });
    ASSERT_TRUE(done.get_future().get().ok());
    streams::groups::OffsetCommitRequest q;
    q.group_id = "billing";
    q.topics.push_back({"orders", {{.partition_index = 0, .committed_offset = 1}}});
    std::promise<void> committed;
    api_->coordinator().OffsetCommit(q,
                                     [&](streams::groups::OffsetCommitResponse) { committed.set_value(); });
    committed.get_future().get();

    auto svc = streams_service::NewStreamsService();
    svc->DeclareConfig(schema_);
    auto cfg = config::Config::Load(schema_, {});
    ASSERT_TRUE(cfg.ok());
    cfg_ = std::make_unique<config::Config>(std::move(*cfg));
  }
  void TearDown() override {
    api_->Shutdown();
    broker_->Stop();
    fs::remove_all(dir_);
  }
  // Runs `govern <args>`; returns the exit code and stdout.
  std::pair<int, std::string> Run(std::vector<std::string> args) {
    CLI::App app;
    cli::StreamsCommand cmd(app);
    std::reverse(args.begin(), args.end());  // CLI11 takes a vector in reverse order
    app.parse(args);
    EXPECT_TRUE(cmd.parsed());
    ::testing::internal::CaptureStdout();
    int rc = cmd.Run(*cfg_);
    std::fflush(stdout);
    return {rc, ::testing::internal::GetCapturedStdout()};
  }
  std::string Broker() { return "127.0.0.1:" + std::to_string(broker_->port()); }

  fs::path dir_;
  config::Schema schema_;
  std::unique_ptr<config::Config> cfg_;
  std::unique_ptr<streams::Broker> broker_;
  std::unique_ptr<streams::GroupApi> api_;
};

TEST_F(StreamsCliTest, TopicsGroupsAndDump) {
  auto [rc, out] = Run({"streams", "topics", "--broker", Broker()});
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("orders"), std::string::npos) << out;
  EXPECT_NE(out.find("        0               0               3               3"), std::string::npos) << out;

  std::tie(rc, out) = Run({"streams", "groups", "--broker", Broker()});
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("billing"), std::string::npos) << out;
  EXPECT_NE(out.find("Empty"), std::string::npos) << out;

  std::tie(rc, out) = Run({"streams", "groups", "describe", "billing", "--broker", Broker()});
  EXPECT_EQ(rc, 0);
  // orders-0: committed 1, end 3, lag 2.
  EXPECT_NE(out.find("        0               1               3            2"), std::string::npos) << out;

  std::string seg = (dir_ / "orders-0" / "00000000000000000000.log").string();
  std::tie(rc, out) = Run({"streams", "dump-segment", seg});
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("offset 0..2 position 0"), std::string::npos) << out;
  EXPECT_NE(out.find("crc ok"), std::string::npos) << out;

  std::string bytes;
  {
    std::ifstream in(seg, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  bytes[bytes.size() - 1] ^= 0x40;
  std::string copy = (dir_ / "copy.log").string();
  std::ofstream(copy, std::ios::binary) << bytes;
  std::tie(rc, out) = Run({"streams", "dump-segment", copy});
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("crc BAD"), std::string::npos) << out;
}

TEST_F(StreamsCliTest, UnreachableBroker) {
  std::string addr = Broker();
  api_->Shutdown();
  broker_->Stop();
  EXPECT_EQ(Run({"streams", "topics", "--broker", addr}).first, 1);
}

}  // namespace
}  // namespace govern
