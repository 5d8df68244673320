#include "gateway/openai.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "gateway/json_util.h"

namespace govern::gateway::openai {

using detail::Extras;
using detail::MergeExtras;
using detail::OptBool;
using detail::OptInt;
using detail::OptNumber;
using detail::OptString;
using detail::ParseJson;
using detail::ReqString;

namespace {

std::string At(std::string_view path, size_t i) { return std::string(path) + "[" + std::to_string(i) + "]"; }

Result<Content> ContentFromJson(const Json& m, std::string_view path) {
  Content c;
  auto it = m.find("content");
  if (it == m.end() || it->is_null()) return c;
  if (it->is_string()) return Content::Text(it->get<std::string>());
  if (!it->is_array()) return InvalidArgument(std::string(path) + ".content must be a string or an array");
  c.kind = Content::Kind::kParts;
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& p = (*it)[i];
    if (!p.is_object() || !p.contains("type") || !p["type"].is_string())
      return InvalidArgument(At(std::string(path) + ".content", i) + " must be an object with a type");
    if (p["type"] == "text" && (!p.contains("text") || !p["text"].is_string()))
      return InvalidArgument(At(std::string(path) + ".content", i) + ".text must be a string");
    c.parts.push_back(p);
  }
  return c;
}

Json ContentToJson(const Content& c) {
  switch (c.kind) {
    case Content::Kind::kNone:
      return nullptr;
    case Content::Kind::kText:
      return c.text;
    case Content::Kind::kParts:
      return Json(c.parts);
  }
  return nullptr;
}

Result<std::vector<ToolCall>> ToolCallsFromJson(const Json& m, std::string_view path) {
  std::vector<ToolCall> out;
  auto it = m.find("tool_calls");
  if (it == m.end() || it->is_null()) return out;
  std::string where = std::string(path) + ".tool_calls";
  if (!it->is_array()) return InvalidArgument(where + " must be an array");
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& t = (*it)[i];
    std::string p = At(where, i);
    if (!t.is_object()) return InvalidArgument(p + " must be an object");
    ToolCall tc;
    GOVERN_ASSIGN_OR_RETURN(tc.id, ReqString(t, "id", p));
    auto fn = t.find("function");
    if (fn == t.end() || !fn->is_object()) return InvalidArgument(p + ".function is required");
    GOVERN_ASSIGN_OR_RETURN(tc.name, ReqString(*fn, "name", p + ".function"));
    GOVERN_ASSIGN_OR_RETURN(auto args, OptString(*fn, "arguments", p + ".function"));
    tc.arguments = args.value_or("");
    out.push_back(std::move(tc));
  }
  return out;
}

Json ToolCallToJson(const ToolCall& tc) {
  return {
      {"id", tc.id}, {"type", "function"}, {"function", {{"name", tc.name}, {"arguments", tc.arguments}}}};
}

Result<ChatMessage> MessageFromJson(const Json& m, std::string_view path) {
  if (!m.is_object()) return InvalidArgument(std::string(path) + " must be an object");
  ChatMessage msg;
  GOVERN_ASSIGN_OR_RETURN(msg.role, ReqString(m, "role", path));
  GOVERN_ASSIGN_OR_RETURN(msg.content, ContentFromJson(m, path));
  GOVERN_ASSIGN_OR_RETURN(auto name, OptString(m, "name", path));
  msg.name = name.value_or("");
  GOVERN_ASSIGN_OR_RETURN(msg.tool_calls, ToolCallsFromJson(m, path));
  GOVERN_ASSIGN_OR_RETURN(auto tcid, OptString(m, "tool_call_id", path));
  msg.tool_call_id = tcid.value_or("");
  GOVERN_ASSIGN_OR_RETURN(msg.refusal, OptString(m, "refusal", path));
  msg.extra = Extras(m, {"role", "content", "name", "tool_calls", "tool_call_id", "refusal"});
  return msg;
}

// Tools in the Chat shape {"type":"function","function":{...}} or the Responses shape
// {"type":"function","name":...}.
Result<FunctionTool> FunctionToolFromJson(const Json& t, std::string_view path, bool nested) {
  const Json* f = &t;
  std::string fp(path);
  if (nested) {
    auto it = t.find("function");
    if (it == t.end() || !it->is_object()) return InvalidArgument(fp + ".function is required");
    f = &*it;
    fp += ".function";
  }
  FunctionTool tool;
  GOVERN_ASSIGN_OR_RETURN(tool.name, ReqString(*f, "name", fp));
  GOVERN_ASSIGN_OR_RETURN(auto d, OptString(*f, "description", fp));
  tool.description = d.value_or("");
  if (auto it = f->find("parameters"); it != f->end()) tool.parameters = *it;
  GOVERN_ASSIGN_OR_RETURN(tool.strict, OptBool(*f, "strict", fp));
  return tool;
}

Json FunctionToolBody(const FunctionTool& t) {
  Json f = {{"name", t.name}};
  if (!t.description.empty()) f["description"] = t.description;
  if (!t.parameters.is_null()) f["parameters"] = t.parameters;
  if (t.strict) f["strict"] = *t.strict;
  return f;
}

