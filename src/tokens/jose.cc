// Compact JWS, JWT claims and JWK/JWKS over govern::crypto (RSA straight over EVP: crypto has no RSA).
#include "tokens/jose.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "crypto/encoding.h"
#include "crypto/random.h"
#include "crypto/sha256.h"
#include "crypto/signature.h"
#include "tokens/b64.h"
#include "tokens/json_reader.h"

namespace govern::tokens {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------------
// Algorithms

std::string_view AlgName(Alg alg) {
  switch (alg) {
    case Alg::kHS256:
      return "HS256";
    case Alg::kEdDSA:
      return "EdDSA";
    case Alg::kES256:
      return "ES256";
    case Alg::kRS256:
      return "RS256";
  }
  return "?";
}

Result<Alg> ParseAlg(std::string_view name) {
  if (name == "HS256") return Alg::kHS256;
  if (name == "EdDSA") return Alg::kEdDSA;
  if (name == "ES256") return Alg::kES256;
  if (name == "RS256") return Alg::kRS256;
  if (name == "none" || name == "None" || name == "NONE") {
    return InvalidArgument("jws: alg \"none\" is refused (unsigned tokens are never accepted)");
  }
  return InvalidArgument("jws: unsupported alg \"" + std::string(name.substr(0, 32)) + "\"");
}

namespace {

// ---------------------------------------------------------------------------------------------------
// JSON helpers

void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    // Runs of characters that need no escape are copied at once.
    size_t j = i;
    while (j < s.size()) {
      auto ch = static_cast<unsigned char>(s[j]);
      if (ch < 0x20 || ch == '"' || ch == '\\') break;
      ++j;
    }
    out.append(s.data() + i, j - i);
    if (j == s.size()) break;
    auto ch = static_cast<unsigned char>(s[j]);
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        out += "\\u00";
        out.push_back(kHex[ch >> 4]);
        out.push_back(kHex[ch & 15]);
      }
    }
    i = j + 1;
  }
  out.push_back('"');
}

void AppendMember(std::string& out, bool& first, std::string_view name, std::string_view value) {
  if (value.empty()) return;
  if (!first) out.push_back(',');
  first = false;
  AppendJsonString(out, name);
  out.push_back(':');
  AppendJsonString(out, value);
}

// Parses JSON that must be an object, refusing duplicate member names at every depth (RFC 7515
// section 5.2 allows either refusing or last-wins; refusing leaves no room for two parsers to disagree).
Result<json> ParseObject(std::string_view text, std::string_view what) {
  std::vector<std::vector<std::string>> keys;  // names seen, per open object
  bool duplicate = false;
  json::parser_callback_t cb = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && parsed.is_string()) {
          auto& seen = keys.back();
          const auto& name = parsed.get_ref<const std::string&>();
          if (std::find(seen.begin(), seen.end(), name) != seen.end()) duplicate = true;
          seen.push_back(name);
        }
        break;
      default:
        break;
    }
    return true;
  };
  json j = json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(std::string(what) + ": not valid JSON");
  if (!j.is_object()) return InvalidArgument(std::string(what) + ": not a JSON object");
  if (duplicate) return InvalidArgument(std::string(what) + ": duplicate member name");
  return j;
}

Status GetString(const json& j, const char* name, std::string* out, std::string_view what) {
  auto it = j.find(name);
  if (it == j.end()) return OkStatus();
  if (!it->is_string()) return InvalidArgument(std::string(what) + ": \"" + name + "\" is not a string");
  *out = it->get<std::string>();
  return OkStatus();
}

std::vector<std::string> SplitSpaces(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(' ', i);
    if (j == std::string_view::npos) j = s.size();
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

constexpr int kMaxActorDepth = 8;

// ---------------------------------------------------------------------------------------------------
// OpenSSL helpers for RSA (crypto/ has none).

struct EvpPkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, EvpPkeyFree>;

Status SslError(std::string_view what, Code code = Code::kInternal) {
  unsigned long e = ERR_get_error();
  char buf[256] = {0};
  if (e != 0) ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return Status(code, std::string(what) + (e != 0 ? std::string(": ") + buf : ""));
}

std::vector<uint8_t> BnBytes(const BIGNUM* bn) {
  std::vector<uint8_t> out(static_cast<size_t>(BN_num_bytes(bn)));
  BN_bn2bin(bn, out.data());
  return out;
}

Result<std::vector<uint8_t>> RsaParam(EVP_PKEY* key, const char* name) {
  BIGNUM* bn = nullptr;
  if (EVP_PKEY_get_bn_param(key, name, &bn) != 1) return SslError("rsa: read parameter");
  auto out = BnBytes(bn);
  BN_free(bn);
  return out;
}

Result<PkeyPtr> RsaFromNE(std::span<const uint8_t> n, std::span<const uint8_t> e) {
  // Leading zero bytes do not count towards the size.
  size_t nz = 0;
  while (nz < n.size() && n[nz] == 0) ++nz;
  if ((n.size() - nz) * 8 < 2048) return InvalidArgument("rsa: modulus shorter than 2048 bits");
  if ((n.size() - nz) * 8 > 8192) return InvalidArgument("rsa: modulus longer than 8192 bits");
  if (e.empty() || e.size() > 8) return InvalidArgument("rsa: bad public exponent");
  BIGNUM* bn_n = BN_bin2bn(n.data(), static_cast<int>(n.size()), nullptr);
  BIGNUM* bn_e = BN_bin2bn(e.data(), static_cast<int>(e.size()), nullptr);
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  OSSL_PARAM* params = nullptr;
  EVP_PKEY_CTX* ctx = nullptr;
  EVP_PKEY* key = nullptr;
  bool ok = bn_n && bn_e && bld && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) == 1 &&
            OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) == 1 &&
            (params = OSSL_PARAM_BLD_to_param(bld)) != nullptr &&
            (ctx = EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr)) != nullptr &&
            EVP_PKEY_fromdata_init(ctx) == 1 &&
            EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) == 1;
  BN_free(bn_n);
  BN_free(bn_e);
  OSSL_PARAM_free(params);
  OSSL_PARAM_BLD_free(bld);
  EVP_PKEY_CTX_free(ctx);
  if (!ok) {
    EVP_PKEY_free(key);
    return SslError("rsa: bad public key", Code::kInvalidArgument);
  }
  return PkeyPtr(key);
}

