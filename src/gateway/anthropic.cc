#include "gateway/anthropic.h"

#include "gateway/json_util.h"

namespace govern::gateway::anthropic {

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

int64_t IntOr0(const Json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  return static_cast<int64_t>(it->get<double>());
}

// The text of a string or of text blocks.
std::string TextOf(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  std::string out;
  if (!j.is_array()) return out;
  for (const Json& b : j) {
    if (!b.is_object()) continue;
    auto t = b.find("type");
    auto x = b.find("text");
    if (t != b.end() && t->is_string() && *t == "text" && x != b.end() && x->is_string())
      out += x->get<std::string>();
  }
  return out;
}

}  // namespace

Result<Block> BlockFromJson(const Json& j, std::string_view path) {
  std::string p(path);
  if (!j.is_object()) return InvalidArgument(p + " must be an object");
  GOVERN_ASSIGN_OR_RETURN(std::string type, ReqString(j, "type", p));
  Block b;
  if (type == "text") {
    b.type = Block::Type::kText;
    GOVERN_ASSIGN_OR_RETURN(b.text, ReqString(j, "text", p));
    b.raw = Extras(j, {"type", "text"});
  } else if (type == "tool_use") {
    b.type = Block::Type::kToolUse;
    GOVERN_ASSIGN_OR_RETURN(b.id, ReqString(j, "id", p));
    GOVERN_ASSIGN_OR_RETURN(b.name, ReqString(j, "name", p));
    auto in = j.find("input");
    b.input = (in == j.end() || in->is_null()) ? Json::object() : *in;
    if (!b.input.is_object()) return InvalidArgument(p + ".input must be an object");
    b.raw = Extras(j, {"type", "id", "name", "input"});
  } else if (type == "tool_result") {
    b.type = Block::Type::kToolResult;
    GOVERN_ASSIGN_OR_RETURN(b.tool_use_id, ReqString(j, "tool_use_id", p));
    if (auto c = j.find("content"); c != j.end() && !c->is_null()) {
      if (!c->is_string() && !c->is_array())
        return InvalidArgument(p + ".content must be a string or an array");
      b.result_content = *c;
      b.result_text = TextOf(*c);
    }
    GOVERN_ASSIGN_OR_RETURN(auto err, OptBool(j, "is_error", p));
    b.is_error = err.value_or(false);
    b.raw = Extras(j, {"type", "tool_use_id", "content", "is_error"});
  } else {
    b.type = Block::Type::kOther;
    b.raw = j;
  }
  return b;
}

Json ToJson(const Block& b) {
  Json o;
  switch (b.type) {
    case Block::Type::kText:
      o = {{"type", "text"}, {"text", b.text}};
      break;
    case Block::Type::kToolUse:
      o = {{"type", "tool_use"},
           {"id", b.id},
           {"name", b.name},
           {"input", b.input.is_null() ? Json::object() : b.input}};
      break;
    case Block::Type::kToolResult:
      o = {{"type", "tool_result"}, {"tool_use_id", b.tool_use_id}};
      if (!b.result_content.is_null()) o["content"] = b.result_content;
      if (b.is_error) o["is_error"] = true;
      break;
    case Block::Type::kOther:
      return b.raw;
  }
  MergeExtras(o, b.raw);
  return o;
}

