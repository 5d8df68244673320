// What a provider's streamed answer is turned into, whatever the provider: OpenAI chat chunk SSE bytes,
// fed in any chunking (gemini::StreamToChat, bedrock::StreamToChat). The gateway's proxy drives one per
// streamed answer through this interface.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace govern::gateway {

class StreamToChatBase {
 public:
  virtual ~StreamToChatBase() = default;
  // Appends to `out` the OpenAI events that `bytes` complete. Errors: the stream cannot be trusted
  // further (malformed framing or event).
  virtual Status Feed(std::string_view bytes, std::string& out) = 0;
  // At the end of the upstream stream: appends what is still owed (usage chunk, [DONE]) when the stream
  // reached its end, nothing when it was cut.
  virtual void Finish(std::string& out) = 0;
};

}  // namespace govern::gateway
