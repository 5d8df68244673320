#include "gateway/gemini.h"

#include <map>

#include "gateway/json_util.h"

namespace govern::gateway::gemini {

using Json = nlohmann::json;
using detail::Count;
using detail::Dump;
using detail::JsonOrText;
using detail::ParseJson;

namespace {

std::string FinishReason(std::string_view gemini, bool calls_tools) {
  if (gemini == "MAX_TOKENS") return "length";
  if (gemini == "SAFETY" || gemini == "RECITATION" || gemini == "BLOCKLIST" ||
      gemini == "PROHIBITED_CONTENT" || gemini == "SPII" || gemini == "IMAGE_SAFETY")
    return "content_filter";
  return calls_tools ? "tool_calls" : "stop";
}

Result<openai::Usage> UsageOf(const Json& j) {
  openai::Usage u;
  auto it = j.find("usageMetadata");
  if (it == j.end() || it->is_null()) return u;
  if (!it->is_object()) return InvalidArgument("usageMetadata must be an object");
  GOVERN_ASSIGN_OR_RETURN(u.prompt_tokens, Count(*it, "promptTokenCount", "usageMetadata"));
  GOVERN_ASSIGN_OR_RETURN(u.cached_tokens, Count(*it, "cachedContentTokenCount", "usageMetadata"));
  GOVERN_ASSIGN_OR_RETURN(int64_t candidates, Count(*it, "candidatesTokenCount", "usageMetadata"));
  GOVERN_ASSIGN_OR_RETURN(u.reasoning_tokens, Count(*it, "thoughtsTokenCount", "usageMetadata"));
  u.completion_tokens = candidates + u.reasoning_tokens;
  u.total_tokens = u.prompt_tokens + u.completion_tokens;
  return u;
}

// The first candidate's parts, as text and tool calls, and its finish reason ("" when none yet).
struct Candidate {
  std::string text;
  bool has_text = false;
  std::vector<openai::ToolCall> calls;
  std::string finish;
};

Result<Candidate> FirstCandidate(const Json& j) {
  Candidate c;
  auto cands = j.find("candidates");
  if (cands == j.end() || cands->is_null()) return c;
  if (!cands->is_array()) return InvalidArgument("candidates must be an array");
  if (cands->empty()) return c;
  const Json& cand = (*cands)[0];
  if (!cand.is_object()) return InvalidArgument("candidates[0] must be an object");
  GOVERN_ASSIGN_OR_RETURN(auto finish, detail::OptString(cand, "finishReason", "candidates[0]"));
  c.finish = finish.value_or("");
  auto content = cand.find("content");
  if (content == cand.end() || content->is_null()) return c;
  if (!content->is_object()) return InvalidArgument("candidates[0].content must be an object");
  auto parts = content->find("parts");
  if (parts == content->end() || parts->is_null()) return c;
  if (!parts->is_array()) return InvalidArgument("candidates[0].content.parts must be an array");
  for (const Json& p : *parts) {
    if (!p.is_object()) return InvalidArgument("candidates[0].content.parts[] must be objects");
    if (auto thought = p.find("thought"); thought != p.end() && thought->is_boolean() && thought->get<bool>())
      continue;  // thinking summaries are not part of the answer
    if (auto t = p.find("text"); t != p.end()) {
      if (!t->is_string()) return InvalidArgument("candidates[0].content.parts[].text must be a string");
      c.text += t->get<std::string>();
      c.has_text = true;
    }
    if (auto f = p.find("functionCall"); f != p.end()) {
      if (!f->is_object()) return InvalidArgument("functionCall must be an object");
      openai::ToolCall call;
      GOVERN_ASSIGN_OR_RETURN(call.name, detail::ReqString(*f, "name", "functionCall"));
      auto args = f->find("args");
      call.arguments = args == f->end() || args->is_null() ? "{}" : Dump(*args);
      GOVERN_ASSIGN_OR_RETURN(auto id, detail::OptString(*f, "id", "functionCall"));
      call.id = id.value_or("");
      c.calls.push_back(std::move(call));
    }
  }
  return c;
}

}  // namespace

Result<Json> FromChatRequest(const openai::ChatRequest& req) {
  Json contents = Json::array();
  std::string system;
  std::map<std::string, std::string> call_names;  // tool_call_id -> function name
  auto append = [&](std::string_view role, Json part) {
    if (!contents.empty() && contents.back()["role"] == role) {
      contents.back()["parts"].push_back(std::move(part));
    } else {
      contents.push_back({{"role", role}, {"parts", Json::array({std::move(part)})}});
    }
  };
  for (size_t i = 0; i < req.messages.size(); ++i) {
    const openai::ChatMessage& m = req.messages[i];
    std::string path = "messages[" + std::to_string(i) + "]";
    GOVERN_ASSIGN_OR_RETURN(std::string text, detail::TextOf(m.content, path, "gemini"));
    if (m.role == "system" || m.role == "developer") {
      if (!system.empty()) system += "\n\n";
      system += text;
    } else if (m.role == "user") {
      append("user", {{"text", text}});
    } else if (m.role == "assistant") {
      if (!text.empty()) append("model", {{"text", text}});
      for (const auto& call : m.tool_calls) {
        call_names[call.id] = call.name;
        append("model", {{"functionCall", {{"name", call.name}, {"args", JsonOrText(call.arguments)}}}});
      }
      if (text.empty() && m.tool_calls.empty()) append("model", {{"text", ""}});
    } else if (m.role == "tool") {
      auto it = call_names.find(m.tool_call_id);
      if (it == call_names.end())
        return InvalidArgument(path + ".tool_call_id does not name an earlier tool call");
      append("user",
             {{"functionResponse", {{"name", it->second}, {"response", {{"content", JsonOrText(text)}}}}}});
    } else {
      return InvalidArgument(path + ".role `" + m.role + "` cannot be sent to a gemini deployment");
    }
  }
  Json body = {{"contents", std::move(contents)}};
  if (!system.empty()) body["systemInstruction"] = {{"parts", Json::array({{{"text", system}}})}};
  if (!req.tools.empty()) {
    Json decls = Json::array();
    for (const auto& t : req.tools) {
      Json d = {{"name", t.name}};
      if (!t.description.empty()) d["description"] = t.description;
      if (!t.parameters.is_null()) d["parameters"] = t.parameters;
      decls.push_back(std::move(d));
    }
    body["tools"] = Json::array({{{"functionDeclarations", std::move(decls)}}});
  }
  using Mode = openai::ToolChoice::Mode;
  switch (req.tool_choice.mode) {
    case Mode::kUnset:
      break;
    case Mode::kAuto:
      body["toolConfig"] = {{"functionCallingConfig", {{"mode", "AUTO"}}}};
      break;
    case Mode::kNone:
      body["toolConfig"] = {{"functionCallingConfig", {{"mode", "NONE"}}}};
      break;
    case Mode::kRequired:
      body["toolConfig"] = {{"functionCallingConfig", {{"mode", "ANY"}}}};
      break;
    case Mode::kFunction:
      body["toolConfig"] = {
          {"functionCallingConfig", {{"mode", "ANY"}, {"allowedFunctionNames", {req.tool_choice.function}}}}};
      break;
  }
  Json gen = detail::CamelCaseSampling(req, "maxOutputTokens");
  if (!gen.empty()) body["generationConfig"] = std::move(gen);
  return body;
}

Result<openai::ChatResponse> ToChatResponse(std::string_view body, std::string_view model, int64_t created) {
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(body, "gemini answer"));
  if (!j.is_object()) return InvalidArgument("gemini answer: not an object");
  GOVERN_ASSIGN_OR_RETURN(Candidate cand, FirstCandidate(j));
  openai::ChatResponse r;
  GOVERN_ASSIGN_OR_RETURN(auto id, detail::OptString(j, "responseId", "gemini answer"));
  r.id = "chatcmpl-" + id.value_or("gemini");
  r.created = created;
  r.model = std::string(model);
  openai::ChatChoice choice;
  for (size_t i = 0; i < cand.calls.size(); ++i) {
    if (cand.calls[i].id.empty()) cand.calls[i].id = "call_" + std::to_string(i);
  }
  if (cand.has_text || cand.calls.empty()) choice.content = cand.text;
  choice.tool_calls = std::move(cand.calls);
  // No candidate at all: the prompt was blocked.
  choice.finish_reason = cand.finish.empty() && !j.contains("candidates")
                             ? std::string("content_filter")
                             : FinishReason(cand.finish, !choice.tool_calls.empty());
  r.choices.push_back(std::move(choice));
  GOVERN_ASSIGN_OR_RETURN(openai::Usage usage, UsageOf(j));
  r.usage = usage;
  return r;
}