Result<MessagesRequest> MessagesRequestFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("request body must be a JSON object");
  MessagesRequest r;
  GOVERN_ASSIGN_OR_RETURN(r.model, ReqString(j, "model", ""));
  GOVERN_ASSIGN_OR_RETURN(auto mt, OptInt(j, "max_tokens", ""));
  if (!mt) return InvalidArgument("max_tokens is required");
  if (*mt < 1) return InvalidArgument("max_tokens must be at least 1");
  r.max_tokens = *mt;
  auto msgs = j.find("messages");
  if (msgs == j.end() || !msgs->is_array()) return InvalidArgument("messages must be an array");
  for (size_t i = 0; i < msgs->size(); ++i) {
    const Json& m = (*msgs)[i];
    std::string p = At("messages", i);
    if (!m.is_object()) return InvalidArgument(p + " must be an object");
    Message msg;
    GOVERN_ASSIGN_OR_RETURN(msg.role, ReqString(m, "role", p));
    if (msg.role != "user" && msg.role != "assistant")
      return InvalidArgument(p + ".role must be user or assistant");
    auto c = m.find("content");
    if (c == m.end() || c->is_null()) return InvalidArgument(p + ".content is required");
    if (c->is_string()) {
      msg.content_is_string = true;
      msg.content.push_back(Block::Text(c->get<std::string>()));
    } else if (c->is_array()) {
      for (size_t k = 0; k < c->size(); ++k) {
        GOVERN_ASSIGN_OR_RETURN(Block b, BlockFromJson((*c)[k], At(p + ".content", k)));
        msg.content.push_back(std::move(b));
      }
    } else {
      return InvalidArgument(p + ".content must be a string or an array");
    }
    r.messages.push_back(std::move(msg));
  }
  if (auto s = j.find("system"); s != j.end() && !s->is_null()) {
    if (!s->is_string() && !s->is_array()) return InvalidArgument("system must be a string or an array");
    r.system = *s;
    r.system_text = TextOf(*s);
  }
  if (auto tools = j.find("tools"); tools != j.end() && !tools->is_null()) {
    if (!tools->is_array()) return InvalidArgument("tools must be an array");
    for (size_t i = 0; i < tools->size(); ++i) {
      const Json& t = (*tools)[i];
      std::string p = At("tools", i);
      if (!t.is_object()) return InvalidArgument(p + " must be an object");
      Tool tool;
      GOVERN_ASSIGN_OR_RETURN(tool.name, ReqString(t, "name", p));
      GOVERN_ASSIGN_OR_RETURN(auto d, OptString(t, "description", p));
      tool.description = d.value_or("");
      if (auto s = t.find("input_schema"); s != t.end()) tool.input_schema = *s;
      tool.extra = Extras(t, {"name", "description", "input_schema"});
      r.tools.push_back(std::move(tool));
    }
  }
  if (auto tc = j.find("tool_choice"); tc != j.end() && !tc->is_null()) {
    if (!tc->is_object()) return InvalidArgument("tool_choice must be an object");
    GOVERN_ASSIGN_OR_RETURN(std::string type, ReqString(*tc, "type", "tool_choice"));
    if (type == "auto")
      r.tool_choice.mode = ToolChoice::Mode::kAuto;
    else if (type == "any")
      r.tool_choice.mode = ToolChoice::Mode::kAny;
    else if (type == "none")
      r.tool_choice.mode = ToolChoice::Mode::kNone;
    else if (type == "tool") {
      r.tool_choice.mode = ToolChoice::Mode::kTool;
      GOVERN_ASSIGN_OR_RETURN(r.tool_choice.name, ReqString(*tc, "name", "tool_choice"));
    } else {
      return InvalidArgument("tool_choice.type must be auto, any, tool or none");
    }
    GOVERN_ASSIGN_OR_RETURN(r.tool_choice.disable_parallel_tool_use,
                            OptBool(*tc, "disable_parallel_tool_use", "tool_choice"));
  }
  if (auto ss = j.find("stop_sequences"); ss != j.end() && !ss->is_null()) {
    if (!ss->is_array()) return InvalidArgument("stop_sequences must be an array of strings");
    for (const Json& s : *ss) {
      if (!s.is_string()) return InvalidArgument("stop_sequences must be an array of strings");
      r.stop_sequences.push_back(s.get<std::string>());
    }
  }
  GOVERN_ASSIGN_OR_RETURN(auto stream, OptBool(j, "stream", ""));
  r.stream = stream.value_or(false);
  GOVERN_ASSIGN_OR_RETURN(r.temperature, OptNumber(j, "temperature", ""));
  GOVERN_ASSIGN_OR_RETURN(r.top_p, OptNumber(j, "top_p", ""));
  GOVERN_ASSIGN_OR_RETURN(r.top_k, OptInt(j, "top_k", ""));
  Json extra = Extras(j, {"model", "max_tokens", "messages", "system", "tools", "tool_choice",
                          "stop_sequences", "stream", "temperature", "top_p", "top_k"});
  if (auto md = j.find("metadata"); md != j.end() && md->is_object()) {
    GOVERN_ASSIGN_OR_RETURN(auto uid, OptString(*md, "user_id", "metadata"));
    r.metadata_user_id = uid.value_or("");
    Json rest = Extras(*md, {"user_id"});
    if (rest.empty())
      extra.erase("metadata");
    else
      extra["metadata"] = std::move(rest);
  }
  r.extra = std::move(extra);
  return r;
}

