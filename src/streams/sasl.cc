// SASL PLAIN and OAUTHBEARER (see sasl.h).
#include "streams/sasl.h"

#include <array>
#include <fstream>
#include <sstream>

#include "crypto/bytes.h"
#include "crypto/encoding.h"
#include "crypto/password.h"
#include "crypto/random.h"
#include "crypto/sha256.h"
#include "tokens/checker.h"

namespace govern::streams {

Result<PlainMessage> ParsePlain(std::string_view m) {
  size_t a = m.find('\0');
  if (a == std::string_view::npos) return InvalidArgument("PLAIN: no NUL separator");
  size_t b = m.find('\0', a + 1);
  if (b == std::string_view::npos) return InvalidArgument("PLAIN: want authzid NUL authcid NUL password");
  PlainMessage out{m.substr(0, a), m.substr(a + 1, b - a - 1), m.substr(b + 1)};
  if (out.password.find('\0') != std::string_view::npos) return InvalidArgument("PLAIN: too many fields");
  if (out.authcid.empty() || out.authcid.size() > 255) return InvalidArgument("PLAIN: bad user name");
  if (out.password.size() > 1024) return InvalidArgument("PLAIN: password too long");
  return out;
}

Result<OAuthBearerMessage> ParseOAuthBearer(std::string_view m) {
  // GS2 header: "n," (no channel binding) then optional "a=<authzid>" then ",".
  if (!m.starts_with("n,")) return InvalidArgument("OAUTHBEARER: GS2 header must start with n,");
  m.remove_prefix(2);
  OAuthBearerMessage out;
  size_t comma = m.find(',');
  if (comma == std::string_view::npos) return InvalidArgument("OAUTHBEARER: unterminated GS2 header");
  std::string_view authz = m.substr(0, comma);
  if (!authz.empty()) {
    if (!authz.starts_with("a=")) return InvalidArgument("OAUTHBEARER: bad GS2 authzid");
    out.authzid = authz.substr(2);
  }
  m.remove_prefix(comma + 1);
  // kvpairs: \x01 key=value \x01 ... \x01 \x01
  if (!m.starts_with('\x01') || !m.ends_with("\x01\x01") || m.size() < 3)
    return InvalidArgument("OAUTHBEARER: message must be framed by \\x01 separators");
  m = m.substr(1, m.size() - 3);
  bool have_auth = false;
  while (true) {
    size_t sep = m.find('\x01');
    std::string_view kv = m.substr(0, sep);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) return InvalidArgument("OAUTHBEARER: bad key=value");
    std::string_view key = kv.substr(0, eq), value = kv.substr(eq + 1);
    if (key == "auth") {
      if (have_auth) return InvalidArgument("OAUTHBEARER: auth given twice");
      // RFC 6750 scheme is case-insensitive.
      if (value.size() < 7 || !(value.substr(0, 7) == "Bearer " || value.substr(0, 7) == "bearer "))
        return InvalidArgument("OAUTHBEARER: auth must be \"Bearer <token>\"");
      out.token = value.substr(7);
      while (out.token.starts_with(' ')) out.token.remove_prefix(1);
      if (out.token.empty()) return InvalidArgument("OAUTHBEARER: empty token");
      have_auth = true;
    }
    if (sep == std::string_view::npos) break;
    m.remove_prefix(sep + 1);
  }
  if (!have_auth) return InvalidArgument("OAUTHBEARER: no auth=Bearer");
  return out;
}

