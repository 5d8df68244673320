// Table-driven true positives and true negatives for every built-in detector, and their checksums.
#include "dlp/detectors.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dlp/rule_set.h"

namespace govern::dlp {
namespace {

// Deterministic token bodies of a given length mixing upper case, lower case and digits.
std::string Body(size_t n, unsigned seed = 7) {
  static constexpr char kAlphabet[] = "aB3cD4eF5gH6iJ7kL8mN9oP0qRsTuVwXyZ";
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(kAlphabet[(i * 7 + seed) % (sizeof kAlphabet - 1)]);
  return s;
}

struct Positive {
  std::string text;
  std::string detector;
  std::string value;  // the bytes the finding must cover exactly
};

struct Negative {
  std::string text;
  std::string detector;  // must not be found (other detectors may fire)
};

const std::shared_ptr<const RuleSet>& Builtins() {
  static const std::shared_ptr<const RuleSet> rs = RuleSet::Compile(Policy{}).value();
  return rs;
}

std::vector<Positive> Positives() {
  const std::string ghp = "ghp_" + Body(36);
  const std::string fine = "github_pat_" + Body(22) + "_" + Body(59, 3);
  const std::string gl = "glpat-" + Body(20);
  const std::string stripe = "sk_live_" + Body(24);
  const std::string rk = "rk_live_" + Body(30);
  const std::string google = "AIza" + Body(35);
  const std::string openai = "sk-" + Body(48);
  const std::string proj = "sk-proj-" + Body(40) + "_" + Body(20, 2) + "-" + Body(30, 5);
  const std::string ant = "sk-ant-api03-" + Body(80) + "-" + Body(10) + "AA";
  const std::string jwt =
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0."
      "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
  const std::string pem =
      "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n"
      "aFDrBz9vFqU4yw==\n-----END RSA PRIVATE KEY-----";
  return {
      {"mail john.doe@example.com today", "email", "john.doe@example.com"},
      {"<a+tag@sub.example.co.uk>", "email", "a+tag@sub.example.co.uk"},
      {"x_y%z@mail-server.example.org.", "email", "x_y%z@mail-server.example.org"},
      {"card 4111111111111111 ok", "card_number", "4111111111111111"},
      {"card 4111 1111 1111 1111 ok", "card_number", "4111 1111 1111 1111"},
      {"card 4111-1111-1111-1111.", "card_number", "4111-1111-1111-1111"},
      {"mc 5500 0000 0000 0004", "card_number", "5500 0000 0000 0004"},
      {"mc2 2223000048400011", "card_number", "2223000048400011"},
      {"amex 3782 822463 10005", "card_number", "3782 822463 10005"},
      {"amex 378282246310005", "card_number", "378282246310005"},
      {"discover 6011000990139424", "card_number", "6011000990139424"},
      {"jcb 3530111333300000", "card_number", "3530111333300000"},
      {"ref 12 4111 1111 1111 1111", "card_number", "4111 1111 1111 1111"},
      {"call +14155552671 now", "phone", "+14155552671"},
      {"call +44 20 7946 0958", "phone", "+44 20 7946 0958"},
      {"call +1 (415) 555-2671.", "phone", "+1 (415) 555-2671"},
      {"call (415) 555-2671", "phone", "(415) 555-2671"},
      {"call 415-555-2671", "phone", "415-555-2671"},
      {"call 415.555.2671", "phone", "415.555.2671"},
      {"call 415 555 2671", "phone", "415 555 2671"},
      {"call 1-415-555-2671", "phone", "1-415-555-2671"},
      {"ring 020 7946 0958 today", "phone", "020 7946 0958"},
      {"appelez 01 23 45 67 89", "phone", "01 23 45 67 89"},
      {"iban DE89370400440532013000", "iban", "DE89370400440532013000"},
      {"iban DE89 3704 0044 0532 0130 00 please", "iban", "DE89 3704 0044 0532 0130 00"},
      {"GB82WEST12345698765432", "iban", "GB82WEST12345698765432"},
      {"FR1420041010050500013M02606", "iban", "FR1420041010050500013M02606"},
      {"NL91ABNA0417164300", "iban", "NL91ABNA0417164300"},
      {"ssn 123-45-6789.", "us_ssn", "123-45-6789"},
      {"ssn 555 12 3456", "us_ssn", "555 12 3456"},
      {"host 10.0.0.1 up", "ipv4", "10.0.0.1"},
      {"from 192.168.1.254:8080", "ipv4", "192.168.1.254"},
      {"dns 8.8.8.8", "ipv4", "8.8.8.8"},
      {"version 1.2.3.4", "ipv4", "1.2.3.4"},  // a dotted quad is an address, even after "version"
      {"mask 255.255.255.255", "ipv4", "255.255.255.255"},
      {"v6 2001:db8::1 up", "ipv6", "2001:db8::1"},
      {"fe80::1ff:fe23:4567:890a%eth0", "ipv6", "fe80::1ff:fe23:4567:890a"},
      {"2001:0db8:85a3:0000:0000:8a2e:0370:7334", "ipv6", "2001:0db8:85a3:0000:0000:8a2e:0370:7334"},
      {"http://[2001:db8::1]:8080/", "ipv6", "2001:db8::1"},
      {"mapped ::ffff:192.0.2.128 here", "ipv6", "::ffff:192.0.2.128"},
      {"refused fe80::1: timeout", "ipv6", "fe80::1"},
      {"id AKIAIOSFODNN7EXAMPLE ok", "aws_access_key_id", "AKIAIOSFODNN7EXAMPLE"},
      {"ASIAY34FZKBOKMUTVV7A", "aws_access_key_id", "ASIAY34FZKBOKMUTVV7A"},
      {"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key",
       "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
      {"export AWS_SECRET_ACCESS_KEY=\"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"", "aws_secret_access_key",
       "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
      {"{\"SecretAccessKey\": \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"}", "aws_secret_access_key",
       "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
      {"token " + ghp + " end", "github_token", ghp},
      {"gho_" + Body(36), "github_token", "gho_" + Body(36)},
      {"ghs_" + Body(36, 2), "github_token", "ghs_" + Body(36, 2)},
      {"ghu_" + Body(36, 3), "github_token", "ghu_" + Body(36, 3)},
      {fine, "github_token", fine},
      {"GITLAB=" + gl, "gitlab_token", gl},
      {"slack xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx ok", "slack_token",
       "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"},
      {"xoxp-12345678901-aBcDeFgH", "slack_token", "xoxp-12345678901-aBcDeFgH"},
      {stripe, "stripe_key", stripe},
      {"key=" + rk, "stripe_key", rk},
      {"maps " + google + " x", "google_api_key", google},
      {"OPENAI " + openai, "openai_api_key", openai},
      {proj + " end", "openai_api_key", proj},
      {"claude " + ant, "anthropic_api_key", ant},
      {"key:\n" + pem + "\ndone", "private_key", pem},
      {"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n",  // cut short
       "private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"},
      {"-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----", "private_key",
       "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----"},
      {"Authorization: Bearer " + jwt, "jwt", jwt},
      {"password=hunter2 user=bob", "generic_secret", "hunter2"},
      {"api_key: 'abc123def'", "generic_secret", "abc123def"},
      {"{\"secret\": \"s3cr3t value\"}", "generic_secret", "s3cr3t value"},
      {"DB_PASSWORD=correct-horse-battery", "generic_secret", "correct-horse-battery"},
      {"client_secret=xyz789&grant_type=client", "generic_secret", "xyz789"},
      {"log {\\\"password\\\": \\\"pa55\\\"}", "generic_secret", "pa55"},
      {"Access-Token : tok_1234", "generic_secret", "tok_1234"},
  };
}

std::vector<Negative> Negatives() {
  return {
      {"user@localhost", "email"},
      {"see @example.com", "email"},
      {"foo@bar.c", "email"},
      {"john..doe@example.com", "email"},
      {"card 4111111111111112", "card_number"},      // Luhn fails
      {"order 1234567812345678", "card_number"},     // an order number: Luhn fails
      {"order 1234 5678 1234 5678", "card_number"},  // grouped, still fails Luhn
      {"zeros 0000000000000000", "card_number"},     // passes Luhn, no issuer
      {"visa 4111 1111 1111 111", "card_number"},    // 15 digits is not a Visa length
      {"41111 1111 1111 111", "card_number"},        // not a card's grouping
      {"x4111111111111111", "card_number"},          // glued to a word
      {"pi 3.4111111111111111", "card_number"},      // a decimal
      {"plain 4155552671", "phone"},                 // digits alone are an id, not a phone
      {"at 2024-01-15 10:30:45", "phone"},
      {"at 2024-01-15T10:30:45.123Z", "phone"},
      {"epoch 1700000000123", "phone"},
      {"version 10.415.555.2671", "phone"},
      {"mixed 415-555.2671", "phone"},
      {"sum 3+4155552671", "phone"},
      {"build 1.2.3.4", "phone"},
      {"count 12345", "phone"},
      {"iban DE89370400440532013001", "iban"},  // mod 97 fails
      {"iban DE8937040044053201300", "iban"},   // wrong length for DE
      {"XX89370400440532013000", "iban"},       // unknown country
      {"GB82 WEST 1234 5698 7654 33", "iban"},
      {"ssn 000-12-3456", "us_ssn"},
      {"ssn 666-12-3456", "us_ssn"},
      {"ssn 900-12-3456", "us_ssn"},
      {"ssn 123-00-4567", "us_ssn"},
      {"ssn 123-45-0000", "us_ssn"},
      {"ssn 078-05-1120", "us_ssn"},
      {"id 555-123-45-6789", "us_ssn"},
      {"1123-45-6789", "us_ssn"},
      {"256.1.1.1", "ipv4"},
      {"release 1.2.3.4.5", "ipv4"},
      {"v1.2.3.4", "ipv4"},
      {"01.02.03.04", "ipv4"},
      {"1.2.3", "ipv4"},
      {"at 12:30:45", "ipv6"},
      {"std::string x; std::find(a::b)", "ipv6"},
      {"mac 00:1a:2b:3c:4d:5e", "ipv6"},
      {"Foo::Bar::baz", "ipv6"},
      {"AKIAIOSFODNN7EXAMPL", "aws_access_key_id"},
      {"XAKIAIOSFODNN7EXAMPLE", "aws_access_key_id"},
      {"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key"},
      {"ghp_short", "github_token"},
      {"ghx_" + Body(36), "github_token"},
      {"glpat-short", "gitlab_token"},
      {"xoxq-1234567890-abc", "slack_token"},
      {"sk_test_" + Body(24), "stripe_key"},
      {"AIza" + Body(34), "google_api_key"},
      {"sk-learn-is-a-python-library-name", "openai_api_key"},
      {"sk-ant-api03-" + Body(40), "openai_api_key"},
      {"-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----", "private_key"},
      {"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", "private_key"},
      {"eyJub3RhIjoiand0In0.eyJ4IjoxfQ.c2ln", "jwt"},  // header {"nota":"jwt"}: no alg
      {"eyJhbGciOiJIUzI1NiJ9", "jwt"},                 // a header alone
      {"password=", "generic_secret"},
      {"password: ********", "generic_secret"},
      {"password = getenv(\"DB\")", "generic_secret"},
      {"passwordless login enabled", "generic_secret"},
      {"password: null", "generic_secret"},
      {"secret: ${VAULT_SECRET}", "generic_secret"},
  };
}

std::string Describe(const std::vector<Finding>& fs, std::string_view text) {
  std::string s;
  for (const auto& f : fs) {
    s += std::string(f.detector) + "[" + std::string(text.substr(f.begin, f.end - f.begin)) + "] ";
  }
  return s.empty() ? "(none)" : s;
}

TEST(DetectorsTest, TruePositives) {
  for (const Positive& p : Positives()) {
    std::vector<Finding> fs = Builtins()->Scan(p.text);
    bool found = false;
    for (const auto& f : fs) {
      found |= f.detector == p.detector && p.text.substr(f.begin, f.end - f.begin) == p.value;
    }
    EXPECT_TRUE(found) << p.detector << " in \"" << p.text << "\": got " << Describe(fs, p.text);
  }
}

TEST(DetectorsTest, TrueNegatives) {
  for (const Negative& n : Negatives()) {
    std::vector<Finding> fs = Builtins()->Scan(n.text);
    for (const auto& f : fs) {
      EXPECT_NE(f.detector, n.detector) << "\"" << n.text << "\": got " << Describe(fs, n.text);
    }
  }
}

TEST(DetectorsTest, EveryBuiltinHasAPositive) {
  std::vector<Positive> ps = Positives();
  for (const DetectorInfo& d : BuiltinDetectors()) {
    bool covered = false;
    for (const auto& p : ps) covered |= p.detector == d.id;
    EXPECT_TRUE(covered) << d.id;
  }
}

TEST(DetectorsTest, ChecksumsAndRules) {
  using namespace internal;
  EXPECT_TRUE(LuhnValid("4111111111111111"));
  EXPECT_FALSE(LuhnValid("4111111111111112"));
  EXPECT_TRUE(LuhnValid("79927398713"));
  EXPECT_FALSE(LuhnValid(""));
  EXPECT_TRUE(CardIinValid("378282246310005"));
  EXPECT_FALSE(CardIinValid("3782822463100051"));  // Amex is 15 digits
  EXPECT_FALSE(CardIinValid("9111111111111111"));
  EXPECT_TRUE(IbanValid("GB82WEST12345698765432"));
  EXPECT_FALSE(IbanValid("GB82WEST12345698765433"));
  EXPECT_FALSE(IbanValid("GB82WEST1234569876543"));
  EXPECT_FALSE(IbanValid("gb82WEST12345698765432"));
  EXPECT_TRUE(SsnValid("123", "45", "6789"));
  EXPECT_FALSE(SsnValid("000", "45", "6789"));
  EXPECT_FALSE(SsnValid("666", "45", "6789"));
  EXPECT_FALSE(SsnValid("901", "45", "6789"));
  EXPECT_FALSE(SsnValid("123", "00", "6789"));
  EXPECT_FALSE(SsnValid("123", "45", "0000"));
  EXPECT_TRUE(IsSecretKeyName("DB_PASSWORD"));
  EXPECT_TRUE(IsSecretKeyName("clientSecret"));
  EXPECT_TRUE(IsSecretKeyName("x-api-key"));
  EXPECT_FALSE(IsSecretKeyName("password_hint"));
  EXPECT_FALSE(IsSecretKeyName("user"));
  EXPECT_TRUE(IsPlaceholderSecret("****"));
  EXPECT_TRUE(IsPlaceholderSecret("[REDACTED:generic_secret]"));
  EXPECT_FALSE(IsPlaceholderSecret("hunter2"));
}

}  // namespace
}  // namespace govern::dlp
