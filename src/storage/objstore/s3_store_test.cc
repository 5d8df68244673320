// S3Store against a scripted fake S3 (a real net::Server on a real socket): retries and backoff, error
// mapping, multipart abort on failure, and that what goes on the wire is what was signed.
#include "storage/objstore/s3_store.h"

#include <gtest/gtest.h>

#include <deque>
#include <mutex>

#include "crypto/encoding.h"
#include "crypto/sha256.h"
#include "net/http_server.h"
#include "storage/objstore/s3_xml.h"

namespace govern::objstore {
namespace {

struct Seen {
  std::string method;
  std::string path;
  std::string query;
  net::Headers headers;
  std::string body;
};

class FakeS3 {
 public:
  FakeS3() {
    net::Router router;
    for (net::Method m : {net::Method::kGet, net::Method::kPut, net::Method::kPost, net::Method::kDelete,
                          net::Method::kHead}) {
      for (const char* pattern : {"/bkt", "/bkt/{key...}"}) {
        router.AddSync(
            m, pattern, [this](net::Request& r) { return Handle(r); },
            net::RouteOptions{.max_body_bytes = 32u << 20});
      }
    }
    net::ServerConfig config;
    config.workers = 1;
    server_ = std::make_unique<net::Server>(config, std::move(router));
  }
  Status Start() { return server_->Start(); }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

  // Queues the next response; with none queued the fake answers 500.
  void Reply(int status, std::string body = "", net::Headers headers = {}) {
    std::lock_guard lock(mu_);
    net::Response r;
    r.status = status;
    r.body = std::move(body);
    for (const auto& [k, v] : headers.fields()) r.headers.Add(k, v);
    replies_.push_back(std::move(r));
  }
  void ReplyError(int status, std::string_view code) {
    Reply(status, "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>" + std::string(code) +
                      "</Code><Message>scripted " + std::string(code) + "</Message></Error>");
  }
  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  net::Response Handle(net::Request& r) {
    std::lock_guard lock(mu_);
    seen_.push_back(Seen{r.method_name, r.path, r.query, r.headers, r.body});
    if (replies_.empty()) return net::Response(500, "nothing scripted");
    net::Response resp = std::move(replies_.front());
    replies_.pop_front();
    return resp;
  }

  std::mutex mu_;
  std::deque<net::Response> replies_;
  std::vector<Seen> seen_;
  std::unique_ptr<net::Server> server_;
};

class S3StoreTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fake_.Start().ok()); }

  S3Config Config() {
    S3Config c;
    c.endpoint = fake_.endpoint();
    c.bucket = "bkt";
    c.region = "eu-west-1";
    c.credentials = {"AKIDTEST", "secret/key+1", ""};
    c.sleep = [this](std::chrono::milliseconds d) { sleeps_.push_back(d); };
    return c;
  }
  std::unique_ptr<S3Store> Open(S3Config c) {
    auto s = S3Store::Create(std::move(c));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(s).value();
  }

  FakeS3 fake_;
  std::vector<std::chrono::milliseconds> sleeps_;
};

TEST_F(S3StoreTest, RetriesSlowDownAnd5xxWithBackoff) {
  auto store = Open(Config());
  fake_.ReplyError(503, "SlowDown");
  fake_.ReplyError(500, "InternalError");
  fake_.Reply(200);
  const Status s = store->Put("a/b", "payload");
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(fake_.seen().size(), 3u);
  EXPECT_EQ(sleeps_, (std::vector<std::chrono::milliseconds>{std::chrono::milliseconds(100),
                                                             std::chrono::milliseconds(200)}));
}

