// The OpenAI wire formats the gateway speaks: Chat Completions (request, response, stream chunk), the
// Responses API (the core: text and message input, output_text, function calls, usage, stream events),
// embeddings, the models list, and the error body.
//
// Each type models the fields the gateway reads or translates; every other field of the object is kept
// in `extra` and written back by ToJson, so a body forwarded to the same format loses nothing. Parse*
// never throw: bad input gives InvalidArgument naming the field. Plain values, not synchronised.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::gateway::openai {

using Json = nlohmann::json;

// ---- Chat Completions --------------------------------------------------------------------------------

struct ToolCall {
  std::string id;         // "call_..."
  std::string name;       // function name
  std::string arguments;  // JSON text, as the model wrote it (may be partial in a stream)
};

// A message's content: absent/null, a plain string, or an array of parts ({"type":"text","text":..},
// {"type":"image_url",...}, ...; parts are kept as JSON).
struct Content {
  enum class Kind { kNone, kText, kParts };
  Kind kind = Kind::kNone;
  std::string text;
  std::vector<Json> parts;

  static Content Text(std::string t) { return {Kind::kText, std::move(t), {}}; }
  // The text of the content: the string, or the text parts joined.
  std::string AllText() const;
};

struct ChatMessage {
  std::string role;  // system, developer, user, assistant, tool
  Content content;
  std::string name;
  std::vector<ToolCall> tool_calls;  // assistant
  std::string tool_call_id;          // tool
  std::optional<std::string> refusal;
  Json extra = Json::object();
};

struct FunctionTool {
  std::string name;
  std::string description;
  Json parameters;  // JSON Schema; null when absent
  std::optional<bool> strict;
};

struct ToolChoice {
  enum class Mode { kUnset, kAuto, kNone, kRequired, kFunction };
  Mode mode = Mode::kUnset;
  std::string function;  // kFunction
};

struct ChatRequest {
  std::string model;
  std::vector<ChatMessage> messages;
  std::vector<FunctionTool> tools;
  ToolChoice tool_choice;
  bool stream = false;
  std::optional<bool> include_usage;  // stream_options.include_usage
  std::optional<int64_t> max_tokens;
  std::optional<int64_t> max_completion_tokens;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::vector<std::string> stop;  // "stop" as a string or an array
  std::optional<bool> parallel_tool_calls;
  std::string user;
  Json extra = Json::object();  // other top-level fields (n, seed, response_format, ...)
  Json stream_options_extra = Json::object();
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t total_tokens = 0;
  int64_t cached_tokens = 0;     // prompt_tokens_details.cached_tokens (part of prompt_tokens)
  int64_t reasoning_tokens = 0;  // completion_tokens_details.reasoning_tokens (part of completion_tokens)
  friend bool operator==(const Usage&, const Usage&) = default;
};

struct ChatChoice {
  int64_t index = 0;
  std::optional<std::string> content;  // null when the answer is only tool calls
  std::optional<std::string> refusal;
  std::vector<ToolCall> tool_calls;
  std::optional<std::string> finish_reason;  // stop, length, tool_calls, content_filter
};

struct ChatResponse {
  std::string id;  // "chatcmpl-..."
  int64_t created = 0;
  std::string model;
  std::vector<ChatChoice> choices;
  std::optional<Usage> usage;
  Json extra = Json::object();  // system_fingerprint, service_tier, ...
};

// One tool call fragment in a stream: the first names id and function, later ones add arguments.
struct ToolCallDelta {
  int64_t index = 0;
  std::optional<std::string> id;
  std::optional<std::string> name;
  std::optional<std::string> arguments;
};

struct ChunkChoice {
  int64_t index = 0;
  std::optional<std::string> role;
  std::optional<std::string> content;
  std::optional<std::string> refusal;
  std::vector<ToolCallDelta> tool_calls;
  std::optional<std::string> finish_reason;
};

struct ChatChunk {
  std::string id;
  int64_t created = 0;
  std::string model;
  std::vector<ChunkChoice> choices;  // empty in the final usage chunk
  std::optional<Usage> usage;
  Json extra = Json::object();
};

Result<ChatRequest> ParseChatRequest(std::string_view body);
Result<ChatRequest> ChatRequestFromJson(const Json& j);
Json ToJson(const ChatRequest& r);
Json ToJson(const ChatMessage& m);
Result<ChatResponse> ParseChatResponse(std::string_view body);
Json ToJson(const ChatResponse& r);
Result<ChatChunk> ParseChatChunk(std::string_view data);
Json ToJson(const ChatChunk& c);
Result<Usage> UsageFromJson(const Json& j);
Json ToJson(const Usage& u);

// ---- Responses API -----------------------------------------------------------------------------------

