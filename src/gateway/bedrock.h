// AWS Bedrock Runtime's Converse API (POST /model/{modelId}/converse) and ConverseStream
// (/converse-stream, answered in AWS event-stream frames, eventstream.h) behind the OpenAI Chat
// Completions format, as gemini.h does for Gemini: the gateway sends an OpenAI request (an Anthropic
// client's is translated to it first) as a Converse body, and turns the answer and the stream back into
// OpenAI ones, so the rest of the gateway meters, screens and relays them as it does OpenAI's. Signing
// (SigV4) and URLs are the service's (services/gateway/bedrock_provider.h); this file has no I/O.
//
// Mapping:
// - system/developer messages -> `system` text blocks; user -> role user (text blocks); assistant ->
//   role assistant (text and toolUse blocks, toolUseId = the call's id, input = its arguments parsed);
//   tool messages -> a toolResult block ({toolUseId, content: [{text}]}) in a user message. Consecutive
//   messages of one role are merged (Converse wants roles to alternate); empty text blocks are left out
//   (Converse refuses them). Image and audio parts are an InvalidArgument (not supported yet).
// - tools -> toolConfig.tools[].toolSpec {name, description, inputSchema.json}; tool_choice auto ->
//   {auto}, required -> {any}, a function -> {tool: {name}}; none -> no toolChoice (Converse has no
//   "none"), and no toolConfig at all unless earlier messages use tools (Converse then requires it).
// - max_completion_tokens (else max_tokens) -> inferenceConfig.maxTokens, temperature, top_p -> topP,
//   stop -> stopSequences. Other OpenAI fields are dropped.
// - Answers: output.message.content text blocks joined, toolUse blocks -> tool_calls (arguments = the
//   input as JSON text), reasoningContent left out; stopReason end_turn / stop_sequence -> stop,
//   tool_use -> tool_calls, max_tokens -> length, guardrail_intervened / content_filtered ->
//   content_filter.
// - Usage: prompt_tokens = inputTokens + cacheReadInputTokens + cacheWriteInputTokens (Converse counts
//   cache reads and writes apart from inputTokens, as Anthropic does), cached_tokens =
//   cacheReadInputTokens, completion_tokens = outputTokens.
//
// Parsers never throw and name the bad field. StreamToChat is not thread-safe; the functions are.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "gateway/chat_stream.h"
#include "gateway/eventstream.h"
#include "gateway/openai.h"

namespace govern::gateway::bedrock {

// The Converse body for `req` (the model id goes in the URL, not the body).
Result<openai::Json> FromChatRequest(const openai::ChatRequest& req);

// A Converse answer as an OpenAI chat completion.
Result<openai::ChatResponse> ToChatResponse(std::string_view body, std::string_view model, int64_t created);

// The message of a Bedrock error body ({"message": ...} or {"Message": ...}), or the body itself (at
// most 512 bytes).
std::string ErrorMessage(std::string_view body);

// The OpenAI finish reason for a Converse stopReason.
std::string FinishReason(std::string_view stop_reason, bool calls_tools);

// ---- Embeddings (POST /v1/embeddings on a Bedrock deployment): InvokeModel (POST
// /model/{modelId}/invoke) with the model's own body; Converse has no embeddings. ----
//
// - Amazon Titan Text Embeddings (amazon.titan-embed-text-v2*, -v1 / amazon.titan-embed-g1-text*): one
//   input per call, {"inputText": ...} (v2 also "dimensions": 256, 512 or 1024) -> {"embedding": [...],
//   "inputTextTokenCount": N}; an array input is one call per element, in order.
// - Cohere Embed (cohere.embed-*): one call per kCohereMaxTexts (96) texts, in order, {"texts": [...],
//   "input_type": `cohere_input_type`, default "search_document"} (embed-v4 also "output_dimension": 256,
//   512, 1024 or 1536) ->
//   {"embeddings": [[...]]} or, by type, {"embeddings": {"float": [[...]]}}. Its body has no token count:
//   Bedrock's X-Amzn-Bedrock-Input-Token-Count answer header gives it (read by the proxy).
// The model is named by its id (an ARN's last path segment, a region prefix such as "us." allowed).
// `dimensions` a model does not take, token-array input and an unknown model are InvalidArgument.
enum class EmbeddingModel { kTitanV2, kTitanV1, kCohere, kCohereV4 };
inline constexpr size_t kCohereMaxTexts = 96;  // Cohere Embed's limit of texts a call
Result<EmbeddingModel> EmbeddingModelOf(std::string_view model_id);

// The InvokeModel bodies for `req`, in order (Titan: one per input; Cohere: one per 96 inputs, with
// `cohere_input_type`, which the deployment config checked: search_document, search_query,
// classification or clustering).
Result<std::vector<std::string>> FromEmbeddingsRequest(
    const openai::EmbeddingsRequest& req, EmbeddingModel model,
    std::string_view cohere_input_type = "search_document");

// One InvokeModel answer: its vectors appended to out.data (Titan: one; Cohere: one per text sent, checked
// against `sent`). Returns the answer's token count, or -1 when the body has none (Cohere).
Result<int64_t> AppendEmbeddings(std::string_view body, EmbeddingModel model, size_t sent,
                                 openai::EmbeddingsResponse& out);

// A ConverseStream answer, fed in any chunking, as OpenAI chat chunk SSE bytes: messageStart -> a chunk
// with the assistant role; contentBlockStart (toolUse) and contentBlockDelta (text, toolUse input) ->
// content and tool-call deltas; messageStop -> a chunk with the finish reason; metadata -> the usage
// chunk and [DONE] (the end). An exception or error message (`:message-type` exception / error) is
// passed on as an OpenAI error event and ends the stream. A stream cut before messageStop gets neither
// a finish reason nor [DONE] (the gateway sees it end without its end marker); one that ends after
// messageStop without metadata gets [DONE] at Finish, with no usage chunk.
class StreamToChat : public StreamToChatBase {
 public:
  StreamToChat(std::string model, int64_t created);
  // Errors: a malformed frame (eventstream.h) or event payload; the stream cannot be trusted further.
  Status Feed(std::string_view bytes, std::string& out) override;
  void Finish(std::string& out) override;
  bool finished() const { return finished_; }
  const openai::Usage& usage() const { return usage_; }

 private:
  Status Event(const eventstream::Message& m, std::string& out);
  void Emit(openai::ChunkChoice choice, std::string& out);
  void End(std::string& out);

  std::string model_;
  int64_t created_;
  eventstream::Decoder decoder_;
  std::vector<eventstream::Message> messages_;
  bool role_sent_ = false;
  bool stop_seen_ = false;
  bool usage_seen_ = false;
  bool finished_ = false;
  int64_t tool_calls_ = 0;
  std::map<int64_t, int64_t> tool_index_;  // contentBlockIndex -> OpenAI tool call index
  openai::Usage usage_;
};

}  // namespace govern::gateway::bedrock
