// Broker over real sockets with hand-built frames: version negotiation, produce/fetch/list offsets,
// idempotent retries, long polling, bad input that closes one connection and leaves others working, and a
// revoked token closing its open connection.
#include "streams/broker.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "streams/errors.h"
#include "streams/security.h"
#include "streams/wire.h"
#include "tokens/checker.h"
#include "tokens/issuer.h"

namespace govern::streams {
namespace {

namespace fs = std::filesystem;

// A blocking client speaking raw frames.
class Client {
 public:
  explicit Client(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Client() { ::close(fd_); }

  void SendRaw(std::string_view bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }

  // Sends a request with header v1 (or v2 when flexible) and the given body.
  void Send(int16_t key, int16_t version, int32_t corr, std::string_view body, bool flexible = false) {
    Writer w;
    w.Int32(0);
    w.Int16(key);
    w.Int16(version);
    w.Int32(corr);
    w.NullableString("test");
    if (flexible) w.EmptyTaggedFields();
    w.Raw(body);
    w.PatchInt32(0, static_cast<int32_t>(w.size() - 4));
    SendRaw(w.str());
  }

  // The next response frame (after the size), or nullopt when the connection closed.
  std::optional<std::string> Receive() {
    char size[4];
    if (!ReadAll(size, 4)) return std::nullopt;
    std::string body(LoadBe32(size), '\0');
    if (!ReadAll(body.data(), body.size())) return std::nullopt;
    return body;
  }

  bool Closed() { return !Receive().has_value(); }

 private:
  bool ReadAll(char* p, size_t n) {
    while (n > 0) {
      ssize_t r = ::recv(fd_, p, n, 0);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
  int fd_;
};

std::string ProduceBody(std::string_view topic, int32_t partition, std::string_view records,
                        int16_t acks = -1) {
  Writer w;
  w.NullableString(std::nullopt);
  w.Int16(acks);
  w.Int32(5000);
  w.ArrayCount(1);
  w.String(topic);
  w.ArrayCount(1);
  w.Int32(partition);
  w.NullableBytes(records);
  return w.str();
}

struct ProduceResult {
  int16_t error;
  int64_t base_offset;
};
ProduceResult ParseProduceV7(const std::string& resp) {
  Reader r(resp);
  r.Int32();  // correlation
  r.ArrayCount();
  r.String();
  r.ArrayCount();
  r.Int32();
  ProduceResult out{r.Int16(), r.Int64()};
  EXPECT_TRUE(r.ok());
  return out;
}

std::string FetchBody(std::string_view topic, int64_t offset, int32_t max_wait, int32_t min_bytes) {
  Writer w;
  w.Int32(-1);
  w.Int32(max_wait);
  w.Int32(min_bytes);
  w.Int32(1 << 20);
  w.Int8(0);
  w.Int32(0);
  w.Int32(-1);
  w.ArrayCount(1);
  w.String(topic);
  w.ArrayCount(1);
  w.Int32(0);
  w.Int32(-1);
  w.Int64(offset);
  w.Int64(-1);
  w.Int32(1 << 20);
  w.ArrayCount(0);
  w.String("");
  return w.str();
}

struct FetchResult {
  int16_t error;
  int64_t hw;
  std::string records;
};
FetchResult ParseFetchV11(const std::string& resp) {
  Reader r(resp);
  r.Int32();  // correlation
  r.Int32();  // throttle
  EXPECT_EQ(r.Int16(), 0);
  r.Int32();
  r.ArrayCount();
  r.String();
  r.ArrayCount();
  r.Int32();
  FetchResult f;
  f.error = r.Int16();
  f.hw = r.Int64();
  r.Int64();
  r.Int64();
  r.ArrayCount();
  r.Int32();
  f.records = std::string(r.NullableBytes().value_or(""));
  EXPECT_TRUE(r.ok());
  return f;
}

// DeleteTopics v1 of one topic, CreateTopics v4 of one topic with one partition.
std::string DeleteBody(std::string_view topic) {
  Writer w;
  w.ArrayCount(1);
  w.String(topic);
  w.Int32(1000);
  return w.str();
}
std::string CreateBody(std::string_view topic) {
  Writer w;
  w.ArrayCount(1);
  w.String(topic);
  w.Int32(1);
  w.Int16(1);
  w.ArrayCount(0);
  w.ArrayCount(0);
  w.Int32(1000);
  w.Bool(false);
  return w.str();
}
// The error (and message) of the one topic of a DeleteTopics v1 / CreateTopics v4 answer.
std::pair<int16_t, std::string> ParseTopicAnswer(const std::string& resp, bool with_message) {
  Reader r(resp);
  r.Int32();  // correlation
  r.Int32();  // throttle
  EXPECT_EQ(r.ArrayCount(), 1);
  r.String();
  int16_t error = r.Int16();
  std::string message;
  if (with_message) message = std::string(r.NullableString().value_or(""));
  EXPECT_TRUE(r.ok());
  return {error, message};
}
// The error of the one topic of a Metadata v4 answer asking for `topic` with auto-create.
int16_t MetadataError(Client& c, std::string_view topic) {
  Writer w;
  w.ArrayCount(1);
  w.String(topic);
  w.Bool(true);
  c.Send(api::kMetadata, 4, 90, w.str());
  auto resp = c.Receive();
  EXPECT_TRUE(resp);
  if (!resp) return -100;
  Reader r(*resp);
  r.Int32();  // correlation
  r.Int32();  // throttle
  int32_t brokers = r.ArrayCount();
  for (int32_t i = 0; i < brokers; i++) {
    r.Int32();
    r.String();
    r.Int32();
    r.NullableString();
  }
  r.NullableString();  // cluster id
  r.Int32();           // controller
  EXPECT_EQ(r.ArrayCount(), 1);
  int16_t error = r.Int16();
  EXPECT_TRUE(r.ok());
  return error;
}

// The offsets hook of a DeleteTopics, held open by the test: until it answers, the deleted topic's files
// remain and its name may not be created again.
struct HeldHook {
  std::mutex mu;
  std::condition_variable cv;
  std::function<void(Status)> done;
  std::vector<std::string> topics;

  Broker::TopicsDeletedHook Hook() {
    return [this](std::vector<std::string> t, std::function<void(Status)> d) {
      std::lock_guard<std::mutex> lock(mu);
      topics = std::move(t);
      done = std::move(d);
      cv.notify_all();
    };
  }
  std::function<void(Status)> Wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done != nullptr; });
    return std::exchange(done, nullptr);
  }
};

class BrokerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/streams_broker_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    StartBroker();
  }
  void StartBroker(Broker::TopicsDeletedHook hook = nullptr) {
    BrokerOptions o;
    o.listen_port = 0;
    o.data_dir = dir_;
    o.max_request_bytes = 1 << 20;
    broker_ = std::make_unique<Broker>(o);
    if (hook) broker_->OnTopicsDeleted(std::move(hook));
    ASSERT_TRUE(broker_->Start().ok());
  }
  void TearDown() override {
    broker_.reset();
    fs::remove_all(dir_);
  }
  std::string dir_;
  std::unique_ptr<Broker> broker_;
};

