// The model stub's answers: what a fake OpenAI or Anthropic provider says to a request, computed
// without I/O so that tests can check it directly and the server (server.h) only moves bytes.
//
// Deterministic by design, so tests and benchmarks can assert exact text and usage:
// - Input tokens are the words (maximal runs of non-space bytes) of every text the model reads: system
//   and instructions, message text (string or text parts), tool results and earlier tool-call
//   arguments. Tool schemas and images are not counted.
// - A text answer is `output_tokens` words taken in turn from a fixed list ("Govern stub reply ..."),
//   one word per token, joined by single spaces; output_tokens is x-stub-output-tokens (default 16),
//   cut to the request's max tokens, in which case the stop reason is length / max_tokens.
// - When the request offers tools (and tool_choice is not none) and the last message is not a tool
//   result, the answer is one call of the chosen function (the forced one, else the first) with
//   arguments made from its schema ("stub" for strings, 1 for numbers, true for booleans, [] and {}),
//   sent as pieces of at most 8 bytes; each piece counts as one output token.
// - Embeddings: `dimensions` (default 16) floats per input from a hash of the input, unit length.
//
// Faults, chosen per request by header (for gateway tests):
//   x-stub-status: N        answer N with the provider's error body (no model work)
//   x-stub-fail-call: K     with x-stub-status: only the K-th request this stub reads (counting from 1,
//                           as StubServer::stats().requests does) fails; the others are answered
//   x-stub-delay-ms: N      wait N ms before the status line
//   x-stub-cut-after: K     streams: close the connection after K events, without the end; plain
//                           answers: send the headers and half the body, then close
//   x-stub-error-after: K   streams: after K events send the provider's in-stream error and end
//   x-stub-output-tokens: N answer length in tokens (0..100000)
//   x-stub-cached-tokens: N report N of the input tokens as read from the prompt cache
//   x-stub-text: T          answer with the text T (streams: pieces of at most 8 bytes, one per event)
//   x-stub-drop: 1          read the request, then close the connection without answering (a provider
//                           that failed after the request reached it: a client must not resend it)
//
// Thread-safety: Answer is a pure function of its arguments.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace govern::model_stub {

struct StubConfig {
  std::vector<std::string> models = {"stub-gpt", "stub-claude"};  // GET /v1/models
  int64_t default_output_tokens = 16;
  int64_t default_dimensions = 16;
  // AWS Bedrock (bedrock_stub.h): with a secret set, /model/... requests must be SigV4-signed by this
  // key pair (and session token, and region, when set); otherwise any request is accepted.
  std::string aws_access_key_id, aws_secret_access_key, aws_session_token, aws_region;
};

struct Faults {
  int status = 0;
  int64_t fail_call = 0;  // x-stub-fail-call: the request ordinal `status` applies to; 0: every one
  int64_t delay_ms = 0;
  int64_t cut_after = -1;
  int64_t error_after = -1;
  std::optional<int64_t> output_tokens;
  int64_t cached_tokens = 0;
  bool drop = false;
  std::string text;  // x-stub-text
};

// The most output tokens any provider's stub answers with (x-stub-output-tokens above it is ignored).
inline constexpr int64_t kMaxOutputTokens = 100000;

// Reads the x-stub-* headers through `header` (name in lower case -> value or ""). Bad numbers are
// ignored.
Faults FaultsFrom(const std::function<std::string_view(std::string_view)>& header);

// `s` in pieces of at most 8 bytes, never split inside a UTF-8 sequence: how every provider's stream
// sends text and tool-call arguments (one piece an event).
std::vector<std::string> Pieces(std::string_view s);

// One answer. For a stream, `events` are the complete SSE frames in order (each "event: ..\ndata: ..\n\n");
// `token_event[i]` says whether frame i carries model output (the server paces those at the configured
// token rate). `truncate_at` >= 0: the server sends that many frames (or, for a plain answer, that many
// body bytes) and then closes the connection.
struct Reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  bool stream = false;
  std::vector<std::string> events;
  std::vector<bool> token_event;
  int64_t truncate_at = -1;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers of a whole answer
};

// The answer to `method` `path` (without query) with `body`. Paths: GET /v1/models, POST
// /v1/chat/completions, /v1/responses, /v1/embeddings, /v1/messages (Anthropic), GET /healthz. Errors
// use the format of the path's API (Anthropic's for /v1/messages, OpenAI's otherwise).
Reply Answer(std::string_view method, std::string_view path, std::string_view body, const Faults& faults,
             const StubConfig& config, int64_t now_unix);

// Azure OpenAI: a target (path and query) under /openai/. POST /openai/deployments/{d}/chat/completions
// and /openai/deployments/{d}/embeddings (both with ?api-version=), /openai/v1/responses (the v1 API)
// and /openai/responses?api-version= are answered as the OpenAI paths above; a request without an
// api-key (or Authorization) header is a 401, an Azure path it does not serve (or a dated one without
// api-version) a 404, in OpenAI's error shape.
bool IsAzurePath(std::string_view path);
Reply AzureAnswer(std::string_view method, std::string_view target,
                  const std::function<std::string_view(std::string_view)>& header, std::string_view body,
                  const Faults& faults, const StubConfig& config, int64_t now_unix);

// The words of `text` (the stub's token count).
int64_t CountWords(std::string_view text);
// The stub's text of `n` tokens.
std::string StubText(int64_t n);
// StubText(n) in pieces, one word (with the space before it) each: a stream's deltas.
std::vector<std::string> StubWords(int64_t n);
// The stub's value for a JSON schema's `type` (JSON Schema's lower-case names or Gemini's upper-case
// ones): "stub", 1, true, [], {}; null for another type. A tool call's arguments.
nlohmann::json StubValueFor(const nlohmann::json& schema);
// The stub's embedding of `text`: `dims` floats from a hash of it, unit length (every API's embeddings).
std::vector<float> StubVector(std::string_view text, int64_t dims);

}  // namespace govern::model_stub
