// The answer hot path allocates nothing: once an answer is in the zone's cache, answering the same
// question again (unsigned, and signed with DO) makes no heap allocation, nor does answering a name
// that does not exist in an unsigned zone. Its own binary, because it replaces global operator new.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "dns/answer.h"
#include "dns/testing.h"
#include "dns/zone.h"

namespace {
std::atomic<long> allocations{0};
}  // namespace

#if defined(__SANITIZE_ADDRESS__)
#define GOVERN_COUNTS_ALLOCATIONS 0
#else
#define GOVERN_COUNTS_ALLOCATIONS 1
void* operator new(size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#endif

namespace govern::dns {
namespace {

TEST(DnsAllocTest, CachedAnswersAndUnsignedNxAllocateNothing) {
  if (!GOVERN_COUNTS_ALLOCATIONS) GTEST_SKIP() << "allocation counting is off under AddressSanitizer";
  const char* text =
      "$TTL 300\n@ SOA ns1 hm 1 3600 900 604800 60\n@ NS ns1\nns1 A 127.0.0.1\nwww A 192.0.2.1\n"
      "@ MX 10 mail\nmail A 192.0.2.2\n";
  std::vector<std::shared_ptr<const Zone>> zones;
  for (const char* apex : {"plain.test.", "signed.test."}) {
    auto recs = ParseZoneFile(text, apex);
    ASSERT_TRUE(recs.ok());
    ZoneKeys keys;
    if (std::string_view(apex) == "signed.test.") {
      auto k = SigningKey::Generate(Algorithm::kEcdsaP256Sha256, 257);
      ASSERT_TRUE(k.ok());
      keys.ksk = keys.zsk = std::make_shared<const SigningKey>(std::move(*k));
    }
    auto z = Zone::Build(apex, std::move(*recs), keys);
    ASSERT_TRUE(z.ok());
    zones.push_back(*z);
  }
  ZoneSet set(zones);
  std::vector<std::vector<uint8_t>> queries = {
      testing::MakeQuery("www.plain.test.", kA), testing::MakeQuery("WWW.plain.test.", kA, true),
      testing::MakeQuery("plain.test.", kMX, true), testing::MakeQuery("www.signed.test.", kA, true, true),
      testing::MakeQuery("www.signed.test.", kMX, true, true)};
  std::vector<uint8_t> out(65535);
  const AnswerOptions opt{false, 1790000000};
  for (auto& q : queries) ASSERT_GT(Answer(set, q, opt, out.data(), out.size()), 0u);  // fills the cache
  auto nx = testing::MakeQuery("nothing-here.plain.test.", kA, true);
  long before = allocations.load();
  for (int i = 0; i < 100; ++i) {
    for (auto& q : queries) Answer(set, q, opt, out.data(), out.size());
    Answer(set, nx, opt, out.data(), out.size());
  }
  EXPECT_EQ(allocations.load() - before, 0);
}

}  // namespace
}  // namespace govern::dns
