// Intake through a real HTTP server on a free port, a real WAL in a temporary directory (or a small
// tmpfs, for a full disk) and real keys in the shared test PostgreSQL. Every check of what was
// accepted reads the WAL back.
#include "services/telemetry/intake.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "db/migrator.h"
#include "db/pool.h"
#include "db/testing.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/telemetry/api_keys.h"
#include "services/telemetry/proto_writer.h"
#include "services/telemetry/record.h"
#include "services/telemetry/schema.h"

namespace govern::telemetry {
namespace {

using namespace protowire;  // NOLINT(google-build-using-namespace): the byte builders
using ::testing::HasSubstr;

constexpr uint64_t kTime = 1795986592185000000ULL;

std::string Gzip(std::string_view in) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out(deflateBound(&zs, in.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// A protobuf LogRecord as a ScopeLogs.log_records entry.
std::string Record(uint64_t time, std::string_view body, std::string_view attrs = {}) {
  std::string fields = (time != 0 ? Fixed64Field(1, time) : std::string()) + VarintField(2, 9) +
                       LenField(3, "INFO") + LenField(5, StringValue(body)) + std::string(attrs);
  return LenField(2, fields);
}

std::string OtlpJson(std::string_view body, bool with_time = true) {
  nlohmann::json rec = {{"severityNumber", 9},
                        {"severityText", "INFO"},
                        {"body", {{"stringValue", body}}},
                        {"attributes", {{{"key", "http.status"}, {"value", {{"intValue", "200"}}}}}}};
  if (with_time) rec["timeUnixNano"] = std::to_string(kTime);
  nlohmann::json req = {
      {"resourceLogs",
       {{{"resource",
          {{"attributes", {{{"key", "service.name"}, {"value", {{"stringValue", "checkout"}}}}}}}},
         {"scopeLogs", {{{"scope", {{"name", "s"}}}, {"logRecords", {rec}}}}}}}}};
  return req.dump();
}

// Reads varint field `field` from a protobuf message (enough for google.rpc.Status and the response).
std::optional<uint64_t> ProtoVarint(std::string_view msg, uint32_t field) {
  size_t i = 0;
  auto varint = [&](uint64_t* v) {
    *v = 0;
    for (int shift = 0; i < msg.size() && shift < 64; shift += 7) {
      auto b = static_cast<uint8_t>(msg[i++]);
      *v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  };
  while (i < msg.size()) {
    uint64_t tag = 0, v = 0;
    if (!varint(&tag)) return std::nullopt;
    if ((tag & 7) == 0) {
      if (!varint(&v)) return std::nullopt;
      if ((tag >> 3) == field) return v;
    } else if ((tag & 7) == 2) {
      if (!varint(&v) || v > msg.size() - i) return std::nullopt;
      i += v;
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

class TempDir {
 public:
  TempDir() {
    std::string t = "/tmp/govern-intake-XXXXXX";
    path_ = ::mkdtemp(t.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class IntakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_ = std::make_unique<db::testing::TestDatabase>(std::move(*db));
    auto pool = db::Pool::Create({.conninfo = db_->conninfo(), .max_size = 4});
    ASSERT_TRUE(pool.ok()) << pool.status().message();
    pool_ = std::move(*pool);
    ASSERT_TRUE(db::Migrator("telemetry", Migrations()).Apply(*pool_).ok());
    auto conn = pool_->Checkout();
    ASSERT_TRUE(conn.ok());
    acme_ = *service_keys::CreateKey(**conn, IngestKeys(), "acme", kIngestScope, "");
    globex_ = *service_keys::CreateKey(**conn, IngestKeys(), "globex", kIngestScope, "");
    query_ = *service_keys::CreateKey(**conn, IngestKeys(), "acme", kQueryScope, "");
    revoked_ = *service_keys::CreateKey(**conn, IngestKeys(), "acme", kIngestScope, "");
    ASSERT_TRUE(
        service_keys::RevokeKey(**conn, IngestKeys(), service_keys::ParseKey(IngestKeys(), revoked_)->key_id)
            .ok());
  }

  // Opens the WAL in `dir` and starts intake behind a server on a free port.
  void Start(const std::string& dir, wal::Options wo = {}, IntakeOptions io = {}) {
    auto log = wal::Log::Open(dir, wo);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    log_ = std::move(*log);
    keys_ = std::make_unique<service_keys::KeyCache>(
        pool_.get(), IngestKeys(), service_keys::KeyCacheOptions{.ttl = std::chrono::minutes(1)});
    io.max_record_bytes = wo.max_record_size;
    intake_ = std::make_unique<Intake>(
        io, IntakeDeps{.log = log_.get(), .keys = keys_.get(), .oldest_unstored_received_ns = [this] {
                         return oldest_.load();
                       }});
    net::Router router;
    intake_->AddRoutes(router);
    server_ = std::make_unique<net::Server>(
        net::ServerConfig{.address = "127.0.0.1", .port = 0, .workers = 2}, std::move(router));
    ASSERT_TRUE(server_->Start().ok());
    base_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }
  void Start() { Start(tmp_.path() + "/wal"); }

  void TearDown() override {
    if (server_) server_->Stop();
    if (keys_) keys_->Shutdown();
    log_.reset();
    server_.reset();
  }

  net::ClientResponse Post(std::string_view path, std::string body, std::string_view content_type,
                           std::string_view key, std::string_view encoding = {}) {
    net::ClientRequest req;
    req.method = net::Method::kPost;
    req.url = base_ + std::string(path);
    req.body = std::move(body);
    if (!content_type.empty()) req.headers.Set("Content-Type", content_type);
    if (!key.empty()) req.headers.Set("Authorization", "Bearer " + std::string(key));
    if (!encoding.empty()) req.headers.Set("Content-Encoding", encoding);
    auto r = client_.Send(std::move(req));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : net::ClientResponse{};
  }

  // Every event in the WAL, in order.
  std::vector<Event> WalEvents(std::vector<int64_t>* received = nullptr) {
    std::vector<Event> out;
    auto reader = log_->NewReader(log_->FirstSequence());
    EXPECT_TRUE(reader.ok());
    for (;;) {
      auto rec = (*reader)->Next();
      EXPECT_TRUE(rec.ok());
      if (!rec.ok() || !rec->has_value()) break;
      auto batch = DecodeRecord((*rec)->data);
      EXPECT_TRUE(batch.ok()) << batch.status().ToString();
      for (Event& e : batch->events) {
        out.push_back(std::move(e));
        if (received) received->push_back(batch->received_unix_nanos);
      }
    }
    return out;
  }

  TempDir tmp_;
  std::unique_ptr<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Pool> pool_;
  std::string acme_, globex_, query_, revoked_;
  std::atomic<int64_t> oldest_{0};
  std::unique_ptr<wal::Log> log_;
  std::unique_ptr<service_keys::KeyCache> keys_;
  std::unique_ptr<Intake> intake_;
  std::unique_ptr<net::Server> server_;
  std::string base_;
  net::HttpClient client_;
};

TEST_F(IntakeTest, OtlpProtobufIsAcknowledgedAfterItIsInTheWal) {
  Start();
  std::string body =
      OneScopeRequest("checkout", Record(kTime, "first", LenField(6, KeyValue("user", StringValue("u1")))) +
                                      Record(0, "no time"));
  auto r = Post("/v1/logs", body, "application/x-protobuf", acme_);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.Get("Content-Type").value_or(""), "application/x-protobuf");
  EXPECT_EQ(r.body, "") << "full success is an empty ExportLogsServiceResponse";
  std::vector<int64_t> received;
  auto events = WalEvents(&received);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].org, "acme");
  EXPECT_EQ(events[0].body, "first");
  EXPECT_EQ(events[0].service_name, "checkout");
  EXPECT_EQ(events[0].attributes, (std::vector<Attribute>{{"user", "\"u1\""}}));
  EXPECT_EQ(events[0].time_unix_nanos, static_cast<int64_t>(kTime));
  EXPECT_EQ(events[0].id.size(), 64u);
  // No time: the receive time, which is also the record's.
  EXPECT_EQ(events[1].time_unix_nanos, received[1]);
  EXPECT_GT(received[1], 0);
  EXPECT_EQ(intake_->GetStats().events_accepted, 2u);
}

TEST_F(IntakeTest, OtlpJsonRepliesInJson) {
  Start();
  auto r = Post("/v1/logs", OtlpJson("hello json"), "application/json; charset=utf-8", acme_);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.Get("Content-Type").value_or(""), "application/json");
  EXPECT_EQ(r.body, "{}");
  auto events = WalEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].body, "hello json");
  EXPECT_EQ(events[0].attributes, (std::vector<Attribute>{{"http.status", "200"}}));
}

TEST_F(IntakeTest, PartialSuccessInBothEncodings) {
  Start();
  // The second record's trace_id is 3 bytes: unusable, left out, counted.
  std::string body = OneScopeRequest("svc", Record(kTime, "good") + Record(kTime, "bad", LenField(9, "abc")));
  auto r = Post("/v1/logs", body, "application/x-protobuf", acme_);
  ASSERT_EQ(r.status, 200);
  // ExportLogsServiceResponse{1: partial_success{1: rejected_log_records, 2: error_message}}
  ASSERT_GE(r.body.size(), 2u);
  EXPECT_EQ(r.body[0], 0x0a);
  EXPECT_EQ(ProtoVarint(std::string_view(r.body).substr(2), 1), 1u);
  EXPECT_THAT(r.body, HasSubstr("trace_id"));

  nlohmann::json j = nlohmann::json::parse(OtlpJson("good json"));
  auto bad = j["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0];
  bad["traceId"] = "abcd";
  j["resourceLogs"][0]["scopeLogs"][0]["logRecords"].push_back(bad);
  r = Post("/v1/logs", j.dump(), "application/json", acme_);
  ASSERT_EQ(r.status, 200);
  auto reply = nlohmann::json::parse(r.body);
  EXPECT_EQ(reply["partialSuccess"]["rejectedLogRecords"], "1");
  EXPECT_THAT(reply["partialSuccess"]["errorMessage"].get<std::string>(), HasSubstr("traceId"));

  auto events = WalEvents();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].body, "good");
  EXPECT_EQ(events[1].body, "good json");
  EXPECT_EQ(intake_->GetStats().records_rejected, 2u);
}

TEST_F(IntakeTest, GzipBodiesAndZipBombs) {
  IntakeOptions io;
  io.max_batch_bytes = 1 << 20;
  Start(tmp_.path() + "/wal", {}, io);
  auto r = Post("/v1/logs", Gzip(OtlpJson("compressed")), "application/json", acme_, "gzip");
  EXPECT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(WalEvents().size(), 1u);
  EXPECT_EQ(WalEvents()[0].body, "compressed");

  // 64 MiB of spaces inside a valid JSON document gzips to ~64 KiB: refused at the 1 MiB limit.
  std::string bomb = "{\"resourceLogs\":[]" + std::string(64 << 20, ' ') + "}";
  std::string packed = Gzip(bomb);
  ASSERT_LT(packed.size(), 1u << 20);
  r = Post("/v1/logs", packed, "application/json", acme_, "gzip");
  EXPECT_EQ(r.status, 413) << r.body;

  r = Post("/v1/logs", "this is not gzip", "application/json", acme_, "gzip");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_THAT(r.body, HasSubstr("gzip"));
  r = Post("/v1/logs", OtlpJson("x"), "application/json", acme_, "br");
  EXPECT_EQ(r.status, 415) << r.body;
  EXPECT_EQ(WalEvents().size(), 1u);
}

TEST(InflateGzip, ConcatenatedMembersAndTruncation) {
  std::string two = Gzip("hello ") + Gzip("world");
  auto r = InflateGzip(two, 100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "hello world");
  EXPECT_EQ(InflateGzip(two, 10).status().code(), Code::kResourceExhausted);
  EXPECT_EQ(*InflateGzip(two, 11), "hello world");  // exactly at the limit is fine
  std::string whole = Gzip(std::string(10000, 'a'));
  EXPECT_EQ(InflateGzip(whole.substr(0, whole.size() / 2), 1 << 20).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(InflateGzip("", 100).status().code(), Code::kInvalidArgument);
}

TEST(SplitIntoRecords, StaysUnderTheLimitAndKeepsOrder) {
  std::vector<Event> events(100);
  for (size_t i = 0; i < events.size(); ++i) {
    events[i].id = std::to_string(i);
    events[i].body = std::string(1000, 'b');
  }
  auto records = SplitIntoRecords(events, 42, 10000);
  ASSERT_TRUE(records.ok());
  EXPECT_GT(records->size(), 10u);
  std::vector<std::string> ids;
  for (const std::string& rec : *records) {
    EXPECT_LE(rec.size(), 10000u);
    auto batch = DecodeRecord(rec);
    ASSERT_TRUE(batch.ok());
    EXPECT_EQ(batch->received_unix_nanos, 42);
    for (auto& e : batch->events) ids.push_back(e.id);
  }
  ASSERT_EQ(ids.size(), 100u);
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], std::to_string(i));
  events[50].body = std::string(20000, 'x');
  EXPECT_EQ(SplitIntoRecords(events, 42, 10000).status().code(), Code::kInvalidArgument);
}

TEST_F(IntakeTest, NdjsonRepliesWithIdsInOrderAndARetryGetsTheSameIds) {
  Start();
  std::string body =
      "{\"time\":\"2026-11-30T01:00:00Z\",\"type\":\"agent.action\",\"attributes\":{\"tool\":\"search\"}}\n"
      "{\"id\":\"my-id-1\",\"time\":1795986592185000000,\"type\":\"agent.action\",\"body\":\"hi\"}\n"
      "\n"
      "{\"time\":\"2026-11-30T01:00:00Z\",\"type\":\"agent.action\",\"attributes\":{\"tool\":\"search\"}}\n";
  auto r = Post("/v1/events", body, "application/x-ndjson", acme_);
  ASSERT_EQ(r.status, 200) << r.body;
  auto reply = nlohmann::json::parse(r.body);
  EXPECT_EQ(reply["accepted"], 3);
  ASSERT_EQ(reply["ids"].size(), 3u);
  EXPECT_EQ(reply["ids"][1], "my-id-1");
  EXPECT_NE(reply["ids"][0], reply["ids"][2]) << "identical lines are still two events";

  auto again = Post("/v1/events", body, "application/x-ndjson", acme_);
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(nlohmann::json::parse(again.body)["ids"], reply["ids"]);

  auto events = WalEvents();
  ASSERT_EQ(events.size(), 6u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(events[i].id, reply["ids"][i].get<std::string>());
    EXPECT_EQ(events[i + 3].id, events[i].id);
    EXPECT_EQ(events[i].org, "acme");
  }
}

TEST_F(IntakeTest, RetriedOtlpBatchGetsTheSameIdsEvenWithoutTimes) {
  Start();
  std::string body = OneScopeRequest("svc", Record(kTime, "a") + Record(0, "b"));
  ASSERT_EQ(Post("/v1/logs", body, "application/x-protobuf", acme_).status, 200);
  ASSERT_EQ(Post("/v1/logs", body, "application/x-protobuf", acme_).status, 200);
  auto events = WalEvents();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].id, events[2].id);
  EXPECT_EQ(events[1].id, events[3].id) << "ids come before the receive time is filled in";
}

