// JWS/JWT/JWK against the RFC test vectors, and every malformed form a parser must refuse.
#include "tokens/jose.h"

#include <gtest/gtest.h>

#include "crypto/encoding.h"

namespace govern::tokens {
namespace {

std::vector<uint8_t> B64u(std::string_view s) {
  auto r = crypto::Base64UrlDecode(s);
  EXPECT_TRUE(r.ok()) << s;
  return r.ok() ? *r : std::vector<uint8_t>{};
}
std::string Enc(std::string_view s) { return crypto::Base64UrlEncode(s); }

// RFC 7515 appendix A: the shared payload {"iss":"joe",\r\n "exp":1300819380,\r\n
// "http://example.com/is_root":true}.
constexpr std::string_view kRfcPayload =
    "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ";

TEST(Rfc7515, A1Hs256) {
  const std::string token = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9." + std::string(kRfcPayload) +
                            ".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
  auto key = VerifyKey::Hs256(
      "", B64u("AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow"));
  ASSERT_TRUE(key.ok());
  auto p = ParseCompact(token);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->header.alg, Alg::kHS256);
  EXPECT_EQ(p->header.typ, "JWT");
  EXPECT_TRUE(key->Verify(p->signing_input, p->signature).ok());
  auto c = ClaimsFromJson(p->payload);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->iss, "joe");
  EXPECT_EQ(c->exp, 1300819380);
  // One changed payload byte: the MAC no longer matches.
  std::string tampered = std::string(p->signing_input);
  tampered[tampered.size() - 3] ^= 1;
  EXPECT_EQ(key->Verify(tampered, p->signature).code(), Code::kUnauthenticated);
}

TEST(Rfc7515, A2Rs256) {
  Jwk jwk;
  jwk.kty = "RSA";
  jwk.n =
      "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-"
      "SFd2lZS"
      "-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-"
      "UTo7WTBEMa2R2"
      "CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_"
      "h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb"
      "54h4FRWyuXpoQ";
  jwk.e = "AQAB";
  auto key = jwk.ToKey();
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(key->alg(), Alg::kRS256);
  const std::string token =
      "eyJhbGciOiJSUzI1NiJ9." + std::string(kRfcPayload) +
      ".cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_"
      "O8W2Fp5jujGbds9uJdbF9CUAr7t1"
      "dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_"
      "dO--xi12jz"
      "DwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_"
      "IoypGlUPQ"
      "Ge77Rw";
  auto p = ParseCompact(token);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(key->Verify(p->signing_input, p->signature).ok());
  p->signature[10] ^= 1;
  EXPECT_EQ(key->Verify(p->signing_input, p->signature).code(), Code::kUnauthenticated);
}

TEST(Rfc7515, A3Es256) {
  auto jwk = ParseJwk(R"({"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
                          "y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"})");
  ASSERT_TRUE(jwk.ok()) << jwk.status().ToString();
  auto key = jwk->ToKey();
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  const std::string token =
      "eyJhbGciOiJFUzI1NiJ9." + std::string(kRfcPayload) +
      ".DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q";
  auto p = ParseCompact(token);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->header.alg, Alg::kES256);
  EXPECT_TRUE(key->Verify(p->signing_input, p->signature).ok());
}

TEST(Rfc8037, Ed25519SignatureAndThumbprint) {
  // Appendix A.1-A.4: the key, its thumbprint, and the deterministic signature.
  auto key = SigningKey::ImportPrivate(crypto::AsBytes(
      R"({"alg":"EdDSA","kid":"rfc8037","key":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"})"));
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  auto jwk = ToJwk(key->verify_key());
  ASSERT_TRUE(jwk.ok());
  EXPECT_EQ(jwk->x, "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo");
  EXPECT_EQ(*jwk->Thumbprint(), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
  const std::string input = "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc";
  auto sig = key->Sign(input);
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(crypto::Base64UrlEncode(std::span<const uint8_t>(*sig)),
            "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg");
  const std::string token = input + "." + crypto::Base64UrlEncode(std::span<const uint8_t>(*sig));
  auto p = ParseCompact(token);  // holds a view into token
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->payload, "Example of Ed25519 signing");
  EXPECT_TRUE(jwk->ToKey()->Verify(p->signing_input, p->signature).ok());
}

