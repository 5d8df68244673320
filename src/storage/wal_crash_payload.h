// Self-checking payloads for the crash test: "iteration:thread:index:" + filler + 16 hex digits of a
// hash of everything before them, so a torn or mixed-up record is visible without outside state.
// Pure functions: thread-safe. Test code only.
#pragma once

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>

namespace govern::wal::testing {

inline uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) {
    h ^= static_cast<uint8_t>(c);
    h *= 1099511628211ull;
  }
  return h;
}

inline uint64_t PayloadHash(std::string_view payload) { return Fnv1a(payload); }

inline std::string MakePayload(int iteration, int thread, uint64_t index, std::mt19937_64& rng) {
  std::string p =
      std::to_string(iteration) + ":" + std::to_string(thread) + ":" + std::to_string(index) + ":";
  size_t filler = rng() % 700;
  for (size_t i = 0; i < filler; ++i) p.push_back(static_cast<char>('a' + rng() % 26));
  char tail[17];
  std::snprintf(tail, sizeof(tail), "%016llx", static_cast<unsigned long long>(Fnv1a(p)));
  return p + tail;
}

// True when the payload's embedded hash matches its body.
inline bool PayloadIntact(std::string_view p) {
  if (p.size() < 16) return false;
  char tail[17];
  std::snprintf(tail, sizeof(tail), "%016llx",
                static_cast<unsigned long long>(Fnv1a(p.substr(0, p.size() - 16))));
  return p.substr(p.size() - 16) == tail;
}

// The "iteration:thread:index" identity of a payload.
inline std::string_view PayloadId(std::string_view p) {
  size_t colons = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == ':' && ++colons == 3) return p.substr(0, i);
  }
  return p;
}

}  // namespace govern::wal::testing
