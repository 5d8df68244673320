// Internal: the built-in detectors' vectorscan patterns and the validators that confirm a candidate.
//
// A pattern finds a candidate span cheaply in the single scan; its validator (when it has one) then
// checks what a regular expression cannot (a Luhn or mod-97 checksum, a decodable JWT header, a valid
// IPv6 address) and may move the span: narrow it to a secret's value, widen it to the end of a token or
// a private key block. Validators read only `text` and are pure, so they are safe from any thread.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "dlp/policy.h"

namespace govern::dlp::internal {

struct Span {
  size_t begin;
  size_t end;
  unsigned detector;  // the pattern's detector; a validator may reassign it (one "sk-" pattern, two vendors)
};

// Returns false to reject the candidate; may adjust *span (always within text).
using Validator = bool (*)(std::string_view text, Span* span);

struct BuiltinPattern {
  const char* expression;
  unsigned detector;    // index into BuiltinDetectors()
  Validator validator;  // null: the match stands as found
  // Report the leftmost start (HS_FLAG_SOM_LEFTMOST). Off where the validator finds the start itself and
  // SOM tracking is costly (the e-mail pattern's unbounded local part).
  bool som = true;
  int also = -1;  // another detector the validator may report, or -1
};

std::span<const BuiltinPattern> BuiltinPatterns();

// Checksums and checks, exposed for tests.
bool LuhnValid(std::string_view digits);
bool CardIinValid(std::string_view digits);
bool IbanValid(std::string_view compact);  // "DE89370400440532013000": country length and mod 97
bool SsnValid(std::string_view area, std::string_view group, std::string_view serial);
// True for JSON keys that name a secret (case-insensitive suffix: password, passwd, secret, api_key,
// apikey, access_token, auth_token, private_key, ...), so the whole value is a generic_secret.
bool IsSecretKeyName(std::string_view key);
// True for values that are placeholders rather than secrets ("", "null", "****", "[REDACTED...").
bool IsPlaceholderSecret(std::string_view value);

}  // namespace govern::dlp::internal