TEST_F(S3StoreTest, GivesUpAfterMaxAttemptsAsUnavailable) {
  S3Config c = Config();
  c.max_attempts = 3;
  auto store = Open(c);
  for (int i = 0; i < 3; ++i) fake_.ReplyError(503, "SlowDown");
  const Status s = store->Put("a/b", "payload");
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_NE(s.message().find("SlowDown"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("after 3 attempts"), std::string::npos) << s.message();
  EXPECT_EQ(fake_.seen().size(), 3u);
}

TEST_F(S3StoreTest, MapsS3ErrorCodesWithoutRetrying) {
  struct Case {
    int status;
    std::string code;  // empty: no body
    Code want;
  };
  const Case cases[] = {
      {404, "NoSuchKey", Code::kNotFound},
      {404, "NoSuchBucket", Code::kNotFound},
      {404, "", Code::kNotFound},
      {403, "AccessDenied", Code::kPermissionDenied},
      {403, "SignatureDoesNotMatch", Code::kUnauthenticated},
      {403, "InvalidAccessKeyId", Code::kUnauthenticated},
      {403, "RequestTimeTooSkewed", Code::kUnauthenticated},
      {403, "", Code::kPermissionDenied},
      {416, "InvalidRange", Code::kOutOfRange},
      {400, "InvalidArgument", Code::kInvalidArgument},
      {409, "OperationAborted", Code::kAborted},
  };
  auto store = Open(Config());
  size_t requests = 0;
  for (const Case& c : cases) {
    if (c.code.empty()) {
      fake_.Reply(c.status);
    } else {
      fake_.ReplyError(c.status, c.code);
    }
    const Status s = store->Get("k").status();
    EXPECT_EQ(s.code(), c.want) << c.status << " " << c.code << ": " << s.ToString();
    if (!c.code.empty()) {
      EXPECT_NE(s.message().find(c.code), std::string::npos) << s.message();
    }
    EXPECT_NE(s.message().find("\"k\""), std::string::npos) << "names the key: " << s.message();
    EXPECT_EQ(fake_.seen().size(), ++requests) << "not retried: " << c.code;
  }
  EXPECT_TRUE(sleeps_.empty());
}

TEST_F(S3StoreTest, MalformedErrorBodyStillGivesAClearError) {
  auto store = Open(Config());
  fake_.Reply(400, "<html>not s3</html>");
  const Status s = store->Get("k").status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("HTTP 400"), std::string::npos);
}

TEST_F(S3StoreTest, WhatIsSentIsWhatIsSigned) {
  auto store = Open(Config());
  fake_.Reply(200);
  ASSERT_TRUE(store->Put("dir/a b+\xC3\xA9.txt", "hello").ok());
  const Seen req = fake_.seen().at(0);
  EXPECT_EQ(req.method, "PUT");
  EXPECT_EQ(req.path, "/bkt/dir/a%20b%2B%C3%A9.txt");
  EXPECT_EQ(req.body, "hello");
  auto body_hash = crypto::Sha256(req.body);
  ASSERT_TRUE(body_hash.ok());
  EXPECT_EQ(req.headers.Get("x-amz-content-sha256").value_or(""), crypto::HexEncode(*body_hash));
  // Re-sign the request as received, as a server would, and compare.
  const std::string auth(req.headers.Get("Authorization").value_or(""));
  const std::string signed_list =
      auth.substr(auth.find("SignedHeaders=") + 14,
                  auth.find(',', auth.find("SignedHeaders=")) - auth.find("SignedHeaders=") - 14);
  EXPECT_EQ(signed_list, "content-type;host;x-amz-content-sha256;x-amz-date");
  sigv4::Request again{
      "PUT", req.path, {}, {}, std::string(req.headers.Get("x-amz-content-sha256").value_or(""))};
  for (std::string_view name : {"content-type", "host", "x-amz-content-sha256", "x-amz-date"}) {
    again.headers.emplace_back(std::string(name), std::string(req.headers.Get(name).value_or("")));
  }
  auto sig = sigv4::Sign(again, {"AKIDTEST", "secret/key+1", ""}, "eu-west-1", "s3",
                         std::string(req.headers.Get("x-amz-date").value_or("")));
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(auth, sig->authorization);
  EXPECT_NE(auth.find("Credential=AKIDTEST/"), std::string::npos);
  EXPECT_NE(auth.find("/eu-west-1/s3/aws4_request"), std::string::npos);
}