// One item of `input` or `output`: a message, a function call or a function call's output. Other item
// types (reasoning, web search, ...) are kept whole in `raw`.
struct ResponseItem {
  enum class Type { kMessage, kFunctionCall, kFunctionCallOutput, kOther };
  Type type = Type::kMessage;
  std::string id;
  std::string role;  // message
  // Message text: input_text / output_text parts, or a plain string content.
  std::string text;
  std::vector<Json> parts;  // message content parts as sent (kept for other part types)
  std::string call_id;      // function_call, function_call_output
  std::string name;         // function_call
  std::string arguments;    // function_call
  std::string output;       // function_call_output
  std::string status;
  Json raw;  // kOther: the whole item
};

struct ResponsesRequest {
  std::string model;
  std::optional<std::string> input_text;  // `input` as a plain string
  std::vector<ResponseItem> input;        // `input` as items
  std::string instructions;
  std::vector<FunctionTool> tools;  // function tools ({"type":"function","name":..}); others in extra
  Json other_tools = Json::array();
  ToolChoice tool_choice;
  bool stream = false;
  std::optional<int64_t> max_output_tokens;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::string previous_response_id;
  Json extra = Json::object();
};

struct ResponsesUsage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t total_tokens = 0;
  int64_t cached_tokens = 0;     // input_tokens_details.cached_tokens
  int64_t reasoning_tokens = 0;  // output_tokens_details.reasoning_tokens
  friend bool operator==(const ResponsesUsage&, const ResponsesUsage&) = default;
};

struct ResponsesResponse {
  std::string id;  // "resp_..."
  int64_t created_at = 0;
  std::string model;
  std::string status = "completed";  // completed, in_progress, incomplete, failed
  std::vector<ResponseItem> output;
  std::optional<ResponsesUsage> usage;
  Json extra = Json::object();  // the request echo and other fields
  // The joined text of every output_text part (the SDK's `output_text`).
  std::string OutputText() const;
};

Result<ResponsesRequest> ParseResponsesRequest(std::string_view body);
Json ToJson(const ResponsesRequest& r);
Result<ResponsesResponse> ParseResponsesResponse(std::string_view body);
Result<ResponsesResponse> ResponsesResponseFromJson(const Json& j);
Json ToJson(const ResponsesResponse& r);
Json ToJson(const ResponseItem& item);
Result<ResponseItem> ResponseItemFromJson(const Json& j, std::string_view path);
Result<ResponsesUsage> ResponsesUsageFromJson(const Json& j);
Json ToJson(const ResponsesUsage& u);

// A Responses stream event: its "type" ("response.output_text.delta", ...) and the whole object. The
// event's SSE name equals its type. `response` is filled for response.created / in_progress /
// completed / failed / incomplete.
struct ResponsesEvent {
  std::string type;
  Json body;
  std::optional<ResponsesResponse> response;
};
Result<ResponsesEvent> ParseResponsesEvent(std::string_view data);

// ---- Embeddings and models ---------------------------------------------------------------------------

struct EmbeddingsRequest {
  std::string model;
  std::vector<std::string> input;                  // strings (a single string becomes one)
  std::vector<std::vector<int64_t>> input_tokens;  // token-array input
  std::string encoding_format;                     // "float" or "base64"; "" when absent
  std::optional<int64_t> dimensions;
  Json extra = Json::object();
};

struct EmbeddingsResponse {
  std::string model;
  std::vector<std::vector<float>> data;
  bool base64 = false;  // how ToJson writes each vector: base64 of little-endian float32, or numbers
  int64_t prompt_tokens = 0;
  int64_t total_tokens = 0;
  bool tokens_estimated = false;  // the provider gave no count: prompt_tokens is the gateway's estimate
};

Result<EmbeddingsRequest> ParseEmbeddingsRequest(std::string_view body);
Json ToJson(const EmbeddingsRequest& r);
Result<EmbeddingsResponse> ParseEmbeddingsResponse(std::string_view body);
Json ToJson(const EmbeddingsResponse& r);
// ToJson(r) as JSON text, written straight from the vectors: each float in its shortest form that reads
// back as the same float32 (0.0123, not the double 0.012299999594688416), no Json copy of the vectors.
std::string EmbeddingsBody(const EmbeddingsResponse& r);

struct Model {
  std::string id;
  int64_t created = 0;
  std::string owned_by;
};
Json ModelsListJson(const std::vector<Model>& models);
Result<std::vector<Model>> ParseModelsList(std::string_view body);

// ---- Errors ------------------------------------------------------------------------------------------

// {"error":{"message":..,"type":..,"param":null,"code":..}}: what the OpenAI SDKs read from a non-2xx
// answer and from an error inside a stream.
Json ErrorJson(std::string_view message, std::string_view type, std::string_view code = "");

}  // namespace govern::gateway::openai
