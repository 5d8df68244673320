// Metering reads of the Responses and embeddings answers and of Responses stream events.
#include "gateway/usage_peek.h"

#include <gtest/gtest.h>

#include "gateway/openai.h"
#include "gateway/sse.h"

namespace govern::gateway {
namespace {

TEST(UsagePeek, ResponsesBodyUsageWithCachedTokens) {
  auto u = PeekResponsesUsage(R"({"id":"resp_1","object":"response","output":[{"type":"message"}],
    "usage":{"input_tokens":36,"input_tokens_details":{"cached_tokens":20},"output_tokens":87,
    "output_tokens_details":{"reasoning_tokens":7},"total_tokens":123}})");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  ASSERT_TRUE(u->has_value());
  EXPECT_EQ(**u, (openai::Usage{36, 87, 123, 20, 7}));

  auto none = PeekResponsesUsage(R"({"id":"resp_1","usage":null})");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_FALSE(PeekResponsesUsage("").ok());
  EXPECT_FALSE(PeekResponsesUsage("[1]").ok());
  EXPECT_FALSE(PeekResponsesUsage(R"({"usage":{"input_tokens":-1}})").ok());
  EXPECT_FALSE(PeekResponsesUsage(R"({"usage":{"input_tokens":1.5}})").ok());
  EXPECT_FALSE(PeekResponsesUsage(R"({"usage":{"input_tokens_details":3}})").ok());
  EXPECT_FALSE(PeekResponsesUsage(R"({"usage":{"input_tokens":1})").ok());  // cut
}

TEST(UsagePeek, EmbeddingsUsage) {
  auto u = PeekEmbeddingsUsage(
      R"({"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1]}],"model":"m",
          "usage":{"prompt_tokens":8,"total_tokens":8}})");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  ASSERT_TRUE(u->has_value());
  EXPECT_EQ((*u)->prompt_tokens, 8);
  EXPECT_EQ((*u)->completion_tokens, 0);
  EXPECT_FALSE(PeekEmbeddingsUsage(R"({"usage":"8"})").ok());
  auto none = PeekEmbeddingsUsage(R"({"data":[]})");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(UsagePeek, ResponsesStreamEvents) {
  auto delta = PeekResponsesEvent(
      R"({"type":"response.output_text.delta","sequence_number":4,"item_id":"m","delta":"Hi"})");
  ASSERT_TRUE(delta.ok());
  EXPECT_TRUE(delta->output_delta);
  EXPECT_FALSE(delta->terminal);
  EXPECT_EQ(delta->sequence_number, 4);
  EXPECT_FALSE(delta->usage.has_value());

  auto args = PeekResponsesEvent(R"({"type":"response.function_call_arguments.delta","delta":"{\""})");
  ASSERT_TRUE(args.ok());
  EXPECT_TRUE(args->output_delta);
  EXPECT_FALSE(args->sequence_number.has_value());

  // response.created carries the response without usage; completed carries the usage and ends.
  auto created = PeekResponsesEvent(
      R"({"type":"response.created","sequence_number":0,"response":{"id":"r","status":"in_progress","usage":null}})");
  ASSERT_TRUE(created.ok());
  EXPECT_FALSE(created->terminal);
  EXPECT_FALSE(created->usage.has_value());
  auto done = PeekResponsesEvent(
      R"({"type":"response.completed","sequence_number":9,"response":{"id":"r","status":"completed",
          "usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7,"input_tokens_details":{"cached_tokens":1}}}})");
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(done->terminal);
  EXPECT_TRUE(done->error.empty());
  EXPECT_EQ(done->usage, (openai::Usage{5, 2, 7, 1, 0}));

  auto failed = PeekResponsesEvent(
      R"({"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}})");
  ASSERT_TRUE(failed.ok());
  EXPECT_TRUE(failed->terminal);
  EXPECT_EQ(failed->error, "boom");
  auto error =
      PeekResponsesEvent(R"({"type":"error","code":"server_error","message":"injected","param":null})");
  ASSERT_TRUE(error.ok());
  EXPECT_TRUE(error->terminal);
  EXPECT_EQ(error->error, "injected");

  EXPECT_FALSE(PeekResponsesEvent(R"({"sequence_number":1})").ok());
  EXPECT_FALSE(PeekResponsesEvent("[DONE]").ok());
  EXPECT_FALSE(PeekResponsesEvent(R"({"type":"response.completed","response":[]})").ok());
}