Result<ToolChoice> ToolChoiceFromJson(const Json& j, std::string_view path) {
  ToolChoice tc;
  auto it = j.find("tool_choice");
  if (it == j.end() || it->is_null()) return tc;
  if (it->is_string()) {
    std::string s = it->get<std::string>();
    if (s == "auto")
      tc.mode = ToolChoice::Mode::kAuto;
    else if (s == "none")
      tc.mode = ToolChoice::Mode::kNone;
    else if (s == "required")
      tc.mode = ToolChoice::Mode::kRequired;
    else
      return InvalidArgument(std::string(path) + "tool_choice must be auto, none, required or a function");
    return tc;
  }
  if (it->is_object()) {
    // Chat: {"type":"function","function":{"name":..}}; Responses: {"type":"function","name":..}.
    const Json& o = *it;
    std::string name;
    if (auto fn = o.find("function");
        fn != o.end() && fn->is_object() && fn->contains("name") && (*fn)["name"].is_string())
      name = (*fn)["name"].get<std::string>();
    else if (auto n = o.find("name"); n != o.end() && n->is_string())
      name = n->get<std::string>();
    if (!name.empty()) {
      tc.mode = ToolChoice::Mode::kFunction;
      tc.function = std::move(name);
      return tc;
    }
  }
  return InvalidArgument(std::string(path) + "tool_choice must be auto, none, required or a function");
}

Json ToolChoiceToJson(const ToolChoice& tc, bool nested) {
  switch (tc.mode) {
    case ToolChoice::Mode::kUnset:
      return nullptr;
    case ToolChoice::Mode::kAuto:
      return "auto";
    case ToolChoice::Mode::kNone:
      return "none";
    case ToolChoice::Mode::kRequired:
      return "required";
    case ToolChoice::Mode::kFunction:
      if (nested) return {{"type", "function"}, {"function", {{"name", tc.function}}}};
      return {{"type", "function"}, {"name", tc.function}};
  }
  return nullptr;
}

int64_t IntOr0(const Json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  return static_cast<int64_t>(it->get<double>());
}

}  // namespace

std::string Content::AllText() const {
  if (kind == Kind::kText) return text;
  std::string out;
  for (const Json& p : parts) {
    auto t = p.find("type");
    if (t == p.end() || !t->is_string()) continue;
    const std::string& type = t->get_ref<const std::string&>();
    if ((type == "text" || type == "input_text" || type == "output_text") && p.contains("text") &&
        p["text"].is_string())
      out += p["text"].get<std::string>();
  }
  return out;
}

// ---- Chat request ----

Result<ChatRequest> ChatRequestFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("request body must be a JSON object");
  ChatRequest r;
  GOVERN_ASSIGN_OR_RETURN(r.model, ReqString(j, "model", ""));
  auto msgs = j.find("messages");
  if (msgs == j.end() || !msgs->is_array()) return InvalidArgument("messages must be an array");
  for (size_t i = 0; i < msgs->size(); ++i) {
    GOVERN_ASSIGN_OR_RETURN(ChatMessage m, MessageFromJson((*msgs)[i], At("messages", i)));
    r.messages.push_back(std::move(m));
  }
  if (auto tools = j.find("tools"); tools != j.end() && !tools->is_null()) {
    if (!tools->is_array()) return InvalidArgument("tools must be an array");
    for (size_t i = 0; i < tools->size(); ++i) {
      const Json& t = (*tools)[i];
      if (!t.is_object()) return InvalidArgument(At("tools", i) + " must be an object");
      GOVERN_ASSIGN_OR_RETURN(FunctionTool ft, FunctionToolFromJson(t, At("tools", i), /*nested=*/true));
      r.tools.push_back(std::move(ft));
    }
  }
  GOVERN_ASSIGN_OR_RETURN(r.tool_choice, ToolChoiceFromJson(j, ""));
  GOVERN_ASSIGN_OR_RETURN(auto stream, OptBool(j, "stream", ""));
  r.stream = stream.value_or(false);
  if (auto so = j.find("stream_options"); so != j.end() && !so->is_null()) {
    if (!so->is_object()) return InvalidArgument("stream_options must be an object");
    GOVERN_ASSIGN_OR_RETURN(r.include_usage, OptBool(*so, "include_usage", "stream_options"));
    r.stream_options_extra = Extras(*so, {"include_usage"});
  }
  GOVERN_ASSIGN_OR_RETURN(r.max_tokens, OptInt(j, "max_tokens", ""));
  GOVERN_ASSIGN_OR_RETURN(r.max_completion_tokens, OptInt(j, "max_completion_tokens", ""));
  GOVERN_ASSIGN_OR_RETURN(r.temperature, OptNumber(j, "temperature", ""));
  GOVERN_ASSIGN_OR_RETURN(r.top_p, OptNumber(j, "top_p", ""));
  if (auto stop = j.find("stop"); stop != j.end() && !stop->is_null()) {
    if (stop->is_string()) {
      r.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (const Json& s : *stop) {
        if (!s.is_string()) return InvalidArgument("stop must be a string or an array of strings");
        r.stop.push_back(s.get<std::string>());
      }
    } else {
      return InvalidArgument("stop must be a string or an array of strings");
    }
  }
  GOVERN_ASSIGN_OR_RETURN(r.parallel_tool_calls, OptBool(j, "parallel_tool_calls", ""));
  GOVERN_ASSIGN_OR_RETURN(auto user, OptString(j, "user", ""));
  r.user = user.value_or("");
  r.extra =
      Extras(j, {"model", "messages", "tools", "tool_choice", "stream", "stream_options", "max_tokens",
                 "max_completion_tokens", "temperature", "top_p", "stop", "parallel_tool_calls", "user"});
  return r;
}

