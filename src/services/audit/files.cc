// The checkpoint signing key and the checkpoint directory.
#include "services/audit/files.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/file.h"
#include "config/config.h"
#include "crypto/bytes.h"
#include "crypto/encoding.h"
#include "crypto/random.h"

namespace govern::audit_service {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus(errno, "read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<CheckpointSigner> FromFile(const std::string& path) {
  GOVERN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  auto seed = crypto::HexDecode(text);
  if (!seed.ok() || seed->size() != 32) {
    return InvalidArgument(path + ": a checkpoint key file holds 64 hex digits (an Ed25519 seed)");
  }
  auto signer = CheckpointSigner::FromSeed(crypto::AsString(*seed));
  if (!signer.ok()) return signer.status().WithContext(path);
  return signer;
}

}  // namespace

Result<CheckpointSigner> CheckpointSigner::FromSeed(std::string_view seed32) {
  if (seed32.size() != 32) return InvalidArgument("an Ed25519 seed is 32 bytes");
  GOVERN_ASSIGN_OR_RETURN(crypto::Ed25519PrivateKey key,
                          crypto::Ed25519PrivateKey::FromRaw(crypto::AsBytes(seed32)));
  GOVERN_ASSIGN_OR_RETURN(crypto::Ed25519PublicKey pub, key.PublicKey());
  GOVERN_ASSIGN_OR_RETURN(std::string text, audit::FormatVerifierKey(kCheckpointKeyName, pub));
  CheckpointSigner s(std::move(key));
  s.verifier_key_text_ = std::move(text);
  return s;
}

Result<std::string> CheckpointSigner::Sign(const audit::Checkpoint& checkpoint) const {
  return audit::SignCheckpoint(checkpoint, kCheckpointKeyName, key_);
}

std::vector<audit::VerifierKey> CheckpointSigner::verifier_keys() const {
  std::vector<audit::VerifierKey> keys;
  auto k = audit::ParseVerifierKey(verifier_key_text_);
  if (k.ok()) keys.push_back(std::move(*k));
  return keys;
}

Result<CheckpointSigner> LoadCheckpointSigner(const std::string& key_file, const std::string& data_dir,
                                              std::string* used_path) {
  std::string path = key_file;
  if (path.empty()) {
    if (data_dir.empty()) return FailedPrecondition("no audit.checkpoint_key and no data_dir to keep one in");
    std::string dir = data_dir + "/audit";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return ErrnoStatus(ec.value(), "create " + dir);
    path = dir + "/checkpoint.key";
    if (!std::filesystem::exists(path)) {
      std::array<uint8_t, 32> seed{};
      GOVERN_RETURN_IF_ERROR(crypto::RandomBytes(seed));
      Status s = WriteNewFile(path, crypto::HexEncode(seed) + "\n", 0600);
      if (!s.ok() && s.code() != Code::kAlreadyExists) return s;
      if (s.ok()) {
        auto made = FromFile(path);
        if (made.ok()) (void)ReplaceFileDurably(dir + "/checkpoint.pub", made->verifier_key() + "\n", 0644);
      }
    }
  }
  if (used_path != nullptr) *used_path = path;
  return FromFile(path);
}

std::string CheckpointDir(const std::string& configured, const std::string& data_dir) {
  return configured.empty() ? data_dir + "/audit/checkpoints" : configured;
}

Status WriteCheckpointFile(const std::string& dir, const std::string& org, uint64_t size,
                           const std::string& note) {
  std::string org_dir = dir + "/" + org;
  std::error_code ec;
  std::filesystem::create_directories(org_dir, ec);
  if (ec) return ErrnoStatus(ec.value(), "create " + org_dir);
  char name[40];
  std::snprintf(name, sizeof name, "%020llu.checkpoint", static_cast<unsigned long long>(size));
  return ReplaceFileDurably(org_dir + "/" + name, note, 0644);
}

Result<std::vector<std::string>> ReadCheckpointFiles(const std::string& dir, const std::string& org) {
  std::vector<std::string> names;
  std::error_code ec;
  std::string org_dir = dir + "/" + org;
  if (!std::filesystem::is_directory(org_dir, ec)) return std::vector<std::string>{};
  for (const auto& e : std::filesystem::directory_iterator(org_dir, ec)) {
    std::string n = e.path().filename().string();
    if (n.size() > 11 && n.substr(n.size() - 11) == ".checkpoint") names.push_back(e.path().string());
  }
  if (ec) return ErrnoStatus(ec.value(), "list " + org_dir);
  std::sort(names.begin(), names.end());
  std::vector<std::string> out;
  for (const std::string& p : names) {
    GOVERN_ASSIGN_OR_RETURN(std::string note, ReadFile(p));
    out.push_back(std::move(note));
  }
  return out;
}

Result<std::optional<int64_t>> ParseRetentionSeconds(std::string_view text) {
  if (text.empty() || text == "forever") return std::optional<int64_t>();
  if (text.back() == 'd') {
    int64_t days = 0;
    auto r = std::from_chars(text.data(), text.data() + text.size() - 1, days);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size() - 1 || days <= 0 || days > 365 * 1000) {
      return InvalidArgument("retention '" + std::string(text) + "' is not a number of days like 90d");
    }
    return std::optional<int64_t>(days * 86400);
  }
  auto d = config::ParseDuration(text);
  if (!d.ok() || d->count() < 1000) {
    return InvalidArgument("retention must be 'forever' or a duration like 90d, 12h, 30m (not '" +
                           std::string(text) + "')");
  }
  return std::optional<int64_t>(d->count() / 1000);
}

}  // namespace govern::audit_service
