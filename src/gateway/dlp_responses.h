// DLP screening of the OpenAI Responses and embeddings APIs (dlp_screen.h does chat and messages), with
// the same profiles, modes and promises: mask replaces each finding with "[REDACTED:<rule>]", block
// refuses the text, reports name rules only.
//
//  - Responses requests: `instructions`, `input` (a string, or items: a message's content string or
//    its parts' `text`, a function_call's `arguments`, a function_call_output's `output`).
//  - Responses answers (a response object): `output[]` messages' content parts' `text` (output_text) and
//    `refusal`, function calls' `arguments`.
//  - Embeddings requests: `input` as a string or an array of strings (token arrays carry no text the
//    rules can read and pass as they are).
//  - ResponsesDlpFilter screens a Responses stream as it comes, one StreamScreener per content part
//    (`response.output_text.delta`, `response.refusal.delta`) and per function call
//    (`response.function_call_arguments.delta`), rewriting the deltas. Before a part's `.done` event
//    the held tail is released as one more delta event, and the `.done`, `content_part.done`,
//    `output_item.done` and terminal (`response.completed` ...) events carry the text as screened, so
//    they agree with the deltas the client saw. Inserting that delta shifts the events' sequence_number:
//    every later event is renumbered, so the numbers the client sees still count up by one. Logprobs of
//    screened text are emptied (they carry the provider's tokens, which no longer match the text).
//
// Thread-safety: the functions are pure; a ResponsesDlpFilter belongs to one stream.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "gateway/dlp_screen.h"
#include "gateway/sse.h"

namespace govern::gateway {

// Each returns true when something was masked; stops at the first block (report->blocked).
bool ScreenResponsesRequest(const DlpProfile& profile, nlohmann::json& body, DlpReport* report);
bool ScreenResponsesAnswer(const DlpProfile& profile, nlohmann::json& response, DlpReport* report);
bool ScreenEmbeddingsRequest(const DlpProfile& profile, nlohmann::json& body, DlpReport* report);

// The in-stream event that ends a Responses stream blocked by DLP: `event: error` with code
// dlp_blocked (a complete SSE frame).
std::string ResponsesDlpBlockEvent(std::string_view message, int64_t sequence_number);

class ResponsesDlpFilter {
 public:
  // The profile must outlive the filter.
  explicit ResponsesDlpFilter(const DlpProfile& profile) : profile_(&profile) {}

  // Takes one provider event; appends what to relay in its place. False once blocked: the caller ends
  // the stream (ResponsesDlpBlockEvent) and cancels the provider.
  bool Feed(const SseEvent& ev, std::vector<SseEvent>* out);
  // The provider's stream ended (complete or cut): releases what is still held as delta events.
  bool Finish(std::vector<SseEvent>* out);

  bool blocked() const { return report_.blocked; }
  const DlpReport& report();

 private:
  struct Part {
    std::unique_ptr<StreamScreener> screener;
    std::string released;  // the part's text as the client saw it
    nlohmann::json ids;    // item_id, output_index, content_index of its deltas
    std::string delta_type;
    bool done = false;
  };
  using Key = std::pair<int64_t, int64_t>;  // output_index, content_index (-1: function arguments)
  Part& PartFor(const Key& key, const nlohmann::json& ev, std::string_view delta_type);
  bool Flush(const Key& key, std::vector<SseEvent>* out);
  void Emit(nlohmann::json ev, std::vector<SseEvent>* out);
  // The screened text of a part seen as deltas, else the text screened whole. False when blocked.
  bool Replace(const Key& key, nlohmann::json& text);
  bool ReplaceItem(int64_t output_index, nlohmann::json& item);

  const DlpProfile* profile_;
  std::map<Key, Part> parts_;
  DlpReport report_;
  int64_t added_ = 0;      // delta events inserted so far: later sequence numbers move by this much
  int64_t last_seq_ = -1;  // the last sequence number relayed
};

}  // namespace govern::gateway