Result<ChatRequest> ParseChatRequest(std::string_view body) {
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(body, "request body"));
  return ChatRequestFromJson(j);
}

Json ToJson(const ChatMessage& m) {
  Json o = {{"role", m.role}};
  // Assistant messages with only tool calls carry content null; others always carry content.
  o["content"] = ContentToJson(m.content);
  if (!m.name.empty()) o["name"] = m.name;
  if (!m.tool_calls.empty()) {
    Json calls = Json::array();
    for (const ToolCall& tc : m.tool_calls) calls.push_back(ToolCallToJson(tc));
    o["tool_calls"] = std::move(calls);
  }
  if (!m.tool_call_id.empty()) o["tool_call_id"] = m.tool_call_id;
  if (m.refusal) o["refusal"] = *m.refusal;
  MergeExtras(o, m.extra);
  return o;
}

Json ToJson(const ChatRequest& r) {
  Json o = {{"model", r.model}};
  Json msgs = Json::array();
  for (const ChatMessage& m : r.messages) msgs.push_back(ToJson(m));
  o["messages"] = std::move(msgs);
  if (!r.tools.empty()) {
    Json tools = Json::array();
    for (const FunctionTool& t : r.tools)
      tools.push_back({{"type", "function"}, {"function", FunctionToolBody(t)}});
    o["tools"] = std::move(tools);
  }
  if (r.tool_choice.mode != ToolChoice::Mode::kUnset)
    o["tool_choice"] = ToolChoiceToJson(r.tool_choice, true);
  if (r.stream) o["stream"] = true;
  if (r.include_usage || !r.stream_options_extra.empty()) {
    Json so = r.stream_options_extra;
    if (r.include_usage) so["include_usage"] = *r.include_usage;
    o["stream_options"] = std::move(so);
  }
  if (r.max_tokens) o["max_tokens"] = *r.max_tokens;
  if (r.max_completion_tokens) o["max_completion_tokens"] = *r.max_completion_tokens;
  if (r.temperature) o["temperature"] = *r.temperature;
  if (r.top_p) o["top_p"] = *r.top_p;
  if (r.stop.size() == 1) o["stop"] = r.stop[0];
  if (r.stop.size() > 1) o["stop"] = r.stop;
  if (r.parallel_tool_calls) o["parallel_tool_calls"] = *r.parallel_tool_calls;
  if (!r.user.empty()) o["user"] = r.user;
  MergeExtras(o, r.extra);
  return o;
}

// ---- Usage ----

Result<Usage> UsageFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("usage must be an object");
  Usage u;
  u.prompt_tokens = IntOr0(j, "prompt_tokens");
  u.completion_tokens = IntOr0(j, "completion_tokens");
  u.total_tokens = IntOr0(j, "total_tokens");
  if (auto d = j.find("prompt_tokens_details"); d != j.end() && d->is_object())
    u.cached_tokens = IntOr0(*d, "cached_tokens");
  if (auto d = j.find("completion_tokens_details"); d != j.end() && d->is_object())
    u.reasoning_tokens = IntOr0(*d, "reasoning_tokens");
  return u;
}

Json ToJson(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.total_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}, {"audio_tokens", 0}}},
          {"completion_tokens_details",
           {{"reasoning_tokens", u.reasoning_tokens},
            {"audio_tokens", 0},
            {"accepted_prediction_tokens", 0},
            {"rejected_prediction_tokens", 0}}}};
}

// ---- Chat response ----

Result<ChatResponse> ParseChatResponse(std::string_view body) {
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(body, "chat completion"));
  if (!j.is_object()) return InvalidArgument("chat completion must be a JSON object");
  ChatResponse r;
  GOVERN_ASSIGN_OR_RETURN(auto id, OptString(j, "id", ""));
  r.id = id.value_or("");
  GOVERN_ASSIGN_OR_RETURN(auto created, OptInt(j, "created", ""));
  r.created = created.value_or(0);
  GOVERN_ASSIGN_OR_RETURN(auto model, OptString(j, "model", ""));
  r.model = model.value_or("");
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array()) return InvalidArgument("choices must be an array");
  for (size_t i = 0; i < choices->size(); ++i) {
    const Json& c = (*choices)[i];
    std::string p = At("choices", i);
    if (!c.is_object()) return InvalidArgument(p + " must be an object");
    ChatChoice ch;
    GOVERN_ASSIGN_OR_RETURN(auto index, OptInt(c, "index", p));
    ch.index = index.value_or(static_cast<int64_t>(i));
    GOVERN_ASSIGN_OR_RETURN(ch.finish_reason, OptString(c, "finish_reason", p));
    auto msg = c.find("message");
    if (msg == c.end() || !msg->is_object()) return InvalidArgument(p + ".message must be an object");
    GOVERN_ASSIGN_OR_RETURN(ChatMessage m, MessageFromJson(*msg, p + ".message"));
    if (m.content.kind != Content::Kind::kNone) ch.content = m.content.AllText();
    ch.refusal = m.refusal;
    ch.tool_calls = std::move(m.tool_calls);
    r.choices.push_back(std::move(ch));
  }
  if (auto u = j.find("usage"); u != j.end() && !u->is_null()) {
    GOVERN_ASSIGN_OR_RETURN(Usage usage, UsageFromJson(*u));
    r.usage = usage;
  }
  r.extra = Extras(j, {"id", "object", "created", "model", "choices", "usage"});
  return r;
}

