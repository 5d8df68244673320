// Translation between the OpenAI Chat Completions and the Anthropic Messages formats, both ways, for
// whole bodies and for streams chunk by chunk.
//
// Requests: ChatToMessagesRequest (an OpenAI client in front of an Anthropic provider) and
// MessagesToChatRequest (an Anthropic client in front of an OpenAI-compatible provider). Responses go
// the other way. What cannot be expressed in the target format (n > 1, audio parts, documents) is an
// InvalidArgument naming it, not a silent loss; sampling fields without a counterpart (seed, top_k,
// response_format) are dropped.
//
// Mapping of the parts that matter for metering and tools:
// - OpenAI system/developer messages become Anthropic `system` (hoisted, joined with blank lines); tool
//   messages become user tool_result blocks; consecutive messages of one role are merged.
// - Stop reasons: end_turn/stop_sequence/pause_turn <-> stop, max_tokens <-> length, tool_use <->
//   tool_calls, refusal <-> content_filter.
// - Usage: OpenAI prompt_tokens = Anthropic input + cache_read + cache_creation, cached_tokens =
//   cache_read; completion_tokens = output_tokens. Back: input = prompt - cached.
//
// The stream translators are stateful, one per stream, not thread-safe. They keep the usage seen so
// far, so a gateway can meter a stream the client left early.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "gateway/anthropic.h"
#include "gateway/openai.h"

namespace govern::gateway {

struct ChatToMessagesOptions {
  int64_t default_max_tokens = 4096;  // Anthropic requires max_tokens; used when the client sent none
};

Result<anthropic::MessagesRequest> ChatToMessagesRequest(const openai::ChatRequest& req,
                                                         const ChatToMessagesOptions& options = {});
// The stream flag carries over; a streaming request asks for stream_options.include_usage so that
// usage arrives at all.
Result<openai::ChatRequest> MessagesToChatRequest(const anthropic::MessagesRequest& req);

openai::ChatResponse MessagesToChatResponse(const anthropic::MessagesResponse& resp, int64_t created);
// Only the first choice is translated (the request never asks for more).
anthropic::MessagesResponse ChatToMessagesResponse(const openai::ChatResponse& resp);

std::string FinishReasonFor(std::string_view anthropic_stop_reason);
std::string StopReasonFor(std::string_view openai_finish_reason);
openai::Usage ChatUsageFrom(const anthropic::Usage& u);
anthropic::Usage MessagesUsageFrom(const openai::Usage& u);

// An Anthropic event stream in, OpenAI chat.completion.chunk objects out (each to be written as one
// `data:` event; the caller writes `data: [DONE]` once done() is true). An Anthropic error event comes
// out as {"error":{...}}, which the OpenAI SDKs raise as an error.
class MessagesToChatStream {
 public:
  MessagesToChatStream(bool include_usage, int64_t created)
      : include_usage_(include_usage), created_(created) {}

  void Feed(const anthropic::StreamEvent& event, std::vector<openai::Json>& out);
  bool done() const { return done_; }
  bool failed() const { return failed_; }
  // Usage so far (input from message_start, output from the latest message_delta).
  openai::Usage usage() const { return ChatUsageFrom(usage_); }

 private:
  openai::Json Chunk(openai::Json delta, const std::optional<std::string>& finish) const;

  bool include_usage_;
  int64_t created_;
  std::string id_;
  std::string model_;
  anthropic::Usage usage_;
  std::map<int64_t, int64_t> tool_index_;  // Anthropic block index -> OpenAI tool_calls index
  int64_t next_tool_ = 0;
  bool done_ = false;
  bool failed_ = false;
};

// OpenAI chunks in, Anthropic events out. OpenAI sends usage in a last chunk after finish_reason, so
// message_delta (stop reason and usage) and message_stop come from Finish(), called at `[DONE]` or at
// the end of the upstream stream.
class ChatToMessagesStream {
 public:
  void Feed(const openai::ChatChunk& chunk, std::vector<anthropic::StreamEvent>& out);
  void Finish(std::vector<anthropic::StreamEvent>& out);
  bool finished() const { return finished_; }
  anthropic::Usage usage() const { return usage_; }

 private:
  enum class Open { kNone, kText, kTool };
  void Start(const openai::ChatChunk& chunk, std::vector<anthropic::StreamEvent>& out);
  void CloseBlock(std::vector<anthropic::StreamEvent>& out);

  bool started_ = false;
  bool finished_ = false;
  std::string id_;
  std::string model_;
  Open open_ = Open::kNone;
  int64_t block_ = -1;  // index of the open (or last) block
  int64_t tool_ = -1;   // OpenAI index of the open tool call
  std::string finish_reason_;
  anthropic::Usage usage_;
};

}  // namespace govern::gateway