TEST(Rfc7638, RsaThumbprint) {
  Jwk jwk;
  jwk.kty = "RSA";
  jwk.e = "AQAB";
  jwk.kid = "2011-04-29";
  jwk.alg = "RS256";
  jwk.n =
      "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_"
      "BJECPebWKRXjBZCiFV4n3oknj"
      "hMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_"
      "FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qM"
      "QvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-"
      "kEgU8awapJ"
      "zKnqDKgw";
  EXPECT_EQ(*jwk.Thumbprint(), "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
}

// ---------------------------------------------------------------------------------------------------
// Refusals

std::string Token(std::string_view header_json, std::string_view payload_json,
                  std::string_view sig = "AAAA") {
  return Enc(header_json) + "." + Enc(payload_json) + "." + std::string(sig);
}

TEST(ParseCompact, RefusesMalformedForms) {
  const std::string ok = Token(R"({"alg":"HS256","kid":"k"})", R"({"sub":"a"})");
  ASSERT_TRUE(ParseCompact(ok).ok());
  struct Case {
    std::string name, token;
  } cases[] = {
      {"alg none", Token(R"({"alg":"none"})", "{}")},
      {"alg none, empty signature", Enc(R"({"alg":"none"})") + "." + Enc("{}") + "."},
      {"alg None", Token(R"({"alg":"None"})", "{}")},
      {"unknown alg", Token(R"({"alg":"HS512"})", "{}")},
      {"alg not a string", Token(R"({"alg":1})", "{}")},
      {"no alg", Token(R"({"kid":"k"})", "{}")},
      {"crit", Token(R"({"alg":"HS256","crit":["exp"],"exp":1})", "{}")},
      {"empty crit", Token(R"({"alg":"HS256","crit":[]})", "{}")},
      {"b64 false", Token(R"({"alg":"HS256","b64":false,"crit":["b64"]})", "{}")},
      {"duplicate alg", Token(R"({"alg":"HS256","alg":"none"})", "{}")},
      {"header not an object", Token(R"("HS256")", "{}")},
      {"header not JSON", Token("{alg:HS256}", "{}")},
      {"kid not a string", Token(R"({"alg":"HS256","kid":7})", "{}")},
      {"two parts", Enc(R"({"alg":"HS256"})") + "." + Enc("{}")},
      {"one part", Enc(R"({"alg":"HS256"})")},
      {"five parts (JWE)", ok + ".AAAA.AAAA"},
      {"empty", ""},
      {"padding", Enc(R"({"alg":"HS256"})") + "=." + Enc("{}") + ".AAAA"},
      {"standard alphabet", Enc(R"({"alg":"HS256"})") + "." + Enc("{}") + ".AA+/"},
      {"space", Enc(R"({"alg":"HS256"})") + "." + Enc("{}") + ".AA AA"},
      {"non-zero unused bits", Enc(R"({"alg":"HS256"})") + "." + Enc("{}") + ".AB"},
      {"length 1 mod 4", Enc(R"({"alg":"HS256"})") + "." + Enc("{}") + ".AAAAA"},
      {"empty header", "." + Enc("{}") + ".AAAA"},
      {"oversize", Token(R"({"alg":"HS256"})", "{\"x\":\"" + std::string(kMaxTokenBytes, 'a') + "\"}")},
  };
  for (const auto& c : cases) {
    auto r = ParseCompact(c.token);
    EXPECT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << c.name;
  }
  auto none = ParseCompact(Token(R"({"alg":"none"})", "{}"));
  EXPECT_NE(none.status().message().find("none"), std::string::npos);
}

TEST(Claims, RoundTripEveryMember) {
  Claims c;
  c.iss = "https://auth.example";
  c.sub = "user-1";
  c.aud = {"govern:telemetry", "govern:policy"};
  c.exp = 1900000000;
  c.nbf = 1899999000;
  c.iat = 1899999000;
  c.jti = "j1";
  c.org = "org-7";
  c.scope = {"events:write", "events:read"};
  c.actors = {{"agent-3", "client-a"}, {"agent-2", ""}};
  c.client_id = "client-a";
  c.sid = "fam";
  c.nonce = "n-0S6_WzA2Mj";
  c.auth_time = 1899998000;
  c.at_hash = "77QmUPtjPfzWtF2AnpK9RQ";
  std::string json = ClaimsToJson(c);
  auto back = ClaimsFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << json;
  EXPECT_EQ(*back, c);
  // A single audience is a string (RFC 7519 section 4.1.3), and reads back as one element.
  c.aud = {"govern:telemetry"};
  json = ClaimsToJson(c);
  EXPECT_NE(json.find(R"("aud":"govern:telemetry")"), std::string::npos);
  EXPECT_EQ(*ClaimsFromJson(json), c);
  // Strings that need escaping.
  c.sub = "a\"b\\c\n\x01";
  EXPECT_EQ(ClaimsFromJson(ClaimsToJson(c))->sub, c.sub);
}

TEST(Claims, RefusesWrongTypes) {
  for (std::string_view bad :
       {R"({"exp":"1900000000"})", R"({"aud":1})", R"({"aud":["a",2]})", R"({"sub":null})",
        R"({"act":"agent"})", R"({"act":{}})", R"({"scope":["a"]})", R"({"exp":-1})", R"({"exp":1e300})",
        R"([])", R"({"sub":"a","sub":"b"})", R"({"a":{"x":1,"x":2}})", "{", ""}) {
    EXPECT_FALSE(ClaimsFromJson(bad).ok()) << bad;
  }
  std::string deep = R"({"act":)";
  for (int i = 0; i < 9; ++i) deep += R"({"sub":"a","act":)";
  deep += R"({"sub":"z"})";
  for (int i = 0; i < 9; ++i) deep += "}";
  deep += "}";
  EXPECT_FALSE(ClaimsFromJson(deep).ok());
  // Unknown claims are ignored; a fractional NumericDate is read down to the second.
  auto c = ClaimsFromJson(R"({"x-custom":{"deep":[1,2]},"exp":1900000000.7})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->exp, 1900000000);
}

// ---------------------------------------------------------------------------------------------------
// Keys

class EveryAlg : public ::testing::TestWithParam<Alg> {};

TEST_P(EveryAlg, SignVerifyExportImportJwk) {
  auto key = SigningKey::Generate(GetParam());
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_FALSE(key->kid().empty());
  auto token = SignCompact(*key, R"({"sub":"x"})", "at+jwt");
  ASSERT_TRUE(token.ok());
  auto p = ParseCompact(*token);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->header.alg, GetParam());
  EXPECT_EQ(p->header.kid, key->kid());
  EXPECT_EQ(p->header.typ, "at+jwt");
  EXPECT_TRUE(key->verify_key().Verify(p->signing_input, p->signature).ok());

  // The exported private form restores a key that verifies what the original signed, and vice versa.
  auto priv = key->ExportPrivate();
  ASSERT_TRUE(priv.ok());
  auto restored = SigningKey::ImportPrivate(priv->span());
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->kid(), key->kid());
  EXPECT_TRUE(restored->verify_key().Verify(p->signing_input, p->signature).ok());
  auto again = SignCompact(*restored, "{}", "");
  auto pa = ParseCompact(*again);
  EXPECT_TRUE(key->verify_key().Verify(pa->signing_input, pa->signature).ok());

  auto jwk = ToJwk(key->verify_key());
  if (GetParam() == Alg::kHS256) {
    EXPECT_EQ(jwk.status().code(), Code::kFailedPrecondition);  // secrets are never published
    return;
  }
  ASSERT_TRUE(jwk.ok());
  // The kid of a generated asymmetric key is its RFC 7638 thumbprint.
  EXPECT_EQ(*jwk->Thumbprint(), key->kid());
  auto parsed = ParseJwk(jwk->ToJson());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, *jwk);
  auto vk = parsed->ToKey();
  ASSERT_TRUE(vk.ok());
  EXPECT_EQ(vk->alg(), GetParam());
  EXPECT_TRUE(vk->Verify(p->signing_input, p->signature).ok());
  auto other = SigningKey::Generate(GetParam());
  EXPECT_EQ(other->verify_key().Verify(p->signing_input, p->signature).code(), Code::kUnauthenticated);
}

