// Key files for bundle signing: PEM-like text with a Key-Id and Algorithm header.
#include "bundle/keys.h"

#include <cstring>
#include <vector>

#include "crypto/encoding.h"
#include "crypto/sha256.h"

namespace govern::bundle {
namespace {

constexpr std::string_view kPrivateLabel = "GOVERN BUNDLE PRIVATE KEY";
constexpr std::string_view kPublicLabel = "GOVERN BUNDLE PUBLIC KEY";

std::string Armor(std::string_view label, std::string_view key_id, std::string_view b64) {
  std::string out;
  out += "-----BEGIN ";
  out += label;
  out += "-----\nKey-Id: ";
  out += key_id;
  out += "\nAlgorithm: ed25519\n\n";
  out += b64;
  out += "\n-----END ";
  out += label;
  out += "-----\n";
  return out;
}

struct Unarmored {
  std::string key_id;
  std::vector<uint8_t> raw;
};

// Splits into lines (LF or CRLF), requires the exact layout Armor writes (blank lines around the block
// are tolerated), and returns the key id and the decoded 32 key bytes.
Result<Unarmored> Unarmor(std::string_view text, std::string_view label, std::string_view what) {
  if (text.size() > 4096) return InvalidArgument(std::string(what) + ": file too large for a key");
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == std::string_view::npos ? text.npos : nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  size_t i = 0;
  while (i < lines.size() && lines[i].empty()) ++i;
  auto bad = [&](std::string why) { return InvalidArgument(std::string(what) + ": " + why); };
  std::string begin = "-----BEGIN " + std::string(label) + "-----";
  std::string end = "-----END " + std::string(label) + "-----";
  if (lines.size() - i != 6 || lines[i] != begin) {
    return bad("expected a \"" + begin + "\" block of 6 lines");
  }
  if (lines[i + 5] != end) return bad("expected \"" + end + "\"");
  Unarmored u;
  std::string_view id_line = lines[i + 1];
  if (id_line.substr(0, 8) != "Key-Id: ") return bad("expected \"Key-Id: ...\" on line 2");
  u.key_id = std::string(id_line.substr(8));
  GOVERN_RETURN_IF_ERROR(ValidateKeyId(u.key_id).WithContext(what));
  if (lines[i + 2] != "Algorithm: ed25519") return bad("expected \"Algorithm: ed25519\" on line 3");
  if (!lines[i + 3].empty()) return bad("expected a blank line after the headers");
  auto raw = crypto::Base64Decode(lines[i + 4]);
  if (!raw.ok()) return bad("key is not base64: " + raw.status().message());
  if (raw->size() != 32) return bad("key is " + std::to_string(raw->size()) + " bytes, want 32");
  u.raw = std::move(*raw);
  return u;
}

}  // namespace

Status ValidateKeyId(std::string_view id) {
  if (id.empty() || id.size() > 64) return InvalidArgument("key id must be 1 to 64 characters");
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-';
    if (!ok)
      return InvalidArgument("key id \"" + std::string(id) + "\" has characters other than [A-Za-z0-9._-]");
  }
  return OkStatus();
}

std::string DefaultKeyId(const std::array<uint8_t, 32>& public_key) {
  auto digest = crypto::Sha256(std::span<const uint8_t>(public_key));
  if (!digest.ok()) return "unknown";
  return crypto::HexEncode(std::span<const uint8_t>(digest->data(), 8));
}

Result<PublicKey> PublicKey::Create(std::string key_id, std::span<const uint8_t> raw32) {
  GOVERN_RETURN_IF_ERROR(ValidateKeyId(key_id));
  GOVERN_ASSIGN_OR_RETURN(auto key, crypto::Ed25519PublicKey::FromRaw(raw32));
  return PublicKey(std::move(key_id), std::move(key));
}

Result<PublicKey> PublicKey::Parse(std::string_view text) {
  GOVERN_ASSIGN_OR_RETURN(Unarmored u, Unarmor(text, kPublicLabel, "public key"));
  return Create(std::move(u.key_id), u.raw);
}

std::string PublicKey::Text() const {
  auto raw = key_.Raw();
  return Armor(kPublicLabel, key_id_, crypto::Base64Encode(std::span<const uint8_t>(raw)));
}

Result<SigningKey> SigningKey::Generate(std::string key_id) {
  GOVERN_ASSIGN_OR_RETURN(auto key, crypto::Ed25519PrivateKey::Generate());
  GOVERN_ASSIGN_OR_RETURN(auto seed, key.Raw());
  return FromSeed(seed.span(), std::move(key_id));
}

Result<SigningKey> SigningKey::FromSeed(std::span<const uint8_t> seed32, std::string key_id) {
  GOVERN_ASSIGN_OR_RETURN(auto key, crypto::Ed25519PrivateKey::FromRaw(seed32));
  if (key_id.empty()) {
    GOVERN_ASSIGN_OR_RETURN(auto pub, key.PublicKey());
    key_id = DefaultKeyId(pub.Raw());
  }
  GOVERN_RETURN_IF_ERROR(ValidateKeyId(key_id));
  return SigningKey(std::move(key_id), std::move(key));
}

Result<SigningKey> SigningKey::Parse(std::string_view text) {
  GOVERN_ASSIGN_OR_RETURN(Unarmored u, Unarmor(text, kPrivateLabel, "private key"));
  crypto::SecretBytes seed(u.raw);
  std::memset(u.raw.data(), 0, u.raw.size());
  return FromSeed(seed.span(), std::move(u.key_id));
}

Result<PublicKey> SigningKey::Public() const {
  GOVERN_ASSIGN_OR_RETURN(auto pub, key_.PublicKey());
  return PublicKey(key_id_, std::move(pub));
}

Result<crypto::SecretBytes> SigningKey::Text() const {
  GOVERN_ASSIGN_OR_RETURN(auto seed, key_.Raw());
  std::string b64 = crypto::Base64Encode(seed.span());
  std::string text = Armor(kPrivateLabel, key_id_, b64);
  crypto::SecretBytes out = crypto::SecretBytes::FromString(text);
  std::fill(b64.begin(), b64.end(), '\0');
  std::fill(text.begin(), text.end(), '\0');
  return out;
}

}  // namespace govern::bundle
