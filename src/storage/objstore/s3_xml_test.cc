// The XML reader and the S3 shapes: documents in, values or errors out.
#include "storage/objstore/s3_xml.h"

#include <gtest/gtest.h>

namespace govern::objstore::xml {
namespace {

TEST(S3Xml, ParsesAnErrorBody) {
  auto e = ParseError(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code><Message>The specified key "
      "does not exist.</Message><Resource>/archive/a&amp;b</Resource><RequestId>4442587FB7D0A2F9</RequestId>"
      "</Error>");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->code, "NoSuchKey");
  EXPECT_EQ(e->message, "The specified key does not exist.");
  EXPECT_EQ(e->resource, "/archive/a&b");
  EXPECT_EQ(e->request_id, "4442587FB7D0A2F9");
}

TEST(S3Xml, ParsesAListPageWithNamespaceAndEntities) {
  auto page = ParseListObjectsV2(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Name>archive</Name><Prefix>logs/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>"
      "<IsTruncated>true</IsTruncated>"
      "<Contents><Key>logs/a &lt;1&gt; caf\xC3\xA9</Key><LastModified>2026-11-29T00:00:00.000Z</LastModified>"
      "<ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>12</Size>"
      "<StorageClass>STANDARD</StorageClass></Contents>"
      "<!-- a comment -->"
      "<Contents><Key>logs/b&#x20;&#233;</Key><ETag>\"abc-2\"</ETag><Size>10485760</Size></Contents>"
      "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
      "</ListBucketResult>");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "logs/a <1> caf\xC3\xA9");
  EXPECT_EQ(page->objects[0].size, 12u);
  EXPECT_EQ(page->objects[0].etag, "9b2cf535f27731c974343645a3985328");
  EXPECT_EQ(page->objects[1].key, "logs/b \xC3\xA9");
  EXPECT_EQ(page->objects[1].size, 10485760u);
  EXPECT_EQ(page->objects[1].etag, "abc-2");
  EXPECT_TRUE(page->is_truncated);
  EXPECT_EQ(page->next_continuation_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
}

TEST(S3Xml, LastListPageAndEmptyListing) {
  auto page = ParseListObjectsV2("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>");
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->objects.empty());
  EXPECT_FALSE(page->is_truncated);
  auto self_closing =
      ParseListObjectsV2("<ListBucketResult><Prefix/><IsTruncated>false</IsTruncated></ListBucketResult>");
  EXPECT_TRUE(self_closing.ok()) << self_closing.status().ToString();
}

TEST(S3Xml, ParsesInitiateMultipartUpload) {
  auto id = ParseInitiateMultipartUpload(
      "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>b</Bucket>"
      "<Key>k</Key><UploadId>VXBsb2FkIElE</UploadId></InitiateMultipartUploadResult>");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "VXBsb2FkIElE");
  EXPECT_FALSE(ParseInitiateMultipartUpload("<InitiateMultipartUploadResult/>").ok());
}

TEST(S3Xml, WritesTheCompleteMultipartBody) {
  EXPECT_EQ(CompleteMultipartUploadBody({"\"e1\"", "\"e2\""}),
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;e1&quot;</ETag></Part>"
            "<Part><PartNumber>2</PartNumber><ETag>&quot;e2&quot;</ETag></Part></CompleteMultipartUpload>");
  auto back = Parse(CompleteMultipartUploadBody({"\"e<1>\""}));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->Child("Part")->ChildText("ETag").value(), "\"e<1>\"");
}

TEST(S3Xml, RefusesMalformedAndDangerousDocuments) {
  const std::string deep = [] {
    std::string s;
    for (int i = 0; i < 40; ++i) s += "<a>";
    for (int i = 0; i < 40; ++i) s += "</a>";
    return s;
  }();
  struct Case {
    std::string doc;
    std::string says;
  };
  const Case cases[] = {
      {"", "expected the root element"},
      {"not xml", "expected the root element"},
      {"<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><Error>&e;</Error>", "DOCTYPE"},
      {"<Error>&e;</Error>", "unknown entity"},
      {"<Error><![CDATA[x]]></Error>", "CDATA"},
      {"<Error><Code>x</Error>", "closes"},
      {"<Error>", "unterminated"},
      {"<Error></Error><Error></Error>", "after the root"},
      {"<Error>&#0;</Error>", "character reference"},
      {"<Error>&#xD800;</Error>", "character reference"},
      {"<Error>&#9999999;</Error>", "character reference"},
      {"<Error a=b></Error>", "quoted"},
      {"<?php x ?><Error/>", "processing instructions"},
      {"<!-- x", "unterminated comment"},
      {deep, "deeper than 32"},
  };
  for (const Case& c : cases) {
    auto r = Parse(c.doc);
    ASSERT_FALSE(r.ok()) << c.doc;
    EXPECT_EQ(r.status().code(), Code::kDataLoss);
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << c.doc << " -> " << r.status().message();
  }
  EXPECT_FALSE(Parse(std::string(33u << 20, ' ')).ok());
}

TEST(S3Xml, RefusesWrongShapes) {
  EXPECT_EQ(ParseError("<ListBucketResult/>").status().code(), Code::kDataLoss);
  EXPECT_EQ(ParseError("<Error><Message>m</Message></Error>").status().code(), Code::kDataLoss);
  EXPECT_FALSE(
      ParseListObjectsV2("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>").ok());
  EXPECT_FALSE(ParseListObjectsV2(
                   "<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>")
                   .ok());
  EXPECT_FALSE(ParseListObjectsV2(
                   "<ListBucketResult><Contents><Key>k</Key><Size>99999999999999999999999</Size></Contents>"
                   "</ListBucketResult>")
                   .ok());
  EXPECT_FALSE(
      ParseListObjectsV2("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>").ok());
}

}  // namespace
}  // namespace govern::objstore::xml
