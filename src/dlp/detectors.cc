// The built-in detector table, its vectorscan patterns and the validators behind them.
#include "dlp/detectors.h"

#include <arpa/inet.h>

#include <array>
#include <cstring>

namespace govern::dlp {
namespace {

// Stable ids and categories: policies and dashboards name them, so never rename one.
// Priorities by category: secret 50 > financial 40 > national_id 30 > contact 20 > network 10.
constexpr std::array<DetectorInfo, 19> kDetectors = {{
    {"email", "contact", 20},
    {"phone", "contact", 20},
    {"card_number", "financial", 40},
    {"iban", "financial", 40},
    {"us_ssn", "national_id", 30},
    {"ipv4", "network", 10},
    {"ipv6", "network", 10},
    {"aws_access_key_id", "secret", 50},
    {"aws_secret_access_key", "secret", 50},
    {"github_token", "secret", 50},
    {"gitlab_token", "secret", 50},
    {"slack_token", "secret", 50},
    {"stripe_key", "secret", 50},
    {"google_api_key", "secret", 50},
    {"openai_api_key", "secret", 50},
    {"anthropic_api_key", "secret", 50},
    {"private_key", "secret", 50},
    {"jwt", "secret", 50},
    {"generic_secret", "secret", 50},
}};

enum DetectorIndex : unsigned {
  kEmail,
  kPhone,
  kCard,
  kIban,
  kSsn,
  kIpv4,
  kIpv6,
  kAwsKeyId,
  kAwsSecret,
  kGithub,
  kGitlab,
  kSlack,
  kStripe,
  kGoogle,
  kOpenai,
  kAnthropic,
  kPrivateKey,
  kJwt,
  kGenericSecret,
};

}  // namespace

std::span<const DetectorInfo> BuiltinDetectors() { return kDetectors; }

namespace internal {
namespace {

using Text = std::string_view;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
bool IsAlpha(char c) { return IsUpper(c) || IsLower(c); }
bool IsAlnum(char c) { return IsAlpha(c) || IsDigit(c); }
bool IsWord(char c) { return IsAlnum(c) || c == '_'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsBase64Url(char c) { return IsAlnum(c) || c == '-' || c == '_'; }
char Lower(char c) { return IsUpper(c) ? static_cast<char>(c - 'A' + 'a') : c; }

char At(Text t, size_t i) { return i < t.size() ? t[i] : '\0'; }
// Character before position i, or '\0' at the start.
char Before(Text t, size_t i, size_t back = 1) { return i >= back ? t[i - back] : '\0'; }

// "1.2.3.4" inside "1.2.3.4.5", or a number inside "10.415.555.2671": a digit run continues past a
// separator on the left or the right, so the candidate is part of a longer dotted/dashed sequence.
bool ContinuesLeft(Text t, size_t begin, char sep) {
  return Before(t, begin) == sep && IsDigit(Before(t, begin, 2));
}
bool ContinuesRight(Text t, size_t end, char sep) { return At(t, end) == sep && IsDigit(At(t, end + 1)); }

int ToInt(Text digits) {
  int v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  return v;
}

// ---- payment cards ----

// Digits of a card candidate starting at a group start; false when its grouping is not a card's.
bool TryCard(Text t, size_t begin, size_t end) {
  char digits[20];
  size_t n = 0;
  int groups[20];
  size_t ngroups = 0;
  int current = 0;
  char sep = 0;
  for (size_t i = begin; i < end; ++i) {
    char c = t[i];
    if (IsDigit(c)) {
      if (n == 19) return false;
      digits[n++] = c;
      ++current;
    } else {
      if (sep != 0 && c != sep) return false;  // mixed separators: not one number
      if (ngroups == 19) return false;
      sep = c;
      groups[ngroups++] = current;
      current = 0;
    }
  }
  groups[ngroups++] = current;
  if (n < 13) return false;
  if (ngroups > 1) {
    bool fours = true;
    for (size_t g = 0; g + 1 < ngroups; ++g) fours = fours && groups[g] == 4;
    fours = fours && groups[ngroups - 1] >= 1 && groups[ngroups - 1] <= 4;
    bool amex = ngroups == 3 && groups[0] == 4 && groups[1] == 6 && (groups[2] == 5 || groups[2] == 4);
    if (!fours && !amex) return false;
  }
  Text d(digits, n);
  return LuhnValid(d) && CardIinValid(d);
}

// The pattern reports the leftmost start for each end; a card may start at a later group (for example
// "ref 12 4111 1111 1111 1111"), so try each group start in turn.
bool ValidateCard(Text t, Span* s) {
  if (ContinuesLeft(t, s->begin, '.') || ContinuesRight(t, s->end, '.')) return false;
  for (size_t b = s->begin; b + 13 <= s->end; ++b) {
    if (!IsDigit(t[b]) || (b != s->begin && IsDigit(t[b - 1]))) continue;
    if (TryCard(t, b, s->end)) {
      s->begin = b;
      return true;
    }
  }
  return false;
}

// ---- phone numbers ----

size_t CountDigits(Text t, Span s) {
  size_t n = 0;
  for (size_t i = s.begin; i < s.end; ++i) n += IsDigit(t[i]) ? 1 : 0;
  return n;
}

// Shared checks: not glued to a longer number, a version string or a time.
bool PhoneContextOk(Text t, Span s) {
  for (char sep : {'.', '-', '/', ':'}) {
    if (ContinuesLeft(t, s.begin, sep) || ContinuesRight(t, s.end, sep)) return false;
  }
  return At(t, s.end) != ':';
}

// "+44 20 7946 0958", "+1 (415) 555-2671", "+14155552671": E.164 allows at most 15 digits.
bool ValidateIntlPhone(Text t, Span* s) {
  if (IsAlnum(Before(t, s->begin))) return false;  // "3+4155552671" is arithmetic
  size_t digits = CountDigits(t, *s);
  if (digits < 8 || digits > 15) return false;
  int open = 0;
  char prev = '+';
  for (size_t i = s->begin + 1; i < s->end; ++i) {
    char c = t[i];
    if (c == '(') {
      if (++open > 1) return false;
    } else if (c == ')') {
      if (--open < 0) return false;
    } else if (!IsDigit(c) && !IsDigit(prev) && prev != ')' && c != '(') {
      return false;  // two separators in a row
    }
    prev = c;
  }
  return open == 0 && PhoneContextOk(t, *s);
}

// North American "(415) 555-2671", "415-555-2671", "415.555.2671", "1-415-555-2671".
bool ValidateNanpPhone(Text t, Span* s) {
  if (!PhoneContextOk(t, *s)) return false;
  Text v = t.substr(s->begin, s->end - s->begin);
  bool paren = v.find('(') != Text::npos;
  if (paren != (v.find(')') != Text::npos)) return false;
  if (!paren) {
    // Without parentheses both separators are present and equal: "415-555-2671", not "415555-2671".
    size_t line_sep = v.size() - 5;
    char sep2 = v[line_sep];
    size_t exch_sep = line_sep - 4;
    if (v[exch_sep] != sep2) return false;
  }
  return true;
}

// National numbers with a trunk 0 and separated groups: "020 7946 0958", "01 23 45 67 89",
// "030-1234-5678". Without separators a run of digits is an id, not a phone number.
bool ValidateNationalPhone(Text t, Span* s) {
  size_t digits = CountDigits(t, *s);
  if (digits < 10 || digits > 11) return false;
  char sep = 0;
  for (size_t i = s->begin; i < s->end; ++i) {
    if (IsDigit(t[i])) continue;
    if (sep != 0 && t[i] != sep) return false;
    sep = t[i];
  }
  if (sep == ' ' && (IsDigit(Before(t, s->begin, 2)) && Before(t, s->begin) == ' ')) return false;
  if (sep == ' ' && At(t, s->end) == ' ' && IsDigit(At(t, s->end + 1))) return false;
  return PhoneContextOk(t, *s);
}

// ---- IBAN ----

struct IbanLength {
  char cc[3];
  int length;
};
constexpr IbanLength kIbanLengths[] = {
    {"AD", 24}, {"AE", 23}, {"AL", 28}, {"AT", 20}, {"AZ", 28}, {"BA", 20}, {"BE", 16}, {"BG", 22},
    {"BH", 22}, {"BR", 29}, {"BY", 28}, {"CH", 21}, {"CR", 22}, {"CY", 28}, {"CZ", 24}, {"DE", 22},
    {"DK", 18}, {"DO", 28}, {"EE", 20}, {"EG", 29}, {"ES", 24}, {"FI", 18}, {"FO", 18}, {"FR", 27},
    {"GB", 22}, {"GE", 22}, {"GI", 23}, {"GL", 18}, {"GR", 27}, {"GT", 28}, {"HR", 21}, {"HU", 28},
    {"IE", 22}, {"IL", 23}, {"IQ", 23}, {"IS", 26}, {"IT", 27}, {"JO", 30}, {"KW", 30}, {"KZ", 20},
    {"LB", 28}, {"LC", 32}, {"LI", 21}, {"LT", 20}, {"LU", 20}, {"LV", 21}, {"MC", 27}, {"MD", 24},
    {"ME", 22}, {"MK", 19}, {"MR", 27}, {"MT", 31}, {"MU", 30}, {"NL", 18}, {"NO", 15}, {"PK", 24},
    {"PL", 28}, {"PS", 29}, {"PT", 25}, {"QA", 29}, {"RO", 24}, {"RS", 22}, {"SA", 24}, {"SC", 31},
    {"SE", 24}, {"SI", 19}, {"SK", 24}, {"SM", 27}, {"ST", 25}, {"SV", 28}, {"TL", 23}, {"TN", 24},
    {"TR", 26}, {"UA", 29}, {"VA", 22}, {"VG", 24}, {"XK", 20},
};

bool ValidateIban(Text t, Span* s) {
  char compact[40];
  size_t n = 0;
  size_t since_space = 0;
  for (size_t i = s->begin; i < s->end; ++i) {
    if (t[i] == ' ') {
      // Printed IBANs group by four: "DE89 3704 0044 0532 0130 00".
      if (n % 4 != 0 || since_space == 0) return false;
      since_space = 0;
      continue;
    }
    if (n == sizeof compact) return false;
    compact[n++] = t[i];
    ++since_space;
  }
  return IbanValid(Text(compact, n));
}

// ---- US SSN ----

bool ValidateSsn(Text t, Span* s) {
  Text v = t.substr(s->begin, s->end - s->begin);  // "ddd-dd-dddd" or "ddd dd dddd"
  char sep = v[3];
  if (ContinuesLeft(t, s->begin, sep) || ContinuesRight(t, s->end, sep)) return false;
  if (sep == ' ' && (ContinuesLeft(t, s->begin, '-') || ContinuesRight(t, s->end, '-'))) return false;
  return SsnValid(v.substr(0, 3), v.substr(4, 2), v.substr(7, 4));
}

// ---- IP addresses ----

// Dotted quads are IPs ("1.2.3.4" included); "1.2.3.4.5" and "v1.2.3.4" are versions, not addresses.
bool ValidateIpv4(Text t, Span* s) {
  return !ContinuesLeft(t, s->begin, '.') && !ContinuesRight(t, s->end, '.') && Before(t, s->begin) != '.';
}

bool IsIpv6Char(char c) { return IsHex(c) || c == ':' || c == '.'; }

// The pattern only finds "h:h:h:h", "::h" or "h::" triggers; the address is the surrounding run of hex, ':'
// and
// '.', checked by inet_pton. Runs glued to other word characters ("std::find") are not addresses.
bool ValidateIpv6(Text t, Span* s) {
  size_t b = s->begin;
  size_t e = s->end;
  while (b > 0 && IsIpv6Char(t[b - 1]) && s->end - (b - 1) <= 64) --b;
  while (e < t.size() && IsIpv6Char(t[e]) && e + 1 - b <= 64) ++e;
  while (e > b && t[e - 1] == '.') --e;
  if (IsWord(Before(t, b)) || IsWord(At(t, e))) return false;
  if (e - b < 6 || e - b > 45) return false;
  char buf[64];
  unsigned char addr[16];
  auto parses = [&](size_t end) {
    std::memcpy(buf, t.data() + b, end - b);
    buf[end - b] = '\0';
    return inet_pton(AF_INET6, buf, addr) == 1;
  };
  if (!parses(e)) {
    if (t[e - 1] != ':' || t[e - 2] == ':' || !parses(e - 1)) return false;  // "fe80::1: refused"
    --e;
  }
  s->begin = b;
  s->end = e;
  return true;
}

// ---- secrets ----

// Widens the end over characters of a token's alphabet (at most `cap` bytes in all).
template <typename Pred>
size_t ExtendRight(Text t, size_t begin, size_t end, size_t cap, Pred in_token) {
  while (end < t.size() && end - begin < cap && in_token(t[end])) ++end;
  return end;
}

bool TokenChar(char c) { return IsBase64Url(c); }

bool ValidateAwsKeyId(Text, Span*) { return true; }

// "aws_secret_access_key = wJalr...": keep the name visible, redact the 40-character value.
bool ValidateAwsSecret(Text t, Span* s) {
  auto b64 = [](char c) { return IsAlnum(c) || c == '/' || c == '+'; };
  if (s->end - s->begin < 40 || b64(At(t, s->end))) return false;
  s->begin = s->end - 40;
  return true;
}

bool ValidateGitlab(Text t, Span* s) {
  s->end = ExtendRight(t, s->begin, s->end, 128, [](char c) { return IsBase64Url(c) || c == '.'; });
  while (t[s->end - 1] == '.') --s->end;
  return true;
}

bool ValidateSlack(Text t, Span* s) {
  s->end = ExtendRight(t, s->begin, s->end, 256, [](char c) { return IsAlnum(c) || c == '-'; });
  return true;
}

bool ValidateStripe(Text t, Span* s) {
  s->end = ExtendRight(t, s->begin, s->end, 255, IsAlnum);
  return true;
}

bool ValidateGoogle(Text t, Span* s) { return !TokenChar(At(t, s->end)); }

// "sk-ant-..." is Anthropic's; other "sk-..." keys are OpenAI's ("sk-proj-", "sk-svcacct-", legacy). "sk-"
// alone is common in prose and code ("sk-learn"), so an OpenAI key's body must mix upper case, lower
// case and digits.
bool ValidateSkKey(Text t, Span* s) {
  s->end = ExtendRight(t, s->begin, s->end, 256, TokenChar);
  if (t.substr(s->begin, s->end - s->begin).starts_with("sk-ant-")) {
    s->detector = kAnthropic;
    return true;
  }
  bool upper = false, lower = false, digit = false;
  for (size_t i = s->begin + 3; i < s->end; ++i) {
    upper |= IsUpper(t[i]);
    lower |= IsLower(t[i]);
    digit |= IsDigit(t[i]);
  }
  return upper && lower && digit;
}

// From BEGIN through the END line; a block cut short (no END) is secret to the end of the text.
bool ValidatePrivateKey(Text t, Span* s) {
  size_t end_marker = t.find("-----END", s->end);
  if (end_marker == Text::npos) {
    s->end = t.size();
    return true;
  }
  size_t close = t.find("-----", end_marker + 8);
  s->end = (close == Text::npos || close - end_marker > 80) ? t.size() : close + 5;
  return true;
}

int Base64UrlValue(char c) {
  if (IsUpper(c)) return c - 'A';
  if (IsLower(c)) return c - 'a' + 26;
  if (IsDigit(c)) return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

// header.payload.signature, each base64url; the header decodes to a JSON object with "alg".
bool ValidateJwt(Text t, Span* s) {
  size_t h_end = ExtendRight(t, s->begin, s->begin, 1024, TokenChar);
  if (At(t, h_end) != '.') return false;
  size_t p_end = ExtendRight(t, h_end + 1, h_end + 1, 16384, TokenChar);
  if (p_end == h_end + 1 || At(t, p_end) != '.') return false;
  size_t sig_end = ExtendRight(t, p_end + 1, p_end + 1, 2048, TokenChar);
  char header[800];
  size_t n = 0;
  unsigned acc = 0;
  int bits = 0;
  for (size_t i = s->begin; i < h_end && n < sizeof header; ++i) {
    acc = (acc << 6) | static_cast<unsigned>(Base64UrlValue(t[i]));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      header[n++] = static_cast<char>((acc >> bits) & 0xff);
    }
  }
  Text h(header, n);
  size_t first = h.find_first_not_of(" \t\r\n");
  size_t last = h.find_last_not_of(" \t\r\n");
  if (first == Text::npos || h[first] != '{' || h[last] != '}' || h.find("\"alg\"") == Text::npos) {
    return false;
  }
  s->end = sig_end;
  return true;
}

constexpr Text kSecretKeyNames[] = {"password",    "passwd",     "secret",       "api_key",
                                    "api-key",     "apikey",     "access_token", "access-token",
                                    "auth_token",  "auth-token", "private_key",  "private-key",
                                    "accesstoken", "authtoken",  "privatekey"};

// "password=hunter2", "api_key: 'abc'", "\"secret\": \"s3\"": the pattern ends after the separator;
// the value runs to its closing quote, or to whitespace or a delimiter when unquoted.
bool ValidateGenericSecret(Text t, Span* s) {
  size_t p = s->end;
  while (p < t.size() && (t[p] == ' ' || t[p] == '\t')) ++p;
  if (p >= t.size()) return false;
  size_t vb, ve;
  Text close;
  if (t[p] == '"' || t[p] == '\'') {
    close = t.substr(p, 1);
  } else if (t[p] == '\\' && (At(t, p + 1) == '"' || At(t, p + 1) == '\'')) {
    close = t.substr(p, 2);  // a quoted value inside an escaped JSON string: \"hunter2\"
  }
  if (!close.empty()) {
    vb = p + close.size();
    size_t q = t.find(close, vb);
    size_t limit = std::min(t.size(), vb + 512);
    if (q == Text::npos || q > limit) {
      q = vb;
      while (q < limit && t[q] != '\n') ++q;
    }
    ve = q;
  } else {
    vb = p;
    ve = p;
    size_t limit = std::min(t.size(), vb + 512);
    while (ve < limit) {
      char c = t[ve];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ';' || c == '&' || c == '"' ||
          c == '\'' || c == '<' || c == '>' || c == ')' || c == '}' || c == ']' || c == '(') {
        break;
      }
      ++ve;
    }
    if (At(t, ve) == '(') return false;  // password = getenv("X"): code, not a value
  }
  Text value = t.substr(vb, ve - vb);
  if (IsPlaceholderSecret(value)) return false;
  s->begin = vb;
  s->end = ve;
  return true;
}

// ---- email ----

bool IsLocalPartChar(char c) {
  return IsAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-';
}

// The pattern is compiled without start-of-match tracking; the local part is walked back from the '@'.
bool ValidateEmail(Text t, Span* s) {
  size_t at = t.rfind('@', s->end - 1);
  if (at == Text::npos) return false;
  s->begin = at;
  while (s->begin > 0 && IsLocalPartChar(t[s->begin - 1]) && at - s->begin < 256) --s->begin;
  while (s->begin < at && (t[s->begin] == '.' || t[s->begin] == '-')) ++s->begin;
  if (s->begin == at) return false;
  Text local = t.substr(s->begin, at - s->begin);
  if (local.find("..") != Text::npos || local.back() == '.') return false;
  Text domain = t.substr(at + 1, s->end - at - 1);
  size_t start = 0;
  while (start <= domain.size()) {
    size_t dot = domain.find('.', start);
    if (dot == Text::npos) dot = domain.size();
    Text label = domain.substr(start, dot - start);
    if (label.empty() || label.front() == '-' || label.back() == '-' || label.size() > 63) return false;
    start = dot + 1;
  }
  return true;
}

// Hyperscan syntax. Every pattern is compiled with HS_FLAG_SOM_LEFTMOST; none uses HS_FLAG_UTF8
// because every built-in matches ASCII only, so a span can never start or end inside a UTF-8 character.
constexpr BuiltinPattern kPatterns[] = {
    {R"([A-Za-z0-9._%+\-]@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,24}\b)", kEmail, ValidateEmail,
     false},
    {R"(\+[1-9][0-9 .\-()]{6,20}[0-9]\b)", kPhone, ValidateIntlPhone},
    {R"((?:\b1[ .\-]?)?(?:\(\b[2-9][0-9]{2}\)|\b[2-9][0-9]{2})[ .\-]?[2-9][0-9]{2}[ .\-][0-9]{4}\b)", kPhone,
     ValidateNanpPhone},
    {R"(\b0[1-9][0-9]{0,3}[ \-][0-9]{2,4}(?:[ \-][0-9]{2,4}){1,3}\b)", kPhone, ValidateNationalPhone},
    // Cards: unseparated, grouped by four, or the 4-6-5 / 4-6-4 grouping of Amex and Diners. Separate
    // simple patterns scan much faster than one pattern with optional separators between any digits.
    {R"(\b[0-9]{13,19}\b)", kCard, ValidateCard},
    {R"(\b[0-9]{4}[ \-][0-9]{4}[ \-][0-9]{4}[ \-][0-9]{1,7}\b)", kCard, ValidateCard},
    {R"(\b[0-9]{4}[ \-][0-9]{6}[ \-][0-9]{4,5}\b)", kCard, ValidateCard},
    {R"(\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b)", kIban, ValidateIban},
    {R"(\b[0-9]{3}-[0-9]{2}-[0-9]{4}\b)", kSsn, ValidateSsn},
    {R"(\b[0-9]{3} [0-9]{2} [0-9]{4}\b)", kSsn, ValidateSsn},
    {R"(\b(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\b)",
     kIpv4, ValidateIpv4},
    // IPv6 triggers: three colons between hex groups, or "::". An address without "::" has seven colons, so
    // times ("10:30:45", two colons) never reach the validator.
    {R"([0-9A-Fa-f]:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f])", kIpv6, ValidateIpv6},
    {R"(::[0-9A-Fa-f])", kIpv6, ValidateIpv6},
    {R"([0-9A-Fa-f]::)", kIpv6, ValidateIpv6},
    {R"(\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b)", kAwsKeyId, ValidateAwsKeyId},
    {R"((?i)aws[a-z_\-]{0,20}secret[a-z_\-]{0,20}(?:\\?["'])?\s{0,3}[=:]\s{0,3}(?:\\?["'])?[A-Za-z0-9/+]{40})",
     kAwsSecret, ValidateAwsSecret},
    {R"((?i)secret_?access_?key(?:\\?["'])?\s{0,3}[=:]\s{0,3}(?:\\?["'])?[A-Za-z0-9/+]{40})", kAwsSecret,
     ValidateAwsSecret},
    {R"(\bgh[pousr]_[A-Za-z0-9]{36}\b)", kGithub, nullptr},
    {R"(\bgithub_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}\b)", kGithub, nullptr},
    {R"(\bglpat-[A-Za-z0-9_\-]{20})", kGitlab, ValidateGitlab},
    {R"(\bxox[abprs]-[A-Za-z0-9\-]{10})", kSlack, ValidateSlack},
    {R"(\b[sr]k_live_[A-Za-z0-9]{20})", kStripe, ValidateStripe},
    {R"(\bAIza[0-9A-Za-z_\-]{35})", kGoogle, ValidateGoogle},
    // One pattern for OpenAI and Anthropic keys: two overlapping "sk-" patterns slow the whole scan.
    {R"(\bsk-[A-Za-z0-9_\-]{20})", kOpenai, ValidateSkKey, true, kAnthropic},
    {R"(-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)", kPrivateKey, ValidatePrivateKey},
    {R"(\beyJ[A-Za-z0-9_\-]{8})", kJwt, ValidateJwt},
    {R"((?i)(?:password|passwd|secret|api[_\-]?key|apikey|access[_\-]?token|auth[_\-]?token|private[_\-]?key)(?:\\?["'])?\s*[=:])",
     kGenericSecret, ValidateGenericSecret},
};

}  // namespace