// A token revoked while its connection is open: the connection's next request closes it (the session
// ended, as at expiry), a reconnect with the token is refused with SASL_AUTHENTICATION_FAILED, and
// another client's connection keeps being served.
TEST_F(BrokerTest, RevokedTokenClosesItsOpenConnection) {
  int64_t now = Clock::Real().UnixMicros() / 1'000'000;
  auto ring = std::make_shared<tokens::KeyRing>(*tokens::KeyRing::Create(tokens::Alg::kES256, {}, now - 60));
  tokens::Issuer issuer(tokens::IssuerOptions{"https://iss.test"}, ring, nullptr);
  auto checker = std::make_shared<tokens::Checker>(tokens::CheckerOptions{"https://iss.test"},
                                                   std::make_shared<tokens::KeySet>(ring->VerifyKeysAt(now)));
  auto token = [&](std::string sub) {
    tokens::Claims c;
    c.sub = std::move(sub);
    c.aud = {"govern:streams"};
    return *issuer.IssueAccess(std::move(c), std::chrono::seconds(300));
  };
  broker_.reset();
  BrokerOptions o;
  o.listen_port = 0;
  o.data_dir = dir_;
  o.security = std::make_shared<Security>(SecurityOptions{
      .require_sasl = true,
      .authenticator = std::make_shared<Authenticator>(AuthenticatorOptions{}, nullptr, checker)});
  broker_ = std::make_unique<Broker>(o);
  ASSERT_TRUE(broker_->Start().ok());

  // Handshake + authenticate (v1) on `c`; the SaslAuthenticate error.
  auto login = [](Client& c, const std::string& tok) {
    Writer hs;
    hs.String("OAUTHBEARER");
    c.Send(kApiSaslHandshake, 1, 1, hs.str());
    EXPECT_TRUE(c.Receive().has_value());
    Writer w;
    w.NullableBytes(
        "n,,\x01"
        "auth=Bearer " +
        tok + "\x01\x01");
    c.Send(kApiSaslAuthenticate, 1, 2, w.str());
    auto r = c.Receive();
    if (!r) return int16_t{-100};
    Reader rd(std::string_view(*r).substr(4));
    return rd.Int16();
  };
  Writer none;
  none.ArrayCount(0);  // Metadata v1 of no topics
  std::string alice = token("alice"), bob = token("bob");
  Client a(broker_->port()), b(broker_->port());
  ASSERT_EQ(login(a, alice), 0);
  ASSERT_EQ(login(b, bob), 0);
  a.Send(api::kMetadata, 1, 3, none.str());
  ASSERT_TRUE(a.Receive().has_value());

  auto claims = checker->Check(alice, "govern:streams");
  ASSERT_TRUE(claims.ok());
  checker->SetRevocations(std::make_shared<tokens::RevocationList>(
      7, tokens::RevocationList::Entries{{(*claims)->jti, (*claims)->exp}},
      tokens::RevocationList::Entries{}));
  a.Send(api::kMetadata, 1, 4, none.str());
  EXPECT_TRUE(a.Closed());
  b.Send(api::kMetadata, 1, 3, none.str());
  EXPECT_TRUE(b.Receive().has_value());
  Client again(broker_->port());
  EXPECT_EQ(login(again, alice), kErrSaslAuthenticationFailed);
}

