// The model stub as AWS Bedrock Runtime: POST /model/{modelId}/converse (a JSON answer) and
// /model/{modelId}/converse-stream (AWS event-stream frames, gateway/eventstream.h), answering as the
// stub answers the other APIs (stub.h: words counted as input tokens, the stub's words or x-stub-text
// as output, one tool call when tools are offered, the same x-stub-* faults).
//
// Authentication, as AWS checks it, when StubConfig::aws_secret_access_key is set: the request must
// carry an AWS4-HMAC-SHA256 Authorization for StubConfig::aws_access_key_id, scoped to service
// "bedrock" (and to aws_region when set), dated by a signed x-amz-date within 5 minutes of the stub's
// clock, with host among the signed headers, and (when aws_session_token is set) that session token in
// a signed x-amz-security-token. The stub recomputes the signature itself from the request it read (the
// canonical URI is the received path encoded once more, the payload hash is of the body it read) and
// answers 403 {"message": ...} when anything differs, as Bedrock answers a wrong secret. With no secret
// set, any request is accepted.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "services/model_stub/stub.h"

namespace govern::model_stub {

// Whether `path` is one of Bedrock's (the stub's other APIs are under /v1/).
bool IsBedrockPath(std::string_view path);

// The answer to a Bedrock request. `path` is the request target up to '?', as received (percent-encoded);
// `header` gives a header's value by lower-case name, or "".
Reply BedrockAnswer(std::string_view method, std::string_view path,
                    const std::function<std::string_view(std::string_view)>& header, std::string_view body,
                    const Faults& faults, const StubConfig& config, int64_t now_unix);

// The signature check alone: ok, or the reason it failed (for tests).
std::string BedrockSignatureError(std::string_view method, std::string_view path,
                                  const std::function<std::string_view(std::string_view)>& header,
                                  std::string_view body, const StubConfig& config, int64_t now_unix);

}  // namespace govern::model_stub
