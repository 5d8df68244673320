// Key and prefix validation, as a table.
#include "storage/objstore/store.h"

#include <gtest/gtest.h>

namespace govern::objstore {
namespace {

TEST(ValidateKey, AcceptsOrdinaryKeys) {
  for (std::string key : {"a", "logs/org=acme/dt=2026-11-29/hour=23/part-0.parquet", "with space.txt",
                          "caf\xC3\xA9/\xE6\x97\xA5\xE6\x9C\xAC", "a.b/..c/d..", "emoji-\xF0\x9F\x98\x80",
                          "symbols !$&'()*+,;=@[]{}~"}) {
    EXPECT_TRUE(ValidateKey(key).ok()) << key << ": " << ValidateKey(key).ToString();
  }
  EXPECT_TRUE(ValidateKey(std::string(1024, 'k')).ok());
}

TEST(ValidateKey, RefusesBadKeysWithAClearMessage) {
  struct Case {
    std::string key;
    std::string says;
  };
  const Case cases[] = {
      {"", "empty"},
      {std::string(1025, 'k'), "longer than 1024"},
      {"/a", "starts with '/'"},
      {"a/", "ends with '/'"},
      {"a//b", "empty path segment"},
      {"..", "\"..\" segment"},
      {"a/../b", "\"..\" segment"},
      {"./a", "\".\""},
      {"a\nb", "control character"},
      {std::string("a\0b", 3), "control character"},
      {"a\x7f", "control character"},
      {"a\\b", "backslash"},
      {"\xC3", "UTF-8"},
      {"\xC0\xAF", "UTF-8"},          // overlong '/'
      {"\xED\xA0\x80", "UTF-8"},      // a surrogate
      {"\xF4\x90\x80\x80", "UTF-8"},  // above U+10FFFF
      {"a/.govern-tmp-1-2", "reserved"},
  };
  for (const Case& c : cases) {
    const Status s = ValidateKey(c.key);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << c.key;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << s.message();
  }
}

TEST(ValidatePrefix, AllowsEmptyAndTrailingSlashAndPartialSegments) {
  EXPECT_TRUE(ValidatePrefix("").ok());
  EXPECT_TRUE(ValidatePrefix("logs/").ok());
  EXPECT_TRUE(ValidatePrefix("logs/da").ok());
  EXPECT_TRUE(ValidatePrefix("logs/.").ok());  // may continue as ".x"
  EXPECT_FALSE(ValidatePrefix("/logs").ok());
  EXPECT_FALSE(ValidatePrefix("../").ok());
  EXPECT_FALSE(ValidatePrefix("a//").ok());
}

}  // namespace
}  // namespace govern::objstore
