// The OpenAI Responses API in front of an Anthropic Messages provider: the request, the whole answer and
// the stream, event by event.
//
// Requests go through Chat Completions (ResponsesToChatRequest, then ChatToMessagesRequest of
// translate.h), so the two OpenAI APIs map to Anthropic alike: instructions and system/developer
// messages become `system`; input messages keep their role (input_text/output_text parts become text,
// input_image with an image_url becomes an image); function_call items become the assistant's
// tool_use blocks and function_call_output items the user's tool_result blocks; function tools,
// tool_choice, max_output_tokens (default 4096, Anthropic requires one), temperature and top_p carry
// over. What has no counterpart is InvalidArgument naming it, never a silent loss: previous_response_id
// (the gateway keeps no conversation state), non-function tools (web search, file search, ...), item
// types other than messages and function calls (reasoning items are dropped: they are the provider's
// own), input files.
//
// Answers: text blocks become one assistant message item (one output_text part per block), tool_use
// blocks function_call items (call_id = the tool_use id); stop_reason max_tokens gives status
// "incomplete" (incomplete_details.reason max_output_tokens); usage input_tokens = Anthropic input +
// cache reads + cache writes, cached_tokens = cache reads (as for chat, translate.h).
//
// The stream translator is stateful, one per stream, not thread-safe; it keeps the usage so far so that
// a stream cut short is still metered.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "gateway/anthropic.h"
#include "gateway/openai.h"
#include "gateway/translate.h"

namespace govern::gateway {

Result<openai::ChatRequest> ResponsesToChatRequest(const openai::ResponsesRequest& req);
Result<anthropic::MessagesRequest> ResponsesToMessagesRequest(const openai::ResponsesRequest& req,
                                                              const ChatToMessagesOptions& options = {});

openai::ResponsesResponse MessagesToResponsesResponse(const anthropic::MessagesResponse& resp,
                                                      int64_t created_at);

// Anthropic events in, Responses events out: each a JSON object with "type" and "sequence_number", to
// be written as one SSE event named by its type. message_start gives response.created and
// response.in_progress; a text block output_item.added, content_part.added, output_text.delta per
// text_delta, then output_text.done, content_part.done, output_item.done; a tool_use block
// output_item.added (function_call), function_call_arguments.delta per input_json_delta, then
// function_call_arguments.done and output_item.done; message_stop response.completed (or
// response.incomplete) with the whole response and its usage; an Anthropic error event an `error` event
// (type, code, message, and an `error` object that the OpenAI SDKs raise). Thinking and unknown blocks
// are skipped.
class MessagesToResponsesStream {
 public:
  explicit MessagesToResponsesStream(int64_t created_at) : created_at_(created_at) {}

  void Feed(const anthropic::StreamEvent& event, std::vector<openai::Json>& out);
  bool done() const { return done_; }
  bool failed() const { return failed_; }
  // The sequence_number of the last event given out (-1 before the first).
  int64_t last_sequence() const { return seq_ - 1; }
  // Usage so far in the Chat Completions shape (input from message_start, output from message_delta).
  openai::Usage usage() const { return ChatUsageFrom(usage_); }

 private:
  enum class Open { kNone, kText, kTool, kSkipped };
  void Emit(std::string type, openai::Json body, std::vector<openai::Json>& out);
  openai::ResponsesResponse Snapshot(std::string status) const;
  void CloseBlock(std::vector<openai::Json>& out);

  int64_t created_at_;
  int64_t seq_ = 0;
  bool started_ = false;
  bool done_ = false;
  bool failed_ = false;
  std::string id_;
  std::string model_;
  anthropic::Usage usage_;
  std::optional<std::string> stop_reason_;
  std::vector<openai::ResponseItem> output_;  // items closed so far
  Open open_ = Open::kNone;
  openai::ResponseItem item_;  // the open item
  std::string text_;           // its text or arguments so far
};

// ---- The Responses API in front of an OpenAI-chat-speaking translation (Gemini, Bedrock) ----
//
// Gemini and Bedrock answers reach the proxy as Chat Completions (gemini.h, bedrock.h). A Responses
// client in front of them gets the request through ResponsesToChatRequest, and the answer and stream
// through the two translators above chained, Chat -> Messages (translate.h) -> Responses, so every
// provider's Responses output is made by the one Responses translator. Usage survives the chain
// (prompt, cached and completion tokens; reasoning_tokens does not, Anthropic has no such field).

openai::ResponsesResponse ChatToResponsesResponse(const openai::ChatResponse& resp, int64_t created_at);

// OpenAI chat chunks in, Responses events out (as MessagesToResponsesStream gives them). Finish() at the
// chat stream's `[DONE]` gives the closing events (response.completed with usage). A chunk holding an
// `error` object (parsed with it in `extra`) gives the Responses `error` event and ends the stream.
class ChatToResponsesStream {
 public:
  explicit ChatToResponsesStream(int64_t created_at) : responses_(created_at) {}

  void Feed(const openai::ChatChunk& chunk, std::vector<openai::Json>& out);
  void Finish(std::vector<openai::Json>& out);
  bool done() const { return responses_.done(); }
  bool failed() const { return responses_.failed(); }
  int64_t last_sequence() const { return responses_.last_sequence(); }
  openai::Usage usage() const { return responses_.usage(); }

 private:
  void Pass(std::vector<openai::Json>& out);

  ChatToMessagesStream chat_;
  MessagesToResponsesStream responses_;
  std::vector<anthropic::StreamEvent> events_;
};

}  // namespace govern::gateway
