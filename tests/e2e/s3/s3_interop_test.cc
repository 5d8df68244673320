// S3Store against a real S3-compatible server that checks SigV4 (s3rver, started by server.mjs, which
// passes the endpoint, bucket and keys in GOVERN_S3_* environment variables).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "storage/objstore/s3_store.h"

namespace govern::objstore {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

S3Config Config() {
  S3Config c;
  c.endpoint = Env("GOVERN_S3_ENDPOINT");
  c.bucket = Env("GOVERN_S3_BUCKET");
  c.region = Env("GOVERN_S3_REGION");
  c.credentials.access_key_id = Env("GOVERN_S3_ACCESS_KEY_ID");
  c.credentials.secret_access_key = Env("GOVERN_S3_SECRET_ACCESS_KEY");
  c.addressing = Addressing::kPath;
  return c;
}

std::unique_ptr<S3Store> Open(S3Config c) {
  auto s = S3Store::Create(std::move(c));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

// Deterministic, non-repeating-looking bytes so a misplaced part shows up as a mismatch.
std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    s[i] = static_cast<char>(x);
  }
  return s;
}

class S3Interop : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Env("GOVERN_S3_ENDPOINT").empty()) GTEST_SKIP() << "run through run.sh (it starts s3rver)";
    store_ = Open(Config());
    ASSERT_NE(store_, nullptr);
  }
  std::unique_ptr<S3Store> store_;
};

TEST_F(S3Interop, PutGetHeadDelete) {
  const std::string key = "logs/org=acme/hour=01/part-0.parquet";
  const std::string data = Pattern(100000, 1);
  ASSERT_TRUE(store_->Put(key, data).ok());
  auto got = store_->Get(key);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, data);
  auto head = store_->Head(key);
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->size, data.size());
  EXPECT_FALSE(head->etag.empty());
  ASSERT_TRUE(store_->Delete(key).ok());
  const Status missing = store_->Get(key).status();
  EXPECT_EQ(missing.code(), Code::kNotFound) << missing.ToString();
  EXPECT_NE(missing.message().find("NoSuchKey"), std::string::npos) << missing.message();
  EXPECT_EQ(store_->Head(key).status().code(), Code::kNotFound);
  EXPECT_TRUE(store_->Delete(key).ok()) << "delete of a missing key is ok";
}

TEST_F(S3Interop, RangedGetReadsAParquetStyleFooter) {
  const std::string data = Pattern(5000, 2);
  ASSERT_TRUE(store_->Put("ranged/file", data).ok());
  auto head = store_->Head("ranged/file");
  ASSERT_TRUE(head.ok());
  auto footer = store_->GetRange("ranged/file", head->size - 8, 8);
  ASSERT_TRUE(footer.ok()) << footer.status().ToString();
  EXPECT_EQ(*footer, data.substr(data.size() - 8));
  auto middle = store_->GetRange("ranged/file", 1000, 123);
  ASSERT_TRUE(middle.ok());
  EXPECT_EQ(*middle, data.substr(1000, 123));
  auto past_end = store_->GetRange("ranged/file", 4990, 100);
  ASSERT_TRUE(past_end.ok()) << past_end.status().ToString();
  EXPECT_EQ(*past_end, data.substr(4990));
  EXPECT_EQ(store_->GetRange("ranged/file", 5000, 10).status().code(), Code::kOutOfRange);
  EXPECT_EQ(store_->GetRange("ranged/missing", 0, 10).status().code(), Code::kNotFound);
}

TEST_F(S3Interop, KeysWithSpacesUnicodeAndSymbols) {
  const std::vector<std::string> keys = {"odd/with space.txt",
                                         "odd/caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC.bin",
                                         "odd/emoji-\xF0\x9F\x98\x80",
                                         "odd/dt=2026-11-29/a+b&c$d@e,f;g.txt",
                                         "odd/tilde~under_score-dash.dot",
                                         "odd/paren(1)!*'"};
  for (const std::string& k : keys) {
    ASSERT_TRUE(store_->Put(k, "v:" + k).ok()) << k << ": " << store_->Put(k, "v:" + k).ToString();
  }
  for (const std::string& k : keys) {
    auto got = store_->Get(k);
    ASSERT_TRUE(got.ok()) << k << ": " << got.status().ToString();
    EXPECT_EQ(*got, "v:" + k);
  }
  auto listed = store_->List("odd/");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  // s3rver escapes '&' and '\'' twice in listing XML ("&amp;amp;"), unlike S3, so those keys are
  // compared by count only; our reader decodes what the server sent (tested in s3_xml_test).
  std::set<std::string> seen, want;
  for (const auto& o : *listed) {
    if (o.key.find_first_of("&'") == std::string::npos) seen.insert(o.key);
  }
  for (const auto& k : keys) {
    if (k.find_first_of("&'") == std::string::npos) want.insert(k);
  }
  EXPECT_EQ(listed->size(), keys.size());
  EXPECT_EQ(seen, want);
  auto prefixed = store_->List("odd/caf\xC3\xA9");
  ASSERT_TRUE(prefixed.ok()) << prefixed.status().ToString();
  ASSERT_EQ(prefixed->size(), 1u);
}

