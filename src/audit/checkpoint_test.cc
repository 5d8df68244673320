// Signed notes against the reference vectors of golang.org/x/mod/sumdb/note and c2sp.org/signed-note,
// and checkpoints: round trip, tampering, unknown and extra signers, malformed notes.
#include "audit/checkpoint.h"

#include <gtest/gtest.h>

#include "crypto/encoding.h"

namespace govern::audit {
namespace {

constexpr std::string_view kPeterVkey = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
constexpr std::string_view kPeterSkeyB64 = "AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
constexpr std::string_view kPeterText =
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n";
constexpr std::string_view kPeterNote =
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
    "\n"
    "\xe2\x80\x94 PeterNeumann "
    "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";

crypto::Ed25519PrivateKey PeterKey() {
  auto typed = crypto::Base64Decode(kPeterSkeyB64).value();
  return crypto::Ed25519PrivateKey::FromRaw(std::span<const uint8_t>(typed.data() + 1, 32)).value();
}

std::vector<VerifierKey> Keys(std::string_view vkey) {
  std::vector<VerifierKey> keys;
  keys.push_back(ParseVerifierKey(vkey).value());
  return keys;
}

TEST(SignedNoteTest, GoReferenceVectors) {
  auto key = PeterKey();
  EXPECT_EQ(FormatVerifierKey("PeterNeumann", key.PublicKey().value()).value(), kPeterVkey);
  EXPECT_EQ(SignNote(kPeterText, "PeterNeumann", key).value(), kPeterNote);
  EXPECT_EQ(OpenNote(kPeterNote, Keys(kPeterVkey)).value(), kPeterText);
  // The example of c2sp.org/signed-note.
  const std::string spec_note =
      "This is an example message.\n\n\xe2\x80\x94 example.com/foo "
      "Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";
  EXPECT_EQ(OpenNote(spec_note, Keys("example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"))
                .value(),
            "This is an example message.\n");
}

TEST(SignedNoteTest, VerifierKeyParsingIsStrict) {
  EXPECT_TRUE(ParseVerifierKey(kPeterVkey).ok());
  const std::string good(kPeterVkey);
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = bad[i] == 'A' ? 'B' : 'A';
    EXPECT_FALSE(ParseVerifierKey(bad).ok()) << bad;
    EXPECT_FALSE(ParseVerifierKey(good.substr(0, i)).ok());
  }
  EXPECT_FALSE(ParseVerifierKey("Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW").ok());
}

TEST(SignedNoteTest, UnknownSignersAreIgnoredAndBadKnownOnesReject) {
  auto peter = PeterKey();
  auto other = crypto::Ed25519PrivateKey::Generate().value();
  // Cosigned by an unknown key: still opens with Peter's key; does not open with neither.
  std::string cosigned(kPeterNote);
  auto other_note = SignNote(kPeterText, "witness.example/w1", other).value();
  cosigned += other_note.substr(other_note.rfind("\n\n") + 2);
  EXPECT_EQ(OpenNote(cosigned, Keys(kPeterVkey)).value(), kPeterText);
  std::vector<VerifierKey> only_other;
  only_other.push_back(VerifierKeyFor("witness.example/w2", other).value());
  EXPECT_EQ(OpenNote(cosigned, only_other).status().code(), Code::kUnauthenticated);
  // Changed text: Unauthenticated.
  std::string changed(kPeterNote);
  changed[3] = 'X';
  EXPECT_EQ(OpenNote(changed, Keys(kPeterVkey)).status().code(), Code::kUnauthenticated);
}

TEST(SignedNoteTest, MalformedNotes) {
  auto keys = Keys(kPeterVkey);
  const std::string note(kPeterNote);
  const std::string cases[] = {
      "",
      "text\n",
      note.substr(0, note.size() - 1),  // no final newline
      note + "\n",                      // trailing blank line
      std::string(kPeterText) + "\n",   // no signatures
      std::string(kPeterText) + "\n- PeterNeumann abc=\n",
      std::string(kPeterText) + "\n\xe2\x80\x94 PeterNeumann\n",
      std::string(kPeterText) + "\n\xe2\x80\x94 PeterNeumann !!!!\n",
      std::string(kPeterText) + "\n\xe2\x80\x94 PeterNeumann AAAA\n",
      "a\tb\n\n" + note.substr(note.rfind("\n\n") + 2),  // control character
      "\xff\n\n" + note.substr(note.rfind("\n\n") + 2),  // bad UTF-8
  };
  for (const auto& c : cases) {
    auto r = OpenNote(c, keys);
    EXPECT_FALSE(r.ok()) << c;
  }
  EXPECT_EQ(OpenNote(std::string(kMaxNoteBytes + 1, 'a'), keys).status().code(), Code::kInvalidArgument);
}

Checkpoint SampleCheckpoint() {
  Checkpoint c;
  c.origin = CheckpointOrigin("acme");
  c.size = 1234;
  c.root = LeafHash("root");
  c.chain_head = LeafHash("head");
  c.time_us = 1798096547123456;
  return c;
}

TEST(CheckpointTest, SignAndOpen) {
  auto key = crypto::Ed25519PrivateKey::Generate().value();
  std::vector<VerifierKey> keys;
  keys.push_back(VerifierKeyFor("govern.example/audit", key).value());
  const Checkpoint c = SampleCheckpoint();
  auto note = SignCheckpoint(c, "govern.example/audit", key).value();
  EXPECT_EQ(note.rfind(std::string("govern.audit/acme\n1234\n") + crypto::Base64Encode(c.root) + "\nchain " +
                           HashToHex(c.chain_head) + "\ntime 2026-12-24T07:15:47.123456Z\n\n" +
                           "\xe2\x80\x94 govern.example/audit ",
                       0),
            0u)
      << note;
  EXPECT_EQ(OpenCheckpoint(note, keys).value(), c);
  // The vkey text round-trips and verifies too.
  std::vector<VerifierKey> parsed;
  parsed.push_back(ParseVerifierKey(FormatVerifierKey("govern.example/audit", keys[0].key).value()).value());
  EXPECT_EQ(OpenCheckpoint(note, parsed).value(), c);
  // Any change of the body fails the signature.
  for (size_t i = 0; i < note.find("\n\n"); ++i) {
    std::string bad = note;
    bad[i] = bad[i] == '1' ? '2' : '1';
    EXPECT_FALSE(OpenCheckpoint(bad, keys).ok()) << i;
  }
  // An empty tree.
  Checkpoint empty = SampleCheckpoint();
  empty.size = 0;
  empty.root = EmptyTreeHash();
  empty.chain_head = kGenesisHash;
  EXPECT_EQ(OpenCheckpoint(SignCheckpoint(empty, "govern.example/audit", key).value(), keys).value(), empty);
}

TEST(CheckpointTest, BodyParsingIsStrict) {
  const std::string body = CheckpointBody(SampleCheckpoint()).value();
  EXPECT_EQ(ParseCheckpointBody(body).value(), SampleCheckpoint());
  const std::string root = crypto::Base64Encode(SampleCheckpoint().root);
  const std::string head = HashToHex(SampleCheckpoint().chain_head);
  const std::string bad[] = {
      "o\n1\n" + root + "\nchain " + head + "\n",
      "o\n1\n" + root + "\nchain " + head + "\ntime 2026-12-24T07:15:47.123456Z\nextra\n",
      "\n1\n" + root + "\nchain " + head + "\ntime 2026-12-24T07:15:47.123456Z\n",
      "o\n01\n" + root + "\nchain " + head + "\ntime 2026-12-24T07:15:47.123456Z\n",
      "o\n-1\n" + root + "\nchain " + head + "\ntime 2026-12-24T07:15:47.123456Z\n",
      "o\n99999999999999999999\n" + root + "\nchain " + head + "\ntime 2026-12-24T07:15:47.123456Z\n",
      "o\n1\nAAAA\nchain " + head + "\ntime 2026-12-24T07:15:47.123456Z\n",
      "o\n1\n" + root + "\nchain " + head.substr(2) + "\ntime 2026-12-24T07:15:47.123456Z\n",
      "o\n1\n" + root + "\nchain " + std::string(64, 'A') + "\ntime 2026-12-24T07:15:47.123456Z\n",
      "o\n1\n" + root + "\nhead " + head + "\ntime 2026-12-24T07:15:47.123456Z\n",
      "o\n1\n" + root + "\nchain " + head + "\ntime 2026-12-24T07:15:47Z\n",
      "o\n1\n" + root + "\nchain " + head + "\ntime 2026-12-24T07:15:47.123456Z",
  };
  for (const auto& b : bad) EXPECT_FALSE(ParseCheckpointBody(b).ok()) << b;
  Checkpoint c = SampleCheckpoint();
  c.origin = "a\nb";
  EXPECT_FALSE(CheckpointBody(c).ok());
  c.origin = "";
  EXPECT_FALSE(CheckpointBody(c).ok());
}

}  // namespace
}  // namespace govern::audit