Status RsaVerify(EVP_PKEY* key, std::string_view input, std::span<const uint8_t> sig) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr) return SslError("rsa: EVP_MD_CTX_new");
  int rc = EVP_DigestVerifyInit_ex(ctx, nullptr, "SHA256", nullptr, nullptr, key, nullptr);
  if (rc == 1) {
    rc = EVP_DigestVerify(ctx, sig.data(), sig.size(), reinterpret_cast<const uint8_t*>(input.data()),
                          input.size());
  } else {
    rc = -1;
  }
  EVP_MD_CTX_free(ctx);
  ERR_clear_error();
  if (rc == 1) return OkStatus();
  return Unauthenticated("rs256: signature does not verify");
}

Result<std::vector<uint8_t>> RsaSign(EVP_PKEY* key, std::string_view input) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  size_t len = 0;
  std::vector<uint8_t> sig;
  bool ok =
      ctx && EVP_DigestSignInit_ex(ctx, nullptr, "SHA256", nullptr, nullptr, key, nullptr) == 1 &&
      EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const uint8_t*>(input.data()), input.size()) == 1;
  if (ok) {
    sig.resize(len);
    ok = EVP_DigestSign(ctx, sig.data(), &len, reinterpret_cast<const uint8_t*>(input.data()),
                        input.size()) == 1;
    sig.resize(len);
  }
  EVP_MD_CTX_free(ctx);
  if (!ok) return SslError("rs256: sign");
  return sig;
}

Result<std::string> PemOf(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr || PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    BIO_free(bio);
    return SslError("rsa: export");
  }
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(len));
  BIO_free(bio);
  return out;
}

Result<PkeyPtr> RsaFromPem(std::string_view pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = bio ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(bio);
  if (key == nullptr) return SslError("rsa: bad private key", Code::kInvalidArgument);
  PkeyPtr p(key);
  if (!EVP_PKEY_is_a(key, "RSA") || EVP_PKEY_get_bits(key) < 2048) {
    return InvalidArgument("rsa: not an RSA key of 2048 bits or more");
  }
  return p;
}

