#include "gateway/bedrock.h"

#include <algorithm>

#include "gateway/json_util.h"
#include "gateway/sse.h"

namespace govern::gateway::bedrock {

using Json = nlohmann::json;
using detail::Count;
using detail::Dump;
using detail::ParseJson;

namespace {

// Call arguments as a Converse document: the JSON they hold, else the text as a string.
Json InputOf(const std::string& arguments) {
  return arguments.empty() ? Json::object() : detail::JsonOrText(arguments);
}

Result<openai::Usage> UsageOf(const Json& j) {
  openai::Usage u;
  auto it = j.find("usage");
  if (it == j.end() || it->is_null()) return u;
  if (!it->is_object()) return InvalidArgument("usage must be an object");
  GOVERN_ASSIGN_OR_RETURN(int64_t input, Count(*it, "inputTokens", "usage"));
  GOVERN_ASSIGN_OR_RETURN(int64_t read, Count(*it, "cacheReadInputTokens", "usage"));
  GOVERN_ASSIGN_OR_RETURN(int64_t write, Count(*it, "cacheWriteInputTokens", "usage"));
  GOVERN_ASSIGN_OR_RETURN(u.completion_tokens, Count(*it, "outputTokens", "usage"));
  u.prompt_tokens = input + read + write;
  u.cached_tokens = read;
  u.total_tokens = u.prompt_tokens + u.completion_tokens;
  return u;
}

Result<const Json*> Object(const Json& obj, const char* key, std::string_view path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return static_cast<const Json*>(nullptr);
  if (!it->is_object()) return InvalidArgument(std::string(path) + "." + key + " must be an object");
  return &*it;
}

}  // namespace

std::string FinishReason(std::string_view stop_reason, bool calls_tools) {
  if (stop_reason == "max_tokens") return "length";
  if (stop_reason == "guardrail_intervened" || stop_reason == "content_filtered") return "content_filter";
  if (stop_reason == "tool_use" || calls_tools) return "tool_calls";
  return "stop";
}

std::string ErrorMessage(std::string_view body) {
  auto j = ParseJson(body, "bedrock error");
  if (j.ok() && j->is_object()) {
    for (const char* key : {"message", "Message"}) {
      auto m = j->find(key);
      if (m != j->end() && m->is_string()) return m->get<std::string>();
    }
  }
  return std::string(body.substr(0, 512));
}

Result<Json> FromChatRequest(const openai::ChatRequest& req) {
  Json messages = Json::array();
  Json system = Json::array();
  bool uses_tools = false;
  auto append = [&](std::string_view role, Json block) {
    if (!messages.empty() && messages.back()["role"] == role) {
      messages.back()["content"].push_back(std::move(block));
    } else {
      messages.push_back({{"role", role}, {"content", Json::array({std::move(block)})}});
    }
  };
  for (size_t i = 0; i < req.messages.size(); ++i) {
    const openai::ChatMessage& m = req.messages[i];
    std::string path = "messages[" + std::to_string(i) + "]";
    GOVERN_ASSIGN_OR_RETURN(std::string text, detail::TextOf(m.content, path, "bedrock"));
    if (m.role == "system" || m.role == "developer") {
      if (!text.empty()) system.push_back({{"text", text}});
    } else if (m.role == "user") {
      if (!text.empty()) append("user", {{"text", text}});
    } else if (m.role == "assistant") {
      if (!text.empty()) append("assistant", {{"text", text}});
      for (const auto& call : m.tool_calls) {
        if (call.id.empty()) return InvalidArgument(path + ".tool_calls[].id must not be empty");
        append(
            "assistant",
            {{"toolUse", {{"toolUseId", call.id}, {"name", call.name}, {"input", InputOf(call.arguments)}}}});
        uses_tools = true;
      }
    } else if (m.role == "tool") {
      if (m.tool_call_id.empty()) return InvalidArgument(path + ".tool_call_id must not be empty");
      Json content = Json::array();
      if (!text.empty()) content.push_back({{"text", text}});
      append("user", {{"toolResult", {{"toolUseId", m.tool_call_id}, {"content", std::move(content)}}}});
      uses_tools = true;
    } else {
      return InvalidArgument(path + ".role `" + m.role + "` cannot be sent to a bedrock deployment");
    }
  }
  Json body = {{"messages", std::move(messages)}};
  if (!system.empty()) body["system"] = std::move(system);
  using Mode = openai::ToolChoice::Mode;
  if (!req.tools.empty() && (req.tool_choice.mode != Mode::kNone || uses_tools)) {
    Json tools = Json::array();
    for (const auto& t : req.tools) {
      Json spec = {{"name", t.name}};
      if (!t.description.empty()) spec["description"] = t.description;
      spec["inputSchema"] = {{"json", t.parameters.is_null()
                                          ? Json{{"type", "object"}, {"properties", Json::object()}}
                                          : t.parameters}};
      tools.push_back({{"toolSpec", std::move(spec)}});
    }
    Json config = {{"tools", std::move(tools)}};
    switch (req.tool_choice.mode) {
      case Mode::kUnset:
      case Mode::kNone:
        break;
      case Mode::kAuto:
        config["toolChoice"] = {{"auto", Json::object()}};
        break;
      case Mode::kRequired:
        config["toolChoice"] = {{"any", Json::object()}};
        break;
      case Mode::kFunction:
        config["toolChoice"] = {{"tool", {{"name", req.tool_choice.function}}}};
        break;
    }
    body["toolConfig"] = std::move(config);
  }
  Json inference = detail::CamelCaseSampling(req, "maxTokens");
  if (!inference.empty()) body["inferenceConfig"] = std::move(inference);
  return body;
}

Result<openai::ChatResponse> ToChatResponse(std::string_view body, std::string_view model, int64_t created) {
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(body, "bedrock answer"));
  if (!j.is_object()) return InvalidArgument("bedrock answer: not an object");
  openai::ChatResponse r;
  r.id = "chatcmpl-bedrock";
  r.created = created;
  r.model = std::string(model);
  openai::ChatChoice choice;
  std::string text;
  bool has_text = false;
  GOVERN_ASSIGN_OR_RETURN(const Json* output, Object(j, "output", "bedrock answer"));
  const Json* message = nullptr;
  if (output) {
    GOVERN_ASSIGN_OR_RETURN(message, Object(*output, "message", "output"));
  }
  if (message) {
    auto content = message->find("content");
    if (content != message->end() && !content->is_null()) {
      if (!content->is_array()) return InvalidArgument("output.message.content must be an array");
      for (const Json& block : *content) {
        if (!block.is_object()) return InvalidArgument("output.message.content[] must be objects");
        if (auto t = block.find("text"); t != block.end()) {
          if (!t->is_string()) return InvalidArgument("output.message.content[].text must be a string");
          text += t->get<std::string>();
          has_text = true;
        }
        GOVERN_ASSIGN_OR_RETURN(const Json* use, Object(block, "toolUse", "output.message.content[]"));
        if (use) {
          openai::ToolCall call;
          GOVERN_ASSIGN_OR_RETURN(call.id, detail::ReqString(*use, "toolUseId", "toolUse"));
          GOVERN_ASSIGN_OR_RETURN(call.name, detail::ReqString(*use, "name", "toolUse"));
          auto input = use->find("input");
          call.arguments = input == use->end() || input->is_null() ? "{}" : Dump(*input);
          choice.tool_calls.push_back(std::move(call));
        }
      }
    }
  }
  if (has_text || choice.tool_calls.empty()) choice.content = text;
  GOVERN_ASSIGN_OR_RETURN(auto stop, detail::OptString(j, "stopReason", "bedrock answer"));
  choice.finish_reason = FinishReason(stop.value_or("end_turn"), !choice.tool_calls.empty());
  r.choices.push_back(std::move(choice));
  GOVERN_ASSIGN_OR_RETURN(openai::Usage usage, UsageOf(j));
  r.usage = usage;
  return r;
}

