// DLP screening of the gateway's traffic: prompts before they reach a provider, answers before they reach
// the client, streams chunk by chunk. Built on the shared engine (dlp::RuleSet, src/dlp); one
// organisation's screening is a DlpProfile (mode off, mask or block, and a compiled rule set).
//
// Promises:
//  - mask replaces every finding with "[REDACTED:<rule>]"; block refuses the text on any finding. A
//    finding whose policy action is drop blocks in mask mode too. Reports name the rules, never the text.
//  - StreamScreener gives the same findings for a text however it is cut into pieces: it releases text
//    only once no match can still reach into it. It keeps back the last `hold` bytes (and, while a
//    finding is still growing at the end of the text, everything from the finding's start, up to
//    `max_held`; beyond that the stream is blocked, failing closed). A match whose first byte is more
//    than `hold` bytes before the point where the engine can first see it (an e-mail address with a
//    local part longer than about `hold`) is still found, but the bytes of it released before are not
//    masked: keep `hold` above the longest such prefix of the organisation's own rules.
//  - Text is cut only at UTF-8 character boundaries, so each released piece is valid where the input is.
//  - DlpStreamFilter applies one StreamScreener per choice and per tool call (OpenAI chat chunks,
//    `delta.content` and `delta.tool_calls[].function.arguments`) or per content block (Anthropic
//    `content_block_delta` text_delta and input_json_delta) to a provider's SSE events, rewriting the
//    deltas in place and flushing held text before the choice's finish chunk or the block's stop.
//
// Thread-safety: DlpProfile and DlpConfig are immutable once built and shared by every thread (swap a
// shared_ptr to reload). StreamScreener and DlpStreamFilter belong to one stream: not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "dlp/rule_set.h"
#include "gateway/sse.h"

namespace govern::gateway {

enum class DlpMode { kOff, kMask, kBlock };
std::string_view DlpModeName(DlpMode m);  // "off", "mask", "block"

struct DlpStreamOptions {
  size_t hold = 128;            // bytes kept back at the end of the text (the longest match prefix)
  size_t step = 64;             // scan once this many bytes beyond `hold` are waiting (fewer scans)
  size_t context = 64;          // released bytes kept as left context for the next scan
  size_t max_held = 64 * 1024;  // a finding still growing past this many held bytes blocks the stream
};

struct DlpProfile {
  DlpMode mode = DlpMode::kOff;
  std::shared_ptr<const dlp::RuleSet> rules;  // null when mode is off
  DlpStreamOptions stream;
};

// What screening did to one exchange (prompt, answer or stream, accumulated).
struct DlpReport {
  bool masked = false;
  bool blocked = false;
  std::vector<std::string> rules;  // detector ids that matched, in first-seen order, each once

  void AddRule(std::string_view id);
  void Merge(const DlpReport& other);
  // "none", "masked" or "blocked".
  std::string_view action() const { return blocked ? "blocked" : masked ? "masked" : "none"; }
  // "email, card_number": for error messages.
  std::string RuleList() const;
};

// Screens one whole text. Returns true when *out holds a masked copy (mask mode, some finding);
// false when the text stays as is, or when blocked (report->blocked).
bool ScreenText(const DlpProfile& profile, std::string_view text, std::string* out, DlpReport* report);

// Screens the text of a request or answer body in place (parsed JSON). Returns true when something was
// masked. Stops at the first block (report->blocked).
//  - OpenAI chat request: messages[].content (string, or parts' "text"), tool_calls[].function.arguments,
//    function_call.arguments. OpenAI chat answer: choices[].message with the same fields.
//  - Anthropic request: system (string or text blocks), messages[].content (string, text blocks,
//    tool_use input's strings, tool_result content). Anthropic answer: content blocks likewise.
bool ScreenOpenAIChat(const DlpProfile& profile, nlohmann::json& body, DlpReport* report);
bool ScreenAnthropicMessages(const DlpProfile& profile, nlohmann::json& body, DlpReport* report);

// Screens a text that arrives in pieces. The profile must outlive the screener (hold its shared_ptr).
class StreamScreener {
 public:
  explicit StreamScreener(const DlpProfile& profile);

  // Takes the next piece; appends to *out the text now known to be safe (masked in mask mode). Returns
  // false once blocked (nothing more is released, ever).
  bool Push(std::string_view text, std::string* out);
  // The end of the text: screens and releases what is held. False when blocked.
  bool Finish(std::string* out);

  bool blocked() const { return report_.blocked; }
  const DlpReport& report() const { return report_; }
  size_t held() const { return buf_.size() - ctx_; }  // bytes taken but not yet released

 private:
  bool Release(bool final, std::string* out);

  const DlpProfile* profile_;
  std::string buf_;  // [0, ctx_): released text kept as context; [ctx_, end): held text
  size_t ctx_ = 0;
  std::vector<dlp::Finding> findings_;
  DlpReport report_;
};

// Screens a provider's stream of SSE events (in the provider's format). The profile must outlive it.
class DlpStreamFilter {
 public:
  DlpStreamFilter(const DlpProfile& profile, bool anthropic) : profile_(&profile), anthropic_(anthropic) {}

  // Takes one provider event; appends the events to relay in its place to *out (the same event, its
  // text rewritten; held text flushed before a finish or stop). Returns false when blocked: the caller
  // ends the stream with its error event (DlpBlockMessage) and cancels the provider.
  bool Feed(const SseEvent& ev, std::vector<SseEvent>* out);
  // The provider's stream ended (cut or complete): releases whatever is still held, as events.
  bool Finish(std::vector<SseEvent>* out);

  bool blocked() const { return report_.blocked; }
  // Every screener's report, merged.
  const DlpReport& report();

 private:
  StreamScreener& For(int64_t index);
  bool Flush(int64_t index, std::string* tail);
  SseEvent OpenAIChunk(int64_t index, std::string text) const;

  const DlpProfile* profile_;
  bool anthropic_;
  std::map<int64_t, StreamScreener> screeners_;  // OpenAI: choice index, or negative for a tool call
  std::map<int64_t, bool> json_blocks_;          // Anthropic: the block streams input_json_delta
  DlpReport report_;
  nlohmann::json last_chunk_;  // OpenAI: the last chunk's id, model, created (for a flushed tail)
  std::string released_;
};

// The message of a block ("... blocked by data loss prevention (rules: email)"), naming the rules only.
std::string DlpBlockMessage(std::string_view what, const DlpReport& report);

// Per-organisation screening, from the routes file's "dlp" object:
//   {"default": {profile}, "orgs": {"<org>": {profile}, ...}}
// profile: {"mode": "off"|"mask"|"block", "disabled": [detector ids or categories],
//           "custom_rules": [{"id","category","pattern","caseless","utf8","priority"}],
//           "hold_bytes": N, "max_held_bytes": N}
// Each profile is compiled once here. An org not listed gets "default" (off when absent).
struct DlpConfig {
  std::shared_ptr<const DlpProfile> default_profile;
  std::unordered_map<std::string, std::shared_ptr<const DlpProfile>> orgs;
  // Never null.
  const DlpProfile& For(std::string_view org) const;
};
Result<std::shared_ptr<const DlpConfig>> ParseDlpConfig(const nlohmann::json& dlp);
// The whole routes file: its "dlp" object, or a config with everything off.
Result<std::shared_ptr<const DlpConfig>> DlpConfigFromRoutesFile(std::string_view json);

}  // namespace govern::gateway