std::string RandomKid() {
  uint8_t b[12];
  if (!crypto::RandomBytes(b).ok()) return "";
  return crypto::Base64UrlEncode(std::span<const uint8_t>(b, sizeof b));
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Claims

bool Claims::HasAudience(std::string_view a) const {
  for (const auto& x : aud) {
    if (x == a) return true;
  }
  return false;
}

bool Claims::HasScope(std::string_view s) const {
  for (const auto& x : scope) {
    if (x == s) return true;
  }
  return false;
}

namespace {

void AppendActors(std::string& out, const std::vector<Actor>& actors, size_t i) {
  out += "{";
  bool first = true;
  auto member = [&](std::string_view name, std::string_view v) {
    if (v.empty()) return;
    if (!first) out.push_back(',');
    first = false;
    AppendJsonString(out, name);
    out.push_back(':');
    AppendJsonString(out, v);
  };
  member("sub", actors[i].sub);
  member("client_id", actors[i].client_id);
  if (i + 1 < actors.size()) {
    if (!first) out.push_back(',');
    first = false;
    out += "\"act\":";
    AppendActors(out, actors, i + 1);
  }
  out += "}";
}

}  // namespace

std::string ClaimsToJson(const Claims& c) {
  std::string out;
  out.reserve(384);
  out.push_back('{');
  bool first = true;
  auto sep = [&] {
    if (!first) out.push_back(',');
    first = false;
  };
  auto str = [&](std::string_view name, std::string_view v) {
    if (v.empty()) return;
    sep();
    AppendJsonString(out, name);
    out.push_back(':');
    AppendJsonString(out, v);
  };
  auto num = [&](std::string_view name, int64_t v) {
    if (v == 0) return;
    sep();
    AppendJsonString(out, name);
    out.push_back(':');
    out += std::to_string(v);
  };
  str("iss", c.iss);
  str("sub", c.sub);
  if (c.aud.size() == 1) {
    str("aud", c.aud[0]);
  } else if (c.aud.size() > 1) {
    sep();
    out += "\"aud\":[";
    for (size_t i = 0; i < c.aud.size(); ++i) {
      if (i) out.push_back(',');
      AppendJsonString(out, c.aud[i]);
    }
    out.push_back(']');
  }
  num("exp", c.exp);
  num("nbf", c.nbf);
  num("iat", c.iat);
  str("jti", c.jti);
  str("org", c.org);
  if (!c.scope.empty()) {
    std::string s;
    for (size_t i = 0; i < c.scope.size(); ++i) {
      if (i) s.push_back(' ');
      s += c.scope[i];
    }
    str("scope", s);
  }
  str("client_id", c.client_id);
  str("sid", c.sid);
  if (!c.actors.empty()) {
    sep();
    out += "\"act\":";
    AppendActors(out, c.actors, 0);
  }
  str("nonce", c.nonce);
  num("auth_time", c.auth_time);
  str("at_hash", c.at_hash);
  out.push_back('}');
  return out;
}

namespace {

using internal::JsonReader;

// Tracks the member names of one object: a duplicate is refused (RFC 7515 section 5.2 allows refusing or
// last-wins; refusing leaves no room for two parsers to read different claims from one token).
class Names {
 public:
  Status Add(const std::string& name, std::string_view what) {
    for (const auto& n : seen_) {
      if (n == name)
        return InvalidArgument(std::string(what) + ": duplicate member \"" + name.substr(0, 32) + "\"");
    }
    seen_.push_back(name);
    return OkStatus();
  }

 private:
  std::vector<std::string> seen_;
};

Status ReadStr(JsonReader& r, std::string* out, std::string_view name) {
  if (r.Peek() != '"') return InvalidArgument("jwt: \"" + std::string(name) + "\" is not a string");
  return r.ReadString(out);
}

Status ReadTime(JsonReader& r, int64_t* out, std::string_view name) {
  char c = r.Peek();
  if (c != '-' && (c < '0' || c > '9')) {
    return InvalidArgument("jwt: \"" + std::string(name) + "\" is not a NumericDate");
  }
  double d;
  bool integral;
  int64_t i;
  GOVERN_RETURN_IF_ERROR(r.ReadNumber(&d, &integral, &i));
  if (!integral) {
    if (!(d >= 0 && d < 1e12)) return InvalidArgument("jwt: \"" + std::string(name) + "\" out of range");
    i = static_cast<int64_t>(d);
  }
  if (i < 0 || i > 253402300799) return InvalidArgument("jwt: \"" + std::string(name) + "\" out of range");
  *out = i;
  return OkStatus();
}

Status ReadActor(JsonReader& r, std::vector<Actor>* actors) {
  if (r.Peek() != '{') return InvalidArgument("jwt: \"act\" is not an object");
  if (actors->size() >= kMaxActorDepth) return InvalidArgument("jwt: \"act\" nested too deeply");
  GOVERN_RETURN_IF_ERROR(r.BeginObject());
  actors->emplace_back();
  const size_t me = actors->size() - 1;
  Names names;
  std::string key;
  while (true) {
    GOVERN_ASSIGN_OR_RETURN(bool more, r.NextMember(&key));
    if (!more) break;
    GOVERN_RETURN_IF_ERROR(names.Add(key, "jwt act"));
    if (key == "sub") {
      GOVERN_RETURN_IF_ERROR(ReadStr(r, &(*actors)[me].sub, key));
    } else if (key == "client_id") {
      GOVERN_RETURN_IF_ERROR(ReadStr(r, &(*actors)[me].client_id, key));
    } else if (key == "act") {
      // Read the nested actor after this one's members: keep this slot, recurse into the next.
      GOVERN_RETURN_IF_ERROR(ReadActor(r, actors));
    } else {
      GOVERN_RETURN_IF_ERROR(r.Skip());
    }
  }
  if ((*actors)[me].sub.empty() && (*actors)[me].client_id.empty()) {
    return InvalidArgument("jwt: \"act\" names no actor");
  }
  return OkStatus();
}

}  // namespace

namespace {

// The claims Govern reads, by position: their duplicates are caught with a bit each.
constexpr std::array<std::string_view, 15> kClaimNames = {
    "iss", "sub",   "aud",       "exp", "nbf",   "iat",     "auth_time", "jti",
    "org", "scope", "client_id", "sid", "nonce", "at_hash", "act"};

int ClaimIndex(std::string_view key) {
  for (size_t i = 0; i < kClaimNames.size(); ++i) {
    if (kClaimNames[i] == key) return static_cast<int>(i);
  }
  return -1;
}

Status ReadAudience(JsonReader& r, std::vector<std::string>* aud) {
  if (r.Peek() == '"') {
    aud->emplace_back();
    return r.ReadString(&aud->back());
  }
  if (r.Peek() != '[') return InvalidArgument("jwt: \"aud\" is neither a string nor an array");
  GOVERN_RETURN_IF_ERROR(r.BeginArray());
  while (true) {
    GOVERN_ASSIGN_OR_RETURN(bool more, r.NextElement());
    if (!more) return OkStatus();
    if (r.Peek() != '"') return InvalidArgument("jwt: \"aud\" holds a non-string");
    aud->emplace_back();
    GOVERN_RETURN_IF_ERROR(r.ReadString(&aud->back()));
  }
}

}  // namespace

Result<Claims> ClaimsFromJson(std::string_view text) {
  JsonReader r(text);
  Claims c;
  GOVERN_RETURN_IF_ERROR(r.BeginObject());
  uint32_t seen = 0;
  Names unknown;
  std::string key, scope;
  while (true) {
    GOVERN_ASSIGN_OR_RETURN(bool more, r.NextMember(&key));
    if (!more) break;
    const int index = ClaimIndex(key);
    if (index < 0) {
      GOVERN_RETURN_IF_ERROR(unknown.Add(key, "jwt"));
      GOVERN_RETURN_IF_ERROR(r.Skip());  // unknown claims are ignored (RFC 7519 section 4)
      continue;
    }
    if (seen & (1u << index)) return InvalidArgument("jwt: duplicate member \"" + key + "\"");
    seen |= 1u << index;
    Status st;
    switch (index) {
      case 0:
        st = ReadStr(r, &c.iss, key);
        break;
      case 1:
        st = ReadStr(r, &c.sub, key);
        break;
      case 2:
        st = ReadAudience(r, &c.aud);
        break;
      case 3:
        st = ReadTime(r, &c.exp, key);
        break;
      case 4:
        st = ReadTime(r, &c.nbf, key);
        break;
      case 5:
        st = ReadTime(r, &c.iat, key);
        break;
      case 6:
        st = ReadTime(r, &c.auth_time, key);
        break;
      case 7:
        st = ReadStr(r, &c.jti, key);
        break;
      case 8:
        st = ReadStr(r, &c.org, key);
        break;
      case 9:
        st = ReadStr(r, &scope, key);
        c.scope = SplitSpaces(scope);
        break;
      case 10:
        st = ReadStr(r, &c.client_id, key);
        break;
      case 11:
        st = ReadStr(r, &c.sid, key);
        break;
      case 12:
        st = ReadStr(r, &c.nonce, key);
        break;
      case 13:
        st = ReadStr(r, &c.at_hash, key);
        break;
      case 14:
        st = ReadActor(r, &c.actors);
        break;
      default:
        st = Internal("jwt: claim table");
    }
    GOVERN_RETURN_IF_ERROR(st);
  }
  GOVERN_RETURN_IF_ERROR(r.End());
  return c;
}

// ---------------------------------------------------------------------------------------------------
// Compact JWS

namespace {

Status ParseHeader(std::string_view text, JwsHeader* h) {
  JsonReader r(text);
  GOVERN_RETURN_IF_ERROR(r.BeginObject());
  Names names;
  std::string key;
  bool have_alg = false;
  while (true) {
    GOVERN_ASSIGN_OR_RETURN(bool more, r.NextMember(&key));
    if (!more) break;
    GOVERN_RETURN_IF_ERROR(names.Add(key, "jws header"));
    if (key == "alg") {
      if (r.Peek() != '"') return InvalidArgument("jws: header has no \"alg\" string");
      std::string alg;
      GOVERN_RETURN_IF_ERROR(r.ReadString(&alg));
      GOVERN_ASSIGN_OR_RETURN(h->alg, ParseAlg(alg));
      have_alg = true;
    } else if (key == "kid") {
      if (r.Peek() != '"') return InvalidArgument("jws header: \"kid\" is not a string");
      GOVERN_RETURN_IF_ERROR(r.ReadString(&h->kid));
    } else if (key == "typ") {
      if (r.Peek() != '"') return InvalidArgument("jws header: \"typ\" is not a string");
      GOVERN_RETURN_IF_ERROR(r.ReadString(&h->typ));
    } else if (key == "crit") {
      // RFC 7515 section 4.1.11: extensions listed here must be understood; this verifier knows none.
      return InvalidArgument("jws: \"crit\" names extensions this verifier does not understand");
    } else if (key == "b64" || key == "enc" || key == "zip") {
      return InvalidArgument("jws: unsupported header parameter \"" + key + "\"");
    } else {
      // jku, x5u, jwk, x5c and the rest: never followed, never trusted.
      GOVERN_RETURN_IF_ERROR(r.Skip());
    }
  }
  GOVERN_RETURN_IF_ERROR(r.End());
  if (!have_alg) return InvalidArgument("jws: header has no \"alg\" string");
  return OkStatus();
}

}  // namespace

Result<ParsedJws> ParseCompact(std::string_view token, size_t max_bytes) {
  if (token.size() > max_bytes) return InvalidArgument("jws: token longer than " + std::to_string(max_bytes));
  size_t d1 = token.find('.');
  if (d1 == std::string_view::npos) return InvalidArgument("jws: not a compact JWS (no '.')");
  size_t d2 = token.find('.', d1 + 1);
  if (d2 == std::string_view::npos) return InvalidArgument("jws: not a compact JWS (one '.')");
  if (token.find('.', d2 + 1) != std::string_view::npos) {
    return InvalidArgument("jws: more than three parts (a JWE or garbage)");
  }
  std::string_view h = token.substr(0, d1), p = token.substr(d1 + 1, d2 - d1 - 1), s = token.substr(d2 + 1);
  if (h.empty()) return InvalidArgument("jws: empty header");
  if (s.empty()) return InvalidArgument("jws: empty signature (unsigned tokens are refused)");
  std::string header_json;
  if (!internal::DecodeB64Url(h, &header_json))
    return InvalidArgument("jws: header is not canonical base64url");
  ParsedJws out;
  GOVERN_RETURN_IF_ERROR(ParseHeader(header_json, &out.header));
  if (!internal::DecodeB64Url(p, &out.payload))
    return InvalidArgument("jws: payload is not canonical base64url");
  if (!internal::DecodeB64Url(s, &out.signature)) {
    return InvalidArgument("jws: signature is not canonical base64url");
  }
  out.signing_input = token.substr(0, d2);
  return out;
}

std::string EncodedHeader(Alg alg, std::string_view kid, std::string_view typ) {
  std::string h = "{\"alg\":";
  AppendJsonString(h, AlgName(alg));
  if (!kid.empty()) {
    h += ",\"kid\":";
    AppendJsonString(h, kid);
  }
  if (!typ.empty()) {
    h += ",\"typ\":";
    AppendJsonString(h, typ);
  }
  h += "}";
  std::string out;
  internal::AppendB64Url(&out, h);
  out.push_back('.');
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Keys

struct VerifyKey::Impl {
  Alg alg = Alg::kHS256;
  std::string kid;
  std::optional<crypto::HmacSha256Key> hmac;
  std::optional<crypto::Ed25519PublicKey> ed;
  std::optional<crypto::EcdsaP256PublicKey> ec;
  PkeyPtr rsa;
};

Alg VerifyKey::alg() const { return impl_->alg; }
const std::string& VerifyKey::kid() const { return impl_->kid; }

Result<VerifyKey> VerifyKey::Hs256(std::string kid, std::span<const uint8_t> secret) {
  if (secret.size() < 32) return InvalidArgument("hs256: key shorter than 32 bytes");
  GOVERN_ASSIGN_OR_RETURN(auto mac, crypto::HmacSha256Key::Create(secret));
  auto impl = std::make_shared<Impl>();
  impl->alg = Alg::kHS256;
  impl->kid = std::move(kid);
  impl->hmac.emplace(std::move(mac));
  return VerifyKey(std::move(impl));
}

Result<VerifyKey> VerifyKey::Ed25519(std::string kid, std::span<const uint8_t> raw32) {
  GOVERN_ASSIGN_OR_RETURN(auto k, crypto::Ed25519PublicKey::FromRaw(raw32));
  auto impl = std::make_shared<Impl>();
  impl->alg = Alg::kEdDSA;
  impl->kid = std::move(kid);
  impl->ed.emplace(std::move(k));
  return VerifyKey(std::move(impl));
}

Result<VerifyKey> VerifyKey::EcP256(std::string kid, std::span<const uint8_t> uncompressed) {
  GOVERN_ASSIGN_OR_RETURN(auto k, crypto::EcdsaP256PublicKey::FromUncompressed(uncompressed));
  auto impl = std::make_shared<Impl>();
  impl->alg = Alg::kES256;
  impl->kid = std::move(kid);
  impl->ec.emplace(std::move(k));
  return VerifyKey(std::move(impl));
}

Result<VerifyKey> VerifyKey::Rsa(std::string kid, std::span<const uint8_t> n, std::span<const uint8_t> e) {
  GOVERN_ASSIGN_OR_RETURN(auto k, RsaFromNE(n, e));
  auto impl = std::make_shared<Impl>();
  impl->alg = Alg::kRS256;
  impl->kid = std::move(kid);
  impl->rsa = std::move(k);
  return VerifyKey(std::move(impl));
}

Status VerifyKey::Verify(std::string_view input, std::span<const uint8_t> sig) const {
  const Impl& k = *impl_;
  switch (k.alg) {
    case Alg::kHS256:
      if (sig.size() != 32) return Unauthenticated("hs256: signature is not 32 bytes");
      return k.hmac->Verify(crypto::AsBytes(input), sig);
    case Alg::kEdDSA:
      if (sig.size() != 64) return Unauthenticated("eddsa: signature is not 64 bytes");
      return k.ed->Verify(crypto::AsBytes(input), sig);
    case Alg::kES256:
      // JWS carries r || s (RFC 7518 section 3.4); a DER signature here is malformed, not "another form".
      if (sig.size() != 64) return Unauthenticated("es256: signature is not 64 bytes (r || s)");
      return k.ec->VerifyRaw(crypto::AsBytes(input), sig);
    case Alg::kRS256:
      if (static_cast<int>(sig.size()) != EVP_PKEY_get_size(k.rsa.get())) {
        return Unauthenticated("rs256: signature length does not match the key");
      }
      return RsaVerify(k.rsa.get(), input, sig);
  }
  return Internal("verify: unknown algorithm");
}

struct SigningKey::Impl {
  Alg alg = Alg::kHS256;
  std::string kid;
  std::optional<VerifyKey> vk;
  crypto::SecretBytes hs_secret;
  std::optional<crypto::Ed25519PrivateKey> ed;
  std::optional<crypto::EcdsaP256PrivateKey> ec;
  PkeyPtr rsa;
  // The encoded headers of the two token types issuers sign most, made once per key.
  std::string header_at, header_jwt;

  void MakeHeaders() {
    header_at = EncodedHeader(alg, kid, "at+jwt");
    header_jwt = EncodedHeader(alg, kid, "JWT");
  }
};

Alg SigningKey::alg() const { return impl_->alg; }

Result<std::string> SignCompact(const SigningKey& key, std::string_view payload, std::string_view typ) {
  const SigningKey::Impl& k = key.impl();
  std::string token;
  token.reserve(k.header_at.size() + internal::B64UrlEncodedSize(payload.size()) + 400);
  if (typ == "at+jwt") {
    token = k.header_at;
  } else if (typ == "JWT") {
    token = k.header_jwt;
  } else {
    token = EncodedHeader(k.alg, k.kid, typ);
  }
  internal::AppendB64Url(&token, payload);
  if (k.alg == Alg::kHS256) {
    // The MAC straight into the token: no intermediate vector.
    GOVERN_ASSIGN_OR_RETURN(auto mac, k.vk->impl().hmac->Mac(token));
    token.push_back('.');
    internal::AppendB64Url(&token, std::span<const uint8_t>(mac));
    return token;
  }
  GOVERN_ASSIGN_OR_RETURN(auto sig, key.Sign(token));
  token.push_back('.');
  internal::AppendB64Url(&token, std::span<const uint8_t>(sig));
  return token;
}
const std::string& SigningKey::kid() const { return impl_->kid; }
const VerifyKey& SigningKey::verify_key() const { return *impl_->vk; }

Result<SigningKey> SigningKey::Hs256(std::string kid, std::span<const uint8_t> secret) {
  if (kid.empty()) return InvalidArgument("hs256: a shared key needs a kid");
  GOVERN_ASSIGN_OR_RETURN(auto vk, VerifyKey::Hs256(kid, secret));
  auto impl = std::make_shared<Impl>();
  impl->alg = Alg::kHS256;
  impl->kid = std::move(kid);
  impl->vk.emplace(std::move(vk));
  impl->hs_secret = crypto::SecretBytes(secret);
  impl->MakeHeaders();
  return SigningKey(std::move(impl));
}

namespace {

// Builds the signing key once the private part is in place: derives the public key, names it.
Result<SigningKey> Finish(std::shared_ptr<SigningKey::Impl> impl, std::string kid) {
  std::optional<VerifyKey> vk;
  switch (impl->alg) {
    case Alg::kHS256:
      return Internal("finish: hs256");
    case Alg::kEdDSA: {
      GOVERN_ASSIGN_OR_RETURN(auto pub, impl->ed->PublicKey());
      auto raw = pub.Raw();
      GOVERN_ASSIGN_OR_RETURN(auto v, VerifyKey::Ed25519("", raw));
      vk.emplace(std::move(v));
      break;
    }
    case Alg::kES256: {
      GOVERN_ASSIGN_OR_RETURN(auto pub, impl->ec->PublicKey());
      GOVERN_ASSIGN_OR_RETURN(auto point, pub.Uncompressed());
      GOVERN_ASSIGN_OR_RETURN(auto v, VerifyKey::EcP256("", point));
      vk.emplace(std::move(v));
      break;
    }
    case Alg::kRS256: {
      GOVERN_ASSIGN_OR_RETURN(auto n, RsaParam(impl->rsa.get(), OSSL_PKEY_PARAM_RSA_N));
      GOVERN_ASSIGN_OR_RETURN(auto e, RsaParam(impl->rsa.get(), OSSL_PKEY_PARAM_RSA_E));
      GOVERN_ASSIGN_OR_RETURN(auto v, VerifyKey::Rsa("", n, e));
      vk.emplace(std::move(v));
      break;
    }
  }
  if (kid.empty()) {
    GOVERN_ASSIGN_OR_RETURN(Jwk jwk, ToJwk(*vk));
    GOVERN_ASSIGN_OR_RETURN(kid, jwk.Thumbprint());
  }
  // Re-create the verify key under its kid (the Impl is immutable once shared).
  auto vimpl = std::make_shared<VerifyKey::Impl>();
  const VerifyKey::Impl& src = vk->impl();
  vimpl->alg = src.alg;
  vimpl->kid = kid;
  switch (impl->alg) {
    case Alg::kEdDSA: {
      GOVERN_ASSIGN_OR_RETURN(auto pub, crypto::Ed25519PublicKey::FromRaw(src.ed->Raw()));
      vimpl->ed.emplace(std::move(pub));
      break;
    }
    case Alg::kES256: {
      GOVERN_ASSIGN_OR_RETURN(auto point, src.ec->Uncompressed());
      GOVERN_ASSIGN_OR_RETURN(auto pub, crypto::EcdsaP256PublicKey::FromUncompressed(point));
      vimpl->ec.emplace(std::move(pub));
      break;
    }
    case Alg::kRS256:
      EVP_PKEY_up_ref(src.rsa.get());
      vimpl->rsa.reset(src.rsa.get());
      break;
    case Alg::kHS256:
      break;
  }
  impl->kid = kid;
  impl->vk.emplace(VerifyKey(std::move(vimpl)));
  impl->MakeHeaders();
  return SigningKey(std::move(impl));
}

}  // namespace

Result<SigningKey> SigningKey::Generate(Alg alg, std::string kid) {
  auto impl = std::make_shared<Impl>();
  impl->alg = alg;
  switch (alg) {
    case Alg::kHS256: {
      GOVERN_ASSIGN_OR_RETURN(auto secret, crypto::RandomSecret(32));
      return Hs256(kid.empty() ? RandomKid() : std::move(kid), secret.span());
    }
    case Alg::kEdDSA: {
      GOVERN_ASSIGN_OR_RETURN(auto k, crypto::Ed25519PrivateKey::Generate());
      impl->ed.emplace(std::move(k));
      break;
    }
    case Alg::kES256: {
      GOVERN_ASSIGN_OR_RETURN(auto k, crypto::EcdsaP256PrivateKey::Generate());
      impl->ec.emplace(std::move(k));
      break;
    }
    case Alg::kRS256: {
      EVP_PKEY* k = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(2048));
      if (k == nullptr) return SslError("rsa: keygen");
      impl->rsa.reset(k);
      break;
    }
  }
  return Finish(std::move(impl), std::move(kid));
}

Result<std::vector<uint8_t>> SigningKey::Sign(std::string_view input) const {
  const Impl& k = *impl_;
  switch (k.alg) {
    case Alg::kHS256: {
      GOVERN_ASSIGN_OR_RETURN(auto mac, k.vk->impl().hmac->Mac(input));
      return std::vector<uint8_t>(mac.begin(), mac.end());
    }
    case Alg::kEdDSA: {
      GOVERN_ASSIGN_OR_RETURN(auto sig, k.ed->Sign(crypto::AsBytes(input)));
      return std::vector<uint8_t>(sig.begin(), sig.end());
    }
    case Alg::kES256: {
      GOVERN_ASSIGN_OR_RETURN(auto sig, k.ec->SignRaw(crypto::AsBytes(input)));
      return std::vector<uint8_t>(sig.begin(), sig.end());
    }
    case Alg::kRS256:
      return RsaSign(k.rsa.get(), input);
  }
  return Internal("sign: unknown algorithm");
}

// Private form: {"alg":"EdDSA","kid":"...","key":"<base64url>"} where key is the HS256 secret, the
// Ed25519 seed, or the PKCS#8 PEM text (ES256, RS256).
Result<crypto::SecretBytes> SigningKey::ExportPrivate() const {
  const Impl& k = *impl_;
  std::string material;
  switch (k.alg) {
    case Alg::kHS256:
      material.assign(crypto::AsString(k.hs_secret.span()));
      break;
    case Alg::kEdDSA: {
      GOVERN_ASSIGN_OR_RETURN(auto seed, k.ed->Raw());
      material.assign(crypto::AsString(seed.span()));
      break;
    }
    case Alg::kES256: {
      GOVERN_ASSIGN_OR_RETURN(auto pem, k.ec->Pkcs8Pem());
      material.assign(crypto::AsString(pem.span()));
      break;
    }
    case Alg::kRS256: {
      GOVERN_ASSIGN_OR_RETURN(material, PemOf(k.rsa.get()));
      break;
    }
  }
  std::string out = "{\"alg\":";
  AppendJsonString(out, AlgName(k.alg));
  out += ",\"kid\":";
  AppendJsonString(out, k.kid);
  out += ",\"key\":\"" + crypto::Base64UrlEncode(std::string_view(material)) + "\"}";
  crypto::SecretBytes secret = crypto::SecretBytes::FromString(out);
  std::fill(material.begin(), material.end(), '\0');
  std::fill(out.begin(), out.end(), '\0');
  return secret;
}

Result<SigningKey> SigningKey::ImportPrivate(std::span<const uint8_t> bytes) {
  GOVERN_ASSIGN_OR_RETURN(json j, ParseObject(crypto::AsString(bytes), "private key"));
  std::string alg_name, kid, key_b64;
  GOVERN_RETURN_IF_ERROR(GetString(j, "alg", &alg_name, "private key"));
  GOVERN_RETURN_IF_ERROR(GetString(j, "kid", &kid, "private key"));
  GOVERN_RETURN_IF_ERROR(GetString(j, "key", &key_b64, "private key"));
  GOVERN_ASSIGN_OR_RETURN(Alg alg, ParseAlg(alg_name));
  if (kid.empty()) return InvalidArgument("private key: no kid");
  GOVERN_ASSIGN_OR_RETURN(auto raw, crypto::Base64UrlDecode(key_b64));
  crypto::SecretBytes material(raw);
  std::fill(raw.begin(), raw.end(), 0);
  auto impl = std::make_shared<Impl>();
  impl->alg = alg;
  switch (alg) {
    case Alg::kHS256:
      return Hs256(std::move(kid), material.span());
    case Alg::kEdDSA: {
      GOVERN_ASSIGN_OR_RETURN(auto k, crypto::Ed25519PrivateKey::FromRaw(material.span()));
      impl->ed.emplace(std::move(k));
      break;
    }
    case Alg::kES256: {
      GOVERN_ASSIGN_OR_RETURN(auto k,
                              crypto::EcdsaP256PrivateKey::FromPkcs8Pem(crypto::AsString(material.span())));
      impl->ec.emplace(std::move(k));
      break;
    }
    case Alg::kRS256: {
      GOVERN_ASSIGN_OR_RETURN(impl->rsa, RsaFromPem(crypto::AsString(material.span())));
      break;
    }
  }
  return Finish(std::move(impl), std::move(kid));
}

// ---------------------------------------------------------------------------------------------------
// JWK

std::string Jwk::ToJson() const {
  std::string out = "{";
  bool first = true;
  for (auto [name, v] : {std::pair<const char*, const std::string*>{"kty", &kty},
                         {"crv", &crv},
                         {"x", &x},
                         {"y", &y},
                         {"n", &n},
                         {"e", &e},
                         {"kid", &kid},
                         {"use", &use},
                         {"alg", &alg}}) {
    AppendMember(out, first, name, *v);
  }
  out.push_back('}');
  return out;
}

Result<std::string> Jwk::Thumbprint() const {
  // RFC 7638 section 3.2: required members only, lexical order, no whitespace.
  std::string s;
  if (kty == "OKP") {
    s = "{\"crv\":";
    AppendJsonString(s, crv);
    s += ",\"kty\":\"OKP\",\"x\":";
    AppendJsonString(s, x);
    s += "}";
  } else if (kty == "EC") {
    s = "{\"crv\":";
    AppendJsonString(s, crv);
    s += ",\"kty\":\"EC\",\"x\":";
    AppendJsonString(s, x);
    s += ",\"y\":";
    AppendJsonString(s, y);
    s += "}";
  } else if (kty == "RSA") {
    s = "{\"e\":";
    AppendJsonString(s, e);
    s += ",\"kty\":\"RSA\",\"n\":";
    AppendJsonString(s, n);
    s += "}";
  } else {
    return InvalidArgument("jwk: no thumbprint for kty \"" + kty + "\"");
  }
  GOVERN_ASSIGN_OR_RETURN(auto d, crypto::Sha256(s));
  return crypto::Base64UrlEncode(std::span<const uint8_t>(d));
}

Result<VerifyKey> Jwk::ToKey() const {
  auto decode = [](const std::string& v, const char* name) -> Result<std::vector<uint8_t>> {
    if (v.empty()) return InvalidArgument(std::string("jwk: missing \"") + name + "\"");
    auto r = crypto::Base64UrlDecode(v);
    if (!r.ok()) return InvalidArgument(std::string("jwk: \"") + name + "\": " + r.status().message());
    return r;
  };
  auto check_alg = [&](Alg want) -> Status {
    if (!alg.empty() && alg != AlgName(want)) {
      return InvalidArgument("jwk: \"alg\" " + alg + " does not fit a " + kty + " key");
    }
    if (!use.empty() && use != "sig") return InvalidArgument("jwk: \"use\" is not \"sig\"");
    return OkStatus();
  };
  if (kty == "OKP") {
    if (crv != "Ed25519") return InvalidArgument("jwk: unsupported OKP curve \"" + crv + "\"");
    GOVERN_RETURN_IF_ERROR(check_alg(Alg::kEdDSA));
    GOVERN_ASSIGN_OR_RETURN(auto xb, decode(x, "x"));
    if (xb.size() != 32) return InvalidArgument("jwk: Ed25519 \"x\" is not 32 bytes");
    return VerifyKey::Ed25519(kid, xb);
  }
  if (kty == "EC") {
    if (crv != "P-256") return InvalidArgument("jwk: unsupported EC curve \"" + crv + "\"");
    GOVERN_RETURN_IF_ERROR(check_alg(Alg::kES256));
    GOVERN_ASSIGN_OR_RETURN(auto xb, decode(x, "x"));
    GOVERN_ASSIGN_OR_RETURN(auto yb, decode(y, "y"));
    if (xb.size() != 32 || yb.size() != 32) return InvalidArgument("jwk: P-256 coordinates are not 32 bytes");
    std::vector<uint8_t> point{0x04};
    point.insert(point.end(), xb.begin(), xb.end());
    point.insert(point.end(), yb.begin(), yb.end());
    return VerifyKey::EcP256(kid, point);
  }
  if (kty == "RSA") {
    GOVERN_RETURN_IF_ERROR(check_alg(Alg::kRS256));
    GOVERN_ASSIGN_OR_RETURN(auto nb, decode(n, "n"));
    GOVERN_ASSIGN_OR_RETURN(auto eb, decode(e, "e"));
    return VerifyKey::Rsa(kid, nb, eb);
  }
  if (kty == "oct") return InvalidArgument("jwk: symmetric keys are never taken from a JWK set");
  return InvalidArgument("jwk: unsupported kty \"" + kty.substr(0, 16) + "\"");
}

Result<Jwk> ToJwk(const VerifyKey& key) {
  const VerifyKey::Impl& k = key.impl();
  Jwk j;
  j.kid = k.kid;
  j.use = "sig";
  j.alg = std::string(AlgName(k.alg));
  switch (k.alg) {
    case Alg::kHS256:
      return FailedPrecondition("jwk: an HS256 key is a shared secret and is never published");
    case Alg::kEdDSA: {
      auto raw = k.ed->Raw();
      j.kty = "OKP";
      j.crv = "Ed25519";
      j.x = crypto::Base64UrlEncode(std::span<const uint8_t>(raw));
      return j;
    }
    case Alg::kES256: {
      GOVERN_ASSIGN_OR_RETURN(auto p, k.ec->Uncompressed());
      if (p.size() != 65) return Internal("jwk: bad P-256 point");
      j.kty = "EC";
      j.crv = "P-256";
      j.x = crypto::Base64UrlEncode(std::span<const uint8_t>(p.data() + 1, 32));
      j.y = crypto::Base64UrlEncode(std::span<const uint8_t>(p.data() + 33, 32));
      return j;
    }
    case Alg::kRS256: {
      GOVERN_ASSIGN_OR_RETURN(auto n, RsaParam(k.rsa.get(), OSSL_PKEY_PARAM_RSA_N));
      GOVERN_ASSIGN_OR_RETURN(auto e, RsaParam(k.rsa.get(), OSSL_PKEY_PARAM_RSA_E));
      j.kty = "RSA";
      j.n = crypto::Base64UrlEncode(std::span<const uint8_t>(n));
      j.e = crypto::Base64UrlEncode(std::span<const uint8_t>(e));
      return j;
    }
  }
  return Internal("jwk: unknown algorithm");
}

namespace {

Result<Jwk> JwkFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("jwk: not an object");
  Jwk k;
  constexpr std::string_view kW = "jwk";
  for (auto [name, field] : {std::pair{"kty", &k.kty},
                             {"crv", &k.crv},
                             {"x", &k.x},
                             {"y", &k.y},
                             {"n", &k.n},
                             {"e", &k.e},
                             {"kid", &k.kid},
                             {"use", &k.use},
                             {"alg", &k.alg}}) {
    GOVERN_RETURN_IF_ERROR(GetString(j, name, field, kW));
  }
  if (j.contains("d") || j.contains("k")) {
    return InvalidArgument("jwk: holds private key material; a key set carries public keys only");
  }
  if (k.kty.empty()) return InvalidArgument("jwk: missing \"kty\"");
  return k;
}

}  // namespace