INSTANTIATE_TEST_SUITE_P(Algs, EveryAlg,
                         ::testing::Values(Alg::kHS256, Alg::kEdDSA, Alg::kES256, Alg::kRS256),
                         [](const auto& p) { return std::string(AlgName(p.param)); });

TEST(Keys, Es256RefusesDerSignature) {
  auto key = SigningKey::Generate(Alg::kES256);
  auto sig = key->Sign("x");
  ASSERT_TRUE(sig.ok());
  std::vector<uint8_t> der(72, 0x30);
  EXPECT_FALSE(key->verify_key().Verify("x", der).ok());
  EXPECT_TRUE(key->verify_key().Verify("x", *sig).ok());
}

TEST(Keys, RefusesWeakKeys) {
  EXPECT_FALSE(VerifyKey::Hs256("k", std::vector<uint8_t>(31, 1)).ok());
  EXPECT_FALSE(VerifyKey::Rsa("k", std::vector<uint8_t>(128, 0xff), std::vector<uint8_t>{1, 0, 1}).ok());
  EXPECT_FALSE(VerifyKey::Ed25519("k", std::vector<uint8_t>(31, 1)).ok());
  EXPECT_FALSE(VerifyKey::EcP256("k", std::vector<uint8_t>(65, 4)).ok());  // not on the curve
  EXPECT_FALSE(SigningKey::ImportPrivate(crypto::AsBytes(R"({"alg":"none","kid":"k","key":"AAAA"})")).ok());
  EXPECT_FALSE(SigningKey::ImportPrivate(crypto::AsBytes("not json")).ok());
}