TEST_F(BrokerTest, ApiVersionsNegotiation) {
  Client c(broker_->port());
  Writer body;
  body.CompactString("librdkafka");
  body.CompactString("2.0.2");
  body.EmptyTaggedFields();
  c.Send(api::kApiVersions, 3, 7, body.str(), /*flexible=*/true);
  auto resp = c.Receive();
  ASSERT_TRUE(resp);
  Reader r(*resp);
  EXPECT_EQ(r.Int32(), 7);  // response header v0 even for v3
  EXPECT_EQ(r.Int16(), 0);
  int32_t n = r.CompactArrayCount();
  bool saw_produce = false;
  for (int i = 0; i < n; i++) {
    int16_t key = r.Int16(), min = r.Int16(), max = r.Int16();
    r.SkipTaggedFields();
    EXPECT_EQ(min, 0);
    if (key == api::kProduce) {
      saw_produce = true;
      EXPECT_EQ(max, 7);
    }
  }
  EXPECT_TRUE(saw_produce);
  r.Int32();
  r.SkipTaggedFields();
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.remaining(), 0u);

  // A newer version: v0 format with UNSUPPORTED_VERSION and the list.
  c.Send(api::kApiVersions, 9, 8, "\x01\x02\x03", true);
  resp = c.Receive();
  ASSERT_TRUE(resp);
  Reader r0(*resp);
  EXPECT_EQ(r0.Int32(), 8);
  EXPECT_EQ(r0.Int16(), kerr::kUnsupportedVersion);
  EXPECT_GT(r0.ArrayCount(6), 5);

  c.Send(api::kApiVersions, 0, 9, "");
  resp = c.Receive();
  ASSERT_TRUE(resp);
  Reader r1(*resp);
  r1.Int32();
  EXPECT_EQ(r1.Int16(), 0);
}