StreamToChat::StreamToChat(std::string model, int64_t created)
    : model_(std::move(model)), created_(created) {}

void StreamToChat::Emit(openai::ChunkChoice choice, std::string& out) {
  openai::ChatChunk c;
  c.id = "chatcmpl-bedrock";
  c.created = created_;
  c.model = model_;
  if (!role_sent_) {
    choice.role = "assistant";
    role_sent_ = true;
  }
  c.choices.push_back(std::move(choice));
  AppendSseEvent(out, "", Dump(openai::ToJson(c)));
}

void StreamToChat::End(std::string& out) {
  finished_ = true;
  if (usage_seen_) {
    openai::ChatChunk u;
    u.id = "chatcmpl-bedrock";
    u.created = created_;
    u.model = model_;
    u.usage = usage_;
    AppendSseEvent(out, "", Dump(openai::ToJson(u)));
  }
  out += kSseDone;
}

Status StreamToChat::Feed(std::string_view bytes, std::string& out) {
  messages_.clear();
  GOVERN_RETURN_IF_ERROR(decoder_.Feed(bytes, messages_));
  for (const eventstream::Message& m : messages_) GOVERN_RETURN_IF_ERROR(Event(m, out));
  return OkStatus();
}

Status StreamToChat::Event(const eventstream::Message& m, std::string& out) {
  if (finished_) return OkStatus();
  std::string_view kind = m.StringHeader(":message-type").value_or("event");
  if (kind == "exception" || kind == "error") {
    // Passed on as the format's in-stream error; the gateway ends the stream with it.
    std::string type, message;
    if (kind == "error") {
      type = m.StringHeader(":error-code").value_or("error");
      message = m.StringHeader(":error-message").value_or("");
    } else {
      type = m.StringHeader(":exception-type").value_or("exception");
      message = ErrorMessage(m.payload);
    }
    AppendSseEvent(out, "", Dump(openai::ErrorJson(type + ": " + message, "api_error")));
    finished_ = true;
    return OkStatus();
  }
  if (kind != "event")
    return InvalidArgument("bedrock stream: unknown :message-type `" + std::string(kind) + "`");
  std::string type(m.StringHeader(":event-type").value_or(""));
  if (type != "messageStart" && type != "contentBlockStart" && type != "contentBlockDelta" &&
      type != "contentBlockStop" && type != "messageStop" && type != "metadata")
    return OkStatus();  // an event this gateway does not know yet: nothing to relay
  std::string what = "bedrock " + type + " event";
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(m.payload, what));
  if (!j.is_object()) return InvalidArgument(what + ": not an object");
  GOVERN_ASSIGN_OR_RETURN(auto block, detail::OptInt(j, "contentBlockIndex", what));
  if (type == "messageStart") {
    if (!role_sent_) Emit({}, out);
  } else if (type == "contentBlockStart") {
    GOVERN_ASSIGN_OR_RETURN(const Json* start, Object(j, "start", what));
    const Json* use = nullptr;
    if (start) {
      GOVERN_ASSIGN_OR_RETURN(use, Object(*start, "toolUse", what + ".start"));
    }
    if (use) {
      openai::ToolCallDelta d;
      d.index = tool_calls_;
      GOVERN_ASSIGN_OR_RETURN(d.id, detail::ReqString(*use, "toolUseId", what + ".start.toolUse"));
      GOVERN_ASSIGN_OR_RETURN(d.name, detail::ReqString(*use, "name", what + ".start.toolUse"));
      d.arguments = "";
      tool_index_[block.value_or(0)] = tool_calls_++;
      openai::ChunkChoice c;
      c.tool_calls.push_back(std::move(d));
      Emit(std::move(c), out);
    }
  } else if (type == "contentBlockDelta") {
    GOVERN_ASSIGN_OR_RETURN(const Json* delta, Object(j, "delta", what));
    if (!delta) return OkStatus();
    GOVERN_ASSIGN_OR_RETURN(auto text, detail::OptString(*delta, "text", what + ".delta"));
    if (text) {
      openai::ChunkChoice c;
      c.content = std::move(*text);
      Emit(std::move(c), out);
    }
    GOVERN_ASSIGN_OR_RETURN(const Json* use, Object(*delta, "toolUse", what + ".delta"));
    if (use) {
      auto it = tool_index_.find(block.value_or(0));
      if (it == tool_index_.end())
        return InvalidArgument(what + ": toolUse input for a block that did not start a tool call");
      GOVERN_ASSIGN_OR_RETURN(auto input, detail::OptString(*use, "input", what + ".delta.toolUse"));
      openai::ToolCallDelta d;
      d.index = it->second;
      d.arguments = input.value_or("");
      openai::ChunkChoice c;
      c.tool_calls.push_back(std::move(d));
      Emit(std::move(c), out);
    }
  } else if (type == "messageStop") {
    if (!stop_seen_) {
      stop_seen_ = true;
      GOVERN_ASSIGN_OR_RETURN(auto stop, detail::OptString(j, "stopReason", what));
      openai::ChunkChoice c;
      c.finish_reason = FinishReason(stop.value_or("end_turn"), tool_calls_ > 0);
      Emit(std::move(c), out);
    }
  } else if (type == "metadata") {
    GOVERN_ASSIGN_OR_RETURN(usage_, UsageOf(j));
    usage_seen_ = j.contains("usage");
    // The last event of a ConverseStream answer: the end.
    if (stop_seen_) End(out);
  }
  return OkStatus();
}