TEST_F(S3Interop, ListPaginatesWithSmallPages) {
  S3Config c = Config();
  c.list_page_size = 7;
  auto store = Open(c);
  ASSERT_NE(store, nullptr);
  std::vector<std::string> keys;
  for (int i = 0; i < 53; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "paged/hour=%02d/part-%03d.parquet", i % 5, i);
    keys.push_back(name);
    ASSERT_TRUE(store->Put(name, std::string(static_cast<size_t>(i), 'x')).ok());
  }
  ASSERT_TRUE(store->Put("paged-not/x", "x").ok());
  std::sort(keys.begin(), keys.end());
  auto listed = store->List("paged/");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ((*listed)[i].key, keys[i]);
    const int n = std::atoi(keys[i].substr(keys[i].size() - 11, 3).c_str());
    EXPECT_EQ((*listed)[i].size, static_cast<uint64_t>(n));
  }
  auto none = store->List("nothing-here/");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(S3Interop, MultipartUploadOf12MiBReadsBackIdentical) {
  S3Config c = Config();
  c.multipart_threshold = 6u << 20;
  c.part_size = 5u << 20;
  auto store = Open(c);
  ASSERT_NE(store, nullptr);
  const std::string data = Pattern(12u << 20, 3);
  ASSERT_TRUE(store->Put("big/12mib.bin", data).ok());
  auto head = store->Head("big/12mib.bin");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->size, data.size());
  auto got = store->Get("big/12mib.bin");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == data) << "multipart object differs";
  auto tail = store->GetRange("big/12mib.bin", (10u << 20) - 4, 8);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(*tail, data.substr((10u << 20) - 4, 8)) << "bytes across the part boundary";
}

TEST_F(S3Interop, MultipartFromAFile) {
  S3Config c = Config();
  c.multipart_threshold = 5u << 20;
  c.part_size = 5u << 20;
  auto store = Open(c);
  ASSERT_NE(store, nullptr);
  const std::string data = Pattern((11u << 20) + 12345, 4);
  const std::string path =
      std::filesystem::temp_directory_path() / ("govern-s3-" + std::to_string(::getpid()));
  std::ofstream(path, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
  const Status s = store->PutFile("big/from-file.bin", path);
  std::filesystem::remove(path);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto got = store->Get("big/from-file.bin");
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(*got == data);
}

TEST_F(S3Interop, WrongSecretIsUnauthenticatedWithTheS3Code) {
  S3Config c = Config();
  c.credentials.secret_access_key += "x";
  c.max_attempts = 1;
  auto store = Open(c);
  ASSERT_NE(store, nullptr);
  const Status put = store->Put("denied/x", "x");
  EXPECT_EQ(put.code(), Code::kUnauthenticated) << put.ToString();
  EXPECT_NE(put.message().find("SignatureDoesNotMatch"), std::string::npos) << put.message();
  const Status list = store->List("").status();
  EXPECT_EQ(list.code(), Code::kUnauthenticated) << list.ToString();
  EXPECT_EQ(store_->Head("denied/x").status().code(), Code::kNotFound) << "nothing was written";
}

TEST_F(S3Interop, UnknownAccessKeyIsRefused) {
  S3Config c = Config();
  c.credentials.access_key_id = "NOSUCHKEY";
  c.max_attempts = 1;
  auto store = Open(c);
  ASSERT_NE(store, nullptr);
  const Status get = store->Get("anything").status();
  EXPECT_EQ(get.code(), Code::kUnauthenticated) << get.ToString();
  EXPECT_NE(get.message().find("InvalidAccessKeyId"), std::string::npos) << get.message();
}

TEST_F(S3Interop, MissingBucketIsNotFound) {
  S3Config c = Config();
  c.bucket = "no-such-bucket";
  auto store = Open(c);
  ASSERT_NE(store, nullptr);
  const Status s = store->Put("x", "x");
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("NoSuchBucket"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace govern::objstore