TEST(Jwks, ParsesSkipsAndRefuses) {
  auto ed = SigningKey::Generate(Alg::kEdDSA);
  auto ec = SigningKey::Generate(Alg::kES256);
  std::vector<Jwk> keys = {*ToJwk(ed->verify_key()), *ToJwk(ec->verify_key())};
  std::string doc = JwksToJson(keys);
  auto back = ParseJwks(doc);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, keys);
  // Unknown key types are skipped (RFC 7517 section 5).
  auto with_unknown = ParseJwks(R"({"keys":[{"kty":"XYZ","foo":"bar"},)" + keys[0].ToJson() + "]}");
  ASSERT_TRUE(with_unknown.ok());
  EXPECT_EQ(with_unknown->size(), 1u);
  for (std::string_view bad : {R"({"keys":{}})", R"({})", R"([])", R"({"keys":[1]})",
                               R"({"keys":[{"kid":"x"}]})", R"({"keys":[{"kty":"oct","k":"AAAA"}]})",
                               R"({"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA","d":"AAAA"}]})"}) {
    EXPECT_FALSE(ParseJwks(bad).ok()) << bad;
  }
  // A JWK whose alg disagrees with its key type never becomes a key (no algorithm confusion via the set).
  Jwk confused = keys[0];
  confused.alg = "HS256";
  EXPECT_FALSE(confused.ToKey().ok());
  Jwk oct;
  oct.kty = "oct";
  EXPECT_FALSE(oct.ToKey().ok());
  Jwk wrong_curve = keys[1];
  wrong_curve.crv = "P-384";
  EXPECT_FALSE(wrong_curve.ToKey().ok());
  Jwk short_x = keys[0];
  short_x.x = "AAAA";
  EXPECT_FALSE(short_x.ToKey().ok());
}

}  // namespace
}  // namespace govern::tokens
