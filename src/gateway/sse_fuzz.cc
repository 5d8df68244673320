// Fuzz target: the SSE parser over any bytes, fed whole and in two pieces split by the first byte; both
// ways must give the same events (the parser must not depend on chunking), and the provider event
// parsers (and the Responses metering read, usage_peek.h) must not crash on any event data.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "gateway/anthropic.h"
#include "gateway/openai.h"
#include "gateway/responses_translate.h"
#include "gateway/sse.h"
#include "gateway/usage_peek.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::gateway;
  if (size == 0) return 0;
  size_t split = data[0] % size;
  std::string_view all(reinterpret_cast<const char*>(data) + 1, size - 1);
  split = split > all.size() ? all.size() : split;

  SseParser whole(4096);
  std::vector<SseEvent> a;
  bool ok_a = whole.Feed(all, a).ok();
  SseParser pieces(4096);
  std::vector<SseEvent> b;
  bool ok_b = pieces.Feed(all.substr(0, split), b).ok() && pieces.Feed(all.substr(split), b).ok();
  if (ok_a != ok_b || (ok_a && a != b)) std::abort();
  // Anthropic events also go through the Responses stream translator, which must keep its numbering.
  MessagesToResponsesStream to_responses(0);
  std::vector<openai::Json> translated;
  for (const SseEvent& e : a) {
    if (auto ev = anthropic::ParseStreamEvent(e.data); ev.ok()) to_responses.Feed(*ev, translated);
    (void)openai::ParseChatChunk(e.data);
    (void)openai::ParseResponsesEvent(e.data);
    (void)PeekResponsesEvent(e.data);
  }
  for (size_t i = 0; i < translated.size(); ++i) {
    if (translated[i]["sequence_number"] != static_cast<int64_t>(i)) std::abort();
  }
  return 0;
}