Result<MessagesRequest> ParseMessagesRequest(std::string_view body) {
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(body, "request body"));
  return MessagesRequestFromJson(j);
}

Json ToJson(const MessagesRequest& r) {
  Json o = {{"model", r.model}, {"max_tokens", r.max_tokens}};
  Json msgs = Json::array();
  for (const Message& m : r.messages) {
    Json content;
    if (m.content_is_string && m.content.size() == 1 && m.content[0].type == Block::Type::kText &&
        m.content[0].raw.empty()) {
      content = m.content[0].text;
    } else {
      content = Json::array();
      for (const Block& b : m.content) content.push_back(ToJson(b));
    }
    msgs.push_back({{"role", m.role}, {"content", std::move(content)}});
  }
  o["messages"] = std::move(msgs);
  if (!r.system.is_null())
    o["system"] = r.system;
  else if (!r.system_text.empty())
    o["system"] = r.system_text;
  if (!r.tools.empty()) {
    Json tools = Json::array();
    for (const Tool& t : r.tools) {
      Json tj = {{"name", t.name}};
      if (!t.description.empty()) tj["description"] = t.description;
      if (!t.input_schema.is_null()) tj["input_schema"] = t.input_schema;
      MergeExtras(tj, t.extra);
      tools.push_back(std::move(tj));
    }
    o["tools"] = std::move(tools);
  }
  if (r.tool_choice.mode != ToolChoice::Mode::kUnset) {
    Json tc;
    switch (r.tool_choice.mode) {
      case ToolChoice::Mode::kAuto:
        tc = {{"type", "auto"}};
        break;
      case ToolChoice::Mode::kAny:
        tc = {{"type", "any"}};
        break;
      case ToolChoice::Mode::kNone:
        tc = {{"type", "none"}};
        break;
      case ToolChoice::Mode::kTool:
        tc = {{"type", "tool"}, {"name", r.tool_choice.name}};
        break;
      case ToolChoice::Mode::kUnset:
        break;
    }
    if (r.tool_choice.disable_parallel_tool_use)
      tc["disable_parallel_tool_use"] = *r.tool_choice.disable_parallel_tool_use;
    o["tool_choice"] = std::move(tc);
  }
  if (!r.stop_sequences.empty()) o["stop_sequences"] = r.stop_sequences;
  if (r.stream) o["stream"] = true;
  if (r.temperature) o["temperature"] = *r.temperature;
  if (r.top_p) o["top_p"] = *r.top_p;
  if (r.top_k) o["top_k"] = *r.top_k;
  if (!r.metadata_user_id.empty()) o["metadata"] = {{"user_id", r.metadata_user_id}};
  for (auto it = r.extra.begin(); it != r.extra.end(); ++it) {
    if (it.key() == "metadata" && o.contains("metadata") && it.value().is_object()) {
      for (auto m = it.value().begin(); m != it.value().end(); ++m) o["metadata"][m.key()] = m.value();
    } else if (!o.contains(it.key())) {
      o[it.key()] = it.value();
    }
  }
  return o;
}

Result<Usage> UsageFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("usage must be an object");
  Usage u;
  u.input_tokens = IntOr0(j, "input_tokens");
  u.output_tokens = IntOr0(j, "output_tokens");
  u.cache_creation_input_tokens = IntOr0(j, "cache_creation_input_tokens");
  u.cache_read_input_tokens = IntOr0(j, "cache_read_input_tokens");
  return u;
}

Json ToJson(const Usage& u) {
  return {{"input_tokens", u.input_tokens},
          {"cache_creation_input_tokens", u.cache_creation_input_tokens},
          {"cache_read_input_tokens", u.cache_read_input_tokens},
          {"output_tokens", u.output_tokens}};
}