// ---- Embeddings ----

Result<openai::Json> FromEmbeddingsRequest(const openai::EmbeddingsRequest& req, std::string_view model) {
  if (!req.input_tokens.empty())
    return InvalidArgument("input: token arrays cannot be sent to Gemini (send text)");
  if (req.input.empty()) return InvalidArgument("input: nothing to embed");
  if (req.dimensions && *req.dimensions < 1) return InvalidArgument("dimensions must be positive");
  Json requests = Json::array();
  const std::string name = "models/" + std::string(model);
  for (const std::string& text : req.input) {
    Json r = {{"model", name}, {"content", {{"parts", Json::array({Json{{"text", text}}})}}}};
    if (req.dimensions) r["outputDimensionality"] = *req.dimensions;
    requests.push_back(std::move(r));
  }
  return Json{{"requests", std::move(requests)}};
}

namespace {

Result<std::vector<float>> Values(const Json& embedding, const std::string& path) {
  if (!embedding.is_object()) return InvalidArgument(path + " must be an object");
  auto v = embedding.find("values");
  if (v == embedding.end() || !v->is_array()) return InvalidArgument(path + ".values must be an array");
  std::vector<float> out;
  out.reserve(v->size());
  for (const Json& x : *v) {
    if (!x.is_number()) return InvalidArgument(path + ".values must hold numbers");
    out.push_back(x.get<float>());
  }
  return out;
}

}  // namespace

