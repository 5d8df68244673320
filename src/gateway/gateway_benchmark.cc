// The gateway's per-request protocol work, alone: parsing and re-writing a chat request, translating it,
// parsing an SSE stream and translating it chunk by chunk. Run: scripts/build release gateway_benchmark.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "gateway/anthropic.h"
#include "gateway/json_util.h"
#include "gateway/openai.h"
#include "gateway/peek.h"
#include "gateway/sse.h"
#include "gateway/translate.h"

namespace govern::gateway {
namespace {

// A typical agent turn: system prompt, a few messages, one tool. About 1.3 KB.
std::string ChatBody() {
  nlohmann::json j = nlohmann::json::parse(R"({
    "model": "gpt-4o", "stream": true, "stream_options": {"include_usage": true},
    "tools": [{"type": "function", "function": {"name": "read_file", "description": "Read a file of the repository",
               "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}],
    "messages": [
      {"role": "system", "content": ""},
      {"role": "user", "content": "Please look at src/main.cc and tell me what it does."},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "read_file", "arguments": "{\"path\":\"src/main.cc\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": ""}
    ]})");
  j["messages"][0]["content"] = std::string(400, 'x');
  j["messages"][3]["content"] = std::string(500, 'y');
  return j.dump();
}

void BM_ChatRequestParseAndWrite(benchmark::State& state) {
  std::string body = ChatBody();
  for (auto _ : state) {
    auto r = openai::ParseChatRequest(body);
    std::string out = detail::Dump(openai::ToJson(*r));
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_ChatRequestParseAndWrite);

// The same-format path: peek the fields policy needs, ask for usage, forward the bytes.
void BM_ChatRequestPeekAndInjectUsage(benchmark::State& state) {
  nlohmann::json j = nlohmann::json::parse(ChatBody());
  j.erase("stream_options");
  std::string body = j.dump();
  for (auto _ : state) {
    auto p = PeekRequest(body);
    auto out = WithIncludeUsage(body, *p);
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_ChatRequestPeekAndInjectUsage);

void BM_ChatRequestToAnthropic(benchmark::State& state) {
  std::string body = ChatBody();
  for (auto _ : state) {
    auto r = openai::ParseChatRequest(body);
    auto m = ChatToMessagesRequest(*r);
    std::string out = detail::Dump(anthropic::ToJson(*m));
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_ChatRequestToAnthropic);

// A 100-token Anthropic stream as bytes.
std::string AnthropicStream() {
  std::string s;
  AppendSseEvent(
      s, "message_start",
      R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}})");
  AppendSseEvent(s, "content_block_start",
                 R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})");
  for (int i = 0; i < 100; ++i)
    AppendSseEvent(
        s, "content_block_delta",
        R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word"}})");
  AppendSseEvent(s, "content_block_stop", R"({"type":"content_block_stop","index":0})");
  AppendSseEvent(
      s, "message_delta",
      R"({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":100}})");
  AppendSseEvent(s, "message_stop", R"({"type":"message_stop"})");
  return s;
}

void BM_SseParse(benchmark::State& state) {
  std::string s = AnthropicStream();
  std::vector<SseEvent> events;
  for (auto _ : state) {
    SseParser p;
    events.clear();
    // In 1 KiB reads, as a socket would give them.
    for (size_t i = 0; i < s.size(); i += 1024) (void)p.Feed(std::string_view(s).substr(i, 1024), events);
    benchmark::DoNotOptimize(events.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * s.size()));
}
BENCHMARK(BM_SseParse);

// Per token: parse the event, translate it, write the OpenAI chunk as SSE.
void BM_AnthropicStreamToOpenAi(benchmark::State& state) {
  std::string s = AnthropicStream();
  SseParser p;
  std::vector<SseEvent> events;
  (void)p.Feed(s, events);
  for (auto _ : state) {
    MessagesToChatStream t(true, 0);
    std::vector<nlohmann::json> chunks;
    std::string out;
    for (const SseEvent& e : events) {
      auto ev = anthropic::ParseStreamEvent(e.data);
      chunks.clear();
      t.Feed(*ev, chunks);
      for (const auto& c : chunks) AppendSseEvent(out, "", detail::Dump(c));
    }
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events.size()));
}
BENCHMARK(BM_AnthropicStreamToOpenAi);

}  // namespace
}  // namespace govern::gateway

BENCHMARK_MAIN();