namespace {
Result<MessagesResponse> ResponseFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("message must be a JSON object");
  MessagesResponse r;
  GOVERN_ASSIGN_OR_RETURN(auto id, OptString(j, "id", ""));
  r.id = id.value_or("");
  GOVERN_ASSIGN_OR_RETURN(auto model, OptString(j, "model", ""));
  r.model = model.value_or("");
  if (auto c = j.find("content"); c != j.end() && !c->is_null()) {
    if (!c->is_array()) return InvalidArgument("content must be an array");
    for (size_t i = 0; i < c->size(); ++i) {
      GOVERN_ASSIGN_OR_RETURN(Block b, BlockFromJson((*c)[i], At("content", i)));
      r.content.push_back(std::move(b));
    }
  }
  GOVERN_ASSIGN_OR_RETURN(r.stop_reason, OptString(j, "stop_reason", ""));
  GOVERN_ASSIGN_OR_RETURN(r.stop_sequence, OptString(j, "stop_sequence", ""));
  if (auto u = j.find("usage"); u != j.end() && !u->is_null()) {
    GOVERN_ASSIGN_OR_RETURN(r.usage, UsageFromJson(*u));
  }
  r.extra = Extras(j, {"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"});
  return r;
}
}  // namespace

Result<MessagesResponse> ParseMessagesResponse(std::string_view body) {
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(body, "message"));
  return ResponseFromJson(j);
}

Json ToJson(const MessagesResponse& r) {
  Json content = Json::array();
  for (const Block& b : r.content) content.push_back(ToJson(b));
  Json o = {{"id", r.id},
            {"type", "message"},
            {"role", "assistant"},
            {"model", r.model},
            {"content", std::move(content)},
            {"stop_reason", r.stop_reason ? Json(*r.stop_reason) : Json(nullptr)},
            {"stop_sequence", r.stop_sequence ? Json(*r.stop_sequence) : Json(nullptr)},
            {"usage", ToJson(r.usage)}};
  MergeExtras(o, r.extra);
  return o;
}

// ---- Stream events ----

std::string_view StreamEvent::Name(Type t) {
  switch (t) {
    case Type::kMessageStart:
      return "message_start";
    case Type::kContentBlockStart:
      return "content_block_start";
    case Type::kContentBlockDelta:
      return "content_block_delta";
    case Type::kContentBlockStop:
      return "content_block_stop";
    case Type::kMessageDelta:
      return "message_delta";
    case Type::kMessageStop:
      return "message_stop";
    case Type::kPing:
      return "ping";
    case Type::kError:
      return "error";
    case Type::kOther:
      return "other";
  }
  return "other";
}

