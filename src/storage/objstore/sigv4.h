// AWS Signature Version 4 (header-based, single-chunk payload) for S3-compatible requests.
//
// Follows "Signature Calculations for the Authorization Header: Transferring Payload in a Single
// Chunk": canonical request -> string to sign -> HMAC-SHA256 key chain "AWS4"+secret, date, region,
// service, "aws4_request". Every header handed in is signed. Pure functions: thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace govern::objstore::sigv4 {

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // optional (temporary credentials): sent as x-amz-security-token
};

struct Request {
  std::string method;         // "GET"
  std::string canonical_uri;  // the path exactly as sent, already encoded: "/bucket/a%20b"
  // Query parameters, not encoded ("prefix", "a b"); a flag parameter ("uploads") has value "".
  std::vector<std::pair<std::string, std::string>> query;
  // Headers to sign (any case); must include host and x-amz-date (and for S3 x-amz-content-sha256).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload_sha256_hex;  // hex SHA-256 of the body, or "UNSIGNED-PAYLOAD"
};

struct Signature {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;      // 64 hex digits
  std::string authorization;  // the Authorization header value
};

// Percent-encodes per SigV4: every byte except A-Z a-z 0-9 - . _ ~ becomes %XX (upper-case hex);
// '/' is kept when keep_slash (object key paths) and encoded otherwise (query names and values).
std::string UriEncode(std::string_view s, bool keep_slash);

// "a=1&b=x%20y": parameters encoded, sorted by encoded name then value, joined with '&'.
std::string CanonicalQueryString(const std::vector<std::pair<std::string, std::string>>& query);

// `amz_date` is the x-amz-date value, "20130524T000000Z"; the scope date is its first 8 characters.
Result<Signature> Sign(const Request& request, const Credentials& credentials, std::string_view region,
                       std::string_view service, std::string_view amz_date);

// "20130524T000000Z" for a time in microseconds since the Unix epoch.
std::string AmzDate(int64_t unix_micros);

}  // namespace govern::objstore::sigv4