TEST_F(IntakeTest, KeysMissingWrongRevokedOrWrongScopeAre401) {
  Start();
  std::string body = OtlpJson("x");
  std::string wrong = acme_;
  wrong.back() = wrong.back() == '0' ? '1' : '0';
  for (const std::string& key : {std::string(), wrong, revoked_, query_, std::string("gvk_short")}) {
    auto r = Post("/v1/logs", body, "application/json", key);
    EXPECT_EQ(r.status, 401) << key;
    EXPECT_EQ(r.headers.Get("WWW-Authenticate").value_or(""), "Bearer");
    auto status = nlohmann::json::parse(r.body, nullptr, false);
    EXPECT_EQ(status["code"], 16) << r.body;  // google.rpc.Code UNAUTHENTICATED
    r = Post("/v1/events", "{\"time\":1,\"type\":\"t\"}\n", "application/x-ndjson", key);
    EXPECT_EQ(r.status, 401);
    EXPECT_EQ(r.headers.Get("Content-Type").value_or(""), "application/problem+json");
  }
  // A basic-auth header is not a bearer key.
  net::ClientRequest req{.method = net::Method::kPost, .url = base_ + "/v1/logs", .body = body};
  req.headers.Set("Content-Type", "application/json");
  req.headers.Set("Authorization", "Basic " + acme_);
  EXPECT_EQ(client_.Send(std::move(req))->status, 401);
  EXPECT_TRUE(WalEvents().empty());
}