Json ToJson(const ChatResponse& r) {
  Json choices = Json::array();
  for (const ChatChoice& c : r.choices) {
    Json msg = {{"role", "assistant"}, {"content", c.content ? Json(*c.content) : Json(nullptr)}};
    msg["refusal"] = c.refusal ? Json(*c.refusal) : Json(nullptr);
    if (!c.tool_calls.empty()) {
      Json calls = Json::array();
      for (const ToolCall& tc : c.tool_calls) calls.push_back(ToolCallToJson(tc));
      msg["tool_calls"] = std::move(calls);
    }
    choices.push_back({{"index", c.index},
                       {"message", std::move(msg)},
                       {"logprobs", nullptr},
                       {"finish_reason", c.finish_reason ? Json(*c.finish_reason) : Json(nullptr)}});
  }
  Json o = {{"id", r.id},
            {"object", "chat.completion"},
            {"created", r.created},
            {"model", r.model},
            {"choices", std::move(choices)}};
  if (r.usage) o["usage"] = ToJson(*r.usage);
  MergeExtras(o, r.extra);
  return o;
}

// ---- Chat chunk ----

Result<ChatChunk> ParseChatChunk(std::string_view data) {
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(data, "chat completion chunk"));
  if (!j.is_object()) return InvalidArgument("chat completion chunk must be a JSON object");
  ChatChunk c;
  GOVERN_ASSIGN_OR_RETURN(auto id, OptString(j, "id", ""));
  c.id = id.value_or("");
  GOVERN_ASSIGN_OR_RETURN(auto created, OptInt(j, "created", ""));
  c.created = created.value_or(0);
  GOVERN_ASSIGN_OR_RETURN(auto model, OptString(j, "model", ""));
  c.model = model.value_or("");
  if (auto choices = j.find("choices"); choices != j.end() && !choices->is_null()) {
    if (!choices->is_array()) return InvalidArgument("choices must be an array");
    for (size_t i = 0; i < choices->size(); ++i) {
      const Json& ch = (*choices)[i];
      std::string p = At("choices", i);
      if (!ch.is_object()) return InvalidArgument(p + " must be an object");
      ChunkChoice cc;
      GOVERN_ASSIGN_OR_RETURN(auto index, OptInt(ch, "index", p));
      cc.index = index.value_or(static_cast<int64_t>(i));
      GOVERN_ASSIGN_OR_RETURN(cc.finish_reason, OptString(ch, "finish_reason", p));
      if (auto d = ch.find("delta"); d != ch.end() && !d->is_null()) {
        if (!d->is_object()) return InvalidArgument(p + ".delta must be an object");
        std::string dp = p + ".delta";
        GOVERN_ASSIGN_OR_RETURN(cc.role, OptString(*d, "role", dp));
        GOVERN_ASSIGN_OR_RETURN(cc.content, OptString(*d, "content", dp));
        GOVERN_ASSIGN_OR_RETURN(cc.refusal, OptString(*d, "refusal", dp));
        if (auto tcs = d->find("tool_calls"); tcs != d->end() && !tcs->is_null()) {
          if (!tcs->is_array()) return InvalidArgument(dp + ".tool_calls must be an array");
          for (size_t k = 0; k < tcs->size(); ++k) {
            const Json& t = (*tcs)[k];
            std::string tp = At(dp + ".tool_calls", k);
            if (!t.is_object()) return InvalidArgument(tp + " must be an object");
            ToolCallDelta td;
            GOVERN_ASSIGN_OR_RETURN(auto ti, OptInt(t, "index", tp));
            td.index = ti.value_or(static_cast<int64_t>(k));
            GOVERN_ASSIGN_OR_RETURN(td.id, OptString(t, "id", tp));
            if (auto fn = t.find("function"); fn != t.end() && fn->is_object()) {
              GOVERN_ASSIGN_OR_RETURN(td.name, OptString(*fn, "name", tp + ".function"));
              GOVERN_ASSIGN_OR_RETURN(td.arguments, OptString(*fn, "arguments", tp + ".function"));
            }
            cc.tool_calls.push_back(std::move(td));
          }
        }
      }
      c.choices.push_back(std::move(cc));
    }
  }
  if (auto u = j.find("usage"); u != j.end() && !u->is_null()) {
    GOVERN_ASSIGN_OR_RETURN(Usage usage, UsageFromJson(*u));
    c.usage = usage;
  }
  c.extra = Extras(j, {"id", "object", "created", "model", "choices", "usage"});
  return c;
}

Json ToJson(const ChatChunk& c) {
  Json choices = Json::array();
  for (const ChunkChoice& ch : c.choices) {
    Json delta = Json::object();
    if (ch.role) delta["role"] = *ch.role;
    if (ch.content) delta["content"] = *ch.content;
    if (ch.refusal) delta["refusal"] = *ch.refusal;
    if (!ch.tool_calls.empty()) {
      Json calls = Json::array();
      for (const ToolCallDelta& t : ch.tool_calls) {
        Json tj = {{"index", t.index}};
        if (t.id) {
          tj["id"] = *t.id;
          tj["type"] = "function";
        }
        Json fn = Json::object();
        if (t.name) fn["name"] = *t.name;
        if (t.arguments) fn["arguments"] = *t.arguments;
        tj["function"] = std::move(fn);
        calls.push_back(std::move(tj));
      }
      delta["tool_calls"] = std::move(calls);
    }
    choices.push_back({{"index", ch.index},
                       {"delta", std::move(delta)},
                       {"logprobs", nullptr},
                       {"finish_reason", ch.finish_reason ? Json(*ch.finish_reason) : Json(nullptr)}});
  }
  Json o = {{"id", c.id},
            {"object", "chat.completion.chunk"},
            {"created", c.created},
            {"model", c.model},
            {"choices", std::move(choices)}};
  if (c.usage) o["usage"] = ToJson(*c.usage);
  MergeExtras(o, c.extra);
  return o;
}

