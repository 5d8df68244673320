// BundleSlot: offers accepted and refused (the old bundle keeps serving), and swaps under many readers.
#include "bundle/slot.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "bundle/test_util.h"

namespace govern::bundle {
namespace {

using testing::Input;
using testing::Key;
using testing::MustBuild;
using testing::Trust;

// What a consumer compiles from a bundle: here the version it read from a file and a copy of a payload.
struct Compiled {
  uint64_t version = 0;
  std::string payload;
};

BuildInput VersionedInput(uint64_t version) {
  BuildInput in = Input(version);
  in.files["version.txt"] = std::to_string(version);
  in.files["payload"] = std::string(64 + version % 17, static_cast<char>('a' + version % 26));
  return in;
}

Result<Compiled> Compile(const Bundle& b) {
  const std::string* v = b.File("version.txt");
  const std::string* p = b.File("payload");
  if (!v || !p) return InvalidArgument("version.txt or payload missing");
  if (*v == "reject") return InvalidArgument("policy error: line 1: unexpected token");
  return Compiled{std::stoull(*v), *p};
}

using Slot = BundleSlot<Compiled>;

class SlotTest : public ::testing::Test {
 protected:
  SigningKey key_ = Key(1);
  Slot slot_{Trust({&key_}), VerifyOptions{}, Compile};
};

TEST_F(SlotTest, AcceptsNewerRefusesOlderAndKeepsServing) {
  EXPECT_EQ(slot_.Load(), nullptr);
  Slot::Reader reader(slot_);
  EXPECT_EQ(reader.Get(), nullptr);

  std::string v2 = MustBuild(VersionedInput(2), {&key_});
  Verdict v = slot_.Offer(v2);
  ASSERT_TRUE(v.ok()) << v.ToString();
  ASSERT_NE(reader.Get(), nullptr);
  EXPECT_EQ(reader.Get()->value.version, 2u);

  // Older: refused, 2 still serving.
  v = slot_.Offer(MustBuild(VersionedInput(1), {&key_}));
  EXPECT_EQ(v.reason, Reason::kVersionTooOld) << v.ToString();
  EXPECT_EQ(slot_.Load()->bundle->version(), 2u);

  // The same bundle again: unchanged, not an error.
  v = slot_.Offer(v2);
  EXPECT_TRUE(v.ok()) << v.ToString();
  EXPECT_EQ(v.bundle, slot_.Load()->bundle);

  // Version 2 again with different content: a replay or a signer's mistake; refused.
  BuildInput other = VersionedInput(2);
  other.files["extra"] = "x";
  v = slot_.Offer(MustBuild(other, {&key_}));
  EXPECT_EQ(v.reason, Reason::kVersionReplayed) << v.ToString();

  // Tampered, untrusted, truncated: refused.
  std::string v3 = MustBuild(VersionedInput(3), {&key_});
  EXPECT_EQ(slot_.Offer(v3.substr(0, v3.size() / 2)).reason, Reason::kMalformedArchive);
  SigningKey stranger = Key(9);
  EXPECT_EQ(slot_.Offer(MustBuild(VersionedInput(3), {&stranger})).reason, Reason::kUntrustedKey);

  // Verified but the consumer cannot compile it.
  BuildInput bad = VersionedInput(4);
  bad.files["version.txt"] = "reject";
  v = slot_.Offer(MustBuild(bad, {&key_}));
  EXPECT_EQ(v.reason, Reason::kRejected);
  EXPECT_NE(v.detail.find("policy error"), std::string::npos);

  EXPECT_EQ(reader.Get()->value.version, 2u);
  auto stats = slot_.stats();
  EXPECT_EQ(stats.version, 2u);
  EXPECT_EQ(stats.accepted, 1u);
  EXPECT_EQ(stats.unchanged, 1u);
  EXPECT_EQ(stats.refused, 5u);
  EXPECT_EQ(stats.last_reason, Reason::kRejected);
  EXPECT_EQ(stats.last_error.rfind("rejected: ", 0), 0u);

  ASSERT_TRUE(slot_.Offer(v3).ok());
  EXPECT_EQ(reader.Get()->value.version, 3u);
  EXPECT_EQ(slot_.stats().accepted, 2u);
}

TEST_F(SlotTest, TrustRotatesWhileServing) {
  SigningKey next = Key(2);
  ASSERT_TRUE(slot_.Offer(MustBuild(VersionedInput(1), {&key_})).ok());
  EXPECT_EQ(slot_.Offer(MustBuild(VersionedInput(2), {&next})).reason, Reason::kUntrustedKey);
  slot_.SetTrust(Trust({&key_, &next}));
  ASSERT_TRUE(slot_.Offer(MustBuild(VersionedInput(2), {&next})).ok());
  slot_.SetTrust(Trust({&next}));
  EXPECT_EQ(slot_.Load()->value.version, 2u);  // still serving
  EXPECT_EQ(slot_.Offer(MustBuild(VersionedInput(3), {&key_})).reason, Reason::kUntrustedKey);
  EXPECT_TRUE(slot_.Offer(MustBuild(VersionedInput(3), {&next})).ok());
}

TEST_F(SlotTest, MinimumVersionAppliesToTheFirstBundle) {
  VerifyOptions o;
  o.min_version = 10;
  Slot slot(Trust({&key_}), o, Compile);
  EXPECT_EQ(slot.Offer(MustBuild(VersionedInput(9), {&key_})).reason, Reason::kVersionTooOld);
  EXPECT_TRUE(slot.Offer(MustBuild(VersionedInput(10), {&key_})).ok());
}

// Readers decide continuously while a writer swaps bundles in (and offers bad ones). Every read must see
// one bundle with its own compiled value, versions never go backwards for a reader, and at the end every
// reader sees the last bundle.
TEST_F(SlotTest, SwapsUnderConcurrentReaders) {
  constexpr uint64_t kVersions = 150;
  std::vector<std::string> archives;
  for (uint64_t v = 1; v <= kVersions; ++v) archives.push_back(MustBuild(VersionedInput(v), {&key_}));
  // A newer bundle with one content byte changed after signing.
  BuildInput newer = VersionedInput(kVersions + 5);
  newer.gzip = false;
  std::string tampered = MustBuild(newer, {&key_});
  size_t at = tampered.find(newer.files["payload"]);
  ASSERT_NE(at, std::string::npos);
  tampered[at] ^= 0x20;
  SigningKey stranger = Key(9);
  std::string untrusted = MustBuild(VersionedInput(kVersions + 1), {&stranger});
  ASSERT_TRUE(slot_.Offer(archives[0]).ok());

  constexpr int kReaders = 4;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> mixed{0};
  std::atomic<uint64_t> backwards{0};
  std::vector<uint64_t> final_version(kReaders, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kReaders; ++t) {
    threads.emplace_back([&, t] {
      Slot::Reader reader(slot_);
      uint64_t last = 0;
      uint64_t n = 0;
      auto check = [&](const Slot::Loaded* l) {
        const Bundle& b = *l->bundle;
        bool consistent = l->value.version == b.version() &&
                          *b.File("version.txt") == std::to_string(b.version()) &&
                          l->value.payload == *b.File("payload") &&
                          l->value.payload == VersionedInput(b.version()).files["payload"];
        if (!consistent) mixed.fetch_add(1);
        if (b.version() < last) backwards.fetch_add(1);
        last = b.version();
      };
      while (!stop.load(std::memory_order_acquire)) {
        // Mostly the per-thread Reader (the hot path), sometimes the slot's own Load().
        if (++n % 8 == 0) {
          auto l = slot_.Load();
          check(l.get());
        } else {
          check(reader.Get());
        }
      }
      check(reader.Get());
      final_version[t] = reader.Get()->bundle->version();
      reads.fetch_add(n);
    });
  }
  for (uint64_t v = 2; v <= kVersions; ++v) {
    ASSERT_TRUE(slot_.Offer(archives[v - 1]).ok());
    if (v % 10 == 0) {
      EXPECT_EQ(slot_.Offer(archives[v / 2]).reason, Reason::kVersionTooOld);
      EXPECT_EQ(slot_.Offer(tampered).reason, Reason::kFileHashMismatch);
      EXPECT_EQ(slot_.Offer(untrusted).reason, Reason::kUntrustedKey);
      std::this_thread::yield();
    }
  }
  stop.store(true, std::memory_order_release);
  for (auto& th : threads) th.join();
  EXPECT_EQ(mixed.load(), 0u);
  EXPECT_EQ(backwards.load(), 0u);
  EXPECT_GT(reads.load(), 0u);
  for (uint64_t v : final_version) EXPECT_EQ(v, kVersions);
  auto stats = slot_.stats();
  EXPECT_EQ(stats.accepted, kVersions);
  EXPECT_EQ(stats.refused, 3 * (kVersions / 10));
}

// An offer holds the slot's offer mutex while the consumer compiles the bundle; readers must keep
// deciding from the old bundle meanwhile. The builder of version 2 waits until readers have made progress
// after it started: were readers blocked by the offer, this test would never finish.
TEST_F(SlotTest, ReadersProgressWhileAnOfferIsBuilding) {
  std::atomic<bool> building{false};
  std::atomic<uint64_t> reads_while_building{0};
  Slot slot(Trust({&key_}), VerifyOptions{}, [&](const Bundle& b) -> Result<Compiled> {
    if (b.version() == 2) {
      building.store(true);
      while (reads_while_building.load() < 1000) std::this_thread::yield();
    }
    return Compile(b);
  });
  ASSERT_TRUE(slot.Offer(MustBuild(VersionedInput(1), {&key_})).ok());
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> stale{0};
  std::thread reader([&] {
    Slot::Reader r(slot);
    while (!stop.load()) {
      const Slot::Loaded* l = r.Get();
      if (building.load() && l->value.version == 1) reads_while_building.fetch_add(1);
      if (l->value.version != l->bundle->version()) stale.fetch_add(1);
    }
  });
  ASSERT_TRUE(slot.Offer(MustBuild(VersionedInput(2), {&key_})).ok());
  stop.store(true);
  reader.join();
  EXPECT_GE(reads_while_building.load(), 1000u);
  EXPECT_EQ(stale.load(), 0u);
  EXPECT_EQ(slot.Load()->value.version, 2u);
}

}  // namespace
}  // namespace govern::bundle
