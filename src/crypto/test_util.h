// Helpers shared by the crypto tests: hex literals to bytes.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "crypto/encoding.h"

namespace govern::crypto::testing {

inline std::vector<uint8_t> Hex(std::string_view hex) {
  auto r = HexDecode(hex);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<uint8_t>{};
}

template <typename Bytes>
std::string ToHex(const Bytes& b) {
  return HexEncode(std::span<const uint8_t>(b.data(), b.size()));
}

}  // namespace govern::crypto::testing
