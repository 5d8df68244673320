// The audit service's files outside PostgreSQL: the checkpoint signing key and the directory of
// checkpoints (one file per organisation per size), which is what a DBA cannot rewrite.
//
//   <key file>                      64 hex digits: the Ed25519 seed (mode 0600); default
//                                   <data_dir>/audit/checkpoint.key, made once (WriteNewFile)
//   <dir>/<org>/<size 20 digits>.checkpoint   the signed note, written durably (write, fsync, rename)
// Free functions; safe from many threads (each file is written whole).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "audit/checkpoint.h"
#include "base/status.h"
#include "crypto/signature.h"

namespace govern::audit_service {

// The key name in checkpoint signature lines and verifier keys.
inline constexpr std::string_view kCheckpointKeyName = "govern-audit";

// An Ed25519 key that signs checkpoints (audit/checkpoint.h), with its verifier key text
// ("govern-audit+<key id>+<base64 key>") for `GET /v1/audit/checkpoint-key` and `govern audit verify`.
// Immutable once made: thread-safe.
class CheckpointSigner {
 public:
  static Result<CheckpointSigner> FromSeed(std::string_view seed32);
  Result<std::string> Sign(const audit::Checkpoint& checkpoint) const;
  const std::string& verifier_key() const { return verifier_key_text_; }
  // For verifying locally (tests, `govern audit verify --org`).
  std::vector<audit::VerifierKey> verifier_keys() const;

 private:
  explicit CheckpointSigner(crypto::Ed25519PrivateKey key) : key_(std::move(key)) {}
  crypto::Ed25519PrivateKey key_;
  std::string verifier_key_text_;
};

// The key at `key_file`, or when it is empty the one under <data_dir>/audit/checkpoint.key (made on
// first use; a second process racing to make it reads the winner's). Errors name the file.
Result<CheckpointSigner> LoadCheckpointSigner(const std::string& key_file, const std::string& data_dir,
                                              std::string* used_path = nullptr);

// audit.checkpoint_dir, or <data_dir>/audit/checkpoints when it is empty (the service and the CLI
// agree through this).
std::string CheckpointDir(const std::string& configured, const std::string& data_dir);

// <dir>/<org>/<size>.checkpoint.
Status WriteCheckpointFile(const std::string& dir, const std::string& org, uint64_t size,
                           const std::string& note);
// Every checkpoint file of `org` in `dir`, by size; none when the directory does not exist.
Result<std::vector<std::string>> ReadCheckpointFiles(const std::string& dir, const std::string& org);

// "forever" (or empty): nullopt. Otherwise a duration: "90d", "12h", "30m", "45s".
Result<std::optional<int64_t>> ParseRetentionSeconds(std::string_view text);

}  // namespace govern::audit_service