TEST_F(BrokerTest, ProduceFetchListOffsetsAndIdempotence) {
  ASSERT_TRUE(broker_->CreateTopic("t", 1).ok());
  Client c(broker_->port());
  std::string b1 = BuildBatch({"one", "two"}, 1000, 77, 0, 0);
  c.Send(api::kProduce, 7, 1, ProduceBody("t", 0, b1));
  auto p1 = ParseProduceV7(*c.Receive());
  EXPECT_EQ(p1.error, 0);
  EXPECT_EQ(p1.base_offset, 0);
  // The same batch again (a retry): its first offset, stored once.
  c.Send(api::kProduce, 7, 2, ProduceBody("t", 0, b1));
  auto p2 = ParseProduceV7(*c.Receive());
  EXPECT_EQ(p2.error, 0);
  EXPECT_EQ(p2.base_offset, 0);
  // A gap in sequences.
  c.Send(api::kProduce, 7, 3, ProduceBody("t", 0, BuildBatch({"x"}, 2000, 77, 0, 5)));
  EXPECT_EQ(ParseProduceV7(*c.Receive()).error, kerr::kOutOfOrderSequenceNumber);
  c.Send(api::kProduce, 7, 4, ProduceBody("t", 0, BuildBatch({"three"}, 3000, 77, 0, 2)));
  EXPECT_EQ(ParseProduceV7(*c.Receive()).base_offset, 2);
  // A corrupt batch: CORRUPT_MESSAGE, the connection stays open.
  std::string bad = BuildBatch({"zzz"}, 1);
  bad[bad.size() - 2] ^= 0x40;
  c.Send(api::kProduce, 7, 5, ProduceBody("t", 0, bad));
  EXPECT_EQ(ParseProduceV7(*c.Receive()).error, kerr::kCorruptMessage);
  // Unknown partition; an old produce version.
  c.Send(api::kProduce, 7, 6, ProduceBody("t", 3, b1));
  EXPECT_EQ(ParseProduceV7(*c.Receive()).error, kerr::kUnknownTopicOrPartition);

  c.Send(api::kFetch, 11, 7, FetchBody("t", 0, 0, 1));
  auto f = ParseFetchV11(*c.Receive());
  EXPECT_EQ(f.error, 0);
  EXPECT_EQ(f.hw, 3);
  int batches = 0;
  ASSERT_TRUE(ForEachBatch(f.records, [&](std::string_view b) {
                batches++;
                return ParseBatch(b).status();
              }).ok());
  EXPECT_EQ(batches, 2);
  c.Send(api::kFetch, 11, 8, FetchBody("t", 99, 0, 1));
  EXPECT_EQ(ParseFetchV11(*c.Receive()).error, kerr::kOffsetOutOfRange);

  for (int64_t ts : {-2, -1, 2500}) {
    Writer w;
    w.Int32(-1);
    w.Int8(0);
    w.ArrayCount(1);
    w.String("t");
    w.ArrayCount(1);
    w.Int32(0);
    w.Int64(ts);
    c.Send(api::kListOffsets, 2, 9, w.str());
    auto resp = c.Receive();
    Reader r(*resp);
    r.Int32();
    r.Int32();
    r.ArrayCount();
    r.String();
    r.ArrayCount();
    r.Int32();
    EXPECT_EQ(r.Int16(), 0);
    r.Int64();
    EXPECT_EQ(r.Int64(), ts == -2 ? 0 : ts == -1 ? 3 : 2);
  }
}

