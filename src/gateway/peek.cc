#include "gateway/peek.h"

#include <simdjson.h>

#include "gateway/json_util.h"

namespace govern::gateway {
namespace {

Status Bad(std::string m) { return InvalidArgument(std::move(m)); }

}  // namespace

Result<RequestPeek> PeekRequest(std::string_view body) {
  // simdjson's DOM parser validates the whole body (and keeps repeated keys, so they can be refused)
  // at a small fraction of the cost of building an nlohmann tree.
  if (body.empty()) return Bad("request body: not valid JSON");
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(body.data(), body.size(), /*realloc_if_needed=*/true).get(root))
    return Bad("request body: not valid JSON");
  simdjson::dom::object obj;
  if (root.get_object().get(obj)) return Bad("request body must be a JSON object");
  RequestPeek p;
  bool seen_model = false, seen_stream = false;
  for (auto [key, value] : obj) {
    if (key == "model") {
      if (seen_model) return Bad("model is given twice");
      seen_model = true;
      std::string_view v;
      if (value.get_string().get(v)) return Bad("model must be a string");
      p.model.assign(v);
    } else if (key == "stream") {
      if (seen_stream) return Bad("stream is given twice");
      seen_stream = true;
      if (!value.is_null() && value.get_bool().get(p.stream)) return Bad("stream must be true or false");
    } else if (key == "stream_options") {
      if (p.has_stream_options) return Bad("stream_options is given twice");
      p.has_stream_options = true;
      if (value.is_null()) continue;
      simdjson::dom::object so;
      if (value.get_object().get(so)) return Bad("stream_options must be an object");
      for (auto [k, v] : so) {
        if (k != "include_usage") continue;
        if (p.include_usage) return Bad("stream_options.include_usage is given twice");
        bool b = false;
        if (v.get_bool().get(b)) return Bad("stream_options.include_usage must be true or false");
        p.include_usage = b;
      }
    }
  }
  if (!seen_model) return Bad("model is required");
  return p;
}

Result<std::string> WithIncludeUsage(std::string_view body, const RequestPeek& peek) {
  if (!peek.stream || peek.include_usage == true) return std::string(body);
  if (peek.has_stream_options) {
    GOVERN_ASSIGN_OR_RETURN(nlohmann::json j, detail::ParseJson(body, "request body"));
    if (!j.is_object()) return InvalidArgument("request body must be a JSON object");
    if (!j["stream_options"].is_object()) j["stream_options"] = nlohmann::json::object();
    j["stream_options"]["include_usage"] = true;
    return detail::Dump(j);
  }
  size_t brace = body.find('{');
  if (brace == std::string_view::npos) return InvalidArgument("request body must be a JSON object");
  std::string out;
  out.reserve(body.size() + 40);
  out.append(body.substr(0, brace + 1));
  out.append("\"stream_options\":{\"include_usage\":true},");
  out.append(body.substr(brace + 1));
  return out;
}

}  // namespace govern::gateway
