// Internal to src/audit: the strict JSON reader behind CanonicalizeDetails and the export line parser.
// It checks everything RFC 8785 needs (UTF-8, no duplicate names, finite doubles, depth) and writes
// the canonical text of each value as it goes. Not a public header.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::audit::internal {

enum class JsonType { kNull, kBool, kNumber, kString, kArray, kObject };

struct JsonMember {
  std::string name;  // decoded
  JsonType type = JsonType::kNull;
  std::string canonical;  // RFC 8785 text of the value (empty for strings: use str)
  std::string str;        // decoded value when type is kString
  std::string_view raw;   // the value's text as it stands in the input
};

// Parses `json` (which must be one object, optional surrounding whitespace) into its members in input
// order. Duplicate names, bad UTF-8 and the rest are kInvalidArgument naming the byte offset; `what`
// prefixes every message ("details", "export line").
Status ParseObjectMembers(std::string_view json, size_t max_bytes, int max_depth, std::string_view what,
                          std::vector<JsonMember>& members);

// The canonical text of `json` (any JSON value when !require_object).
Result<std::string> Canonicalize(std::string_view json, size_t max_bytes, int max_depth,
                                 std::string_view what, bool require_object);

// Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool IsValidUtf8(std::string_view s);

}  // namespace govern::audit::internal
