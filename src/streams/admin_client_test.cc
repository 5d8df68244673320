// AdminClient against a real broker with the group APIs: topics with their offsets, groups listed and
// described with committed offsets and lag, an unreachable broker; DumpSegment on a real segment file,
// with a flipped byte (CRC fails) and a torn tail.
#include "streams/admin_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "streams/group_api.h"

namespace govern::streams {
namespace {

namespace fs = std::filesystem;

class AdminClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("admin-client-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    BrokerOptions o;
    o.listen_port = 0;
    o.data_dir = dir_.string();
    broker_ = std::make_unique<Broker>(o);
    auto api = GroupApi::Attach(*broker_, {});
    ASSERT_TRUE(api.ok());
    api_ = std::move(*api);
    ASSERT_TRUE(broker_->Start().ok());
    ASSERT_TRUE(broker_->CreateTopic("orders", 2).ok());
    for (int i = 0; i < 3; i++) Append("orders", 1, {"a", "b"});
  }
  void TearDown() override {
    api_->Shutdown();
    broker_->Stop();
    fs::remove_all(dir_);
  }
  void Append(const std::string& topic, int32_t p, std::vector<std::string> values) {
    std::string batch = BuildBatch(values, 1700000000000, 7, 0, seq_);
    seq_ += static_cast<int32_t>(values.size());
    auto h = ParseBatch(batch);
    ASSERT_TRUE(h.ok());
    std::promise<Status> done;
    auto info = broker_->Partition(topic, p)->Append(batch, *h, 0, [&](Status s) { done.set_value(s); });
    ASSERT_EQ(info.error, 0);
    ASSERT_TRUE(done.get_future().get().ok());
  }
  void Commit(const std::string& group, int64_t offset) {
    groups::OffsetCommitRequest q;
    q.group_id = group;
    q.topics.push_back({"orders", {{.partition_index = 1, .committed_offset = offset}}});
    std::promise<groups::OffsetCommitResponse> done;
    api_->coordinator().OffsetCommit(q, [&](groups::OffsetCommitResponse r) { done.set_value(r); });
    ASSERT_EQ(done.get_future().get().topics[0].partitions[0].error, groups::ErrorCode::kNone);
  }
  std::string Address() { return "127.0.0.1:" + std::to_string(broker_->port()); }

  fs::path dir_;
  int32_t seq_ = 0;
  std::unique_ptr<Broker> broker_;
  std::unique_ptr<GroupApi> api_;
};

TEST_F(AdminClientTest, TopicsAndGroups) {
  auto c = AdminClient::Connect(Address());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto topics = (*c)->Topics();
  ASSERT_TRUE(topics.ok()) << topics.status().ToString();
  ASSERT_EQ(topics->size(), 1u);
  EXPECT_EQ((*topics)[0].name, "orders");
  ASSERT_EQ((*topics)[0].partitions.size(), 2u);
  EXPECT_EQ((*topics)[0].partitions[0].high_watermark, 0);
  EXPECT_EQ((*topics)[0].partitions[1].log_start, 0);
  EXPECT_EQ((*topics)[0].partitions[1].high_watermark, 6);

  Commit("billing", 4);
  auto groups = (*c)->ListGroups();
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].group_id, "billing");
  auto g = (*c)->DescribeGroup("billing");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->error, 0);
  EXPECT_EQ(g->state, "Empty");
  EXPECT_TRUE(g->members.empty());
  ASSERT_EQ(g->offsets.size(), 1u);
  EXPECT_EQ(g->offsets[0].topic, "orders");
  EXPECT_EQ(g->offsets[0].partition, 1);
  EXPECT_EQ(g->offsets[0].committed, 4);
  EXPECT_EQ(g->offsets[0].end, 6);
  EXPECT_EQ(g->offsets[0].lag, 2);
}

TEST_F(AdminClientTest, UnreachableBroker) {
  uint16_t port = broker_->port();
  api_->Shutdown();
  broker_->Stop();
  EXPECT_FALSE(AdminClient::Connect("127.0.0.1:" + std::to_string(port), 2000).ok());
  EXPECT_FALSE(AdminClient::Connect("no-port").ok());
}

TEST_F(AdminClientTest, DumpSegment) {
  std::string seg = (dir_ / "orders-1" / "00000000000000000000.log").string();
  std::ostringstream out;
  auto s = DumpSegment(seg, out);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->batches, 3);
  EXPECT_EQ(s->records, 6);
  EXPECT_EQ(s->bad_crc, 0);
  EXPECT_NE(out.str().find("offset 2..3 position"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("producer 7/0 seq 2 codec none"), std::string::npos) << out.str();

  // A copy with one value byte flipped in the second batch, and half a header at the end.
  std::string bytes;
  {
    std::ifstream in(seg, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  size_t second = bytes.size() / 3;
  bytes[second + 70] ^= 1;
  bytes += bytes.substr(0, 30);
  std::string copy = (dir_ / "copy.log").string();
  std::ofstream(copy, std::ios::binary) << bytes;
  std::ostringstream out2;
  s = DumpSegment(copy, out2);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->batches, 3);
  EXPECT_EQ(s->bad_crc, 1);
  EXPECT_EQ(s->torn_bytes, 30);
  EXPECT_NE(out2.str().find("crc BAD"), std::string::npos) << out2.str();
  EXPECT_FALSE(DumpSegment((dir_ / "missing.log").string(), out2).ok());
}

}  // namespace
}  // namespace govern::streams