TEST_F(IntakeTest, WrongContentTypeIs415) {
  Start();
  auto r = Post("/v1/logs", OtlpJson("x"), "text/plain", acme_);
  EXPECT_EQ(r.status, 415);
  EXPECT_EQ(ProtoVarint(r.body, 1), 3u) << "google.rpc.Status in protobuf, OTLP's default";
  r = Post("/v1/logs", OtlpJson("x"), "", acme_);
  EXPECT_EQ(r.status, 415);
  r = Post("/v1/events", "{\"time\":1,\"type\":\"t\"}\n", "application/json", acme_);
  EXPECT_EQ(r.status, 415);
  EXPECT_THAT(r.body, HasSubstr("application/x-ndjson"));
  EXPECT_TRUE(WalEvents().empty());
}

TEST_F(IntakeTest, MalformedBodiesAre400AndDoNotDisturbOtherSenders) {
  Start();
  std::atomic<bool> stop{false};
  std::atomic<int> good_ok{0}, good_other{0};
  std::thread good([&] {
    net::HttpClient client;
    while (!stop) {
      net::ClientRequest req{.method = net::Method::kPost,
                             .url = base_ + "/v1/events",
                             .body = "{\"time\":1,\"type\":\"good\"}\n"};
      req.headers.Set("Content-Type", "application/x-ndjson");
      req.headers.Set("Authorization", "Bearer " + globex_);
      auto r = client.Send(std::move(req));
      (r.ok() && r->status == 200 ? good_ok : good_other)++;
    }
  });
  int bad = 0;
  for (int i = 0; i < 20; ++i) {
    auto r = Post("/v1/logs", std::string("\x0a\xff\xff\xff\xff\x0f", 6), "application/x-protobuf", acme_);
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(ProtoVarint(r.body, 1), 3u);  // INVALID_ARGUMENT
    r = Post("/v1/logs", "{\"resourceLogs\": [", "application/json", acme_);
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(nlohmann::json::parse(r.body)["code"], 3);
    r = Post("/v1/events", "{\"time\":1,\"type\":\"ok\"}\n{\"tme\":1}\n", "application/x-ndjson", acme_);
    EXPECT_EQ(r.status, 400);
    EXPECT_THAT(r.body, HasSubstr("line 2"));
    bad += 3;
  }
  while (good_ok < 20) std::this_thread::yield();
  stop = true;
  good.join();
  EXPECT_EQ(good_other.load(), 0);
  for (const Event& e : WalEvents()) EXPECT_EQ(e.org, "globex") << "nothing of a refused batch is kept";
  EXPECT_EQ(WalEvents().size(), static_cast<size_t>(good_ok.load()));
}