void StreamToChat::Finish(std::string& out) {
  if (finished_) return;
  if (!stop_seen_ || decoder_.partial()) {  // cut before its end: no end marker
    finished_ = true;
    return;
  }
  End(out);
}

// ---- Embeddings (InvokeModel) ----

Result<EmbeddingModel> EmbeddingModelOf(std::string_view id) {
  if (size_t slash = id.rfind('/'); slash != std::string_view::npos) id = id.substr(slash + 1);
  auto has = [&](std::string_view s) { return id.find(s) != std::string_view::npos; };
  if (has("amazon.titan-embed-text-v2")) return EmbeddingModel::kTitanV2;
  if (has("amazon.titan-embed-text-v1") || has("amazon.titan-embed-g1-text")) return EmbeddingModel::kTitanV1;
  if (has("cohere.embed-v4")) return EmbeddingModel::kCohereV4;
  if (has("cohere.embed-")) return EmbeddingModel::kCohere;
  return InvalidArgument("Bedrock model `" + std::string(id) +
                         "` has no embeddings the gateway knows (amazon.titan-embed-text-*, cohere.embed-*)");
}

Result<std::vector<std::string>> FromEmbeddingsRequest(const openai::EmbeddingsRequest& req,
                                                       EmbeddingModel model,
                                                       std::string_view cohere_input_type) {
  if (!req.input_tokens.empty())
    return InvalidArgument("input: token arrays cannot be sent to Bedrock (send text)");
  if (req.input.empty()) return InvalidArgument("input: nothing to embed");
  auto one_of = [&](std::initializer_list<int64_t> allowed, const char* name) -> Status {
    for (int64_t d : allowed) {
      if (*req.dimensions == d) return OkStatus();
    }
    return InvalidArgument(std::string("dimensions must be one of ") + name + " for this Bedrock model");
  };
  std::vector<std::string> bodies;
  switch (model) {
    case EmbeddingModel::kTitanV1:
    case EmbeddingModel::kTitanV2:
      if (req.dimensions) {
        if (model == EmbeddingModel::kTitanV1)
          return InvalidArgument("dimensions: Titan Text Embeddings v1 has a fixed size");
        GOVERN_RETURN_IF_ERROR(one_of({256, 512, 1024}, "256, 512, 1024"));
      }
      for (const std::string& text : req.input) {
        Json b = {{"inputText", text}};
        if (req.dimensions) b["dimensions"] = *req.dimensions;
        bodies.push_back(Dump(b));
      }
      return bodies;
    case EmbeddingModel::kCohere:
    case EmbeddingModel::kCohereV4: {
      if (req.dimensions) {
        if (model == EmbeddingModel::kCohere)
          return InvalidArgument("dimensions: Cohere Embed v3 has a fixed size");
        GOVERN_RETURN_IF_ERROR(one_of({256, 512, 1024, 1536}, "256, 512, 1024, 1536"));
      }
      // At most kCohereMaxTexts texts a call: several calls, in order, for more.
      for (size_t at = 0; at < req.input.size(); at += kCohereMaxTexts) {
        const size_t end = std::min(req.input.size(), at + kCohereMaxTexts);
        Json texts = Json::array();
        for (size_t i = at; i < end; ++i) texts.push_back(req.input[i]);
        Json b = {{"texts", std::move(texts)}, {"input_type", cohere_input_type}};
        if (req.dimensions) b["output_dimension"] = *req.dimensions;
        bodies.push_back(Dump(b));
      }
      return bodies;
    }
  }
  return InvalidArgument("unknown Bedrock embeddings model");
}

