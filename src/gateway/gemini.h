// Google Gemini (generateContent, streamGenerateContent?alt=sse) behind the OpenAI Chat Completions
// format: the gateway sends an OpenAI request (an Anthropic client's is translated to it first) as a
// Gemini request, and turns Gemini's answers and streams back into OpenAI ones, so the rest of the
// gateway meters and relays them as it does OpenAI's.
//
// Mapping:
// - system/developer messages -> systemInstruction; user -> role "user"; assistant -> role "model" (text
//   and functionCall parts); tool messages -> a user functionResponse part named after the call they
//   answer ({"content": the result, parsed as JSON when it is JSON}). Consecutive messages of one role
//   are merged. Image and audio parts are an InvalidArgument (not supported yet), not a silent loss.
// - tools -> functionDeclarations; tool_choice none/auto/required/function -> functionCallingConfig
//   NONE/AUTO/ANY/ANY with allowedFunctionNames; max_completion_tokens (else max_tokens) ->
//   maxOutputTokens, temperature, top_p -> topP, stop -> stopSequences. Other sampling fields are dropped.
// - Answers: text parts joined; functionCall parts -> tool_calls (ids call_<n>, arguments as JSON text);
//   finishReason STOP -> stop (tool_calls when the answer calls tools), MAX_TOKENS -> length, SAFETY,
//   RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII -> content_filter; no candidate (a blocked prompt) ->
//   an empty answer with content_filter.
// - Usage: prompt_tokens = promptTokenCount, cached_tokens = cachedContentTokenCount, completion_tokens =
//   candidatesTokenCount + thoughtsTokenCount (thinking is billed as output), reasoning_tokens =
//   thoughtsTokenCount.
//
// Parsers never throw and name the bad field. Not thread-safe per stream object; the functions are.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "gateway/chat_stream.h"
#include "gateway/openai.h"
#include "gateway/sse.h"

namespace govern::gateway::gemini {

// The generateContent body for `req` (the model goes in the URL, not the body).
Result<openai::Json> FromChatRequest(const openai::ChatRequest& req);

// A generateContent answer as an OpenAI chat completion.
Result<openai::ChatResponse> ToChatResponse(std::string_view body, std::string_view model, int64_t created);

// ---- Embeddings (POST /v1/embeddings on a Gemini deployment) ----
// Always models/{model}:batchEmbedContents, one request per input (one input is a batch of one):
// {"requests":[{"model":"models/<model>","content":{"parts":[{"text":...}]},"outputDimensionality":N}]}
// (outputDimensionality from `dimensions`). Token-array input is an InvalidArgument (Gemini takes text).
// The answer {"embeddings":[{"values":[...]}]} (an embedContent answer {"embedding":{...}} is read too)
// becomes OpenAI's list, one vector per input in order; usage from usageMetadata.promptTokenCount when
// the answer has it (Vertex AI sends it; the Gemini API's batchEmbedContents answer does not, and then
// prompt_tokens is `estimate`, tokens_estimated set).
Result<openai::Json> FromEmbeddingsRequest(const openai::EmbeddingsRequest& req, std::string_view model);
// `inputs`: how many vectors the answer must hold.
Result<openai::EmbeddingsResponse> ToEmbeddingsResponse(std::string_view body, std::string_view model,
                                                        size_t inputs, int64_t estimate = 0);
// The estimate for an answer without a count: ceil(UTF-8 bytes / 4) per input text (about a token per
// four bytes of English; a request of empty texts is 0).
int64_t EstimateEmbeddingTokens(const openai::EmbeddingsRequest& req);

// A streamGenerateContent?alt=sse stream, fed in any chunking, as OpenAI chat chunk SSE bytes: the
// first chunk carries the assistant role, then content and tool-call deltas, a chunk with the finish
// reason, and at Finish the usage chunk and [DONE] (only when the stream ended with a finish reason:
// a stream cut before it gets neither, so the gateway sees it end without its end marker). An in-stream
// {"error":...} is passed on as an OpenAI error event.
class StreamToChat : public StreamToChatBase {
 public:
  StreamToChat(std::string model, int64_t created);
  // Errors: a malformed SSE stream or event (the stream cannot be trusted any further).
  Status Feed(std::string_view bytes, std::string& out) override;
  void Finish(std::string& out) override;
  bool finished() const { return finished_; }
  const openai::Usage& usage() const { return usage_; }

 private:
  Status Event(std::string_view data, std::string& out);
  void Emit(const openai::ChatChunk& c, std::string& out);

  std::string model_;
  int64_t created_;
  SseParser parser_;
  std::vector<SseEvent> events_;
  bool role_sent_ = false;
  bool finish_seen_ = false;
  bool finished_ = false;
  int64_t tool_calls_ = 0;
  openai::Usage usage_;
};

}  // namespace govern::gateway::gemini