// ---- Responses ----

Result<ResponseItem> ResponseItemFromJson(const Json& j, std::string_view path) {
  std::string p(path);
  if (!j.is_object()) return InvalidArgument(p + " must be an object");
  ResponseItem item;
  GOVERN_ASSIGN_OR_RETURN(auto type, OptString(j, "type", p));
  GOVERN_ASSIGN_OR_RETURN(auto id, OptString(j, "id", p));
  item.id = id.value_or("");
  GOVERN_ASSIGN_OR_RETURN(auto status, OptString(j, "status", p));
  item.status = status.value_or("");
  // An item with a role and no type is a message ("easy input message").
  if (!type || *type == "message") {
    item.type = ResponseItem::Type::kMessage;
    GOVERN_ASSIGN_OR_RETURN(item.role, ReqString(j, "role", p));
    GOVERN_ASSIGN_OR_RETURN(Content c, ContentFromJson(j, p));
    item.text = c.AllText();
    if (c.kind == Content::Kind::kParts) item.parts = std::move(c.parts);
    return item;
  }
  if (*type == "function_call") {
    item.type = ResponseItem::Type::kFunctionCall;
    GOVERN_ASSIGN_OR_RETURN(item.call_id, ReqString(j, "call_id", p));
    GOVERN_ASSIGN_OR_RETURN(item.name, ReqString(j, "name", p));
    GOVERN_ASSIGN_OR_RETURN(auto args, OptString(j, "arguments", p));
    item.arguments = args.value_or("");
    return item;
  }
  if (*type == "function_call_output") {
    item.type = ResponseItem::Type::kFunctionCallOutput;
    GOVERN_ASSIGN_OR_RETURN(item.call_id, ReqString(j, "call_id", p));
    auto out = j.find("output");
    if (out != j.end() && out->is_string())
      item.output = out->get<std::string>();
    else if (out != j.end() && !out->is_null())
      item.output = detail::Dump(*out);
    return item;
  }
  item.type = ResponseItem::Type::kOther;
  item.raw = j;
  return item;
}

Json ToJson(const ResponseItem& item) {
  switch (item.type) {
    case ResponseItem::Type::kMessage: {
      Json o = {{"type", "message"}, {"role", item.role}};
      if (!item.id.empty()) o["id"] = item.id;
      if (!item.status.empty()) o["status"] = item.status;
      if (!item.parts.empty()) {
        o["content"] = item.parts;
      } else if (item.role == "assistant") {
        o["content"] =
            Json::array({{{"type", "output_text"}, {"text", item.text}, {"annotations", Json::array()}}});
      } else {
        o["content"] = item.text;
      }
      return o;
    }
    case ResponseItem::Type::kFunctionCall: {
      Json o = {{"type", "function_call"},
                {"call_id", item.call_id},
                {"name", item.name},
                {"arguments", item.arguments}};
      if (!item.id.empty()) o["id"] = item.id;
      if (!item.status.empty()) o["status"] = item.status;
      return o;
    }
    case ResponseItem::Type::kFunctionCallOutput: {
      Json o = {{"type", "function_call_output"}, {"call_id", item.call_id}, {"output", item.output}};
      if (!item.id.empty()) o["id"] = item.id;
      return o;
    }
    case ResponseItem::Type::kOther:
      return item.raw;
  }
  return nullptr;
}

Result<ResponsesRequest> ParseResponsesRequest(std::string_view body) {
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(body, "request body"));
  if (!j.is_object()) return InvalidArgument("request body must be a JSON object");
  ResponsesRequest r;
  GOVERN_ASSIGN_OR_RETURN(r.model, ReqString(j, "model", ""));
  if (auto in = j.find("input"); in != j.end() && !in->is_null()) {
    if (in->is_string()) {
      r.input_text = in->get<std::string>();
    } else if (in->is_array()) {
      for (size_t i = 0; i < in->size(); ++i) {
        GOVERN_ASSIGN_OR_RETURN(ResponseItem item, ResponseItemFromJson((*in)[i], At("input", i)));
        r.input.push_back(std::move(item));
      }
    } else {
      return InvalidArgument("input must be a string or an array");
    }
  }
  GOVERN_ASSIGN_OR_RETURN(auto instr, OptString(j, "instructions", ""));
  r.instructions = instr.value_or("");
  if (auto tools = j.find("tools"); tools != j.end() && !tools->is_null()) {
    if (!tools->is_array()) return InvalidArgument("tools must be an array");
    for (size_t i = 0; i < tools->size(); ++i) {
      const Json& t = (*tools)[i];
      if (!t.is_object()) return InvalidArgument(At("tools", i) + " must be an object");
      if (detail::StrField(t, "type") == "function") {
        GOVERN_ASSIGN_OR_RETURN(FunctionTool ft, FunctionToolFromJson(t, At("tools", i), /*nested=*/false));
        r.tools.push_back(std::move(ft));
      } else {
        r.other_tools.push_back(t);
      }
    }
  }
  GOVERN_ASSIGN_OR_RETURN(r.tool_choice, ToolChoiceFromJson(j, ""));
  GOVERN_ASSIGN_OR_RETURN(auto stream, OptBool(j, "stream", ""));
  r.stream = stream.value_or(false);
  GOVERN_ASSIGN_OR_RETURN(r.max_output_tokens, OptInt(j, "max_output_tokens", ""));
  GOVERN_ASSIGN_OR_RETURN(r.temperature, OptNumber(j, "temperature", ""));
  GOVERN_ASSIGN_OR_RETURN(r.top_p, OptNumber(j, "top_p", ""));
  GOVERN_ASSIGN_OR_RETURN(auto prev, OptString(j, "previous_response_id", ""));
  r.previous_response_id = prev.value_or("");
  r.extra = Extras(j, {"model", "input", "instructions", "tools", "tool_choice", "stream",
                       "max_output_tokens", "temperature", "top_p", "previous_response_id"});
  return r;
}

