// Policy server API keys: creation, listing, revocation and the per-request check.
#include "services/policy/api_keys.h"

#include <openssl/crypto.h>

#include <array>

#include "crypto/bytes.h"
#include "crypto/encoding.h"
#include "crypto/random.h"
#include "crypto/sha256.h"
#include "db/connection.h"

namespace govern::policy_service {
namespace {

constexpr std::string_view kPrefix = "gvp_";
constexpr std::string_view kBase32 = "abcdefghijklmnopqrstuvwxyz234567";
constexpr size_t kKeyIdLength = 12;
constexpr size_t kSecretBytes = 32;
constexpr std::string_view kBadKey = "invalid or revoked API key";

bool IsBase32(char c) { return (c >= 'a' && c <= 'z') || (c >= '2' && c <= '7'); }
bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// The key_id of a well-formed key, or nullopt.
std::optional<std::string_view> KeyIdOf(std::string_view key) {
  constexpr size_t kLength = 4 + kKeyIdLength + 1 + 2 * kSecretBytes;
  if (key.size() != kLength || key.substr(0, kPrefix.size()) != kPrefix || key[4 + kKeyIdLength] != '_') {
    return std::nullopt;
  }
  std::string_view id = key.substr(4, kKeyIdLength);
  for (char c : id) {
    if (!IsBase32(c)) return std::nullopt;
  }
  for (char c : key.substr(4 + kKeyIdLength + 1)) {
    if (!IsLowerHex(c)) return std::nullopt;
  }
  return id;
}

constexpr const char* kCreated = R"(to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))";
constexpr const char* kRevoked = R"(to_char(revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))";

}  // namespace

std::string_view ScopeName(KeyScope scope) { return scope == KeyScope::kPublish ? "publish" : "fetch"; }

Result<KeyScope> ParseScope(std::string_view name) {
  if (name == "publish") return KeyScope::kPublish;
  if (name == "fetch") return KeyScope::kFetch;
  return InvalidArgument("scope must be 'publish' or 'fetch', not '" + std::string(name.substr(0, 40)) + "'");
}

Status ValidateOrg(std::string_view org) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument("organisation name '" + std::string(org.substr(0, 80)) + "' " + std::string(why) +
                           " (use 1-63 of a-z, 0-9, '_' and '-', starting with a letter or digit)");
  };
  if (org.empty()) return InvalidArgument("organisation name is empty");
  if (org.size() > 63) return bad("is longer than 63 characters");
  for (size_t i = 0; i < org.size(); ++i) {
    char c = org[i];
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) continue;
    if (i > 0 && (c == '_' || c == '-')) continue;
    return bad("has a character it may not have at position " + std::to_string(i + 1));
  }
  return OkStatus();
}

Result<std::string> CreateKey(db::Connection& conn, std::string_view org, KeyScope scope,
                              std::string_view name) {
  GOVERN_RETURN_IF_ERROR(ValidateOrg(org));
  if (name.size() > 200) return InvalidArgument("key name is longer than 200 bytes");
  std::array<uint8_t, 8 + kSecretBytes> random{};
  GOVERN_RETURN_IF_ERROR(crypto::RandomBytes(random));
  std::string key(kPrefix);
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) bits = (bits << 8) | random[i];
  for (size_t i = 0; i < kKeyIdLength; ++i) key.push_back(kBase32[(bits >> (5 * i)) & 31]);
  key.push_back('_');
  key += crypto::HexEncode(std::span<const uint8_t>(random).subspan(8));
  OPENSSL_cleanse(random.data(), random.size());
  GOVERN_ASSIGN_OR_RETURN(crypto::Sha256Digest hash, crypto::Sha256(key));
  std::string_view key_id = std::string_view(key).substr(4, kKeyIdLength);
  auto rows = conn.Exec(
      "INSERT INTO policy_api_keys (key_id, org, secret_hash, scope, name) VALUES ($1, $2, $3, $4, $5)",
      db::Params(key_id, org, db::Bytea{crypto::AsString(hash)}, ScopeName(scope), name));
  if (!rows.ok()) return rows.status().WithContext("store the new key");
  return key;
}

Result<std::vector<KeyInfo>> ListKeys(db::Connection& conn, std::string_view org) {
  std::string sql = std::string("SELECT key_id, org, scope, name, ") + kCreated + ", " + kRevoked +
                    " FROM policy_api_keys WHERE ($1 = '' OR org = $1) ORDER BY created_at, key_id";
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, conn.Exec(sql, db::Params(org)));
  std::vector<KeyInfo> out;
  for (int r = 0; r < rows.size(); ++r) {
    KeyInfo k;
    k.key_id = rows.Text(r, 0);
    k.org = rows.Text(r, 1);
    GOVERN_ASSIGN_OR_RETURN(k.scope, ParseScope(rows.Text(r, 2)));
    k.name = rows.Text(r, 3);
    k.created_at = rows.Text(r, 4);
    if (auto t = rows.OptText(r, 5)) k.revoked_at = std::string(*t);
    out.push_back(std::move(k));
  }
  return out;
}

Status RevokeKey(db::Connection& conn, std::string_view key_id) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      conn.Exec("UPDATE policy_api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE key_id = $1",
                db::Params(key_id)));
  if (rows.affected() == 0) return NotFound("no key with id '" + std::string(key_id.substr(0, 64)) + "'");
  return OkStatus();
}

Result<std::string> CheckKey(db::Connection& conn, std::string_view key, KeyScope scope) {
  std::optional<std::string_view> key_id = KeyIdOf(key);
  if (!key_id) return Unauthenticated(std::string(kBadKey));
  auto rows = conn.ExecPrepared(
      "SELECT org, scope, secret_hash, revoked_at IS NOT NULL FROM policy_api_keys WHERE key_id = $1",
      db::Params(*key_id));
  if (!rows.ok()) return Unavailable("key lookup: " + rows.status().message());
  GOVERN_ASSIGN_OR_RETURN(crypto::Sha256Digest hash, crypto::Sha256(key));
  if (rows->empty()) return Unauthenticated(std::string(kBadKey));
  auto stored = rows->Bytes(0, 2);
  auto revoked = rows->Bool(0, 3);
  if (!stored.ok() || !revoked.ok()) return Internal("key lookup: malformed row");
  bool same = crypto::ConstantTimeEquals(crypto::AsString(hash), *stored);
  if (!same || *revoked) return Unauthenticated(std::string(kBadKey));
  if (rows->Text(0, 1) != ScopeName(scope)) {
    return PermissionDenied("this key has scope '" + std::string(rows->Text(0, 1)) + "'; this needs '" +
                            std::string(ScopeName(scope)) + "'");
  }
  return std::string(rows->Text(0, 0));
}

}  // namespace govern::policy_service