Result<Jwk> ParseJwk(std::string_view text) {
  GOVERN_ASSIGN_OR_RETURN(json j, ParseObject(text, "jwk"));
  return JwkFromJson(j);
}

Result<std::vector<Jwk>> ParseJwks(std::string_view text) {
  if (text.size() > 1 << 20) return InvalidArgument("jwks: larger than 1 MiB");
  GOVERN_ASSIGN_OR_RETURN(json j, ParseObject(text, "jwks"));
  auto it = j.find("keys");
  if (it == j.end() || !it->is_array()) return InvalidArgument("jwks: no \"keys\" array");
  if (it->size() > 256) return InvalidArgument("jwks: more than 256 keys");
  std::vector<Jwk> out;
  for (const auto& kj : *it) {
    GOVERN_ASSIGN_OR_RETURN(Jwk k, JwkFromJson(kj));
    // RFC 7517 section 5: members with unknown kty are ignored, so a set can grow new key types.
    if (k.kty != "OKP" && k.kty != "EC" && k.kty != "RSA") continue;
    out.push_back(std::move(k));
  }
  return out;
}

std::string JwksToJson(std::span<const Jwk> keys) {
  std::string out = "{\"keys\":[";
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i) out.push_back(',');
    out += keys[i].ToJson();
  }
  out += "]}";
  return out;
}

}  // namespace govern::tokens