namespace {
Result<std::string> Sha256Hex(std::string_view salt, std::string_view password) {
  std::string buf(salt);
  buf.append(password);
  GOVERN_ASSIGN_OR_RETURN(auto d, crypto::Sha256(buf));
  return crypto::HexEncode(d);
}

// A valid hash to burn time on for unknown users, so their absence does not show in the timing.
constexpr std::string_view kDummySha =
    "sha256:00112233445566778899aabbccddeeff:"
    "0000000000000000000000000000000000000000000000000000000000000000";

Status VerifyHash(std::string_view stored, std::string_view password) {
  if (stored.starts_with("$argon2id$")) {
    Status s = crypto::VerifyPassword(password, stored);
    if (s.ok()) return s;
    return Unauthenticated("authentication failed: bad user name or password");
  }
  if (stored.starts_with("sha256:")) {
    std::string_view rest = stored.substr(7);
    size_t colon = rest.find(':');
    if (colon == std::string_view::npos) return Internal("users: malformed sha256 entry");
    auto salt = crypto::HexDecode(rest.substr(0, colon));
    if (!salt.ok()) return Internal("users: malformed sha256 salt");
    GOVERN_ASSIGN_OR_RETURN(
        std::string got,
        Sha256Hex(std::string_view(reinterpret_cast<const char*>(salt->data()), salt->size()), password));
    if (crypto::ConstantTimeEquals(got, rest.substr(colon + 1))) return OkStatus();
    return Unauthenticated("authentication failed: bad user name or password");
  }
  return Internal("users: unknown hash format");
}
}  // namespace

Result<std::string> HashPasswordSha256(std::string_view password) {
  std::array<uint8_t, 16> salt;
  GOVERN_RETURN_IF_ERROR(crypto::RandomBytes(salt));
  GOVERN_ASSIGN_OR_RETURN(
      std::string h, Sha256Hex(std::string_view(reinterpret_cast<const char*>(salt.data()), 16), password));
  return "sha256:" + crypto::HexEncode(salt) + ":" + h;
}

Result<std::shared_ptr<const UserStore>> UserStore::Parse(std::string_view text) {
  std::map<std::string, std::string, std::less<>> users;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    line_no++;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    size_t sp = line.find(' ');
    auto bad = [&](std::string why) {
      return InvalidArgument("users line " + std::to_string(line_no) + ": " + why);
    };
    if (sp == std::string_view::npos || sp == 0 || sp > 255) return bad("want: <name> <hash>");
    std::string_view name = line.substr(0, sp), hash = line.substr(sp + 1);
    while (hash.starts_with(' ')) hash.remove_prefix(1);
    if (hash.starts_with("$argon2id$")) {
      if (!crypto::ParsePasswordHashParams(hash).ok()) return bad("malformed argon2id hash");
    } else if (hash.starts_with("sha256:")) {
      std::string_view rest = hash.substr(7);
      size_t colon = rest.find(':');
      if (colon == std::string_view::npos || colon == 0 || !crypto::HexDecode(rest.substr(0, colon)).ok() ||
          rest.size() - colon - 1 != 64 || !crypto::HexDecode(rest.substr(colon + 1)).ok())
        return bad("malformed sha256 hash (want sha256:<salt hex>:<64 hex>)");
    } else {
      return bad("hash must be an argon2id PHC string or sha256:<salt>:<hash>");
    }
    if (!users.emplace(std::string(name), std::string(hash)).second) return bad("duplicate user");
  }
  return std::make_shared<const UserStore>(std::move(users));
}

Result<std::shared_ptr<const UserStore>> UserStore::LoadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("users file " + path + " cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = Parse(ss.str());
  if (!r.ok()) return r.status().WithContext(path);
  return r;
}

std::string_view UserStore::HashOf(std::string_view user) const {
  auto it = users_.find(user);
  return it == users_.end() ? std::string_view() : std::string_view(it->second);
}

Status UserStore::Verify(std::string_view user, std::string_view password) const {
  auto it = users_.find(user);
  if (it == users_.end()) {
    (void)VerifyHash(kDummySha, password);
    return Unauthenticated("authentication failed: bad user name or password");
  }
  Status s = VerifyHash(it->second, password);
  if (!s.ok() && s.code() != Code::kUnauthenticated)
    return Unauthenticated("authentication failed: bad user name or password");
  return s;
}

Authenticator::Authenticator(AuthenticatorOptions options, std::shared_ptr<const UserStore> users,
                             std::shared_ptr<const tokens::Checker> checker, const Clock& clock)
    : options_(std::move(options)), users_(std::move(users)), checker_(std::move(checker)), clock_(clock) {}