TEST_F(IntakeTest, OversizedIs413AndTooManyEventsIs400) {
  IntakeOptions io;
  io.max_batch_bytes = 64 << 10;
  io.max_batch_events = 5;
  Start(tmp_.path() + "/wal", {}, io);
  std::string big = "{\"time\":1,\"type\":\"t\",\"body\":\"" + std::string(70 << 10, 'x') + "\"}\n";
  EXPECT_EQ(Post("/v1/events", big, "application/x-ndjson", acme_).status, 413);
  std::string six;
  for (int i = 0; i < 6; ++i) six += "{\"time\":1,\"type\":\"t\"}\n";
  auto r = Post("/v1/events", six, "application/x-ndjson", acme_);
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("more than 5"));
  EXPECT_TRUE(WalEvents().empty());
}

TEST_F(IntakeTest, BadUtf8Is400) {
  Start();
  std::string proto = OneScopeRequest("svc", Record(kTime, "bad \xff utf-8"));
  auto r = Post("/v1/logs", proto, "application/x-protobuf", acme_);
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("UTF-8"));
  r = Post("/v1/events", "{\"time\":1,\"type\":\"t\",\"body\":\"\xc3\x28\"}\n", "application/x-ndjson",
           acme_);
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("line 1"));
  EXPECT_TRUE(WalEvents().empty());
}

