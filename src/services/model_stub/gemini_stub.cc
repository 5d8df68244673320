#include "services/model_stub/gemini_stub.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gateway/json_util.h"
#include "gateway/sse.h"

namespace govern::model_stub {
namespace {

using Json = nlohmann::json;
using gateway::detail::Dump;
using gateway::detail::StrField;

std::string_view StatusName(int code) {
  switch (code) {
    case 400:
      return "INVALID_ARGUMENT";
    case 403:
      return "PERMISSION_DENIED";
    case 404:
      return "NOT_FOUND";
    case 429:
      return "RESOURCE_EXHAUSTED";
    case 503:
      return "UNAVAILABLE";
    default:
      return code >= 500 ? "INTERNAL" : "FAILED_PRECONDITION";
  }
}

Json ErrorJson(int code, std::string_view message) {
  return Json{{"error", {{"code", code}, {"message", message}, {"status", StatusName(code)}}}};
}

Reply GeminiError(int code, std::string_view message) {
  Reply r;
  r.status = code;
  r.body = Dump(ErrorJson(code, message));
  return r;
}

// Words of the parts: text, function call arguments and function responses.
int64_t WordsOfParts(const Json& content, bool* function_response) {
  int64_t n = 0;
  if (!content.is_object() || !content.contains("parts") || !content["parts"].is_array()) return 0;
  for (const Json& p : content["parts"]) {
    if (!p.is_object()) continue;
    if (auto t = p.find("text"); t != p.end() && t->is_string()) n += CountWords(t->get<std::string>());
    if (auto c = p.find("functionCall"); c != p.end() && c->is_object() && c->contains("args"))
      n += CountWords(Dump((*c)["args"]));
    if (auto r = p.find("functionResponse"); r != p.end() && r->is_object()) {
      if (r->contains("response")) n += CountWords(Dump((*r)["response"]));
      if (function_response) *function_response = true;
    }
  }
  return n;
}

std::string ModelOf(std::string_view path) {
  std::string_view rest = path.substr(path.find("/models/") + 8);
  return std::string(rest.substr(0, rest.rfind(':')));
}

Reply Generate(std::string_view path, std::string_view body, bool stream, const Faults& faults,
               const StubConfig& config) {
  Json req = Json::parse(body, nullptr, false);
  if (req.is_discarded() || !req.is_object() || !req.contains("contents") || !req["contents"].is_array())
    return GeminiError(400, "contents is required");
  int64_t input = 0;
  if (req.contains("systemInstruction")) input += WordsOfParts(req["systemInstruction"], nullptr);
  bool last_is_response = false;
  for (const Json& c : req["contents"]) {
    if (!c.is_object() || !c.contains("parts")) return GeminiError(400, "a content needs parts");
    std::string_view role = StrField(c, "role");
    if (!role.empty() && role != "user" && role != "model")
      return GeminiError(400, "Please use a valid role: user, model.");
    last_is_response = false;
    input += WordsOfParts(c, &last_is_response);
  }
  std::optional<int64_t> max_tokens;
  if (auto g = req.find("generationConfig"); g != req.end() && g->is_object()) {
    if (auto m = g->find("maxOutputTokens"); m != g->end() && m->is_number_integer())
      max_tokens = m->get<int64_t>();
  }
  // One function call when functions are declared (mode not NONE) and the last turn is not a response.
  std::string mode = "AUTO", forced, fn_name;
  Json fn_params;
  if (auto tc = req.find("toolConfig"); tc != req.end() && tc->is_object()) {
    const Json& fc = (*tc)["functionCallingConfig"];
    if (fc.is_object()) {
      if (fc.contains("mode") && fc["mode"].is_string()) mode = fc["mode"].get<std::string>();
      if (fc.contains("allowedFunctionNames") && fc["allowedFunctionNames"].is_array() &&
          !fc["allowedFunctionNames"].empty() && fc["allowedFunctionNames"][0].is_string())
        forced = fc["allowedFunctionNames"][0].get<std::string>();
    }
  }
  if (auto tools = req.find("tools");
      tools != req.end() && tools->is_array() && mode != "NONE" && !last_is_response) {
    for (const Json& t : *tools) {
      if (!t.is_object() || !t.contains("functionDeclarations") || !t["functionDeclarations"].is_array())
        continue;
      for (const Json& d : t["functionDeclarations"]) {
        std::string name(StrField(d, "name"));
        if (fn_name.empty() || name == forced) {
          fn_name = name;
          fn_params = d.value("parameters", Json());
        }
      }
    }
  }
  std::vector<Json> parts;  // one per event
  std::string finish = "STOP";
  if (!fn_name.empty()) {
    Json args = Json::object();
    if (fn_params.is_object() && fn_params.contains("properties") && fn_params["properties"].is_object())
      for (auto it = fn_params["properties"].begin(); it != fn_params["properties"].end(); ++it)
        args[it.key()] = StubValueFor(it.value());
    parts.push_back(Json{{"functionCall", {{"name", fn_name}, {"args", std::move(args)}}}});
  } else if (!faults.text.empty()) {
    parts.push_back(Json{{"text", faults.text}});
  } else {
    int64_t n =
        std::clamp<int64_t>(faults.output_tokens.value_or(config.default_output_tokens), 0, kMaxOutputTokens);
    if (max_tokens && *max_tokens >= 0 && *max_tokens < n) {
      n = *max_tokens;
      finish = "MAX_TOKENS";
    }
    for (auto& w : StubWords(n)) parts.push_back(Json{{"text", std::move(w)}});
  }
  const int64_t output = fn_name.empty() ? static_cast<int64_t>(parts.size()) : 1;
  const int64_t cached = std::clamp<int64_t>(faults.cached_tokens, 0, input);
  Json usage = {
      {"promptTokenCount", input}, {"candidatesTokenCount", output}, {"totalTokenCount", input + output}};
  if (cached > 0) usage["cachedContentTokenCount"] = cached;
  const std::string model = ModelOf(path);
  auto response = [&](Json content_parts, bool last) {
    Json cand = {{"content", {{"role", "model"}, {"parts", std::move(content_parts)}}}, {"index", 0}};
    if (last) cand["finishReason"] = finish;
    Json j = {
        {"candidates", Json::array({std::move(cand)})}, {"modelVersion", model}, {"responseId", "stub"}};
    if (last) j["usageMetadata"] = usage;
    return j;
  };
  if (!stream) {
    Json all = Json::array();
    std::string text;
    for (const Json& p : parts) {
      if (p.contains("text")) {
        text += p["text"].get<std::string>();
      } else {
        all.push_back(p);
      }
    }
    if (fn_name.empty()) all.push_back(Json{{"text", text}});
    Reply r;
    r.body = Dump(response(std::move(all), true));
    if (faults.cut_after >= 0) r.truncate_at = static_cast<int64_t>(r.body.size() / 2);
    return r;
  }
  Reply r;
  r.stream = true;
  r.content_type = "text/event-stream";
  if (parts.empty()) parts.push_back(Json{{"text", ""}});
  for (size_t i = 0; i < parts.size(); ++i) {
    r.events.push_back(
        gateway::FormatSseEvent("", Dump(response(Json::array({parts[i]}), i + 1 == parts.size()))));
    r.token_event.push_back(true);
  }
  if (faults.error_after >= 0 && static_cast<size_t>(faults.error_after) < r.events.size()) {
    r.events.resize(static_cast<size_t>(faults.error_after));
    r.token_event.resize(r.events.size());
    r.events.push_back(gateway::FormatSseEvent("", Dump(ErrorJson(500, "injected stream error"))));
    r.token_event.push_back(false);
  }
  if (faults.cut_after >= 0) r.truncate_at = faults.cut_after;
  return r;
}

// The text of a Content ({"parts": [{"text"}]}), or false when it has none.
bool TextOf(const Json& content, std::string& out) {
  if (!content.is_object() || !content.contains("parts") || !content["parts"].is_array()) return false;
  for (const Json& p : content["parts"]) {
    if (!p.is_object() || !p.contains("text") || !p["text"].is_string()) return false;
    out += p["text"].get<std::string>();
  }
  return true;
}

Reply Embed(std::string_view path, std::string_view body, bool batch, const Faults& faults,
            const StubConfig& config) {
  Json req = Json::parse(body, nullptr, false);
  if (req.is_discarded() || !req.is_object()) return GeminiError(400, "Invalid JSON payload received.");
  const std::string model = "models/" + ModelOf(path);
  auto one = [&](const Json& r, Json& vector, int64_t& words) -> std::string {
    std::string text;
    if (!r.is_object() || !TextOf(r.value("content", Json()), text))
      return "content.parts[].text is required";
    int64_t dims = config.default_dimensions;
    if (auto d = r.find("outputDimensionality"); d != r.end()) {
      if (!d->is_number_integer() || *d < 1) return "outputDimensionality must be positive";
      dims = d->get<int64_t>();
    }
    vector = Json{{"values", StubVector(text, dims)}};
    words += CountWords(text);
    return "";
  };
  int64_t words = 0;
  Reply r;
  if (!batch) {
    Json v;
    if (std::string why = one(req, v, words); !why.empty()) return GeminiError(400, why);
    r.body = Dump(Json{{"embedding", std::move(v)}});
  } else {
    auto reqs = req.find("requests");
    if (reqs == req.end() || !reqs->is_array() || reqs->empty())
      return GeminiError(400, "requests is required");
    Json all = Json::array();
    for (const Json& x : *reqs) {
      if (!x.is_object() || StrField(x, "model") != model)
        return GeminiError(400, "each request must name the model " + model);
      Json v;
      if (std::string why = one(x, v, words); !why.empty()) return GeminiError(400, why);
      all.push_back(std::move(v));
    }
    r.body = Dump(Json{{"embeddings", std::move(all)}, {"usageMetadata", {{"promptTokenCount", words}}}});
  }
  if (faults.cut_after >= 0) r.truncate_at = static_cast<int64_t>(r.body.size() / 2);
  if (!faults.text.empty()) r.body = faults.text;  // a malformed answer, for tests
  return r;
}

}  // namespace

bool IsGeminiPath(std::string_view path) {
  size_t models = path.find("/models/");
  if (models == std::string_view::npos || models == 0) return false;
  return path.substr(models).find(':') != std::string_view::npos;
}

Reply GeminiAnswer(std::string_view method, std::string_view path,
                   const std::function<std::string_view(std::string_view)>& header, std::string_view body,
                   const Faults& faults, const StubConfig& config) {
  std::string_view op = path.substr(path.rfind(':') + 1);
  if (op != "generateContent" && op != "streamGenerateContent" && op != "embedContent" &&
      op != "batchEmbedContents")
    return GeminiError(404, "unknown method");
  if (method != "POST") return GeminiError(405, "use POST");
  if (header("x-goog-api-key").empty())
    return GeminiError(403, "Method doesn't allow unregistered callers. Please use an API Key.");
  if (faults.status >= 400)
    return GeminiError(faults.status, "injected status " + std::to_string(faults.status));
  if (op == "embedContent" || op == "batchEmbedContents")
    return Embed(path, body, op == "batchEmbedContents", faults, config);
  return Generate(path, body, op == "streamGenerateContent", faults, config);
}

}  // namespace govern::model_stub
