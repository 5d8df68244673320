// AWS Signature Version 4, written from the published algorithm; tested against AWS's examples.
#include "storage/objstore/sigv4.h"

#include <algorithm>
#include <ctime>

#include "crypto/encoding.h"
#include "crypto/sha256.h"

namespace govern::objstore::sigv4 {
namespace {

bool Unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Trims leading and trailing spaces and collapses inner runs of spaces into one, as SigV4 requires.
std::string TrimValue(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

Result<crypto::Sha256Digest> Hmac(std::span<const uint8_t> key, std::string_view data) {
  return crypto::HmacSha256(key, crypto::AsBytes(data));
}

}  // namespace

std::string UriEncode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3);
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (Unreserved(c) || (keep_slash && c == '/')) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string CanonicalQueryString(const std::vector<std::pair<std::string, std::string>>& query) {
  std::vector<std::pair<std::string, std::string>> enc;
  enc.reserve(query.size());
  for (const auto& [k, v] : query) enc.emplace_back(UriEncode(k, false), UriEncode(v, false));
  std::sort(enc.begin(), enc.end());
  std::string out;
  for (const auto& [k, v] : enc) {
    if (!out.empty()) out.push_back('&');
    out += k;
    out.push_back('=');
    out += v;
  }
  return out;
}

Result<Signature> Sign(const Request& request, const Credentials& credentials, std::string_view region,
                       std::string_view service, std::string_view amz_date) {
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
    return InvalidArgument("sigv4: access key id and secret access key are required");
  }
  if (amz_date.size() != 16 || amz_date[8] != 'T' || amz_date[15] != 'Z') {
    return InvalidArgument("sigv4: x-amz-date must look like 20130524T000000Z");
  }
  // Canonical headers: lower-case names, trimmed values, sorted; repeated names joined by ','.
  std::vector<std::pair<std::string, std::string>> hs;
  for (const auto& [k, v] : request.headers) hs.emplace_back(Lower(k), TrimValue(v));
  std::stable_sort(hs.begin(), hs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string canonical_headers, signed_headers;
  for (size_t i = 0; i < hs.size(); ++i) {
    if (i > 0 && hs[i].first == hs[i - 1].first) {
      canonical_headers.back() = ',';
      canonical_headers += hs[i].second + "\n";
      continue;
    }
    canonical_headers += hs[i].first + ":" + hs[i].second + "\n";
    if (!signed_headers.empty()) signed_headers.push_back(';');
    signed_headers += hs[i].first;
  }
  Signature sig;
  sig.canonical_request = request.method + "\n" + request.canonical_uri + "\n" +
                          CanonicalQueryString(request.query) + "\n" + canonical_headers + "\n" +
                          signed_headers + "\n" + request.payload_sha256_hex;
  GOVERN_ASSIGN_OR_RETURN(auto creq_hash, crypto::Sha256(sig.canonical_request));
  const std::string_view date = amz_date.substr(0, 8);
  const std::string scope =
      std::string(date) + "/" + std::string(region) + "/" + std::string(service) + "/aws4_request";
  sig.string_to_sign =
      "AWS4-HMAC-SHA256\n" + std::string(amz_date) + "\n" + scope + "\n" + crypto::HexEncode(creq_hash);
  const std::string k_secret = "AWS4" + credentials.secret_access_key;
  GOVERN_ASSIGN_OR_RETURN(auto k_date, Hmac(crypto::AsBytes(k_secret), date));
  GOVERN_ASSIGN_OR_RETURN(auto k_region, Hmac(k_date, region));
  GOVERN_ASSIGN_OR_RETURN(auto k_service, Hmac(k_region, service));
  GOVERN_ASSIGN_OR_RETURN(auto k_signing, Hmac(k_service, "aws4_request"));
  GOVERN_ASSIGN_OR_RETURN(auto mac, Hmac(k_signing, sig.string_to_sign));
  sig.signature = crypto::HexEncode(mac);
  sig.authorization = "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" + scope +
                      ", SignedHeaders=" + signed_headers + ", Signature=" + sig.signature;
  return sig;
}

std::string AmzDate(int64_t unix_micros) {
  const std::time_t t = static_cast<std::time_t>(unix_micros / 1000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[20];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

}  // namespace govern::objstore::sigv4