int64_t EstimateEmbeddingTokens(const openai::EmbeddingsRequest& req) {
  int64_t n = 0;
  for (const std::string& text : req.input) n += static_cast<int64_t>((text.size() + 3) / 4);
  return n;
}

Result<openai::EmbeddingsResponse> ToEmbeddingsResponse(std::string_view body, std::string_view model,
                                                        size_t inputs, int64_t estimate) {
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(body, "gemini embeddings answer"));
  if (!j.is_object()) return InvalidArgument("gemini embeddings answer: not an object");
  openai::EmbeddingsResponse r;
  r.model = std::string(model);
  if (auto one = j.find("embedding"); one != j.end()) {
    GOVERN_ASSIGN_OR_RETURN(auto v, Values(*one, "embedding"));
    r.data.push_back(std::move(v));
  } else {
    auto all = j.find("embeddings");
    if (all == j.end() || !all->is_array()) return InvalidArgument("embeddings must be an array");
    for (size_t i = 0; i < all->size(); ++i) {
      GOVERN_ASSIGN_OR_RETURN(auto v, Values((*all)[i], "embeddings[" + std::to_string(i) + "]"));
      r.data.push_back(std::move(v));
    }
  }
  if (r.data.size() != inputs)
    return InvalidArgument("gemini embeddings answer: " + std::to_string(r.data.size()) + " vectors for " +
                           std::to_string(inputs) + " inputs");
  if (auto it = j.find("usageMetadata"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return InvalidArgument("usageMetadata must be an object");
    GOVERN_ASSIGN_OR_RETURN(r.prompt_tokens, Count(*it, "promptTokenCount", "usageMetadata"));
  } else {
    r.prompt_tokens = estimate;
    r.tokens_estimated = true;
  }
  r.total_tokens = r.prompt_tokens;
  return r;
}

StreamToChat::StreamToChat(std::string model, int64_t created)
    : model_(std::move(model)), created_(created) {}

void StreamToChat::Emit(const openai::ChatChunk& c, std::string& out) {
  AppendSseEvent(out, "", Dump(openai::ToJson(c)));
}

Status StreamToChat::Feed(std::string_view bytes, std::string& out) {
  events_.clear();
  GOVERN_RETURN_IF_ERROR(parser_.Feed(bytes, events_));
  for (const SseEvent& ev : events_) GOVERN_RETURN_IF_ERROR(Event(ev.data, out));
  return OkStatus();
}

Status StreamToChat::Event(std::string_view data, std::string& out) {
  if (finished_ || data.empty()) return OkStatus();
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(data, "gemini stream event"));
  if (!j.is_object()) return InvalidArgument("gemini stream event: not an object");
  if (j.contains("error")) {  // passed on; the gateway ends the stream with it
    AppendSseEvent(out, "", Dump(j));
    finished_ = true;
    return OkStatus();
  }
  GOVERN_ASSIGN_OR_RETURN(Candidate cand, FirstCandidate(j));
  GOVERN_ASSIGN_OR_RETURN(openai::Usage usage, UsageOf(j));
  if (j.contains("usageMetadata")) usage_ = usage;  // cumulative: the last one counts
  openai::ChatChunk chunk;
  chunk.id = "chatcmpl-gemini";
  chunk.created = created_;
  chunk.model = model_;
  openai::ChunkChoice choice;
  if (!role_sent_) {
    choice.role = "assistant";
    role_sent_ = true;
  }
  if (cand.has_text) choice.content = cand.text;
  for (auto& call : cand.calls) {
    openai::ToolCallDelta d;
    d.index = tool_calls_;
    d.id = call.id.empty() ? "call_" + std::to_string(tool_calls_) : call.id;
    d.name = call.name;
    d.arguments = call.arguments;
    choice.tool_calls.push_back(std::move(d));
    ++tool_calls_;
  }
  if (choice.role || choice.content || !choice.tool_calls.empty()) {
    chunk.choices.push_back(choice);
    Emit(chunk, out);
  }
  if (!cand.finish.empty() && !finish_seen_) {
    finish_seen_ = true;
    openai::ChatChunk end;
    end.id = chunk.id;
    end.created = created_;
    end.model = model_;
    openai::ChunkChoice c;
    c.finish_reason = FinishReason(cand.finish, tool_calls_ > 0);
    end.choices.push_back(std::move(c));
    Emit(end, out);
  }
  return OkStatus();
}

void StreamToChat::Finish(std::string& out) {
  if (finished_) return;
  finished_ = true;
  if (!finish_seen_) return;  // cut before its end: no end marker
  openai::ChatChunk u;
  u.id = "chatcmpl-gemini";
  u.created = created_;
  u.model = model_;
  u.usage = usage_;
  Emit(u, out);
  out += kSseDone;
}

}  // namespace govern::gateway::gemini