TEST_F(BrokerTest, VersionsBelowTheServedRangeGetUnsupportedVersion) {
  ASSERT_TRUE(broker_->CreateTopic("old", 1).ok());
  Client c(broker_->port());
  // Produce v2: no transactional id; the answer in the v2 format with error 35 and nothing stored.
  std::string v3 = ProduceBody("old", 0, BuildBatch({"x"}, 1));
  c.Send(api::kProduce, 2, 1, std::string_view(v3).substr(2));
  auto resp = c.Receive();
  ASSERT_TRUE(resp);
  Reader r(*resp);
  r.Int32();
  EXPECT_EQ(r.ArrayCount(), 1);
  EXPECT_EQ(r.String(), "old");
  EXPECT_EQ(r.ArrayCount(), 1);
  EXPECT_EQ(r.Int32(), 0);
  EXPECT_EQ(r.Int16(), kerr::kUnsupportedVersion);
  r.Int64();
  r.Int64();  // log append time (v2)
  r.Int32();  // throttle
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_EQ(broker_->Partition("old", 0)->log_end_offset(), 0);

  // Fetch v0: replica, max wait, min bytes, topics (partition, offset, max bytes).
  Writer f;
  f.Int32(-1);
  f.Int32(0);
  f.Int32(0);
  f.ArrayCount(1);
  f.String("old");
  f.ArrayCount(1);
  f.Int32(0);
  f.Int64(0);
  f.Int32(1024);
  c.Send(api::kFetch, 0, 2, f.str());
  resp = c.Receive();
  ASSERT_TRUE(resp);
  Reader fr(*resp);
  fr.Int32();
  EXPECT_EQ(fr.ArrayCount(), 1);
  fr.String();
  EXPECT_EQ(fr.ArrayCount(), 1);
  fr.Int32();
  EXPECT_EQ(fr.Int16(), kerr::kUnsupportedVersion);
  fr.Int64();
  fr.NullableBytes();
  EXPECT_TRUE(fr.ok());
  EXPECT_EQ(fr.remaining(), 0u);
}

TEST_F(BrokerTest, LongPollWokenByAppend) {
  ASSERT_TRUE(broker_->CreateTopic("lp", 1).ok());
  Client consumer(broker_->port());
  consumer.Send(api::kFetch, 11, 1, FetchBody("lp", 0, 60000, 1));
  std::thread producer([&] {
    Client p(broker_->port());
    p.Send(api::kProduce, 7, 1, ProduceBody("lp", 0, BuildBatch({"wake"}, 1)));
    EXPECT_EQ(ParseProduceV7(*p.Receive()).error, 0);
  });
  // Answered long before the 60 s max wait (the receive timeout is 10 s), with the record.
  auto resp = consumer.Receive();
  producer.join();
  ASSERT_TRUE(resp);
  auto f = ParseFetchV11(*resp);
  EXPECT_EQ(f.hw, 1);
  EXPECT_FALSE(f.records.empty());
}

TEST_F(BrokerTest, BadInputClosesOnlyThatConnection) {
  ASSERT_TRUE(broker_->CreateTopic("ok", 1).ok());
  Client good(broker_->port());
  {
    Client c(broker_->port());
    c.SendRaw(std::string("\x7f\xff\xff\xff", 4));  // oversized frame
    EXPECT_TRUE(c.Closed());
  }
  {
    Client c(broker_->port());
    c.SendRaw(
        std::string("\x00\x00\x00\x03"
                    "abc",
                    7));  // shorter than any header
    EXPECT_TRUE(c.Closed());
  }
  {
    Client c(broker_->port());
    c.Send(999, 0, 1, "");  // unknown API key
    EXPECT_TRUE(c.Closed());
  }
  {
    Client c(broker_->port());
    c.Send(api::kProduce, 42, 1, "");  // version above the advertised range
    EXPECT_TRUE(c.Closed());
  }
  {
    Client c(broker_->port());
    c.Send(api::kProduce, 7, 1, "\x00\x01");  // truncated body
    EXPECT_TRUE(c.Closed());
  }
  {
    Client c(broker_->port());
    Writer w;  // a record set whose batch length points past the end
    std::string b = BuildBatch({"v"}, 1);
    StoreBe32(b.data() + 8, 1 << 30);
    c.Send(api::kProduce, 7, 1, ProduceBody("ok", 0, b));
    EXPECT_EQ(ParseProduceV7(*c.Receive()).error, kerr::kCorruptMessage);
  }
  {
    Client c(broker_->port());  // vanishes mid-request
    c.SendRaw(std::string("\x00\x00\x01\x00\x00\x00", 6));
  }
  good.Send(api::kProduce, 7, 1, ProduceBody("ok", 0, BuildBatch({"still here"}, 1)));
  auto r = good.Receive();
  ASSERT_TRUE(r);
  EXPECT_EQ(ParseProduceV7(*r).error, 0);
}

