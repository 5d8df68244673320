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

#include "base/status.h"
#include "services/audit/chain.h"

namespace govern::audit_service {

// The key at `key_file`, or when it is empty the one under <data_dir>/audit/checkpoint.key (made on
// first use; a second process racing to make it reads the winner's). Errors name the file.
Result<CheckpointSigner> LoadCheckpointSigner(const std::string& key_file, const std::string& data_dir,
                                              std::string* used_path = nullptr);

// <dir>/<org>/<size>.checkpoint.
Status WriteCheckpointFile(const std::string& dir, const std::string& org, uint64_t size,
                           const std::string& note);
// Every checkpoint file of `org` in `dir`, by size; none when the directory does not exist.
Result<std::vector<std::string>> ReadCheckpointFiles(const std::string& dir, const std::string& org);

// "forever" (or empty): nullopt. Otherwise a duration: "90d", "12h", "30m", "45s".
Result<std::optional<int64_t>> ParseRetentionSeconds(std::string_view text);

}  // namespace govern::audit_service
