// Fuzz target: every request and response body parser of the gateway, and the translations of what
// parses, must give a value or a clear error on any bytes, never crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "gateway/anthropic.h"
#include "gateway/bedrock.h"
#include "gateway/gemini.h"
#include "gateway/json_util.h"
#include "gateway/openai.h"
#include "gateway/peek.h"
#include "gateway/responses_translate.h"
#include "gateway/translate.h"
#include "gateway/usage_peek.h"

namespace {
std::string D(const nlohmann::json& j) { return govern::gateway::detail::Dump(j); }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::gateway;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto peek = PeekRequest(body);
  if (auto r = openai::ParseChatRequest(body); r.ok()) {
    // The fast peek and the full parse must never disagree on what a policy check reads.
    if (peek.ok() &&
        (peek->model != r->model || peek->stream != r->stream || peek->include_usage != r->include_usage))
      std::abort();
    (void)D(openai::ToJson(*r));
    if (auto m = ChatToMessagesRequest(*r); m.ok()) (void)D(anthropic::ToJson(*m));
  }
  if (auto r = anthropic::ParseMessagesRequest(body); r.ok()) {
    (void)D(anthropic::ToJson(*r));
    if (auto c = MessagesToChatRequest(*r); c.ok()) (void)D(openai::ToJson(*c));
  }
  if (auto r = openai::ParseChatResponse(body); r.ok()) {
    (void)D(anthropic::ToJson(ChatToMessagesResponse(*r)));
    (void)D(openai::ToJson(ChatToResponsesResponse(*r, 0)));  // a Gemini / Bedrock answer to Responses
  }
  if (auto c = openai::ParseChatChunk(body); c.ok()) {
    ChatToResponsesStream t(0);
    std::vector<nlohmann::json> out;
    t.Feed(*c, out);
    t.Finish(out);
  }
  if (auto r = anthropic::ParseMessagesResponse(body); r.ok()) {
    (void)D(openai::ToJson(MessagesToChatResponse(*r, 0)));
    (void)D(openai::ToJson(MessagesToResponsesResponse(*r, 0)));
  }
  if (auto r = openai::ParseResponsesRequest(body); r.ok()) {
    (void)D(openai::ToJson(*r));
    if (auto m = ResponsesToMessagesRequest(*r); m.ok()) (void)D(anthropic::ToJson(*m));
    if (auto c = ResponsesToChatRequest(*r); c.ok()) {  // to a Gemini or Bedrock deployment
      if (auto g = gemini::FromChatRequest(*c); g.ok()) (void)D(*g);
      if (auto b = bedrock::FromChatRequest(*c); b.ok()) (void)D(*b);
    }
  }
  if (auto r = openai::ParseResponsesResponse(body); r.ok()) (void)r->OutputText();
  if (auto r = openai::ParseEmbeddingsRequest(body); r.ok()) {
    (void)D(openai::ToJson(*r));
    if (auto g = gemini::FromEmbeddingsRequest(*r, "m"); g.ok()) (void)D(*g);
    for (auto m : {bedrock::EmbeddingModel::kTitanV2, bedrock::EmbeddingModel::kTitanV1,
                   bedrock::EmbeddingModel::kCohere, bedrock::EmbeddingModel::kCohereV4})
      (void)bedrock::FromEmbeddingsRequest(*r, m);
  }
  if (auto r = openai::ParseEmbeddingsResponse(body); r.ok()) (void)D(openai::ToJson(*r));
  (void)openai::ParseModelsList(body);
  // The metering reads of the Responses, embeddings and same-format chat answers (usage_peek.h).
  (void)PeekResponsesUsage(body);
  (void)PeekEmbeddingsUsage(body);
  (void)PeekChatUsage(body);  // a same-format chat answer's metering
  return 0;
}