TEST_F(BrokerTest, AcksZeroAndPipelinedOrder) {
  ASSERT_TRUE(broker_->CreateTopic("pipe", 2).ok());
  Client c(broker_->port());
  c.Send(api::kProduce, 7, 100, ProduceBody("pipe", 0, BuildBatch({"silent"}, 1), 0));
  for (int i = 0; i < 20; i++) c.Send(api::kProduce, 7, i, ProduceBody("pipe", i % 2, BuildBatch({"p"}, 1)));
  for (int i = 0; i < 20; i++) {
    auto r = c.Receive();
    ASSERT_TRUE(r);
    EXPECT_EQ(static_cast<int32_t>(LoadBe32(r->data())), i);  // in request order; none for acks 0
  }
  EXPECT_EQ(broker_->Partition("pipe", 0)->log_end_offset(), 11);
}

TEST_F(BrokerTest, TopicsSurviveRestartAndProducerIdsStayUnique) {
  Client c(broker_->port());
  Writer w;
  w.ArrayCount(1);
  w.String("made");
  w.Int32(3);
  w.Int16(1);
  w.ArrayCount(0);
  w.ArrayCount(0);
  w.Int32(1000);
  w.Bool(false);
  c.Send(api::kCreateTopics, 4, 1, w.str());
  auto resp = c.Receive();
  Reader r(*resp);
  r.Int32();
  r.Int32();
  r.ArrayCount();
  EXPECT_EQ(r.String(), "made");
  EXPECT_EQ(r.Int16(), 0);
  c.Send(api::kCreateTopics, 4, 2, w.str());
  auto r2_resp = c.Receive();
  ASSERT_TRUE(r2_resp);
  Reader r2(*r2_resp);
  r2.Int32();
  r2.Int32();
  r2.ArrayCount();
  r2.String();
  EXPECT_EQ(r2.Int16(), kerr::kTopicAlreadyExists);

  Writer init;
  init.NullableString(std::nullopt);
  init.Int32(1000);
  c.Send(api::kInitProducerId, 1, 3, init.str());
  auto ir_resp = c.Receive();
  ASSERT_TRUE(ir_resp);
  Reader ir(*ir_resp);
  ir.Int32();
  ir.Int32();
  EXPECT_EQ(ir.Int16(), 0);
  int64_t pid1 = ir.Int64();

  broker_.reset();
  StartBroker();
  EXPECT_EQ(broker_->Topics(), std::vector<std::string>{"made"});
  ASSERT_NE(broker_->Partition("made", 2), nullptr);
  Client c2(broker_->port());
  c2.Send(api::kInitProducerId, 1, 4, init.str());
  auto ir2_resp = c2.Receive();
  ASSERT_TRUE(ir2_resp);
  Reader ir2(*ir2_resp);
  ir2.Int32();
  ir2.Int32();
  EXPECT_EQ(ir2.Int16(), 0);
  EXPECT_GT(ir2.Int64(), pid1);

  Writer del;
  del.ArrayCount(1);
  del.String("made");
  del.Int32(1000);
  c2.Send(api::kDeleteTopics, 1, 5, del.str());
  auto dr_resp = c2.Receive();
  ASSERT_TRUE(dr_resp);
  Reader dr(*dr_resp);
  dr.Int32();
  dr.Int32();
  dr.ArrayCount();
  dr.String();
  EXPECT_EQ(dr.Int16(), 0);
  EXPECT_TRUE(broker_->Topics().empty());
  EXPECT_FALSE(fs::exists(dir_ + "/made-0"));

  // A second broker on the same directory is refused while the first runs.
  BrokerOptions o;
  o.listen_port = 0;
  o.data_dir = dir_;
  Broker second(o);
  EXPECT_EQ(second.Start().code(), Code::kFailedPrecondition);
}