namespace {

Result<std::vector<float>> Vector(const Json& v, const std::string& path) {
  if (!v.is_array()) return InvalidArgument(path + " must be an array");
  std::vector<float> out;
  out.reserve(v.size());
  for (const Json& x : v) {
    if (!x.is_number()) return InvalidArgument(path + " must hold numbers");
    out.push_back(x.get<float>());
  }
  return out;
}

}  // namespace

Result<int64_t> AppendEmbeddings(std::string_view body, EmbeddingModel model, size_t sent,
                                 openai::EmbeddingsResponse& out) {
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(body, "bedrock embeddings answer"));
  if (!j.is_object()) return InvalidArgument("bedrock embeddings answer: not an object");
  if (model == EmbeddingModel::kTitanV1 || model == EmbeddingModel::kTitanV2) {
    auto e = j.find("embedding");
    if (e == j.end()) return InvalidArgument("embedding is missing");
    GOVERN_ASSIGN_OR_RETURN(auto v, Vector(*e, "embedding"));
    out.data.push_back(std::move(v));
    return Count(j, "inputTextTokenCount", "bedrock embeddings answer");
  }
  auto e = j.find("embeddings");
  if (e == j.end()) return InvalidArgument("embeddings is missing");
  const Json* list = &*e;
  if (e->is_object()) {  // embedding_types: {"float": [[...]], ...}
    auto f = e->find("float");
    if (f == e->end()) return InvalidArgument("embeddings.float is missing");
    list = &*f;
  }
  if (!list->is_array()) return InvalidArgument("embeddings must be an array");
  if (list->size() != sent)
    return InvalidArgument("bedrock embeddings answer: " + std::to_string(list->size()) + " vectors for " +
                           std::to_string(sent) + " texts");
  for (size_t i = 0; i < list->size(); ++i) {
    GOVERN_ASSIGN_OR_RETURN(auto v, Vector((*list)[i], "embeddings[" + std::to_string(i) + "]"));
    out.data.push_back(std::move(v));
  }
  return -1;
}

}  // namespace govern::gateway::bedrock