Json ToJson(const ResponsesRequest& r) {
  Json o = {{"model", r.model}};
  if (r.input_text) {
    o["input"] = *r.input_text;
  } else {
    Json items = Json::array();
    for (const ResponseItem& it : r.input) items.push_back(ToJson(it));
    o["input"] = std::move(items);
  }
  if (!r.instructions.empty()) o["instructions"] = r.instructions;
  if (!r.tools.empty() || !r.other_tools.empty()) {
    Json tools = Json::array();
    for (const FunctionTool& t : r.tools) {
      Json f = FunctionToolBody(t);
      f["type"] = "function";
      tools.push_back(std::move(f));
    }
    for (const Json& t : r.other_tools) tools.push_back(t);
    o["tools"] = std::move(tools);
  }
  if (r.tool_choice.mode != ToolChoice::Mode::kUnset)
    o["tool_choice"] = ToolChoiceToJson(r.tool_choice, false);
  if (r.stream) o["stream"] = true;
  if (r.max_output_tokens) o["max_output_tokens"] = *r.max_output_tokens;
  if (r.temperature) o["temperature"] = *r.temperature;
  if (r.top_p) o["top_p"] = *r.top_p;
  if (!r.previous_response_id.empty()) o["previous_response_id"] = r.previous_response_id;
  MergeExtras(o, r.extra);
  return o;
}

Result<ResponsesUsage> ResponsesUsageFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("usage must be an object");
  ResponsesUsage u;
  u.input_tokens = IntOr0(j, "input_tokens");
  u.output_tokens = IntOr0(j, "output_tokens");
  u.total_tokens = IntOr0(j, "total_tokens");
  if (auto d = j.find("input_tokens_details"); d != j.end() && d->is_object())
    u.cached_tokens = IntOr0(*d, "cached_tokens");
  if (auto d = j.find("output_tokens_details"); d != j.end() && d->is_object())
    u.reasoning_tokens = IntOr0(*d, "reasoning_tokens");
  return u;
}

Json ToJson(const ResponsesUsage& u) {
  return {{"input_tokens", u.input_tokens},
          {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
          {"output_tokens", u.output_tokens},
          {"output_tokens_details", {{"reasoning_tokens", u.reasoning_tokens}}},
          {"total_tokens", u.total_tokens}};
}

std::string ResponsesResponse::OutputText() const {
  std::string out;
  for (const ResponseItem& it : output) {
    if (it.type != ResponseItem::Type::kMessage) continue;
    if (it.parts.empty()) {
      out += it.text;
      continue;
    }
    for (const Json& p : it.parts)
      if (detail::StrField(p, "type") == "output_text" && p.contains("text") && p["text"].is_string())
        out += p["text"].get<std::string>();
  }
  return out;
}

Result<ResponsesResponse> ResponsesResponseFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("response must be a JSON object");
  ResponsesResponse r;
  GOVERN_ASSIGN_OR_RETURN(auto id, OptString(j, "id", ""));
  r.id = id.value_or("");
  GOVERN_ASSIGN_OR_RETURN(auto created, OptInt(j, "created_at", ""));
  r.created_at = created.value_or(0);
  GOVERN_ASSIGN_OR_RETURN(auto model, OptString(j, "model", ""));
  r.model = model.value_or("");
  GOVERN_ASSIGN_OR_RETURN(auto status, OptString(j, "status", ""));
  r.status = status.value_or("");
  if (auto out = j.find("output"); out != j.end() && !out->is_null()) {
    if (!out->is_array()) return InvalidArgument("output must be an array");
    for (size_t i = 0; i < out->size(); ++i) {
      GOVERN_ASSIGN_OR_RETURN(ResponseItem item, ResponseItemFromJson((*out)[i], At("output", i)));
      r.output.push_back(std::move(item));
    }
  }
  if (auto u = j.find("usage"); u != j.end() && !u->is_null()) {
    GOVERN_ASSIGN_OR_RETURN(ResponsesUsage usage, ResponsesUsageFromJson(*u));
    r.usage = usage;
  }
  r.extra = Extras(j, {"id", "object", "created_at", "model", "status", "output", "usage"});
  return r;
}

