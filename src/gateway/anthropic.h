// The Anthropic Messages API wire format: request, response, the stream events (message_start,
// content_block_start/delta/stop with text_delta and input_json_delta, message_delta with usage,
// message_stop, ping, error) and the error body.
//
// As in openai.h, each type models what the gateway reads or translates and keeps every other field in
// `extra` (content blocks it does not model, such as images, documents or thinking, are kept whole), so
// a body forwarded to the same format loses nothing. Parse* never throw. Plain values.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::gateway::anthropic {

using Json = nlohmann::json;

// One content block. text, tool_use and tool_result are modelled; any other type keeps `raw`.
struct Block {
  enum class Type { kText, kToolUse, kToolResult, kOther };
  Type type = Type::kText;
  std::string text;         // kText
  std::string id;           // kToolUse: "toolu_..."
  std::string name;         // kToolUse
  Json input;               // kToolUse: the arguments object
  std::string tool_use_id;  // kToolResult
  // kToolResult content: a string, or blocks (text, image); `result_text` is the text of either.
  Json result_content;
  std::string result_text;
  bool is_error = false;  // kToolResult
  Json raw;               // kOther: the whole block; other types: extra fields (cache_control, citations)

  static Block Text(std::string t) {
    Block b;
    b.text = std::move(t);
    return b;
  }
};

struct Message {
  std::string role;  // user, assistant
  // `content` as sent: a plain string (content_is_string) or blocks.
  bool content_is_string = false;
  std::vector<Block> content;  // for a string: one text block
};

struct Tool {
  std::string name;
  std::string description;
  Json input_schema;            // object schema; required for custom tools
  Json extra = Json::object();  // cache_control, type of server tools, ...
};

struct ToolChoice {
  enum class Mode { kUnset, kAuto, kAny, kTool, kNone };
  Mode mode = Mode::kUnset;
  std::string name;  // kTool
  std::optional<bool> disable_parallel_tool_use;
};

struct MessagesRequest {
  std::string model;
  int64_t max_tokens = 0;  // required by the API
  std::vector<Message> messages;
  // `system` as a string, or text blocks; `system_text` is the text of either.
  Json system;  // null when absent
  std::string system_text;
  std::vector<Tool> tools;
  ToolChoice tool_choice;
  std::vector<std::string> stop_sequences;
  bool stream = false;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> top_k;
  std::string metadata_user_id;
  Json extra = Json::object();  // thinking, metadata's other fields, service_tier, ...
};

struct Usage {
  int64_t input_tokens = 0;  // not counting cache reads and writes
  int64_t output_tokens = 0;
  int64_t cache_creation_input_tokens = 0;
  int64_t cache_read_input_tokens = 0;
  friend bool operator==(const Usage&, const Usage&) = default;
};

struct MessagesResponse {
  std::string id;  // "msg_..."
  std::string model;
  std::vector<Block> content;
  std::optional<std::string>
      stop_reason;  // end_turn, max_tokens, stop_sequence, tool_use, pause_turn, refusal
  std::optional<std::string> stop_sequence;
  Usage usage;
  Json extra = Json::object();
};

Result<MessagesRequest> ParseMessagesRequest(std::string_view body);
Result<MessagesRequest> MessagesRequestFromJson(const Json& j);
Json ToJson(const MessagesRequest& r);
Result<MessagesResponse> ParseMessagesResponse(std::string_view body);
Json ToJson(const MessagesResponse& r);
Result<Block> BlockFromJson(const Json& j, std::string_view path);
Json ToJson(const Block& b);
Result<Usage> UsageFromJson(const Json& j);
Json ToJson(const Usage& u);

// ---- Stream events ----

// One event of a Messages stream. The SSE event name equals `type`.
struct StreamEvent {
  enum class Type {
    kMessageStart,
    kContentBlockStart,
    kContentBlockDelta,
    kContentBlockStop,
    kMessageDelta,
    kMessageStop,
    kPing,
    kError,
    kOther,  // a type this gateway does not know; kept in `body`
  };
  Type type = Type::kPing;
  MessagesResponse message;  // kMessageStart: the message so far (content empty, usage.input_tokens)
  int64_t index = 0;         // content_block_*
  Block block;               // kContentBlockStart
  // kContentBlockDelta: delta type ("text_delta", "input_json_delta", "thinking_delta", ...) and its text
  // (text, partial_json or thinking).
  std::string delta_type;
  std::string delta_text;
  // kMessageDelta
  std::optional<std::string> stop_reason;
  std::optional<std::string> stop_sequence;
  // kMessageDelta: the usage object as sent (fields are cumulative; absent ones stay absent).
  Json usage;
  // kError
  std::string error_type;
  std::string error_message;
  Json body;  // the event object as parsed (or as ToJson wrote it)

  static std::string_view Name(Type t);
  std::string_view name() const { return Name(type); }
};

Result<StreamEvent> ParseStreamEvent(std::string_view data);
Json ToJson(const StreamEvent& e);

// {"type":"error","error":{"type":..,"message":..}}: the error body of a non-2xx answer, and the data
// of an "error" event in a stream. Types: invalid_request_error, authentication_error,
// permission_error, not_found_error, request_too_large, rate_limit_error, api_error, overloaded_error.
Json ErrorJson(std::string_view type, std::string_view message);

}  // namespace govern::gateway::anthropic