TEST_F(S3StoreTest, ListFollowsContinuationTokensAndSignsTheBucketPathWithoutSlash) {
  S3Config c = Config();
  c.list_page_size = 2;
  auto store = Open(c);
  fake_.Reply(
      200,
      "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>t+1/=</NextContinuationToken>"
      "<Contents><Key>p/b</Key><Size>2</Size><ETag>\"e2\"</ETag></Contents>"
      "<Contents><Key>p/a</Key><Size>1</Size><ETag>\"e1\"</ETag></Contents></ListBucketResult>");
  fake_.Reply(200,
              "<ListBucketResult><IsTruncated>false</IsTruncated>"
              "<Contents><Key>p/c</Key><Size>3</Size></Contents></ListBucketResult>");
  auto listed = store->List("p/");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ((*listed)[0].key, "p/a");
  EXPECT_EQ((*listed)[0].etag, "e1");
  EXPECT_EQ((*listed)[2].size, 3u);
  const auto seen = fake_.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].path, "/bkt");
  EXPECT_EQ(seen[0].query, "list-type=2&max-keys=2&prefix=p%2F");
  EXPECT_EQ(seen[1].query, "continuation-token=t%2B1%2F%3D&list-type=2&max-keys=2&prefix=p%2F");
}

TEST_F(S3StoreTest, MultipartSendsPartsAndCompletesWithTheirETags) {
  S3Config c = Config();
  c.multipart_threshold = 6u << 20;
  c.part_size = 1;  // raised to the 5 MiB minimum
  auto store = Open(c);
  const std::string data((11u << 20) + 5, 'd');
  fake_.Reply(200,
              "<InitiateMultipartUploadResult><UploadId>up-1</UploadId></InitiateMultipartUploadResult>");
  for (int i = 1; i <= 3; ++i) {
    net::Headers h;
    h.Set("ETag", "\"etag-" + std::to_string(i) + "\"");
    fake_.Reply(200, "", h);
  }
  fake_.Reply(200, "<CompleteMultipartUploadResult><ETag>\"x-3\"</ETag></CompleteMultipartUploadResult>");
  const Status s = store->Put("big", data);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const auto seen = fake_.seen();
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].query, "uploads=");
  EXPECT_EQ(seen[1].query, "partNumber=1&uploadId=up-1");
  EXPECT_EQ(seen[1].body.size(), 5u << 20);
  EXPECT_EQ(seen[2].body.size(), 5u << 20);
  EXPECT_EQ(seen[3].query, "partNumber=3&uploadId=up-1");
  EXPECT_EQ(seen[3].body.size(), (1u << 20) + 5);
  EXPECT_EQ(seen[4].method, "POST");
  EXPECT_EQ(seen[4].query, "uploadId=up-1");
  EXPECT_EQ(seen[4].body, xml::CompleteMultipartUploadBody({"\"etag-1\"", "\"etag-2\"", "\"etag-3\""}));
}

TEST_F(S3StoreTest, FailedPartAbortsTheUpload) {
  S3Config c = Config();
  c.multipart_threshold = 6u << 20;
  auto store = Open(c);
  fake_.Reply(200,
              "<InitiateMultipartUploadResult><UploadId>up-2</UploadId></InitiateMultipartUploadResult>");
  net::Headers h;
  h.Set("ETag", "\"e\"");
  fake_.Reply(200, "", h);
  fake_.ReplyError(400, "EntityTooSmall");
  fake_.Reply(204);
  const Status s = store->Put("big", std::string(11u << 20, 'x'));
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("EntityTooSmall"), std::string::npos);
  EXPECT_NE(s.message().find("part 2"), std::string::npos) << s.message();
  const auto seen = fake_.seen();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[3].method, "DELETE");
  EXPECT_EQ(seen[3].query, "uploadId=up-2");
}

TEST_F(S3StoreTest, CompleteAnsweringAnErrorWith200AbortsToo) {
  S3Config c = Config();
  c.multipart_threshold = 6u << 20;
  c.part_size = 5u << 20;
  c.max_attempts = 1;
  auto store = Open(c);
  fake_.Reply(200,
              "<InitiateMultipartUploadResult><UploadId>up-3</UploadId></InitiateMultipartUploadResult>");
  for (int i = 0; i < 2; ++i) {
    net::Headers h;
    h.Set("ETag", "\"e\"");
    fake_.Reply(200, "", h);
  }
  fake_.Reply(200, "<Error><Code>InternalError</Code><Message>late failure</Message></Error>");
  fake_.Reply(204);
  const Status s = store->Put("big", std::string(7u << 20, 'x'));
  EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("late failure"), std::string::npos);
  const auto seen = fake_.seen();
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[4].method, "DELETE");
}