// While a deleted topic's offsets are being dropped its directories remain: CreateTopics is refused with
// TOPIC_ALREADY_EXISTS ("marked for deletion", as Kafka answers) and Metadata's auto-create answers
// LEADER_NOT_AVAILABLE, so no new log opens the old files (which would bring back the deleted records and
// then lose the new topic's writes when the files went). Once deleted, the name is created afresh, empty.
TEST_F(BrokerTest, TopicMarkedForDeletionIsNotCreatedUntilItsFilesAreGone) {
  HeldHook held;
  broker_.reset();
  StartBroker(held.Hook());
  ASSERT_TRUE(broker_->CreateTopic("gone", 1).ok());
  Client c(broker_->port());
  c.Send(api::kProduce, 7, 1, ProduceBody("gone", 0, BuildBatch({"old"}, 1000)));
  ASSERT_EQ(ParseProduceV7(*c.Receive()).error, 0);

  Client deleter(broker_->port());
  deleter.Send(api::kDeleteTopics, 1, 2, DeleteBody("gone"));
  auto done = held.Wait();
  EXPECT_EQ(held.topics, std::vector<std::string>{"gone"});
  EXPECT_TRUE(broker_->Topics().empty());
  EXPECT_TRUE(fs::exists(dir_ + "/gone-0"));

  c.Send(api::kCreateTopics, 4, 3, CreateBody("gone"));
  auto created = ParseTopicAnswer(*c.Receive(), true);
  EXPECT_EQ(created.first, kerr::kTopicAlreadyExists);
  EXPECT_EQ(created.second, "Topic 'gone' is marked for deletion.");
  EXPECT_EQ(MetadataError(c, "gone"), kerr::kLeaderNotAvailable);
  EXPECT_EQ(broker_->CreateTopic("gone", 1).code(), Code::kUnavailable);
  EXPECT_TRUE(broker_->Topics().empty());

  done(OkStatus());
  auto deleted = deleter.Receive();
  ASSERT_TRUE(deleted);
  EXPECT_EQ(ParseTopicAnswer(*deleted, false).first, kerr::kNone);
  EXPECT_FALSE(fs::exists(dir_ + "/gone-0"));

  c.Send(api::kCreateTopics, 4, 4, CreateBody("gone"));
  EXPECT_EQ(ParseTopicAnswer(*c.Receive(), true).first, kerr::kNone);
  c.Send(api::kFetch, 11, 5, FetchBody("gone", 0, 0, 0));
  auto f = ParseFetchV11(*c.Receive());
  EXPECT_EQ(f.error, 0);
  EXPECT_EQ(f.hw, 0);
  EXPECT_TRUE(f.records.empty());
}

// When the offsets of a deleted topic cannot be dropped the topic stays, records and all, and the delete
// is answered KAFKA_STORAGE_ERROR (not NONE with the offsets left behind).
TEST_F(BrokerTest, DeleteWhoseOffsetsFailKeepsTheTopic) {
  HeldHook held;
  broker_.reset();
  StartBroker(held.Hook());
  ASSERT_TRUE(broker_->CreateTopic("kept", 1).ok());
  Client c(broker_->port());
  c.Send(api::kProduce, 7, 1, ProduceBody("kept", 0, BuildBatch({"stays"}, 1000)));
  ASSERT_EQ(ParseProduceV7(*c.Receive()).error, 0);
  c.Send(api::kDeleteTopics, 1, 2, DeleteBody("kept"));
  held.Wait()(Internal("offsets: disk full"));
  auto answer = c.Receive();
  ASSERT_TRUE(answer);
  EXPECT_EQ(ParseTopicAnswer(*answer, false).first, kerr::kKafkaStorageError);
  EXPECT_EQ(broker_->Topics(), std::vector<std::string>{"kept"});
  c.Send(api::kFetch, 11, 3, FetchBody("kept", 0, 0, 0));
  auto f = ParseFetchV11(*c.Receive());
  EXPECT_EQ(f.error, 0);
  EXPECT_EQ(f.hw, 1);
  // Not left marked: a create is answered "exists", not "marked for deletion".
  c.Send(api::kCreateTopics, 4, 4, CreateBody("kept"));
  auto created = ParseTopicAnswer(*c.Receive(), true);
  EXPECT_EQ(created.first, kerr::kTopicAlreadyExists);
  EXPECT_EQ(created.second, "topic exists");
}

}  // namespace
}  // namespace govern::streams
