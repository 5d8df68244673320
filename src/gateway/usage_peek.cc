#include "gateway/usage_peek.h"

#include <simdjson.h>

#include "gateway/json_util.h"
#include "gateway/sse.h"

namespace govern::gateway {
namespace {

namespace dom = simdjson::dom;

// The value of `key` in `obj`, the last one when the key repeats: what nlohmann (the full parsers) and
// the clients' SDKs read, where simdjson's at_key gives the first. A repeated usage key must be metered
// as the client sees it.
simdjson::simdjson_result<dom::element> Last(dom::object obj, std::string_view key) {
  dom::element found;
  bool any = false;
  for (dom::key_value_pair field : obj) {
    if (field.key == key) {
      found = field.value;
      any = true;
    }
  }
  if (!any) return simdjson::NO_SUCH_FIELD;
  return found;
}

// An optional integer as json_util's OptInt takes it (absent or null; an integer; a float with an
// integral value); false otherwise.
bool OptIntOk(dom::object obj, std::string_view key) {
  dom::element v;
  if (Last(obj, key).get(v) || v.is_null() || v.is_int64() || v.is_uint64()) return true;
  double d = 0;
  return !v.get_double().get(d) && d >= -9.0e18 && d <= 9.0e18 &&
         static_cast<double>(static_cast<int64_t>(d)) == d;
}

Result<dom::element> ParseRoot(std::string_view text, std::string_view what) {
  if (text.empty()) return InvalidArgument(std::string(what) + ": not valid JSON");
  thread_local dom::parser parser;
  dom::element root;
  if (parser.parse(text.data(), text.size(), /*realloc_if_needed=*/true).get(root))
    return InvalidArgument(std::string(what) + ": not valid JSON");
  if (!root.is_object()) return InvalidArgument(std::string(what) + " must be a JSON object");
  return root;
}

// A token count: absent or null is 0; anything but a non-negative integer is an error naming `path`.
Result<int64_t> Count(dom::object obj, std::string_view key, std::string_view path) {
  dom::element v;
  if (Last(obj, key).get(v) || v.is_null()) return int64_t{0};
  int64_t n = 0;
  if (v.get_int64().get(n) || n < 0)
    return InvalidArgument(std::string(path) + "." + std::string(key) + " must be a non-negative integer");
  return n;
}

// The nested `<details>.<key>` count (input_tokens_details.cached_tokens and the like).
Result<int64_t> Detail(dom::object usage, std::string_view details, std::string_view key,
                       std::string_view path) {
  dom::element d;
  if (Last(usage, details).get(d) || d.is_null()) return int64_t{0};
  dom::object o;
  if (d.get_object().get(o))
    return InvalidArgument(std::string(path) + "." + std::string(details) + " must be an object");
  return Count(o, key, std::string(path) + "." + std::string(details));
}

// `usage` of a Responses object: input_tokens, output_tokens, total_tokens and the details.
Result<std::optional<openai::Usage>> ResponsesUsageAt(dom::object obj, std::string_view path) {
  dom::element u;
  if (Last(obj, "usage").get(u) || u.is_null()) return std::optional<openai::Usage>();
  dom::object usage;
  std::string upath = std::string(path) + "usage";
  if (u.get_object().get(usage)) return InvalidArgument(upath + " must be an object");
  openai::Usage out;
  GOVERN_ASSIGN_OR_RETURN(out.prompt_tokens, Count(usage, "input_tokens", upath));
  GOVERN_ASSIGN_OR_RETURN(out.completion_tokens, Count(usage, "output_tokens", upath));
  GOVERN_ASSIGN_OR_RETURN(out.total_tokens, Count(usage, "total_tokens", upath));
  GOVERN_ASSIGN_OR_RETURN(out.cached_tokens, Detail(usage, "input_tokens_details", "cached_tokens", upath));
  GOVERN_ASSIGN_OR_RETURN(out.reasoning_tokens,
                          Detail(usage, "output_tokens_details", "reasoning_tokens", upath));
  return std::optional<openai::Usage>(out);
}

std::string StringAt(dom::object obj, std::string_view key) {
  std::string_view s;
  if (Last(obj, key).get_string().get(s)) return {};
  return std::string(s);
}

// A count as openai::UsageFromJson reads it (IntOr0): absent or not a number is 0, a fraction truncated.
int64_t IntOr0(dom::object obj, std::string_view key) {
  dom::element v;
  if (Last(obj, key).get(v)) return 0;
  int64_t i = 0;
  if (!v.get_int64().get(i)) return i;
  uint64_t u = 0;
  if (!v.get_uint64().get(u)) return static_cast<int64_t>(u);
  double d = 0;
  if (!v.get_double().get(d)) return static_cast<int64_t>(d);
  return 0;
}

}  // namespace

Result<std::optional<openai::Usage>> PeekChatUsage(std::string_view body) {
  GOVERN_ASSIGN_OR_RETURN(dom::element root, ParseRoot(body, "chat completion"));
  dom::object obj = root.get_object().value_unsafe();
  // The frame's fields, as ParseChatResponse checks them (json_util's OptString, OptInt).
  auto string_ok = [](dom::object o, std::string_view key) {
    dom::element v;
    return Last(o, key).get(v) || v.is_null() || v.is_string();
  };
  for (std::string_view key : {"id", "model"}) {
    if (!string_ok(obj, key)) return InvalidArgument(std::string(key) + " must be a string");
  }
  if (!OptIntOk(obj, "created")) return InvalidArgument("created must be an integer");
  dom::array choices;
  if (Last(obj, "choices").get_array().get(choices)) return InvalidArgument("choices must be an array");
  size_t i = 0;
  for (dom::element c : choices) {
    std::string p = "choices[" + std::to_string(i++) + "]";
    dom::object co;
    if (c.get_object().get(co)) return InvalidArgument(p + " must be an object");
    if (!OptIntOk(co, "index")) return InvalidArgument(p + ".index must be an integer");
    if (!string_ok(co, "finish_reason")) return InvalidArgument(p + ".finish_reason must be a string");
    if (!Last(co, "message").is_object()) return InvalidArgument(p + ".message must be an object");
  }
  dom::element u;
  if (Last(obj, "usage").get(u) || u.is_null()) return std::optional<openai::Usage>();
  dom::object usage;
  if (u.get_object().get(usage)) return InvalidArgument("usage must be an object");
  openai::Usage out;
  out.prompt_tokens = IntOr0(usage, "prompt_tokens");
  out.completion_tokens = IntOr0(usage, "completion_tokens");
  out.total_tokens = IntOr0(usage, "total_tokens");
  if (dom::object d; !Last(usage, "prompt_tokens_details").get_object().get(d))
    out.cached_tokens = IntOr0(d, "cached_tokens");
  if (dom::object d; !Last(usage, "completion_tokens_details").get_object().get(d))
    out.reasoning_tokens = IntOr0(d, "reasoning_tokens");
  return std::optional<openai::Usage>(out);
}

Result<std::optional<openai::Usage>> PeekResponsesUsage(std::string_view body) {
  GOVERN_ASSIGN_OR_RETURN(dom::element root, ParseRoot(body, "response body"));
  return ResponsesUsageAt(root.get_object().value_unsafe(), "");
}

Result<std::optional<openai::Usage>> PeekEmbeddingsUsage(std::string_view body) {
  GOVERN_ASSIGN_OR_RETURN(dom::element root, ParseRoot(body, "embeddings body"));
  dom::element u;
  if (Last(root.get_object().value_unsafe(), "usage").get(u) || u.is_null())
    return std::optional<openai::Usage>();
  dom::object usage;
  if (u.get_object().get(usage)) return InvalidArgument("usage must be an object");
  openai::Usage out;
  GOVERN_ASSIGN_OR_RETURN(out.prompt_tokens, Count(usage, "prompt_tokens", "usage"));
  GOVERN_ASSIGN_OR_RETURN(out.total_tokens, Count(usage, "total_tokens", "usage"));
  GOVERN_ASSIGN_OR_RETURN(out.cached_tokens,
                          Detail(usage, "prompt_tokens_details", "cached_tokens", "usage"));
  return std::optional<openai::Usage>(out);
}

Result<ResponsesEventPeek> PeekResponsesEvent(std::string_view data) {
  GOVERN_ASSIGN_OR_RETURN(dom::element root, ParseRoot(data, "response stream event"));
  dom::object obj = root.get_object().value_unsafe();
  ResponsesEventPeek p;
  std::string_view type;
  if (Last(obj, "type").get_string().get(type))
    return InvalidArgument("response stream event: type must be a string");
  p.type.assign(type);
  int64_t seq = 0;
  if (!Last(obj, "sequence_number").get_int64().get(seq)) p.sequence_number = seq;
  p.output_delta = type == "response.output_text.delta" || type == "response.refusal.delta" ||
                   type == "response.function_call_arguments.delta";
  if (type == "error") {
    p.terminal = true;
    p.error = StringAt(obj, "message");
    if (p.error.empty()) p.error = "provider stream error";
    return p;
  }
  if (type.rfind("response.", 0) != 0) return p;
  dom::element r;
  if (Last(obj, "response").get(r) || r.is_null()) return p;
  dom::object resp;
  if (r.get_object().get(resp)) return InvalidArgument("response stream event: response must be an object");
  GOVERN_ASSIGN_OR_RETURN(p.usage, ResponsesUsageAt(resp, "response."));
  if (type == "response.completed" || type == "response.incomplete" || type == "response.failed") {
    p.terminal = true;
  }
  if (type == "response.failed") {
    dom::object err;
    if (!Last(resp, "error").get_object().get(err)) p.error = StringAt(err, "message");
    if (p.error.empty()) p.error = "the provider reports the response failed";
  }
  return p;
}

std::string ResponsesStreamErrorEvent(std::string_view message, int64_t sequence_number) {
  openai::Json body = {{"type", "error"},
                       {"code", "api_error"},
                       {"message", message},
                       {"param", nullptr},
                       {"sequence_number", sequence_number},
                       {"error", openai::ErrorJson(message, "api_error")["error"]}};
  return FormatSseEvent("error", detail::Dump(body));
}

}  // namespace govern::gateway