Result<StreamEvent> ParseStreamEvent(std::string_view data) {
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJson(data, "message stream event"));
  if (!j.is_object()) return InvalidArgument("message stream event must be a JSON object");
  StreamEvent e;
  GOVERN_ASSIGN_OR_RETURN(std::string type, ReqString(j, "type", ""));
  if (type == "message_start") {
    e.type = StreamEvent::Type::kMessageStart;
    auto m = j.find("message");
    if (m == j.end()) return InvalidArgument("message_start: message is required");
    GOVERN_ASSIGN_OR_RETURN(e.message, ResponseFromJson(*m));
  } else if (type == "content_block_start") {
    e.type = StreamEvent::Type::kContentBlockStart;
    GOVERN_ASSIGN_OR_RETURN(auto idx, OptInt(j, "index", ""));
    if (!idx) return InvalidArgument("content_block_start: index is required");
    e.index = *idx;
    auto cb = j.find("content_block");
    if (cb == j.end()) return InvalidArgument("content_block_start: content_block is required");
    GOVERN_ASSIGN_OR_RETURN(e.block, BlockFromJson(*cb, "content_block"));
  } else if (type == "content_block_delta") {
    e.type = StreamEvent::Type::kContentBlockDelta;
    GOVERN_ASSIGN_OR_RETURN(auto idx, OptInt(j, "index", ""));
    if (!idx) return InvalidArgument("content_block_delta: index is required");
    e.index = *idx;
    auto d = j.find("delta");
    if (d == j.end() || !d->is_object())
      return InvalidArgument("content_block_delta: delta must be an object");
    GOVERN_ASSIGN_OR_RETURN(e.delta_type, ReqString(*d, "type", "delta"));
    const char* field = e.delta_type == "text_delta"         ? "text"
                        : e.delta_type == "input_json_delta" ? "partial_json"
                        : e.delta_type == "thinking_delta"   ? "thinking"
                        : e.delta_type == "signature_delta"  ? "signature"
                                                             : nullptr;
    if (field != nullptr) {
      GOVERN_ASSIGN_OR_RETURN(auto t, OptString(*d, field, "delta"));
      e.delta_text = t.value_or("");
    }
  } else if (type == "content_block_stop") {
    e.type = StreamEvent::Type::kContentBlockStop;
    GOVERN_ASSIGN_OR_RETURN(auto idx, OptInt(j, "index", ""));
    if (!idx) return InvalidArgument("content_block_stop: index is required");
    e.index = *idx;
  } else if (type == "message_delta") {
    e.type = StreamEvent::Type::kMessageDelta;
    if (auto d = j.find("delta"); d != j.end() && d->is_object()) {
      GOVERN_ASSIGN_OR_RETURN(e.stop_reason, OptString(*d, "stop_reason", "delta"));
      GOVERN_ASSIGN_OR_RETURN(e.stop_sequence, OptString(*d, "stop_sequence", "delta"));
    }
    if (auto u = j.find("usage"); u != j.end() && !u->is_null()) {
      if (!u->is_object()) return InvalidArgument("message_delta: usage must be an object");
      e.usage = *u;
    }
  } else if (type == "message_stop") {
    e.type = StreamEvent::Type::kMessageStop;
  } else if (type == "ping") {
    e.type = StreamEvent::Type::kPing;
  } else if (type == "error") {
    e.type = StreamEvent::Type::kError;
    if (auto err = j.find("error"); err != j.end() && err->is_object()) {
      GOVERN_ASSIGN_OR_RETURN(auto et, OptString(*err, "type", "error"));
      GOVERN_ASSIGN_OR_RETURN(auto em, OptString(*err, "message", "error"));
      e.error_type = et.value_or("");
      e.error_message = em.value_or("");
    }
  } else {
    e.type = StreamEvent::Type::kOther;
  }
  e.body = std::move(j);
  return e;
}

Json ToJson(const StreamEvent& e) {
  using T = StreamEvent::Type;
  switch (e.type) {
    case T::kMessageStart: {
      Json m = ToJson(e.message);
      return {{"type", "message_start"}, {"message", std::move(m)}};
    }
    case T::kContentBlockStart: {
      Json b = ToJson(e.block);
      // A tool_use block starts with empty input; its arguments follow as input_json_delta.
      if (e.block.type == Block::Type::kToolUse) b["input"] = Json::object();
      return {{"type", "content_block_start"}, {"index", e.index}, {"content_block", std::move(b)}};
    }
    case T::kContentBlockDelta: {
      Json d = {{"type", e.delta_type}};
      if (e.delta_type == "text_delta")
        d["text"] = e.delta_text;
      else if (e.delta_type == "input_json_delta")
        d["partial_json"] = e.delta_text;
      else if (e.delta_type == "thinking_delta")
        d["thinking"] = e.delta_text;
      else if (e.delta_type == "signature_delta")
        d["signature"] = e.delta_text;
      return {{"type", "content_block_delta"}, {"index", e.index}, {"delta", std::move(d)}};
    }
    case T::kContentBlockStop:
      return {{"type", "content_block_stop"}, {"index", e.index}};
    case T::kMessageDelta: {
      Json o = {{"type", "message_delta"},
                {"delta",
                 {{"stop_reason", e.stop_reason ? Json(*e.stop_reason) : Json(nullptr)},
                  {"stop_sequence", e.stop_sequence ? Json(*e.stop_sequence) : Json(nullptr)}}}};
      o["usage"] = e.usage.is_object() ? e.usage : Json({{"output_tokens", 0}});
      return o;
    }
    case T::kMessageStop:
      return {{"type", "message_stop"}};
    case T::kPing:
      return {{"type", "ping"}};
    case T::kError:
      return ErrorJson(e.error_type, e.error_message);
    case T::kOther:
      return e.body;
  }
  return e.body;
}

Json ErrorJson(std::string_view type, std::string_view message) {
  return {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}};
}

}  // namespace govern::gateway::anthropic
