// Metering reads for the OpenAI Responses and embeddings APIs: the usage of an answer, and the type and
// usage of a Responses stream event, read with simdjson (the DOM parser validates the whole text)
// rather than an nlohmann tree. A same-format answer is relayed byte for byte; the gateway only needs
// these few numbers from it.
//
// Usage comes back in the Chat Completions shape (openai::Usage) so that every API meters alike:
// prompt_tokens = input tokens (cached ones included), completion_tokens = output tokens, cached_tokens
// = input_tokens_details.cached_tokens (Responses) or prompt_tokens_details.cached_tokens.
//
// Never throws; a body that is not JSON, or a usage field of the wrong type, is InvalidArgument. A
// missing usage is not an error (nullopt): the provider simply did not report it. Thread-safe (one
// parser per thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "gateway/openai.h"

namespace govern::gateway {

// A whole Responses answer (`{"object":"response",...,"usage":{"input_tokens",..}}`).
Result<std::optional<openai::Usage>> PeekResponsesUsage(std::string_view body);

// A whole Chat Completions answer relayed in its own format (`{"id",..,"choices":[{"message":{..}}],
// "usage":{..}}`): the checks openai::ParseChatResponse makes of the answer's frame, with its messages
// (id, created and model of their types; choices an array of objects, each with a message object; the
// same error texts), and its usage as openai::UsageFromJson reads it (a count that is not a number is 0,
// a fraction is truncated; usage not an object is an error). What is inside a message is not read: the
// answer goes to the client byte for byte.
Result<std::optional<openai::Usage>> PeekChatUsage(std::string_view body);

// A whole embeddings answer (`{"object":"list","data":[..],"usage":{"prompt_tokens",..}}`); output is 0.
Result<std::optional<openai::Usage>> PeekEmbeddingsUsage(std::string_view body);

// One Responses stream event (the `data:` of an SSE event).
struct ResponsesEventPeek {
  std::string type;  // "response.output_text.delta", "error", ...
  std::optional<int64_t> sequence_number;
  std::optional<openai::Usage> usage;  // response.usage of a response.* event that carries it
  // Model output: response.output_text.delta, response.refusal.delta,
  // response.function_call_arguments.delta (each stands for about one token when usage never comes).
  bool output_delta = false;
  // The stream's last event: response.completed, response.incomplete, response.failed or error.
  bool terminal = false;
  // The failure a terminal event reports (error.message of response.failed, message of error); "" else.
  std::string error;
};
Result<ResponsesEventPeek> PeekResponsesEvent(std::string_view data);

// The in-stream error event a gateway sends a Responses client when it must end the stream itself (the
// provider cut it, the gateway stops): `event: error` with the Responses API's error fields (type,
// code, message, param, sequence_number) and an `error` object, which the OpenAI SDKs raise as
// APIError. A complete SSE frame.
std::string ResponsesStreamErrorEvent(std::string_view message, int64_t sequence_number);

}  // namespace govern::gateway