Result<ResponsesResponse> ParseResponsesResponse(std::string_view body) {
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(body, "response"));
  return ResponsesResponseFromJson(j);
}

Json ToJson(const ResponsesResponse& r) {
  Json out = Json::array();
  for (const ResponseItem& it : r.output) out.push_back(ToJson(it));
  Json o = {{"id", r.id},       {"object", "response"}, {"created_at", r.created_at},
            {"model", r.model}, {"status", r.status},   {"output", std::move(out)}};
  o["usage"] = r.usage ? ToJson(*r.usage) : Json(nullptr);
  MergeExtras(o, r.extra);
  return o;
}

Result<ResponsesEvent> ParseResponsesEvent(std::string_view data) {
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(data, "response stream event"));
  if (!j.is_object()) return InvalidArgument("response stream event must be a JSON object");
  ResponsesEvent e;
  GOVERN_ASSIGN_OR_RETURN(e.type, ReqString(j, "type", ""));
  if (auto resp = j.find("response"); resp != j.end() && resp->is_object()) {
    GOVERN_ASSIGN_OR_RETURN(ResponsesResponse r, ResponsesResponseFromJson(*resp));
    e.response = std::move(r);
  }
  e.body = std::move(j);
  return e;
}

// ---- Embeddings ----

Result<EmbeddingsRequest> ParseEmbeddingsRequest(std::string_view body) {
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(body, "request body"));
  if (!j.is_object()) return InvalidArgument("request body must be a JSON object");
  EmbeddingsRequest r;
  GOVERN_ASSIGN_OR_RETURN(r.model, ReqString(j, "model", ""));
  auto in = j.find("input");
  if (in == j.end() || in->is_null()) return InvalidArgument("input is required");
  auto tokens = [](const Json& a) -> Result<std::vector<int64_t>> {
    std::vector<int64_t> t;
    for (const Json& x : a) {
      if (!x.is_number_integer()) return InvalidArgument("input must be strings or arrays of token ids");
      t.push_back(x.get<int64_t>());
    }
    return t;
  };
  if (in->is_string()) {
    r.input.push_back(in->get<std::string>());
  } else if (in->is_array()) {
    if (!in->empty() && (*in)[0].is_number_integer()) {
      GOVERN_ASSIGN_OR_RETURN(auto t, tokens(*in));
      r.input_tokens.push_back(std::move(t));
    } else {
      for (const Json& x : *in) {
        if (x.is_string()) {
          r.input.push_back(x.get<std::string>());
        } else if (x.is_array()) {
          GOVERN_ASSIGN_OR_RETURN(auto t, tokens(x));
          r.input_tokens.push_back(std::move(t));
        } else {
          return InvalidArgument("input must be strings or arrays of token ids");
        }
      }
    }
  } else {
    return InvalidArgument("input must be a string or an array");
  }
  GOVERN_ASSIGN_OR_RETURN(auto fmt, OptString(j, "encoding_format", ""));
  r.encoding_format = fmt.value_or("");
  if (!r.encoding_format.empty() && r.encoding_format != "float" && r.encoding_format != "base64")
    return InvalidArgument("encoding_format must be float or base64");
  GOVERN_ASSIGN_OR_RETURN(r.dimensions, OptInt(j, "dimensions", ""));
  if (r.dimensions && (*r.dimensions < 1 || *r.dimensions > 65536))
    return InvalidArgument("dimensions must be between 1 and 65536");
  r.extra = Extras(j, {"model", "input", "encoding_format", "dimensions"});
  return r;
}

Json ToJson(const EmbeddingsRequest& r) {
  Json o = {{"model", r.model}};
  if (!r.input_tokens.empty() && r.input.empty()) {
    o["input"] = r.input_tokens.size() == 1 ? Json(r.input_tokens[0]) : Json(r.input_tokens);
  } else if (r.input.size() == 1 && r.input_tokens.empty()) {
    o["input"] = r.input[0];
  } else {
    Json in = Json::array();
    for (const std::string& s : r.input) in.push_back(s);
    for (const auto& t : r.input_tokens) in.push_back(t);
    o["input"] = std::move(in);
  }
  if (!r.encoding_format.empty()) o["encoding_format"] = r.encoding_format;
  if (r.dimensions) o["dimensions"] = *r.dimensions;
  MergeExtras(o, r.extra);
  return o;
}

