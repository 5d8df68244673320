// CRC32C against the published test vectors (RFC 3720 B.4 and the "123456789" check value).
#include "storage/crc32c.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace govern::storage {
namespace {

struct Vector {
  std::string data;
  uint32_t crc;
};

std::vector<Vector> Vectors() {
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  return {
      {"", 0},
      {"123456789", 0xE3069283},
      {std::string(32, '\0'), 0x8A9136AA},
      {std::string(32, '\xff'), 0x62A8AB43},
      {ascending, 0x46DD794E},
      {descending, 0x113FDB5C},
  };
}

TEST(Crc32c, KnownVectorsBothImplementations) {
  for (const Vector& v : Vectors()) {
    EXPECT_EQ(Crc32c(v.data), v.crc) << v.data.size();
    EXPECT_EQ(Crc32cExtendTable(0, v.data.data(), v.data.size()), v.crc);
    if (Crc32cHardwareAvailable()) {
      EXPECT_EQ(Crc32cExtendHardware(0, v.data.data(), v.data.size()), v.crc);
    }
  }
}

TEST(Crc32c, ExtendEqualsWholeAtEverySplitAndAlignment) {
  std::string data;
  for (int i = 0; i < 300; ++i) data.push_back(static_cast<char>(i * 37 + 11));
  for (size_t start = 0; start < 9; ++start) {
    std::string_view s = std::string_view(data).substr(start);
    uint32_t whole = Crc32cExtendTable(0, s.data(), s.size());
    EXPECT_EQ(Crc32c(s), whole);
    for (size_t cut = 0; cut <= s.size(); cut += 7) {
      EXPECT_EQ(Crc32cExtend(Crc32c(s.data(), cut), s.data() + cut, s.size() - cut), whole);
    }
  }
}

}  // namespace
}  // namespace govern::storage
