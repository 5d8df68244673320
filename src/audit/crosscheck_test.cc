// Cross-check against an independent implementation: exports written by this library are verified by
// verify_export.py (Python's hashlib and json, Ed25519 by the cryptography package or the openssl
// command), which was written from docs/audit-format.md alone; tampered exports fail there too.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "audit/export.h"

namespace govern::audit {
namespace {

struct Run {
  int exit_code;
  std::string out;
};

Run Python(const std::string& file, const std::string& vkey, bool use_openssl) {
  std::string cmd = std::string(use_openssl ? "VERIFY_EXPORT_USE_OPENSSL=1 " : "") + "python3 " +
                    AUDIT_SRC_DIR "/verify_export.py '" + file + "' '" + vkey + "' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

class CrosscheckTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    key_ = std::make_unique<crypto::Ed25519PrivateKey>(crypto::Ed25519PrivateKey::Generate().value());
    vkey_ = FormatVerifierKey("audit.example.com", key_->PublicKey().value()).value();
    path_ = ::testing::TempDir() + "audit_crosscheck_" + std::to_string(::getpid()) + ".ndjson";
    // Details that exercise JCS: escapes, non-ASCII, supplementary characters in names, numbers.
    const char* details[] = {
        R"({"b":1,"a":"x\u0001\u001f\b\t\n\f\r\"\\/\u007f"})",
        R"({"\ud83d\ude00":1,"\uffff":2,"\u00e9":3,"z":[1.5,-0,1e21,1e-7,0.000001,123456789012345678901]})",
        R"({"nested":{"deep":{"list":[null,true,false,{"k":"v"}]}},"empty":{},"arr":[]})",
        "{}",
    };
    Hash prev = kGenesisHash;
    CompactRange range;
    for (uint64_t i = 1; i <= 40; ++i) {
      Entry e;
      e.org = "acme";
      e.seq = i;
      e.time_us = 1798096547000000 + static_cast<int64_t>(i) * 999;
      e.actor = i % 2 ? "user:älice" : "svc:\"quoted\"\\";
      e.action = "act.\t" + std::to_string(i % 5);
      e.target = i % 3 ? "t/" + std::to_string(i) : "";
      e.outcome = "ok";
      e.details = CanonicalizeDetails(details[i % 4], 4096).value();
      e.idempotency_key = "k" + std::to_string(i);
      range.Append(Seal(e, prev));
      prev = e.entry_hash;
      chain_.push_back(e);
      if (i % 8 == 0) {
        Checkpoint c{CheckpointOrigin("acme"), i, range.Root(), e.entry_hash, e.time_us};
        notes_.push_back(SignCheckpoint(c, "audit.example.com", *key_).value());
      }
    }
  }
  void TearDown() override { std::remove(path_.c_str()); }

  void Write(uint64_t first_seq, const std::vector<Entry>& entries) {
    std::ofstream out(path_);
    ExportWriter w(out);
    ExportHeader h;
    h.org = "acme";
    h.first_seq = first_seq;
    if (first_seq > 1) h.prev_hash = chain_[first_seq - 2].entry_hash;
    for (uint64_t i = 0; i + 1 < first_seq; ++i) h.frontier.Append(LeafHash(CanonicalEntry(chain_[i])));
    ASSERT_TRUE(w.WriteHeader(h).ok());
    for (const auto& e : entries) ASSERT_TRUE(w.WriteEntry(e).ok());
    for (const auto& n : notes_) ASSERT_TRUE(w.WriteCheckpoint(n).ok());
    ASSERT_TRUE(w.Finish().ok());
  }

  std::unique_ptr<crypto::Ed25519PrivateKey> key_;
  std::string vkey_, path_;
  std::vector<Entry> chain_;
  std::vector<std::string> notes_;
};

TEST_P(CrosscheckTest, PythonVerifiesWhatWeWrite) {
  Write(1, chain_);
  std::vector<VerifierKey> keys;
  keys.push_back(ParseVerifierKey(vkey_).value());
  ASSERT_TRUE(VerifyExportFile(path_, keys).value().ok());
  auto r = Python(path_, vkey_, GetParam());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "ok 40 5\n");
}

TEST_P(CrosscheckTest, PythonVerifiesARetainedSuffix) {
  Write(17, std::vector<Entry>(chain_.begin() + 16, chain_.end()));
  auto r = Python(path_, vkey_, GetParam());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "ok 24 4\n");  // checkpoints at 16 (from the header), 24, 32, 40
}

TEST_P(CrosscheckTest, PythonFindsTheSameTampering) {
  auto changed = chain_;
  changed[20].outcome = "denied";
  Write(1, changed);
  EXPECT_EQ(Python(path_, vkey_, GetParam()).out, "entry_hash_mismatch at 21\n");
  // Recomputed after the change: caught by the checkpoint at 24.
  Hash prev = kGenesisHash;
  for (auto& e : changed) {
    Seal(e, prev);
    prev = e.entry_hash;
  }
  Write(1, changed);
  EXPECT_EQ(Python(path_, vkey_, GetParam()).out, "checkpoint_mismatch at 24\n");
  Write(1, std::vector<Entry>(chain_.begin(), chain_.begin() + 35));
  EXPECT_EQ(Python(path_, vkey_, GetParam()).out, "checkpoint_beyond_end at 36\n");
  // A forged checkpoint.
  notes_[0][notes_[0].find("chain ") + 6] ^= 1;
  Write(1, chain_);
  auto r = Python(path_, vkey_, GetParam());
  EXPECT_EQ(r.exit_code, 1) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Ed25519, CrosscheckTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "openssl" : "cryptography";
                         });

}  // namespace
}  // namespace govern::audit
