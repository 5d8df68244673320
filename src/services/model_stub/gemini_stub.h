// The model stub as Google Gemini (the Gemini API): POST /{version}/models/{model}:generateContent,
// :streamGenerateContent (server-sent events, one GenerateContentResponse per event, as with alt=sse),
// :embedContent and :batchEmbedContents, answering as the stub answers the other APIs (stub.h: words
// counted as input tokens, the stub's words or x-stub-text as output, one function call when function
// declarations are offered and the last turn is not a function response, the same x-stub-* faults).
//
// - Text answers: one word per event when streamed; the last event carries finishReason (STOP, or
//   MAX_TOKENS when generationConfig.maxOutputTokens cut it) and usageMetadata (promptTokenCount,
//   candidatesTokenCount, totalTokenCount, cachedContentTokenCount from x-stub-cached-tokens).
// - A function call is one functionCall part with args from the declaration's schema ("stub" for
//   strings, 1 for numbers, ...), in one event.
// - Embeddings: StubVector of each text (outputDimensionality, else StubConfig::default_dimensions);
//   batchEmbedContents checks that every request names models/{the URL's model}, and adds
//   usageMetadata.promptTokenCount (the words embedded), as Vertex AI's answer has it; embedContent
//   answers {"embedding": {"values": [...]}} alone.
// - x-stub-error-after: K sends K events and then an {"error": {...}} event; x-stub-cut-after: K closes
//   after K events (a whole answer: after half its body).
// - Errors are Gemini's {"error": {"code", "message", "status"}}; a request without x-goog-api-key is
//   403 PERMISSION_DENIED.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "services/model_stub/stub.h"

namespace govern::model_stub {

// Whether `path` is a Gemini model method (/v1beta/models/{model}:{method}).
bool IsGeminiPath(std::string_view path);

Reply GeminiAnswer(std::string_view method, std::string_view path,
                   const std::function<std::string_view(std::string_view)>& header, std::string_view body,
                   const Faults& faults, const StubConfig& config);

}  // namespace govern::model_stub
