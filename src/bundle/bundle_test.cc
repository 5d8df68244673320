// Building, verifying and inspecting signed bundles: the round trip, every refusal with its reason,
// key files and rotation.
#include "bundle/bundle.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "bundle/test_util.h"
#include "crypto/encoding.h"

namespace govern::bundle {
namespace {

using testing::Entries;
using testing::Input;
using testing::Key;
using testing::MustBuild;
using testing::Raw;
using testing::SignaturesFor;
using testing::Trust;

#define EXPECT_REFUSED(verdict, want)              \
  do {                                             \
    Verdict v_ = (verdict);                        \
    EXPECT_EQ(v_.reason, (want)) << v_.ToString(); \
    EXPECT_EQ(v_.bundle, nullptr);                 \
    EXPECT_FALSE(v_.detail.empty());               \
  } while (0)

class BundleTest : public ::testing::Test {
 protected:
  SigningKey a_ = Key(1);
  SigningKey b_ = Key(2);
  TrustStore trust_a_ = Trust({&a_});
};

TEST_F(BundleTest, RoundTrip) {
  for (bool gzip : {true, false}) {
    BuildInput in = Input(7, gzip);
    std::string archive = MustBuild(in, {&a_});
    Verdict v = Verify(archive, trust_a_);
    ASSERT_TRUE(v.ok()) << v.ToString();
    const Bundle& b = *v.bundle;
    EXPECT_EQ(b.version(), 7u);
    EXPECT_EQ(b.manifest().kind, "policy");
    EXPECT_EQ(b.manifest().org, "acme");
    EXPECT_EQ(b.manifest().name, "default");
    EXPECT_EQ(b.manifest().created, in.created);
    EXPECT_EQ(b.signed_by(), std::vector<std::string>{a_.key_id()});
    ASSERT_EQ(b.files().size(), in.files.size());
    for (const auto& [name, data] : in.files) {
      ASSERT_NE(b.File(name), nullptr) << name;
      EXPECT_EQ(*b.File(name), data);
    }
    EXPECT_EQ(b.File("manifest.json"), nullptr);
    EXPECT_EQ(b.digest(), *crypto::Sha256(b.manifest_bytes()));
    EXPECT_EQ(Verify(archive, trust_a_).bundle->digest(), b.digest());
    // Reproducible: the same input builds the same bytes.
    EXPECT_EQ(MustBuild(in, {&a_}), archive);
  }
}

TEST_F(BundleTest, ManifestIsTheDocumentedJson) {
  std::string tar = MustBuild(Input(3, false), {&a_});
  auto entries = Entries(tar);
  ASSERT_EQ(entries.size(), 5u);
  EXPECT_EQ(entries[0].name, "manifest.json");
  EXPECT_EQ(entries[1].name, "signatures.json");
  EXPECT_EQ(entries[0].data,
            "{\n"
            "  \"format\": 1,\n"
            "  \"kind\": \"policy\",\n"
            "  \"name\": \"default\",\n"
            "  \"org\": \"acme\",\n"
            "  \"version\": 3,\n"
            "  \"created\": \"2026-11-28T02:30:00Z\",\n"
            "  \"files\": [\n"
            "    {\"name\": \"entities.json\", \"size\": 3, \"sha256\": \"" +
                crypto::HexEncode(*crypto::Sha256("[]\n")) +
                "\"},\n"
                "    {\"name\": \"limits.json\", \"size\": 25, \"sha256\": \"" +
                crypto::HexEncode(*crypto::Sha256("{\"calls_per_minute\": 60}\n")) +
                "\"},\n"
                "    {\"name\": \"policies.cedar\", \"size\": 37, \"sha256\": \"" +
                crypto::HexEncode(*crypto::Sha256("permit(principal, action, resource);\n")) +
                "\"}\n"
                "  ]\n"
                "}\n");
  auto m = ParseManifest(entries[0].data);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(ManifestJson(*m), entries[0].data);
}

TEST_F(BundleTest, TamperedFileByte) {
  std::string tar = MustBuild(Input(1, false), {&a_});
  size_t at = tar.find("permit(");
  ASSERT_NE(at, std::string::npos);
  tar[at] = 'P';
  EXPECT_REFUSED(Verify(tar, trust_a_), Reason::kFileHashMismatch);
}

TEST_F(BundleTest, ChangedManifest) {
  std::string tar = MustBuild(Input(1, false), {&a_});
  size_t at = tar.find("\"version\": 1");
  ASSERT_NE(at, std::string::npos);
  tar[at + 11] = '9';  // same size, so the tar stays well-formed; the signature no longer matches
  EXPECT_REFUSED(Verify(tar, trust_a_), Reason::kBadSignature);
}

TEST_F(BundleTest, WrongKeyUnderATrustedId) {
  SigningKey impostor = Key(3, a_.key_id());
  EXPECT_REFUSED(Verify(MustBuild(Input(1), {&impostor}), trust_a_), Reason::kBadSignature);
  // A trusted key's bad signature refuses even when another trusted key signed correctly.
  TrustStore both = Trust({&a_, &b_});
  SigningKey impostor_b = Key(4, b_.key_id());
  EXPECT_REFUSED(Verify(MustBuild(Input(1), {&a_, &impostor_b}), both), Reason::kBadSignature);
}

TEST_F(BundleTest, UntrustedKey) {
  Verdict v = Verify(MustBuild(Input(1), {&b_}), trust_a_);
  EXPECT_REFUSED(v, Reason::kUntrustedKey);
  EXPECT_NE(v.detail.find(b_.key_id()), std::string::npos) << v.detail;
  EXPECT_EQ(v.status().code(), Code::kUnauthenticated);
  EXPECT_EQ(v.status().message().rfind("untrusted_key: ", 0), 0u);
  EXPECT_REFUSED(Verify(MustBuild(Input(1), {&a_}), TrustStore{}), Reason::kUntrustedKey);
}

TEST_F(BundleTest, NoOrMalformedSignatures) {
  auto entries = Entries(MustBuild(Input(1, false), {&a_}));
  entries[1].data = "{\"signatures\": []}";
  EXPECT_REFUSED(Verify(Raw(entries), trust_a_), Reason::kNoSignature);
  for (const char* bad :
       {"", "[]", "{\"signatures\": {}}", "{\"signatures\": [1]}", "{\"sigs\": []}",
        "{\"signatures\": [{\"key_id\": \"x\", \"algorithm\": \"ed25519\", \"signature\": \"%%\"}]}",
        "{\"signatures\": [{\"key_id\": \"x y\", \"algorithm\": \"ed25519\", \"signature\": \"\"}]}"}) {
    entries[1].data = bad;
    EXPECT_REFUSED(Verify(Raw(entries), trust_a_), Reason::kMalformedSignatures);
  }
  // Two signatures under one key id.
  entries[1].data = SignaturesFor(entries[0].data, {&a_, &a_});
  EXPECT_REFUSED(Verify(Raw(entries), trust_a_), Reason::kMalformedSignatures);
  // A truncated (63-byte) signature by a trusted key.
  entries[1].data = "{\"signatures\": [{\"key_id\": \"" + a_.key_id() +
                    "\", \"algorithm\": \"ed25519\", \"signature\": \"" +
                    crypto::Base64Encode(std::string(63, 'x')) + "\"}]}";
  EXPECT_REFUSED(Verify(Raw(entries), trust_a_), Reason::kBadSignature);
}

TEST_F(BundleTest, OlderVersion) {
  std::string v5 = MustBuild(Input(5), {&a_});
  VerifyOptions o;
  o.min_version = 5;
  EXPECT_TRUE(Verify(v5, trust_a_, o).ok());
  o.min_version = 6;
  Verdict v = Verify(v5, trust_a_, o);
  EXPECT_REFUSED(v, Reason::kVersionTooOld);
  EXPECT_EQ(v.status().code(), Code::kFailedPrecondition);
}

TEST_F(BundleTest, TruncatedAtEveryCut) {
  for (bool gzip : {true, false}) {
    std::string archive = MustBuild(Input(1, gzip), {&a_});
    for (size_t cut = 0; cut < archive.size(); ++cut) {
      Verdict v = Verify(std::string_view(archive).substr(0, cut), trust_a_);
      ASSERT_EQ(v.reason, Reason::kMalformedArchive)
          << "gzip " << gzip << " cut at " << cut << ": " << v.ToString();
    }
  }
}

TEST_F(BundleTest, ExtraFile) {
  auto entries = Entries(MustBuild(Input(1, false), {&a_}));
  entries.push_back({"smuggled.cedar", "permit(principal, action, resource);"});
  EXPECT_REFUSED(Verify(Raw(entries), trust_a_), Reason::kFileNotInManifest);
}

TEST_F(BundleTest, MissingFile) {
  auto entries = Entries(MustBuild(Input(1, false), {&a_}));
  entries.pop_back();
  EXPECT_REFUSED(Verify(Raw(entries), trust_a_), Reason::kFileMissing);
}

TEST_F(BundleTest, MissingManifestOrSignatures) {
  auto entries = Entries(MustBuild(Input(1, false), {&a_}));
  auto no_sigs = entries;
  no_sigs.erase(no_sigs.begin() + 1);
  EXPECT_REFUSED(Verify(Raw(no_sigs), trust_a_), Reason::kMissingManifest);
  entries.erase(entries.begin());
  EXPECT_REFUSED(Verify(Raw(entries), trust_a_), Reason::kMissingManifest);
}

TEST_F(BundleTest, SizeMismatch) {
  auto entries = Entries(MustBuild(Input(1, false), {&a_}));
  entries.back().data += " ";
  EXPECT_REFUSED(Verify(Raw(entries), trust_a_), Reason::kFileSizeMismatch);
}

TEST_F(BundleTest, DuplicateNames) {
  auto entries = Entries(MustBuild(Input(1, false), {&a_}));
  auto dup = entries;
  dup.push_back(entries.back());
  EXPECT_REFUSED(Verify(Raw(dup), trust_a_), Reason::kDuplicateFile);
  // A duplicate manifest.json (a second, unsigned one) is refused the same way.
  dup = entries;
  dup.push_back(entries[0]);
  EXPECT_REFUSED(Verify(Raw(dup), trust_a_), Reason::kDuplicateFile);
  // Listed twice in a signed manifest.
  Manifest m = *ParseManifest(entries[0].data);
  m.files.push_back(m.files[0]);
  entries[0].data = ManifestJson(m);
  entries[1].data = SignaturesFor(entries[0].data, {&a_});
  EXPECT_REFUSED(Verify(Raw(entries), trust_a_), Reason::kDuplicateFile);
}

TEST_F(BundleTest, PathTraversal) {
  auto entries = Entries(MustBuild(Input(1, false), {&a_}));
  for (const char* bad : {"../policies.cedar", "/etc/passwd", "a/../../b", "./x"}) {
    auto e = entries;
    e.push_back({bad, "x"});
    EXPECT_REFUSED(Verify(Raw(e), trust_a_), Reason::kUnsafePath);
  }
  // A signed manifest that lists an unsafe name.
  Manifest m = *ParseManifest(entries[0].data);
  m.files[0].name = "../entities.json";
  entries[0].data = ManifestJson(m);
  entries[1].data = SignaturesFor(entries[0].data, {&a_});
  EXPECT_REFUSED(Verify(Raw(entries), trust_a_), Reason::kUnsafePath);
  // Build refuses them in the first place, and the reserved names too.
  BuildInput in = Input(1);
  in.files["../x"] = "";
  EXPECT_FALSE(Build(in, {&a_}).ok());
  in = Input(1);
  in.files["manifest.json"] = "{}";
  EXPECT_FALSE(Build(in, {&a_}).ok());
}

TEST_F(BundleTest, SymlinkEntry) {
  std::string tar = MustBuild(Input(1, false), {&a_});
  std::string with_link =
      tar.substr(0, tar.size() - 1024) + testing::RawMember("link", "", '2') + testing::EndMarker();
  EXPECT_REFUSED(Verify(with_link, trust_a_), Reason::kMalformedArchive);
}

TEST_F(BundleTest, Oversize) {
  BuildInput in = Input(1);
  std::string archive = MustBuild(in, {&a_});
  VerifyOptions o;
  o.limits.max_archive_bytes = archive.size() - 1;
  Verdict v = Verify(archive, trust_a_, o);
  EXPECT_REFUSED(v, Reason::kTooLarge);
  EXPECT_EQ(v.status().code(), Code::kResourceExhausted);
  o = {};
  o.limits.max_files = 2;
  EXPECT_REFUSED(Verify(archive, trust_a_, o), Reason::kTooLarge);
  o.limits.max_files = 3;
  EXPECT_TRUE(Verify(archive, trust_a_, o).ok());
  o = {};
  o.limits.max_file_bytes = 36;  // policies.cedar is 37
  EXPECT_REFUSED(Verify(archive, trust_a_, o), Reason::kTooLarge);
  o = {};
  o.limits.max_manifest_bytes = 100;
  EXPECT_REFUSED(Verify(archive, trust_a_, o), Reason::kTooLarge);
  // A gzip bomb: 64 MiB of zeros in a few tens of KiB, refused while inflating.
  in.files["big"] = std::string(size_t{64} << 20, '\0');
  std::string bomb = MustBuild(in, {&a_});
  EXPECT_LT(bomb.size(), size_t{1} << 20);
  o = {};
  o.limits.max_unpacked_bytes = size_t{8} << 20;
  EXPECT_REFUSED(Verify(bomb, trust_a_, o), Reason::kTooLarge);
}

TEST_F(BundleTest, WrongKindOrgOrName) {
  std::string archive = MustBuild(Input(1), {&a_});
  VerifyOptions o;
  o.expected_kind = "gateway";
  EXPECT_REFUSED(Verify(archive, trust_a_, o), Reason::kWrongBundle);
  o.expected_kind = "policy";
  o.expected_org = "globex";
  EXPECT_REFUSED(Verify(archive, trust_a_, o), Reason::kWrongBundle);
  o.expected_org = "acme";
  EXPECT_TRUE(Verify(archive, trust_a_, o).ok());
  o.expected_name = "team-b";
  EXPECT_REFUSED(Verify(archive, trust_a_, o), Reason::kWrongBundle);
  o.expected_name = "default";
  EXPECT_TRUE(Verify(archive, trust_a_, o).ok());
}

TEST_F(BundleTest, SignedButMalformedManifest) {
  auto entries = Entries(MustBuild(Input(1, false), {&a_}));
  const std::string good = entries[0].data;
  auto with = [&](std::string manifest) {
    auto e = entries;
    e[0].data = std::move(manifest);
    e[1].data = SignaturesFor(e[0].data, {&a_});
    return Verify(Raw(e), trust_a_);
  };
  auto replace = [&](std::string_view from, std::string_view to) {
    std::string s = good;
    size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  EXPECT_REFUSED(with(replace("\"format\": 1", "\"format\": 2")), Reason::kUnsupportedFormat);
  EXPECT_REFUSED(with(replace("\"version\": 1", "\"version\": -1")), Reason::kMalformedManifest);
  EXPECT_REFUSED(with(replace("\"version\": 1", "\"version\": 1.5")), Reason::kMalformedManifest);
  EXPECT_REFUSED(with(replace("\"org\"", "\"owner\"")), Reason::kMalformedManifest);
  EXPECT_REFUSED(with(replace("\"format\": 1,", "\"format\": 1, \"extra\": true,")),
                 Reason::kMalformedManifest);
  EXPECT_REFUSED(with(replace("2026-11-28T02:30:00Z", "2026-02-30T00:00:00Z")), Reason::kMalformedManifest);
  EXPECT_REFUSED(with(replace("\"kind\": \"policy\"", "\"kind\": \"Policy!\"")), Reason::kMalformedManifest);
  EXPECT_REFUSED(with("not json"), Reason::kMalformedManifest);
  EXPECT_REFUSED(with("[]"), Reason::kMalformedManifest);
  std::string upper = good;
  size_t h = upper.find("\"sha256\": \"") + 11;
  for (size_t i = h; i < h + 64; ++i) upper[i] = static_cast<char>(std::toupper(upper[i]));
  if (upper != good) EXPECT_REFUSED(with(upper), Reason::kMalformedManifest);
  EXPECT_TRUE(with(good).ok());
}

TEST_F(BundleTest, DetailsCarryNoControlBytes) {
  auto entries = Entries(MustBuild(Input(1, false), {&a_}));
  entries[1].data =
      "{\"signatures\": [{\"key_id\": \"\\u001b[31mred\", \"algorithm\": \"x\", \"signature\": \"\"}]}";
  Verdict v = Verify(Raw(entries), trust_a_);
  EXPECT_REFUSED(v, Reason::kMalformedSignatures);
  EXPECT_EQ(v.detail.find('\x1b'), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("?[31mred"), std::string::npos) << v.detail;
}

TEST_F(BundleTest, RotationWithTwoTrustedKeys) {
  // 1. Agents trust A; bundles are signed by A.
  EXPECT_TRUE(Verify(MustBuild(Input(1), {&a_}), trust_a_).ok());
  // 2. Agents are told to trust B as well; bundles are signed by both, so old and new agents accept them.
  TrustStore both = Trust({&a_, &b_});
  std::string dual = MustBuild(Input(2), {&a_, &b_});
  Verdict v = Verify(dual, both);
  ASSERT_TRUE(v.ok()) << v.ToString();
  EXPECT_EQ(v.bundle->signed_by(), (std::vector<std::string>{a_.key_id(), b_.key_id()}));
  EXPECT_TRUE(Verify(dual, trust_a_).ok());
  // 3. Bundles are signed by B alone: agents that trust both accept them.
  std::string b_only = MustBuild(Input(3), {&b_});
  EXPECT_TRUE(Verify(b_only, both).ok());
  EXPECT_REFUSED(Verify(b_only, trust_a_), Reason::kUntrustedKey);
  // 4. A is dropped: a bundle signed by A alone (e.g. with a stolen old key) is refused.
  TrustStore b_trust = Trust({&b_});
  EXPECT_TRUE(Verify(b_only, b_trust).ok());
  EXPECT_REFUSED(Verify(MustBuild(Input(4), {&a_}), b_trust), Reason::kUntrustedKey);
}

TEST_F(BundleTest, InspectWithoutTrust) {
  std::string archive = MustBuild(Input(9), {&a_, &b_});
  Inspection in;
  Verdict v = Inspect(archive, &in);
  ASSERT_TRUE(v.ok()) << v.ToString();
  EXPECT_EQ(in.manifest.version, 9u);
  ASSERT_EQ(in.signatures.size(), 2u);
  EXPECT_EQ(in.signatures[0].key_id, a_.key_id());
  EXPECT_EQ(in.signatures[1].key_id, b_.key_id());
  EXPECT_EQ(in.archive_files.size(), 3u);
  EXPECT_REFUSED(Inspect(archive.substr(0, 100), &in), Reason::kMalformedArchive);
}

TEST(BundleKeys, FilesRoundTrip) {
  auto k = SigningKey::Generate();
  ASSERT_TRUE(k.ok());
  auto pub = k->Public();
  ASSERT_TRUE(pub.ok());
  EXPECT_EQ(k->key_id(), DefaultKeyId(pub->Raw()));
  EXPECT_EQ(k->key_id().size(), 16u);
  auto text = k->Text();
  ASSERT_TRUE(text.ok());
  std::string private_text(crypto::AsString(text->span()));
  EXPECT_EQ(private_text.rfind("-----BEGIN GOVERN BUNDLE PRIVATE KEY-----\nKey-Id: " + k->key_id() + "\n", 0),
            0u);
  auto k2 = SigningKey::Parse(private_text);
  ASSERT_TRUE(k2.ok()) << k2.status().ToString();
  EXPECT_EQ(k2->key_id(), k->key_id());
  EXPECT_EQ(k2->Public()->Raw(), pub->Raw());
  auto p2 = PublicKey::Parse(pub->Text());
  ASSERT_TRUE(p2.ok()) << p2.status().ToString();
  EXPECT_EQ(p2->Raw(), pub->Raw());
  // CRLF line ends and surrounding blank lines are fine.
  std::string crlf;
  for (char c : pub->Text()) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  EXPECT_TRUE(PublicKey::Parse("\n" + crlf + "\n").ok());
  // A given key id.
  auto named = SigningKey::Generate("ops-2026.11");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->key_id(), "ops-2026.11");
  EXPECT_FALSE(SigningKey::Generate("bad id").ok());
  EXPECT_FALSE(SigningKey::Generate(std::string(65, 'a')).ok());
}

TEST(BundleKeys, MalformedFilesAreRefused) {
  SigningKey k = Key(1);
  std::string pub = k.Public()->Text();
  std::string priv(crypto::AsString(k.Text()->span()));
  EXPECT_FALSE(PublicKey::Parse(priv).ok());  // a private key where a public one is expected
  EXPECT_FALSE(SigningKey::Parse(pub).ok());
  EXPECT_FALSE(PublicKey::Parse("").ok());
  EXPECT_FALSE(PublicKey::Parse(pub.substr(0, pub.size() - 10)).ok());
  auto edit = [&](std::string_view from, std::string_view to) {
    std::string s = pub;
    return s.replace(s.find(from), from.size(), to);
  };
  EXPECT_FALSE(PublicKey::Parse(edit("Algorithm: ed25519", "Algorithm: rsa")).ok());
  EXPECT_FALSE(PublicKey::Parse(edit("Key-Id: ", "Key-Id: /")).ok());
  std::string b64 = crypto::Base64Encode(std::span<const uint8_t>(k.Public()->Raw()));
  EXPECT_FALSE(PublicKey::Parse(edit(b64, crypto::Base64Encode(std::string(31, 'x')))).ok());
  EXPECT_FALSE(PublicKey::Parse(edit(b64, b64 + "=")).ok());
}

TEST(BundleKeys, TrustStoreRefusesTwoKeysUnderOneId) {
  SigningKey a = Key(1, "ops");
  SigningKey b = Key(2, "ops");
  TrustStore t;
  EXPECT_TRUE(t.Add(*a.Public()).ok());
  EXPECT_TRUE(t.Add(*a.Public()).ok());
  EXPECT_EQ(t.Add(*b.Public()).code(), Code::kAlreadyExists);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_TRUE(t.AddText(Key(3).Public()->Text()).ok());
  EXPECT_EQ(t.size(), 2u);
}

TEST(BundleTime, Rfc3339) {
  EXPECT_EQ(FormatTime(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatTime(951782400), "2000-02-29T00:00:00Z");
  for (int64_t t : {int64_t{0}, int64_t{951782400}, int64_t{1795833000}, int64_t{4102444799}}) {
    EXPECT_EQ(*ParseTime(FormatTime(t)), t);
  }
  for (const char* bad : {"", "2026-11-30", "2026-11-30T04:30:00+00:00", "2026-13-01T00:00:00Z",
                          "2025-02-29T00:00:00Z", "1969-12-31T23:59:59Z", "2026-11-30t04:30:00Z"}) {
    EXPECT_FALSE(ParseTime(bad).ok()) << bad;
  }
}

TEST(BundleReason, NamesAreDistinct) {
  std::set<std::string_view> names;
  for (int r = 0; r <= static_cast<int>(Reason::kRejected); ++r) {
    EXPECT_TRUE(names.insert(ReasonName(static_cast<Reason>(r))).second);
  }
}

// Not a test: writes the seeds of fuzz/corpus/bundle_reader_fuzz/ (signed with the fuzz target's fixed
// key). Run with --gtest_also_run_disabled_tests --gtest_filter='*WriteFuzzSeeds' and
// GOVERN_BUNDLE_SEED_DIR=fuzz/corpus/bundle_reader_fuzz.
TEST(BundleFuzzSeeds, DISABLED_WriteFuzzSeeds) {
  const char* dir = std::getenv("GOVERN_BUNDLE_SEED_DIR");
  ASSERT_NE(dir, nullptr);
  std::vector<uint8_t> seed(32);
  for (int i = 0; i < 32; ++i) seed[i] = static_cast<uint8_t>(i + 1);
  SigningKey fuzz = *SigningKey::FromSeed(seed, "fuzz");
  SigningKey other = Key(7, "other");
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::FILE* f = std::fopen((std::string(dir) + "/" + name).c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  };
  BuildInput small = Input(1, false);
  small.files = {{"policies.cedar", "permit(principal, action, resource);\n"}, {"sub/e.json", "[]"}};
  write("valid.tar", MustBuild(small, {&fuzz}));
  small.gzip = true;
  write("valid.tar.gz", MustBuild(small, {&fuzz}));
  small.gzip = false;
  write("two_signatures.tar", MustBuild(small, {&other, &fuzz}));
  small.files.clear();
  write("no_files.tar", MustBuild(small, {&fuzz}));
  auto entries = Entries(MustBuild(Input(2, false), {&fuzz}));
  entries.push_back({"extra", "x"});
  write("extra_file.tar", Raw(entries));
  write("symlink.tar", testing::RawMember("link", "", '2') + testing::EndMarker());
}
}  // namespace
}  // namespace govern::bundle
