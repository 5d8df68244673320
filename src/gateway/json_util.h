// Small checked accessors over nlohmann::json for the wire-format parsers: each names the field that
// was wrong, so a bad request body gets a clear 400 instead of an exception. Internal to govern_gateway.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace govern::gateway::detail {

using Json = nlohmann::json;

// Parses bytes into JSON without throwing; the error names `what`.
Result<Json> ParseJson(std::string_view bytes, std::string_view what);

// Optional fields: absent or null give nullopt; the wrong type is an error naming `path`.
Result<std::optional<std::string>> OptString(const Json& obj, const char* key, std::string_view path);
Result<std::optional<int64_t>> OptInt(const Json& obj, const char* key, std::string_view path);
Result<std::optional<double>> OptNumber(const Json& obj, const char* key, std::string_view path);
Result<std::optional<bool>> OptBool(const Json& obj, const char* key, std::string_view path);
Result<std::string> ReqString(const Json& obj, const char* key, std::string_view path);

// A copy of `obj` without `known` keys: the fields the gateway does not model, kept so that a request
// forwarded to the same format keeps them.
Json Extras(const Json& obj, std::initializer_list<const char*> known);
// Adds every key of `extras` that `obj` does not already have.
void MergeExtras(Json& obj, const Json& extras);

// The string at `key`, or "" when absent or not a string (for dispatching on "type").
std::string_view StrField(const Json& obj, const char* key);

// dump() that never throws on invalid UTF-8 (it is replaced).
std::string Dump(const Json& j);

}  // namespace govern::gateway::detail
