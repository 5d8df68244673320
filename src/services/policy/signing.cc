// Loading, or generating once, the bundle server's signing keys.
#include "services/policy/signing.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/file.h"
#include "crypto/bytes.h"

namespace govern::policy_service {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus(errno, "read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status Append(SigningKeys& out, const std::string& path, const std::string& text) {
  auto key = bundle::SigningKey::Parse(text);
  if (!key.ok()) return key.status().WithContext(path);
  auto pub = key->Public();
  if (!pub.ok()) return pub.status().WithContext(path);
  for (const auto& k : out.keys) {
    if (k.key_id() == key->key_id())
      return InvalidArgument(path + ": key id " + k.key_id() + " is configured twice");
  }
  out.keys.push_back(std::move(*key));
  out.publics.push_back(std::move(*pub));
  return OkStatus();
}

}  // namespace

Result<SigningKeys> LoadSigningKeys(const std::vector<std::string>& paths, const std::string& data_dir) {
  SigningKeys out;
  for (const std::string& path : paths) {
    if (path.empty()) continue;
    GOVERN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    GOVERN_RETURN_IF_ERROR(Append(out, path, text));
  }
  if (!out.keys.empty()) return out;

  std::string dir = data_dir + "/policy";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return ErrnoStatus(ec.value(), "create " + dir);
  std::string path = dir + "/signing.key";
  if (!std::filesystem::exists(path)) {
    GOVERN_ASSIGN_OR_RETURN(bundle::SigningKey key, bundle::SigningKey::Generate());
    GOVERN_ASSIGN_OR_RETURN(crypto::SecretBytes text, key.Text());
    Status s = WriteNewFile(path, crypto::AsString(text.span()), 0600);
    if (s.ok()) {
      GOVERN_ASSIGN_OR_RETURN(bundle::PublicKey pub, key.Public());
      std::string pub_path = dir + "/signing.pub";
      std::filesystem::remove(pub_path, ec);
      GOVERN_RETURN_IF_ERROR(WriteNewFile(pub_path, pub.Text(), 0644));
      GOVERN_RETURN_IF_ERROR(SyncDirectory(dir));
    } else if (s.code() != Code::kAlreadyExists) {
      return s;
    }
  }
  GOVERN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  GOVERN_RETURN_IF_ERROR(Append(out, path, text));
  out.generated = path;
  return out;
}

}  // namespace govern::policy_service