TEST(UsagePeek, StreamErrorEventIsOneFrameTheSdkRaises) {
  std::string frame = ResponsesStreamErrorEvent("upstream stream cut", 12);
  SseParser p;
  std::vector<SseEvent> events;
  ASSERT_TRUE(p.Feed(frame, events).ok());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "error");
  auto j = nlohmann::json::parse(events[0].data);
  EXPECT_EQ(j["type"], "error");
  EXPECT_EQ(j["message"], "upstream stream cut");
  EXPECT_EQ(j["sequence_number"], 12);
  EXPECT_EQ(j["error"]["message"], "upstream stream cut");  // what the OpenAI SDKs raise
  auto peek = PeekResponsesEvent(events[0].data);
  ASSERT_TRUE(peek.ok());
  EXPECT_TRUE(peek->terminal);
}

// A same-format chat answer is metered by PeekChatUsage instead of a full openai::ParseChatResponse:
// the same verdict (ok or the same error) and the same usage on every answer here.
TEST(UsagePeek, ChatUsageAgreesWithParseChatResponse) {
  const char* bodies[] = {
      R"({"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,
          "message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],
          "usage":{"prompt_tokens":12,"completion_tokens":16,"total_tokens":28,
          "prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}})",
      R"({"choices":[],"usage":null})",
      R"({"choices":[]})",
      R"({"choices":[{"message":{"role":"a"}}],"usage":{"prompt_tokens":2.9,"completion_tokens":"7"}})",
      R"({"choices":[{"message":{"role":"a"}}],"usage":{"prompt_tokens":3,"prompt_tokens_details":5}})",
      R"({"choices":[{"message":{"role":"a"}}],"usage":{"prompt_tokens":18446744073709551615}})",
      R"({"choices":[{"message":{"role":"a"}}],"created":5.0,"id":null,"model":null})",
      R"({"choices":[{"message":{"role":"a"}}],"usage":"12"})",
      R"({"choices":[{"message":{"role":"a"}}],"created":1.5})",
      R"({"choices":[{"message":{"role":"a"}}],"created":"1"})",
      R"({"choices":[{"message":{"role":"a"}}],"id":7})",
      R"({"choices":[{"message":{"role":"a"}}],"model":[]})",
      R"({"choices":{}})",
      R"({"usage":{"prompt_tokens":1}})",
      R"({"choices":[1]})",
      R"({"choices":[{"message":{"role":"a"}},{"message":"x"}]})",
      R"({"choices":[{"index":0}]})",
      R"({"choices":[{"index":"x","message":{"role":"a"}}]})",
      R"({"choices":[{"index":1.5,"message":{"role":"a"}}]})",
      R"({"choices":[{"index":2.0,"message":{"role":"a"}}]})",
      R"({"choices":[{"finish_reason":1,"message":{"role":"a"}}]})",
      R"({"choices":[{"finish_reason":null,"message":{"role":"a"}}]})",
      // A repeated key counts as its last value, as nlohmann and the clients' SDKs read it.
      R"({"choices":[{"message":{"role":"a"}}],"usage":{"prompt_tokens":1,"prompt_tokens":900000}})",
      R"({"choices":[{"message":{"role":"a"}}],"usage":{"prompt_tokens":1},"usage":{"prompt_tokens":7}})",
      R"({"choices":7,"choices":[{"message":{"role":"a"}}]})",
      R"([1])",
      R"({"choices":[]},)",
      "",
  };
  for (const char* body : bodies) {
    auto peek = PeekChatUsage(body);
    auto full = openai::ParseChatResponse(body);
    ASSERT_EQ(peek.ok(), full.ok()) << body;
    if (!full.ok()) {
      EXPECT_EQ(peek.status().message(), full.status().message()) << body;
      continue;
    }
    ASSERT_EQ(peek->has_value(), full->usage.has_value()) << body;
    if (full->usage) {
      EXPECT_EQ(**peek, *full->usage) << body;
    }
  }
  auto u = PeekChatUsage(bodies[0]);
  ASSERT_TRUE(u.ok() && u->has_value());
  EXPECT_EQ(**u, (openai::Usage{12, 16, 28, 4, 2}));
  auto repeated = PeekChatUsage(R"({"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens":900000}})");
  ASSERT_TRUE(repeated.ok() && repeated->has_value());
  EXPECT_EQ((*repeated)->prompt_tokens, 900000);
  // What is inside a message is not read (the answer is relayed as it came): a message without a role
  // passes, where the full parse refuses it.
  EXPECT_TRUE(PeekChatUsage(R"({"choices":[{"message":{}}]})").ok());
  EXPECT_FALSE(openai::ParseChatResponse(R"({"choices":[{"message":{}}]})").ok());
}

}  // namespace
}  // namespace govern::gateway