std::vector<std::string> Authenticator::mechanisms() const {
  std::vector<std::string> out;
  if (users()) out.push_back("PLAIN");
  if (checker_) out.push_back("OAUTHBEARER");
  return out;
}

bool Authenticator::Offers(std::string_view m) const {
  return (m == "PLAIN" && users()) || (m == "OAUTHBEARER" && checker_);
}

void Authenticator::SetUsers(std::shared_ptr<const UserStore> users) {
  if (!users || !this->users()) return;  // PLAIN is offered or not for the broker's whole life
  users_.store(std::move(users), std::memory_order_release);
  users_generation_.fetch_add(1, std::memory_order_acq_rel);
}

uint64_t Authenticator::trust_version() const {
  // Both parts only grow (the TrustRefresher ignores older revocation lists), so the sum changes
  // whenever either does.
  return users_generation_.load(std::memory_order_acquire) + (checker_ ? checker_->revocation_version() : 0);
}

Status Authenticator::StillValid(std::string_view mechanism, std::string_view credential) const {
  if (mechanism == "OAUTHBEARER" && checker_) {
    auto claims = checker_->Check(credential, options_.audience);  // cached: a hash and a lookup
    if (claims.ok()) return OkStatus();
    return Unauthenticated("session ended: " +
                           std::string(tokens::Describe(tokens::RejectOf(claims.status()))));
  }
  if (mechanism == "PLAIN") {
    auto u = users();
    // "<name> <hash>": the hash has no space, a name given to the UserStore directly may.
    size_t sp = credential.rfind(' ');
    if (u && sp != std::string_view::npos &&
        crypto::ConstantTimeEquals(u->HashOf(credential.substr(0, sp)), credential.substr(sp + 1)))
      return OkStatus();
    return Unauthenticated("session ended: the user was removed or its password changed");
  }
  return Unauthenticated("session ended: mechanism no longer offered");
}

Result<AuthResult> Authenticator::Authenticate(std::string_view mechanism, std::string_view message) const {
  int64_t now_ms = clock_.UnixMicros() / 1000;
  if (auto users = this->users(); mechanism == "PLAIN" && users) {
    auto m = ParsePlain(message);
    if (!m.ok()) return Unauthenticated("authentication failed: " + m.status().message());
    if (!m->authzid.empty() && m->authzid != m->authcid)
      return Unauthenticated("authentication failed: authorization identity must be the user's own");
    GOVERN_RETURN_IF_ERROR(users->Verify(m->authcid, m->password));
    AuthResult r{"User:" + std::string(m->authcid), 0, "PLAIN",
                 std::string(m->authcid) + " " + std::string(users->HashOf(m->authcid))};
    if (options_.max_session_ms > 0) r.session_end_ms = now_ms + options_.max_session_ms;
    return r;
  }
  if (mechanism == "OAUTHBEARER" && checker_) {
    auto m = ParseOAuthBearer(message);
    if (!m.ok()) return Unauthenticated("authentication failed: " + m.status().message());
    auto claims = checker_->Check(m->token, options_.audience);
    if (!claims.ok())
      return Unauthenticated("authentication failed: invalid token: " +
                             std::string(tokens::Describe(tokens::RejectOf(claims.status()))));
    const tokens::Claims& c = **claims;
    if (c.sub.empty()) return Unauthenticated("authentication failed: token has no subject");
    if (!m->authzid.empty() && m->authzid != c.sub)
      return Unauthenticated("authentication failed: authorization identity must be the token's subject");
    AuthResult r{"User:" + c.sub, c.exp * 1000, "OAUTHBEARER", std::string(m->token)};
    if (options_.max_session_ms > 0)
      r.session_end_ms = std::min(r.session_end_ms, now_ms + options_.max_session_ms);
    return r;
  }
  return Unimplemented("SASL mechanism " + std::string(mechanism) + " is not enabled");
}

}  // namespace govern::streams