std::span<const BuiltinPattern> BuiltinPatterns() { return kPatterns; }

bool LuhnValid(std::string_view digits) {
  int sum = 0;
  bool twice = false;
  for (size_t i = digits.size(); i-- > 0;) {
    int d = digits[i] - '0';
    if (twice) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    twice = !twice;
  }
  return !digits.empty() && sum % 10 == 0;
}

bool CardIinValid(std::string_view d) {
  size_t len = d.size();
  int p2 = ToInt(d.substr(0, 2)), p3 = ToInt(d.substr(0, 3)), p4 = ToInt(d.substr(0, 4));
  if (d[0] == '4') return len == 13 || len == 16 || len == 19;                       // Visa
  if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return len == 16;        // Mastercard
  if (p2 == 34 || p2 == 37) return len == 15;                                        // American Express
  if (p4 == 6011 || (p3 >= 644 && p3 <= 649) || p2 == 65) return len >= 16;          // Discover
  if ((p3 >= 300 && p3 <= 305) || p4 == 3095 || p2 == 36 || p2 == 38 || p2 == 39) {  // Diners Club
    return len >= 14;
  }
  if (p4 >= 3528 && p4 <= 3589) return len >= 16;  // JCB
  if (p2 == 62) return len >= 16;                  // UnionPay
  if (p4 >= 2200 && p4 <= 2204) return len >= 16;  // Mir
  for (int maestro : {5018, 5020, 5038, 5893, 6304, 6759, 6761, 6762, 6763}) {
    if (p4 == maestro) return true;
  }
  return false;
}