// PostgreSQL text and jsonb hold no NUL: such events are refused at intake, never left to stall ingest.
TEST_F(IntakeTest, NulCharactersAreRefusedNotStored) {
  Start();
  nlohmann::json j = nlohmann::json::parse(OtlpJson("good"));
  auto bad = j["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0];
  bad["body"] = {{"stringValue", std::string("nul\0byte", 8)}};
  j["resourceLogs"][0]["scopeLogs"][0]["logRecords"].push_back(bad);
  auto r = Post("/v1/logs", j.dump(), "application/json", acme_);
  ASSERT_EQ(r.status, 200) << r.body;
  auto reply = nlohmann::json::parse(r.body);
  EXPECT_EQ(reply["partialSuccess"]["rejectedLogRecords"], "1");
  EXPECT_THAT(reply["partialSuccess"]["errorMessage"].get<std::string>(), HasSubstr("NUL"));

  r = Post("/v1/events", "{\"time\":1,\"type\":\"t\"}\n{\"time\":1,\"type\":\"t\",\"attributes\":{\"k\":\"a\\u0000b\"}}\n",
           "application/x-ndjson", acme_);
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("event 2"));
  EXPECT_THAT(r.body, HasSubstr("NUL"));
  auto events = WalEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].body, "good");
}

TEST_F(IntakeTest, IngestLagIs429WithRetryAfterAndNothingIsAppended) {
  Start();
  oldest_ = (Clock::Real().UnixMicros() - 60'000'000) * 1000;  // a minute behind, the bound is 30 s
  auto r = Post("/v1/events", "{\"time\":1,\"type\":\"t\"}\n", "application/x-ndjson", acme_);
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.headers.Get("Retry-After").value_or(""), "2");
  r = Post("/v1/logs", OtlpJson("x"), "application/json", acme_);
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(nlohmann::json::parse(r.body)["code"], 8);  // RESOURCE_EXHAUSTED
  EXPECT_TRUE(WalEvents().empty());
  oldest_ = (Clock::Real().UnixMicros() - 1'000'000) * 1000;  // one second behind: within the bound
  EXPECT_EQ(Post("/v1/events", "{\"time\":1,\"type\":\"t\"}\n", "application/x-ndjson", acme_).status, 200);
  oldest_ = 0;
  EXPECT_EQ(Post("/v1/events", "{\"time\":2,\"type\":\"t\"}\n", "application/x-ndjson", acme_).status, 200);
  EXPECT_EQ(WalEvents().size(), 2u);
}

