// SigV4 against the examples AWS publishes: the S3 "Authorization header" examples (2013-05-24,
// examplebucket) and cases from the aws-sig-v4-test-suite (2015-08-30, service "service").
#include "storage/objstore/sigv4.h"

#include <gtest/gtest.h>

namespace govern::objstore::sigv4 {
namespace {

constexpr char kEmptyHash[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

struct Vector {
  const char* name;
  Credentials credentials;
  const char* region;
  const char* service;
  const char* amz_date;
  Request request;
  const char* signature;
  const char* signed_headers;
};

const Credentials kS3Docs{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
const Credentials kSuite{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};

std::vector<Vector> Vectors() {
  return {
      {"s3_get_object_with_range",
       kS3Docs,
       "us-east-1",
       "s3",
       "20130524T000000Z",
       {"GET",
        "/test.txt",
        {},
        {{"Host", "examplebucket.s3.amazonaws.com"},
         {"Range", "bytes=0-9"},
         {"x-amz-content-sha256", kEmptyHash},
         {"x-amz-date", "20130524T000000Z"}},
        kEmptyHash},
       "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
       "host;range;x-amz-content-sha256;x-amz-date"},
      {"s3_put_object",
       kS3Docs,
       "us-east-1",
       "s3",
       "20130524T000000Z",
       {"PUT",
        "/" + UriEncode("test$file.text", true),
        {},
        {{"Host", "examplebucket.s3.amazonaws.com"},
         {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
         {"x-amz-date", "20130524T000000Z"},
         {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
         {"x-amz-content-sha256", "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"}},
        "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"},
       "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
       "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class"},
      {"s3_get_bucket_lifecycle",
       kS3Docs,
       "us-east-1",
       "s3",
       "20130524T000000Z",
       {"GET",
        "/",
        {{"lifecycle", ""}},
        {{"Host", "examplebucket.s3.amazonaws.com"},
         {"x-amz-date", "20130524T000000Z"},
         {"x-amz-content-sha256", kEmptyHash}},
        kEmptyHash},
       "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
       "host;x-amz-content-sha256;x-amz-date"},
      {"s3_list_objects",
       kS3Docs,
       "us-east-1",
       "s3",
       "20130524T000000Z",
       {"GET",
        "/",
        {{"prefix", "J"}, {"max-keys", "2"}},
        {{"Host", "examplebucket.s3.amazonaws.com"},
         {"x-amz-date", "20130524T000000Z"},
         {"x-amz-content-sha256", kEmptyHash}},
        kEmptyHash},
       "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
       "host;x-amz-content-sha256;x-amz-date"},
      {"suite_get_vanilla",
       kSuite,
       "us-east-1",
       "service",
       "20150830T123600Z",
       {"GET", "/", {}, {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}}, kEmptyHash},
       "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
       "host;x-amz-date"},
      {"suite_get_vanilla_query_order_key_case",
       kSuite,
       "us-east-1",
       "service",
       "20150830T123600Z",
       {"GET",
        "/",
        {{"Param2", "value2"}, {"Param1", "value1"}},
        {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}},
        kEmptyHash},
       "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
       "host;x-amz-date"},
      {"suite_get_vanilla_empty_query_key",
       kSuite,
       "us-east-1",
       "service",
       "20150830T123600Z",
       {"GET",
        "/",
        {{"Param1", "value1"}},
        {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}},
        kEmptyHash},
       "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb",
       "host;x-amz-date"},
      {"suite_get_utf8",
       kSuite,
       "us-east-1",
       "service",
       "20150830T123600Z",
       {"GET",
        UriEncode("/\xE1\x88\xB4", true),
        {},
        {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}},
        kEmptyHash},
       "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85",
       "host;x-amz-date"},
  };
}

TEST(SigV4, PublishedVectors) {
  for (const Vector& v : Vectors()) {
    SCOPED_TRACE(v.name);
    auto sig = Sign(v.request, v.credentials, v.region, v.service, v.amz_date);
    ASSERT_TRUE(sig.ok()) << sig.status().ToString();
    EXPECT_EQ(sig->signature, v.signature) << sig->canonical_request << "\n---\n" << sig->string_to_sign;
    const std::string scope = std::string(v.amz_date).substr(0, 8) + "/" + v.region + "/" + v.service;
    EXPECT_EQ(sig->authorization, "AWS4-HMAC-SHA256 Credential=" + v.credentials.access_key_id + "/" + scope +
                                      "/aws4_request, SignedHeaders=" + v.signed_headers +
                                      ", Signature=" + v.signature);
  }
}

TEST(SigV4, S3GetObjectCanonicalRequestMatchesTheDocumentedText) {
  const Vector v = Vectors()[0];
  auto sig = Sign(v.request, v.credentials, v.region, v.service, v.amz_date);
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(sig->canonical_request,
            "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
            "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
            "x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sig->string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
}

TEST(SigV4, UriEncodeKeepsOnlyUnreservedAndSlash) {
  struct Case {
    std::string in;
    bool keep_slash;
    std::string out;
  };
  const Case cases[] = {
      {"a/b c.txt", true, "a/b%20c.txt"}, {"a/b c.txt", false, "a%2Fb%20c.txt"},
      {"AZaz09-._~", true, "AZaz09-._~"}, {"+=&?#%*", true, "%2B%3D%26%3F%23%25%2A"},
      {"caf\xC3\xA9", true, "caf%C3%A9"}, {"", true, ""},
  };
  for (const Case& c : cases) EXPECT_EQ(UriEncode(c.in, c.keep_slash), c.out) << c.in;
}

TEST(SigV4, CanonicalQueryStringSortsAndEncodes) {
  EXPECT_EQ(CanonicalQueryString({}), "");
  EXPECT_EQ(CanonicalQueryString({{"uploads", ""}}), "uploads=");
  EXPECT_EQ(
      CanonicalQueryString({{"prefix", "logs/a b"}, {"list-type", "2"}, {"continuation-token", "x+y/z="}}),
      "continuation-token=x%2By%2Fz%3D&list-type=2&prefix=logs%2Fa%20b");
  EXPECT_EQ(CanonicalQueryString({{"uploadId", "abc"}, {"partNumber", "2"}}), "partNumber=2&uploadId=abc");
}

TEST(SigV4, HeaderValuesAreTrimmedAndRepeatedNamesJoined) {
  Request r{"GET",
            "/",
            {},
            {{"Host", "h"}, {"X-A", "  one   two "}, {"x-a", "three"}, {"x-amz-date", "20150830T123600Z"}},
            kEmptyHash};
  auto sig = Sign(r, kSuite, "us-east-1", "s3", "20150830T123600Z");
  ASSERT_TRUE(sig.ok());
  EXPECT_NE(sig->canonical_request.find("x-a:one two,three\n"), std::string::npos) << sig->canonical_request;
  EXPECT_NE(sig->authorization.find("SignedHeaders=host;x-a;x-amz-date,"), std::string::npos);
}

TEST(SigV4, RefusesMissingCredentialsAndBadDates) {
  Request r{"GET", "/", {}, {{"host", "h"}}, kEmptyHash};
  EXPECT_EQ(Sign(r, Credentials{}, "us-east-1", "s3", "20150830T123600Z").status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(Sign(r, kSuite, "us-east-1", "s3", "2015-08-30").status().code(), Code::kInvalidArgument);
}

TEST(SigV4, AmzDateFormatsUtc) {
  EXPECT_EQ(AmzDate(1369353600LL * 1000000), "20130524T000000Z");
  EXPECT_EQ(AmzDate(1440938160LL * 1000000 + 999999), "20150830T123600Z");
}

}  // namespace
}  // namespace govern::objstore::sigv4