bool IbanValid(std::string_view c) {
  if (c.size() < 15 || c.size() > 34 || !IsUpper(c[0]) || !IsUpper(c[1]) || !IsDigit(c[2]) ||
      !IsDigit(c[3])) {
    return false;
  }
  int expected = 0;
  for (const auto& entry : kIbanLengths) {
    if (entry.cc[0] == c[0] && entry.cc[1] == c[1]) expected = entry.length;
  }
  if (expected == 0 || static_cast<size_t>(expected) != c.size()) return false;
  // mod 97 of the number formed by moving the first four characters to the end, letters as 10..35.
  unsigned remainder = 0;
  for (size_t k = 0; k < c.size(); ++k) {
    char ch = c[(k + 4) % c.size()];
    if (IsDigit(ch)) {
      remainder = (remainder * 10 + static_cast<unsigned>(ch - '0')) % 97;
    } else if (IsUpper(ch)) {
      remainder = (remainder * 100 + static_cast<unsigned>(ch - 'A' + 10)) % 97;
    } else {
      return false;
    }
  }
  return remainder == 1;
}

bool SsnValid(std::string_view area, std::string_view group, std::string_view serial) {
  int a = ToInt(area);
  if (a == 0 || a == 666 || a >= 900) return false;
  if (ToInt(group) == 0 || ToInt(serial) == 0) return false;
  // Published in advertising and never valid for a person.
  if (area == "078" && group == "05" && serial == "1120") return false;
  if (area == "219" && group == "09" && serial == "9999") return false;
  return true;
}

bool IsSecretKeyName(std::string_view key) {
  for (Text name : kSecretKeyNames) {
    if (key.size() < name.size()) continue;
    Text tail = key.substr(key.size() - name.size());
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) same = Lower(tail[i]) == name[i];
    if (same) return true;
  }
  return false;
}

bool IsPlaceholderSecret(std::string_view v) {
  if (v.empty()) return true;
  if (v.starts_with("[REDACTED") || v.starts_with("[HASH:") || v.starts_with("${") || v.starts_with("<")) {
    return true;
  }
  if (v.find_first_not_of("*x.#-") == Text::npos) return true;  // "****", "xxxx", "..."
  char lower[16];
  if (v.size() > sizeof lower) return false;
  for (size_t i = 0; i < v.size(); ++i) lower[i] = Lower(v[i]);
  Text l(lower, v.size());
  for (Text p : {"null", "none", "nil", "true", "false", "undefined", "redacted"}) {
    if (l == p) return true;
  }
  return false;
}

}  // namespace internal
}  // namespace govern::dlp