TEST_F(IntakeTest, FullWalDiskIs503UntilSpaceIsFreed) {
  std::string mnt = tmp_.path() + "/mnt";
  std::filesystem::create_directory(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=2m") != 0) {
    int err = errno;
    // Only a non-root run may skip: as root a refused mount is a failure.
    if ((err == EPERM || err == EACCES) && ::geteuid() != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs (" << std::strerror(err) << "): run as root to test a full disk";
    }
    FAIL() << "mount tmpfs: " << std::strerror(err);
  }
  struct Unmount {
    std::string dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{mnt};
  {
    std::ofstream f(mnt + "/filler", std::ios::binary);
    std::string block(64 << 10, 'f');
    for (int i = 0; i < 20; ++i) f.write(block.data(), static_cast<std::streamsize>(block.size()));
  }
  wal::Options wo;
  wo.segment_size = 128 << 10;
  Start(mnt + "/wal", wo);
  size_t acked = 0;
  net::ClientResponse refused;
  for (int i = 0; i < 200; ++i) {
    std::string body;
    for (int k = 0; k < 20; ++k) {
      body += "{\"time\":" + std::to_string(i * 100 + k + 1) + ",\"type\":\"t\",\"body\":\"" +
              std::string(900, 'x') + "\"}\n";
    }
    auto r = Post("/v1/events", body, "application/x-ndjson", acme_);
    if (r.status != 200) {
      refused = r;
      break;
    }
    acked += 20;
  }
  ASSERT_EQ(refused.status, 503) << "the disk never filled, or: " << refused.body;
  EXPECT_EQ(refused.headers.Get("Retry-After").value_or(""), "5");
  EXPECT_THAT(refused.body, HasSubstr("full"));
  EXPECT_GT(acked, 0u);
  // Exactly the acknowledged events are in the log.
  EXPECT_EQ(WalEvents().size(), acked);

  std::filesystem::remove(mnt + "/filler");
  auto r = Post("/v1/events", "{\"time\":1,\"type\":\"after\"}\n", "application/x-ndjson", acme_);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(WalEvents().size(), acked + 1);
  TearDown();  // close the log before the tmpfs goes
}

}  // namespace
}  // namespace govern::telemetry
