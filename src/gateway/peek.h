// The few fields a proxy needs from a request body (model, stream, stream_options.include_usage), read
// with simdjson rather than an nlohmann tree, and the one edit it makes to a body it otherwise forwards
// unchanged: asking for usage in a stream. The same-format path of the gateway forwards the client's bytes,
// so its cost is this peek rather than a parse and re-write (see gateway_benchmark).
//
// Every key is compared after unescaping; a body that names model, stream or stream_options twice is
// refused, so that the gateway can never check one model while the provider reads another. The whole
// body is validated as JSON. Thread-safe (one parser per thread).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace govern::gateway {

struct RequestPeek {
  std::string model;
  bool stream = false;
  bool has_stream_options = false;
  std::optional<bool> include_usage;  // stream_options.include_usage
};

// Errors: not a JSON object, model missing or not a string, stream not a boolean, a repeated key.
Result<RequestPeek> PeekRequest(std::string_view body);

// `body` with stream_options.include_usage set to true, when it asked for a stream without it: the
// usage chunk is what meters a stream. Bodies that already have stream_options are re-written through
// the tree parser; others get the field inserted after the opening brace, byte for byte otherwise.
Result<std::string> WithIncludeUsage(std::string_view body, const RequestPeek& peek);

}  // namespace govern::gateway