namespace {
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string FloatsToBase64(const std::vector<float>& v) {
  std::string bytes(v.size() * 4, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    for (int b = 0; b < 4; ++b)
      bytes[i * 4 + static_cast<size_t>(b)] = static_cast<char>((bits >> (8 * b)) & 0xff);
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t n = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                 static_cast<uint8_t>(bytes[i + 2]);
    out += kB64[(n >> 18) & 63];
    out += kB64[(n >> 12) & 63];
    out += kB64[(n >> 6) & 63];
    out += kB64[n & 63];
  }
  if (i < bytes.size()) {
    uint32_t n = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += kB64[(n >> 18) & 63];
    out += kB64[(n >> 12) & 63];
    out += (i + 1 < bytes.size()) ? kB64[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Result<std::vector<float>> Base64ToFloats(std::string_view s) {
  std::string bytes;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    const char* p = std::strchr(kB64, c);
    if (c == '\0' || p == nullptr) return InvalidArgument("embedding: invalid base64");
    acc = (acc << 6) | static_cast<uint32_t>(p - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (bytes.size() % 4 != 0) return InvalidArgument("embedding: base64 is not a float32 array");
  std::vector<float> v(bytes.size() / 4);
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t b = 0;
    for (int k = 0; k < 4; ++k)
      b |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[i * 4 + static_cast<size_t>(k)])) << (8 * k);
    std::memcpy(&v[i], &b, 4);
  }
  return v;
}
}  // namespace

Result<EmbeddingsResponse> ParseEmbeddingsResponse(std::string_view body) {
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(body, "embeddings response"));
  if (!j.is_object()) return InvalidArgument("embeddings response must be a JSON object");
  EmbeddingsResponse r;
  GOVERN_ASSIGN_OR_RETURN(auto model, OptString(j, "model", ""));
  r.model = model.value_or("");
  auto data = j.find("data");
  if (data == j.end() || !data->is_array()) return InvalidArgument("data must be an array");
  for (size_t i = 0; i < data->size(); ++i) {
    const Json& d = (*data)[i];
    if (!d.is_object() || !d.contains("embedding"))
      return InvalidArgument(At("data", i) + ".embedding is required");
    const Json& e = d["embedding"];
    if (e.is_string()) {
      r.base64 = true;
      GOVERN_ASSIGN_OR_RETURN(auto v, Base64ToFloats(e.get<std::string>()));
      r.data.push_back(std::move(v));
    } else if (e.is_array()) {
      std::vector<float> v;
      for (const Json& x : e) {
        if (!x.is_number()) return InvalidArgument(At("data", i) + ".embedding must hold numbers");
        v.push_back(x.get<float>());
      }
      r.data.push_back(std::move(v));
    } else {
      return InvalidArgument(At("data", i) + ".embedding must be an array or base64");
    }
  }
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    r.prompt_tokens = IntOr0(*u, "prompt_tokens");
    r.total_tokens = IntOr0(*u, "total_tokens");
  }
  return r;
}

Json ToJson(const EmbeddingsResponse& r) {
  Json data = Json::array();
  for (size_t i = 0; i < r.data.size(); ++i) {
    Json e = {{"object", "embedding"}, {"index", i}};
    if (r.base64)
      e["embedding"] = FloatsToBase64(r.data[i]);
    else
      e["embedding"] = r.data[i];
    data.push_back(std::move(e));
  }
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", r.model},
          {"usage", {{"prompt_tokens", r.prompt_tokens}, {"total_tokens", r.total_tokens}}}};
}

std::string EmbeddingsBody(const EmbeddingsResponse& r) {
  size_t floats = 0;
  for (const auto& v : r.data) floats += v.size();
  std::string out;
  out.reserve(96 + r.model.size() + r.data.size() * 48 + (r.base64 ? floats * 4 / 3 + 4 : floats * 16));
  out += R"({"object":"list","data":[)";
  char buf[32];
  for (size_t i = 0; i < r.data.size(); ++i) {
    if (i > 0) out += ',';
    out += R"({"object":"embedding","index":)";
    out += std::to_string(i);
    out += R"(,"embedding":)";
    if (r.base64) {
      out += '"';
      out += FloatsToBase64(r.data[i]);
      out += '"';
    } else {
      out += '[';
      for (size_t k = 0; k < r.data[i].size(); ++k) {
        if (k > 0) out += ',';
        const float x = r.data[i][k];
        if (!std::isfinite(x)) {  // JSON has no NaN or infinity (nlohmann writes null)
          out += "null";
          continue;
        }
        auto res = std::to_chars(buf, buf + sizeof(buf), x);
        out.append(buf, res.ptr);
      }
      out += ']';
    }
    out += '}';
  }
  out += R"(],"model":)";
  out += Json(r.model).dump(-1, ' ', false, Json::error_handler_t::replace);
  out += R"(,"usage":{"prompt_tokens":)";
  out += std::to_string(r.prompt_tokens);
  out += R"(,"total_tokens":)";
  out += std::to_string(r.total_tokens);
  out += "}}";
  return out;
}

Json ModelsListJson(const std::vector<Model>& models) {
  Json data = Json::array();
  for (const Model& m : models)
    data.push_back({{"id", m.id}, {"object", "model"}, {"created", m.created}, {"owned_by", m.owned_by}});
  return {{"object", "list"}, {"data", std::move(data)}};
}

Result<std::vector<Model>> ParseModelsList(std::string_view body) {
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(body, "models list"));
  if (!j.is_object() || !j.contains("data") || !j["data"].is_array())
    return InvalidArgument("models list: data must be an array");
  std::vector<Model> out;
  for (size_t i = 0; i < j["data"].size(); ++i) {
    const Json& m = j["data"][i];
    if (!m.is_object()) return InvalidArgument(At("data", i) + " must be an object");
    Model model;
    GOVERN_ASSIGN_OR_RETURN(model.id, ReqString(m, "id", At("data", i)));
    model.created = IntOr0(m, "created");
    GOVERN_ASSIGN_OR_RETURN(auto owner, OptString(m, "owned_by", At("data", i)));
    model.owned_by = owner.value_or("");
    out.push_back(std::move(model));
  }
  return out;
}

Json ErrorJson(std::string_view message, std::string_view type, std::string_view code) {
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", nullptr},
            {"code", code.empty() ? Json(nullptr) : Json(code)}}}};
}

}  // namespace govern::gateway::openai