TEST_F(S3StoreTest, RangedGetAndHead) {
  auto store = Open(Config());
  fake_.Reply(206, "5678");
  auto got = store->GetRange("f", 5, 4);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, "5678");
  EXPECT_EQ(fake_.seen().at(0).headers.Get("Range").value_or(""), "bytes=5-8");
  fake_.Reply(200, "0123456789");  // a server that ignores Range
  EXPECT_EQ(*store->GetRange("f", 8, 4), "89");
  fake_.ReplyError(404, "NoSuchKey");
  EXPECT_EQ(store->GetRange("f", 0, 1).status().code(), Code::kNotFound);
}

TEST_F(S3StoreTest, DeleteOfAMissingKeyIsOk) {
  auto store = Open(Config());
  fake_.Reply(204);
  EXPECT_TRUE(store->Delete("gone").ok());
  fake_.ReplyError(404, "NoSuchKey");
  EXPECT_TRUE(store->Delete("gone").ok());
  fake_.ReplyError(404, "NoSuchBucket");
  EXPECT_EQ(store->Delete("gone").code(), Code::kNotFound);
}

TEST_F(S3StoreTest, BadKeysNeverReachTheServer) {
  auto store = Open(Config());
  EXPECT_EQ(store->Put("../x", "x").code(), Code::kInvalidArgument);
  EXPECT_EQ(store->Get("/x").status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(fake_.seen().empty());
}

TEST(S3StoreConfig, ValidatesAndBuildsUrlsForBothAddressingStyles) {
  S3Config c;
  c.endpoint = "https://s3.eu-west-1.amazonaws.com";
  c.bucket = "my-archive";
  c.credentials = {"AK", "SK", ""};
  c.addressing = Addressing::kVirtualHosted;
  auto vh = S3Store::Create(c);
  ASSERT_TRUE(vh.ok());
  EXPECT_EQ((*vh)->ObjectUrl("a b/c"), "https://my-archive.s3.eu-west-1.amazonaws.com/a%20b/c");
  c.addressing = Addressing::kPath;
  c.endpoint = "http://127.0.0.1:9000/";
  auto ps = S3Store::Create(c);
  ASSERT_TRUE(ps.ok());
  EXPECT_EQ((*ps)->ObjectUrl("a b/c"), "http://127.0.0.1:9000/my-archive/a%20b/c");
  c.endpoint = "http://host:80";
  EXPECT_EQ((*S3Store::Create(c))->ObjectUrl("k"), "http://host/my-archive/k") << "default port left out";

  auto bad = [&](auto mutate) {
    S3Config b = c;
    mutate(b);
    return S3Store::Create(b).status().code();
  };
  EXPECT_EQ(bad([](S3Config& b) { b.endpoint = "ftp://x"; }), Code::kInvalidArgument);
  EXPECT_EQ(bad([](S3Config& b) { b.endpoint = "http://x/path"; }), Code::kInvalidArgument);
  EXPECT_EQ(bad([](S3Config& b) { b.bucket = "Bad_Bucket"; }), Code::kInvalidArgument);
  EXPECT_EQ(bad([](S3Config& b) { b.bucket = "ab"; }), Code::kInvalidArgument);
  EXPECT_EQ(bad([](S3Config& b) { b.credentials.secret_access_key.clear(); }), Code::kInvalidArgument);
  EXPECT_EQ(bad([](S3Config& b) { b.list_page_size = 0; }), Code::kInvalidArgument);
}

TEST(S3StoreConfig, CredentialsFromEnvironmentFillOnlyWhatIsMissing) {
  auto env = [](const char* name) -> const char* {
    const std::string n = name;
    if (n == "AWS_ACCESS_KEY_ID") return "ENVKEY";
    if (n == "AWS_SECRET_ACCESS_KEY") return "ENVSECRET";
    return nullptr;
  };
  S3Config c;
  c.credentials.access_key_id = "CONFIGKEY";
  ASSERT_TRUE(LoadCredentialsFromEnv(c, env).ok());
  EXPECT_EQ(c.credentials.access_key_id, "CONFIGKEY");
  EXPECT_EQ(c.credentials.secret_access_key, "ENVSECRET");
  EXPECT_EQ(c.credentials.session_token, "");
  S3Config none;
  EXPECT_EQ(LoadCredentialsFromEnv(none, [](const char*) -> const char* { return nullptr; }).code(),
            Code::kInvalidArgument);
}

}  // namespace
}  // namespace govern::objstore
