// Signing key rings in PostgreSQL, sealed with the storage key; the storage key itself.
#include "services/auth/keys.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/file.h"
#include "crypto/encoding.h"
#include "db/connection.h"

namespace govern::auth_service {
namespace {

Result<crypto::Aes256GcmKey> KeyFromHex(std::string_view hex, std::string_view where) {
  while (!hex.empty() && (hex.back() == '\n' || hex.back() == ' ')) hex.remove_suffix(1);
  auto bytes = crypto::HexDecode(hex);
  if (!bytes.ok() || bytes->size() != 32)
    return InvalidArgument(std::string(where) + ": expected 64 hex digits");
  auto key = crypto::Aes256GcmKey::Create(*bytes);
  std::fill(bytes->begin(), bytes->end(), 0);
  return key;
}

Result<std::optional<tokens::KeyRing>> ReadRing(db::Connection& c, const crypto::Aes256GcmKey& key,
                                                std::string_view purpose) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      c.Exec("SELECT sealed FROM auth_signing_keys WHERE purpose = $1 FOR UPDATE", db::Params(purpose)));
  if (rows.empty()) return std::optional<tokens::KeyRing>();
  GOVERN_ASSIGN_OR_RETURN(std::string sealed, rows.Bytes(0, 0));
  auto plain = key.Open(crypto::AsBytes(sealed), crypto::AsBytes(purpose));
  if (!plain.ok()) {
    return FailedPrecondition("the stored " + std::string(purpose) +
                              " key ring does not open with this storage key (auth.storage_key or "
                              "<data_dir>/auth/storage.key changed?)");
  }
  GOVERN_ASSIGN_OR_RETURN(tokens::KeyRing ring, tokens::KeyRing::Deserialize(plain->span()));
  return std::optional<tokens::KeyRing>(std::move(ring));
}

Status WriteRing(db::Connection& c, const crypto::Aes256GcmKey& key, std::string_view purpose,
                 const tokens::KeyRing& ring) {
  GOVERN_ASSIGN_OR_RETURN(crypto::SecretBytes plain, ring.Serialize());
  GOVERN_ASSIGN_OR_RETURN(std::vector<uint8_t> sealed, key.Seal(plain.span(), crypto::AsBytes(purpose)));
  return c
      .Exec(
          "INSERT INTO auth_signing_keys (purpose, sealed) VALUES ($1, $2) ON CONFLICT (purpose) DO UPDATE "
          "SET sealed = EXCLUDED.sealed, updated_at = now()",
          db::Params(purpose, db::Bytea{crypto::AsString(sealed)}))
      .status();
}

}  // namespace

Result<crypto::Aes256GcmKey> LoadStorageKey(std::string_view configured_hex, const std::string& dir) {
  if (!configured_hex.empty()) return KeyFromHex(configured_hex, "auth.storage_key");
  std::string path = dir + "/storage.key";
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in.good() && !in.eof()) return Unavailable("read " + path);
    return KeyFromHex(ss.str(), path);
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) return Unavailable("create " + dir + ": " + ec.message());
  GOVERN_ASSIGN_OR_RETURN(crypto::Aes256GcmKey key, crypto::Aes256GcmKey::Generate());
  std::string hex = crypto::HexEncode(key.key().span()) + "\n";
  GOVERN_RETURN_IF_ERROR(WriteNewFile(path, hex, 0600));
  std::fill(hex.begin(), hex.end(), '0');
  return key;
}

Result<Rings> LoadAndRotate(db::Connection& c, const crypto::Aes256GcmKey& key, tokens::Alg id_alg,
                            const tokens::RotationPolicy& policy, int64_t now_s) {
  Rings out;
  Status s = c.Transact([&](db::Connection& tx) -> Status {
    out = Rings{};
    // Serialises replicas: the first to start creates the rows, the others then read them.
    GOVERN_RETURN_IF_ERROR(tx.Exec("SELECT pg_advisory_xact_lock(7740)").status());
    for (auto [purpose, alg] : {std::pair<std::string_view, tokens::Alg>{"access", tokens::Alg::kHS256},
                                std::pair<std::string_view, tokens::Alg>{"id", id_alg}}) {
      GOVERN_ASSIGN_OR_RETURN(std::optional<tokens::KeyRing> ring, ReadRing(tx, key, purpose));
      bool changed = false;
      if (!ring) {
        GOVERN_ASSIGN_OR_RETURN(tokens::KeyRing made, tokens::KeyRing::Create(alg, policy, now_s));
        ring = std::move(made);
        changed = true;
      } else if (ring->PlanAt(policy, now_s).changed()) {
        GOVERN_ASSIGN_OR_RETURN(tokens::KeyRing rotated, ring->Rotate(policy, now_s));
        ring = std::move(rotated);
        changed = true;
      }
      if (changed) GOVERN_RETURN_IF_ERROR(WriteRing(tx, key, purpose, *ring));
      out.changed = out.changed || changed;
      auto shared = std::make_shared<const tokens::KeyRing>(std::move(*ring));
      (purpose == "access" ? out.access : out.id) = std::move(shared);
    }
    return OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::string> Seal(const crypto::Aes256GcmKey& key, std::string_view plaintext, std::string_view aad) {
  GOVERN_ASSIGN_OR_RETURN(std::vector<uint8_t> sealed,
                          key.Seal(crypto::AsBytes(plaintext), crypto::AsBytes(aad)));
  return std::string(crypto::AsString(sealed));
}

Result<std::string> Open(const crypto::Aes256GcmKey& key, std::string_view sealed, std::string_view aad) {
  GOVERN_ASSIGN_OR_RETURN(crypto::SecretBytes plain, key.Open(crypto::AsBytes(sealed), crypto::AsBytes(aad)));
  return std::string(crypto::AsString(plain.span()));
}

}  // namespace govern::auth_service
