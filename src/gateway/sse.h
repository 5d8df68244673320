// Server-sent events (the WHATWG "text/event-stream" format) as the OpenAI and Anthropic APIs stream:
// an incremental parser that takes bytes in any chunking and yields whole events, and the writer.
//
// The parser follows the HTML standard's rules: lines end in CRLF, LF or a lone CR (also when the CR
// and LF arrive in different chunks); a line starting with ':' is a comment; "data:" lines of one
// event join with '\n'; one space after the colon is dropped; a blank line dispatches the event (none
// when it had no data); a leading UTF-8 BOM is skipped. The same events come out whatever the chunk
// boundaries. Not thread-safe: one parser per stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::gateway {

struct SseEvent {
  std::string event;              // the "event:" field; "" when the event had none (the standard's "message")
  std::string data;               // "data:" lines joined with '\n'
  std::string id;                 // the last event id seen so far in the stream ("" if none)
  std::optional<uint64_t> retry;  // "retry:" in this event, when all digits

  // True for OpenAI's end marker `data: [DONE]`.
  bool IsDone() const { return data == "[DONE]"; }
  friend bool operator==(const SseEvent&, const SseEvent&) = default;
};

class SseParser {
 public:
  // An event (or a single line) longer than max_event_bytes is an error: the stream is not trusted.
  explicit SseParser(size_t max_event_bytes = 16 * 1024 * 1024) : max_event_bytes_(max_event_bytes) {}

  // Parses the next bytes of the stream and appends every event they complete to `out`. After an
  // error every later call fails the same way.
  Status Feed(std::string_view bytes, std::vector<SseEvent>& out);

  // True when bytes were taken that have not yet completed an event: at the end of the input this
  // means the stream was cut mid-event (those bytes are dropped, as the standard says).
  bool HasPartial() const { return !line_.empty() || pending_fields_; }
  // Comment lines seen so far (": ping" keep-alives and the like).
  uint64_t comments() const { return comments_; }

 private:
  Status Line(std::string_view line, std::vector<SseEvent>& out);

  size_t max_event_bytes_;
  std::string line_;  // an unfinished line carried to the next Feed
  SseEvent current_;  // fields of the event being read
  bool has_data_ = false;
  bool pending_fields_ = false;  // some field line was read since the last dispatch
  bool last_was_cr_ = false;     // the previous chunk ended in CR: a leading LF belongs to it
  bool at_start_ = true;         // for the BOM
  std::string last_id_;
  uint64_t comments_ = 0;
  Status error_;
};

// One event in wire form: "event: <event>\n" (when not empty), one "data: " line per line of `data`,
// then a blank line.
std::string FormatSseEvent(std::string_view event, std::string_view data);
// Appends the same to `out`.
void AppendSseEvent(std::string& out, std::string_view event, std::string_view data);
// The OpenAI end marker: "data: [DONE]\n\n".
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace govern::gateway
