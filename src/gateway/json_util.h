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

namespace govern::gateway::openai {
struct ChatRequest;
struct Content;
}  // namespace govern::gateway::openai

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

// A token count: 0 when `key` is absent or null, else it must be a non-negative integer (the error names
// `path`.`key`).
Result<int64_t> Count(const Json& obj, const char* key, std::string_view path);

// A tool result or call arguments for a provider that takes them as JSON: the JSON `s` holds, else `s`
// as a JSON string.
Json JsonOrText(const std::string& s);

// The text of an OpenAI content for a provider that takes only text (gemini, bedrock): the string, or
// its text parts joined; another part (image, audio, file) is an InvalidArgument naming `path` and
// `provider`.
Result<std::string> TextOf(const openai::Content& c, std::string_view path, std::string_view provider);

// The sampling fields of `req` as Gemini's generationConfig and Converse's inferenceConfig name them:
// max_completion_tokens (else max_tokens) -> `max_tokens_key`, temperature, top_p -> topP, stop ->
// stopSequences. An empty object when the request sets none.
Json CamelCaseSampling(const openai::ChatRequest& req, const char* max_tokens_key);

// dump() that never throws on invalid UTF-8 (it is replaced).
std::string Dump(const Json& j);

}  // namespace govern::gateway::detail
