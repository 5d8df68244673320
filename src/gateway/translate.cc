#include "gateway/translate.h"

#include <algorithm>

#include "gateway/json_util.h"

namespace govern::gateway {

using Json = nlohmann::json;
using detail::StrField;

namespace {

// "data:image/png;base64,AAAA" -> Anthropic base64 source; any other URL -> url source.
Json ImageSourceFromUrl(std::string_view url) {
  if (url.rfind("data:", 0) == 0) {
    size_t semi = url.find(';');
    size_t comma = url.find(',');
    if (semi != std::string_view::npos && comma != std::string_view::npos && semi < comma &&
        url.substr(semi, comma - semi) == ";base64") {
      return {{"type", "base64"},
              {"media_type", std::string(url.substr(5, semi - 5))},
              {"data", std::string(url.substr(comma + 1))}};
    }
  }
  return {{"type", "url"}, {"url", std::string(url)}};
}

std::string UrlFromImageSource(const Json& source) {
  std::string_view type = StrField(source, "type");
  if (type == "base64")
    return "data:" + std::string(StrField(source, "media_type")) + ";base64," +
           std::string(StrField(source, "data"));
  return std::string(StrField(source, "url"));
}

Result<anthropic::Block> BlockFromPart(const Json& part, std::string_view where) {
  std::string_view type = StrField(part, "type");
  if (type == "text") return anthropic::Block::Text(std::string(StrField(part, "text")));
  if (type == "image_url") {
    const Json* iu = part.contains("image_url") ? &part["image_url"] : nullptr;
    std::string url = iu == nullptr     ? ""
                      : iu->is_string() ? iu->get<std::string>()
                                        : std::string(StrField(*iu, "url"));
    if (url.empty()) return InvalidArgument(std::string(where) + ": image_url without a url");
    anthropic::Block b;
    b.type = anthropic::Block::Type::kOther;
    b.raw = {{"type", "image"}, {"source", ImageSourceFromUrl(url)}};
    return b;
  }
  return InvalidArgument(std::string(where) + ": content part type \"" + std::string(type) +
                         "\" cannot be sent to an Anthropic model");
}

Json InputFromArguments(const std::string& arguments) {
  if (arguments.empty()) return Json::object();
  Json j = Json::parse(arguments, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Json{{"arguments", arguments}};
  return j;
}

void AppendMessage(std::vector<anthropic::Message>& msgs, std::string role,
                   std::vector<anthropic::Block> blocks, bool as_string) {
  if (blocks.empty()) return;
  if (!msgs.empty() && msgs.back().role == role) {
    anthropic::Message& last = msgs.back();
    last.content_is_string = false;
    for (auto& b : blocks) last.content.push_back(std::move(b));
    return;
  }
  anthropic::Message m;
  m.role = std::move(role);
  m.content_is_string = as_string && blocks.size() == 1 && blocks[0].type == anthropic::Block::Type::kText;
  m.content = std::move(blocks);
  msgs.push_back(std::move(m));
}

}  // namespace

std::string FinishReasonFor(std::string_view r) {
  if (r == "max_tokens") return "length";
  if (r == "tool_use") return "tool_calls";
  if (r == "refusal") return "content_filter";
  return "stop";  // end_turn, stop_sequence, pause_turn
}

std::string StopReasonFor(std::string_view r) {
  if (r == "length") return "max_tokens";
  if (r == "tool_calls" || r == "function_call") return "tool_use";
  if (r == "content_filter") return "refusal";
  return "end_turn";
}

openai::Usage ChatUsageFrom(const anthropic::Usage& u) {
  openai::Usage o;
  o.prompt_tokens = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
  o.cached_tokens = u.cache_read_input_tokens;
  o.completion_tokens = u.output_tokens;
  o.total_tokens = o.prompt_tokens + o.completion_tokens;
  return o;
}

anthropic::Usage MessagesUsageFrom(const openai::Usage& u) {
  anthropic::Usage a;
  a.cache_read_input_tokens = u.cached_tokens;
  a.input_tokens = std::max<int64_t>(0, u.prompt_tokens - u.cached_tokens);
  a.output_tokens = u.completion_tokens;
  return a;
}

// ---- Requests ----

Result<anthropic::MessagesRequest> ChatToMessagesRequest(const openai::ChatRequest& req,
                                                         const ChatToMessagesOptions& options) {
  if (auto n = req.extra.find("n"); n != req.extra.end() && n->is_number_integer() && n->get<int64_t>() > 1)
    return InvalidArgument("n > 1 cannot be sent to an Anthropic model");
  anthropic::MessagesRequest out;
  out.model = req.model;
  out.max_tokens = req.max_completion_tokens.value_or(req.max_tokens.value_or(options.default_max_tokens));
  if (out.max_tokens < 1) return InvalidArgument("max_tokens must be at least 1");
  std::string system;
  for (size_t i = 0; i < req.messages.size(); ++i) {
    const openai::ChatMessage& m = req.messages[i];
    std::string where = "messages[" + std::to_string(i) + "]";
    if (m.role == "system" || m.role == "developer") {
      if (!system.empty()) system += "\n\n";
      system += m.content.AllText();
    } else if (m.role == "user") {
      std::vector<anthropic::Block> blocks;
      if (m.content.kind == openai::Content::Kind::kText) {
        blocks.push_back(anthropic::Block::Text(m.content.text));
      } else {
        for (const Json& p : m.content.parts) {
          GOVERN_ASSIGN_OR_RETURN(anthropic::Block b, BlockFromPart(p, where));
          blocks.push_back(std::move(b));
        }
      }
      AppendMessage(out.messages, "user", std::move(blocks), m.content.kind == openai::Content::Kind::kText);
    } else if (m.role == "assistant") {
      std::vector<anthropic::Block> blocks;
      std::string text = m.content.AllText();
      if (!text.empty()) blocks.push_back(anthropic::Block::Text(std::move(text)));
      for (const openai::ToolCall& tc : m.tool_calls) {
        anthropic::Block b;
        b.type = anthropic::Block::Type::kToolUse;
        b.id = tc.id;
        b.name = tc.name;
        b.input = InputFromArguments(tc.arguments);
        blocks.push_back(std::move(b));
      }
      AppendMessage(out.messages, "assistant", std::move(blocks), m.tool_calls.empty());
    } else if (m.role == "tool") {
      anthropic::Block b;
      b.type = anthropic::Block::Type::kToolResult;
      b.tool_use_id = m.tool_call_id;
      b.result_text = m.content.AllText();
      b.result_content = b.result_text;
      AppendMessage(out.messages, "user", {std::move(b)}, false);
    } else {
      return InvalidArgument(where + ".role \"" + m.role + "\" cannot be sent to an Anthropic model");
    }
  }
  if (!system.empty()) {
    out.system_text = system;
    out.system = system;
  }
  for (const openai::FunctionTool& t : req.tools) {
    anthropic::Tool tool;
    tool.name = t.name;
    tool.description = t.description;
    tool.input_schema =
        t.parameters.is_object() ? t.parameters : Json{{"type", "object"}, {"properties", Json::object()}};
    out.tools.push_back(std::move(tool));
  }
  using OM = openai::ToolChoice::Mode;
  using AM = anthropic::ToolChoice::Mode;
  switch (req.tool_choice.mode) {
    case OM::kUnset:
      break;
    case OM::kAuto:
      out.tool_choice.mode = AM::kAuto;
      break;
    case OM::kNone:
      out.tool_choice.mode = AM::kNone;
      break;
    case OM::kRequired:
      out.tool_choice.mode = AM::kAny;
      break;
    case OM::kFunction:
      out.tool_choice.mode = AM::kTool;
      out.tool_choice.name = req.tool_choice.function;
      break;
  }
  if (req.parallel_tool_calls == false && !req.tools.empty()) {
    if (out.tool_choice.mode == AM::kUnset) out.tool_choice.mode = AM::kAuto;
    if (out.tool_choice.mode != AM::kNone) out.tool_choice.disable_parallel_tool_use = true;
  }
  out.stop_sequences = req.stop;
  out.stream = req.stream;
  // OpenAI's temperature runs 0..2, Anthropic's 0..1.
  if (req.temperature) out.temperature = std::min(*req.temperature, 1.0);
  out.top_p = req.top_p;
  out.metadata_user_id = req.user;
  return out;
}

Result<openai::ChatRequest> MessagesToChatRequest(const anthropic::MessagesRequest& req) {
  openai::ChatRequest out;
  out.model = req.model;
  out.max_tokens = req.max_tokens;
  if (!req.system_text.empty()) {
    openai::ChatMessage sys;
    sys.role = "system";
    sys.content = openai::Content::Text(req.system_text);
    out.messages.push_back(std::move(sys));
  }
  for (size_t i = 0; i < req.messages.size(); ++i) {
    const anthropic::Message& m = req.messages[i];
    std::string where = "messages[" + std::to_string(i) + "]";
    if (m.role == "user") {
      openai::ChatMessage user;
      user.role = "user";
      user.content.kind = openai::Content::Kind::kParts;
      for (const anthropic::Block& b : m.content) {
        switch (b.type) {
          case anthropic::Block::Type::kToolResult: {
            openai::ChatMessage tool;
            tool.role = "tool";
            tool.tool_call_id = b.tool_use_id;
            tool.content = openai::Content::Text(b.is_error ? "Error: " + b.result_text : b.result_text);
            out.messages.push_back(std::move(tool));
            break;
          }
          case anthropic::Block::Type::kText:
            user.content.parts.push_back({{"type", "text"}, {"text", b.text}});
            break;
          case anthropic::Block::Type::kOther:
            if (StrField(b.raw, "type") == "image" && b.raw.contains("source")) {
              user.content.parts.push_back(
                  {{"type", "image_url"}, {"image_url", {{"url", UrlFromImageSource(b.raw["source"])}}}});
              break;
            }
            return InvalidArgument(where + ": content block type \"" + std::string(StrField(b.raw, "type")) +
                                   "\" cannot be sent to an OpenAI model");
          case anthropic::Block::Type::kToolUse:
            return InvalidArgument(where + ": tool_use in a user message");
        }
      }
      if (!user.content.parts.empty()) {
        bool all_text = std::all_of(user.content.parts.begin(), user.content.parts.end(),
                                    [](const Json& p) { return StrField(p, "type") == "text"; });
        if (all_text && m.content_is_string) user.content = openai::Content::Text(user.content.AllText());
        out.messages.push_back(std::move(user));
      }
    } else {
      openai::ChatMessage a;
      a.role = "assistant";
      std::string text;
      for (const anthropic::Block& b : m.content) {
        if (b.type == anthropic::Block::Type::kText) {
          text += b.text;
        } else if (b.type == anthropic::Block::Type::kToolUse) {
          a.tool_calls.push_back({b.id, b.name, detail::Dump(b.input)});
        } else if (b.type == anthropic::Block::Type::kOther) {
          std::string_view t = StrField(b.raw, "type");
          if (t == "thinking" || t == "redacted_thinking") continue;  // the provider's own reasoning
          return InvalidArgument(where + ": content block type \"" + std::string(t) +
                                 "\" cannot be sent to an OpenAI model");
        } else {
          return InvalidArgument(where + ": tool_result in an assistant message");
        }
      }
      if (!text.empty() || a.tool_calls.empty()) a.content = openai::Content::Text(std::move(text));
      out.messages.push_back(std::move(a));
    }
  }
  for (const anthropic::Tool& t : req.tools) {
    if (!t.extra.is_null() && t.extra.contains("type") && StrField(t.extra, "type") != "custom")
      return InvalidArgument("tool \"" + t.name + "\": server tools cannot be sent to an OpenAI model");
    out.tools.push_back({t.name, t.description, t.input_schema, std::nullopt});
  }
  using OM = openai::ToolChoice::Mode;
  using AM = anthropic::ToolChoice::Mode;
  switch (req.tool_choice.mode) {
    case AM::kUnset:
      break;
    case AM::kAuto:
      out.tool_choice.mode = OM::kAuto;
      break;
    case AM::kAny:
      out.tool_choice.mode = OM::kRequired;
      break;
    case AM::kNone:
      out.tool_choice.mode = OM::kNone;
      break;
    case AM::kTool:
      out.tool_choice.mode = OM::kFunction;
      out.tool_choice.function = req.tool_choice.name;
      break;
  }
  if (req.tool_choice.disable_parallel_tool_use == true && !req.tools.empty())
    out.parallel_tool_calls = false;
  out.stop = req.stop_sequences;
  out.stream = req.stream;
  if (req.stream) out.include_usage = true;
  out.temperature = req.temperature;
  out.top_p = req.top_p;
  out.user = req.metadata_user_id;
  return out;
}

// ---- Responses ----

openai::ChatResponse MessagesToChatResponse(const anthropic::MessagesResponse& resp, int64_t created) {
  openai::ChatResponse out;
  out.id = resp.id;
  out.created = created;
  out.model = resp.model;
  openai::ChatChoice c;
  std::string text;
  bool has_text = false;
  for (const anthropic::Block& b : resp.content) {
    if (b.type == anthropic::Block::Type::kText) {
      text += b.text;
      has_text = true;
    } else if (b.type == anthropic::Block::Type::kToolUse) {
      c.tool_calls.push_back({b.id, b.name, detail::Dump(b.input)});
    }
  }
  if (has_text || c.tool_calls.empty()) c.content = std::move(text);
  c.finish_reason = FinishReasonFor(resp.stop_reason.value_or("end_turn"));
  out.choices.push_back(std::move(c));
  out.usage = ChatUsageFrom(resp.usage);
  return out;
}

anthropic::MessagesResponse ChatToMessagesResponse(const openai::ChatResponse& resp) {
  anthropic::MessagesResponse out;
  out.id = resp.id.rfind("msg_", 0) == 0 ? resp.id : "msg_" + resp.id;
  out.model = resp.model;
  if (!resp.choices.empty()) {
    const openai::ChatChoice& c = resp.choices.front();
    if (c.content && !c.content->empty())
      out.content.push_back(anthropic::Block::Text(*c.content));
    else if (c.refusal && !c.refusal->empty())
      out.content.push_back(anthropic::Block::Text(*c.refusal));
    for (const openai::ToolCall& tc : c.tool_calls) {
      anthropic::Block b;
      b.type = anthropic::Block::Type::kToolUse;
      b.id = tc.id;
      b.name = tc.name;
      b.input = InputFromArguments(tc.arguments);
      out.content.push_back(std::move(b));
    }
    out.stop_reason = StopReasonFor(c.finish_reason.value_or("stop"));
  }
  if (resp.usage) out.usage = MessagesUsageFrom(*resp.usage);
  return out;
}

// ---- Anthropic stream -> OpenAI chunks ----

Json MessagesToChatStream::Chunk(Json delta, const std::optional<std::string>& finish) const {
  return {{"id", id_},
          {"object", "chat.completion.chunk"},
          {"created", created_},
          {"model", model_},
          {"choices", Json::array({{{"index", 0},
                                    {"delta", std::move(delta)},
                                    {"logprobs", nullptr},
                                    {"finish_reason", finish ? Json(*finish) : Json(nullptr)}}})}};
}

void MessagesToChatStream::Feed(const anthropic::StreamEvent& e, std::vector<Json>& out) {
  using T = anthropic::StreamEvent::Type;
  if (done_) return;
  switch (e.type) {
    case T::kMessageStart:
      id_ = e.message.id;
      model_ = e.message.model;
      usage_ = e.message.usage;
      out.push_back(Chunk({{"role", "assistant"}, {"content", ""}}, std::nullopt));
      break;
    case T::kContentBlockStart:
      if (e.block.type == anthropic::Block::Type::kToolUse) {
        int64_t k = next_tool_++;
        tool_index_[e.index] = k;
        out.push_back(Chunk(
            {{"tool_calls", Json::array({{{"index", k},
                                          {"id", e.block.id},
                                          {"type", "function"},
                                          {"function", {{"name", e.block.name}, {"arguments", ""}}}}})}},
            std::nullopt));
      } else if (e.block.type == anthropic::Block::Type::kText && !e.block.text.empty()) {
        out.push_back(Chunk({{"content", e.block.text}}, std::nullopt));
      }
      break;
    case T::kContentBlockDelta:
      if (e.delta_type == "text_delta") {
        out.push_back(Chunk({{"content", e.delta_text}}, std::nullopt));
      } else if (e.delta_type == "input_json_delta") {
        auto it = tool_index_.find(e.index);
        if (it != tool_index_.end() && !e.delta_text.empty())
          out.push_back(Chunk({{"tool_calls", Json::array({{{"index", it->second},
                                                            {"function", {{"arguments", e.delta_text}}}}})}},
                              std::nullopt));
      }
      break;
    case T::kMessageDelta:
      // Fields of message_delta usage are cumulative; take those present.
      if (e.usage.is_object()) {
        auto take = [&](const char* key, int64_t& field) {
          auto it = e.usage.find(key);
          if (it != e.usage.end() && it->is_number_integer()) field = it->get<int64_t>();
        };
        take("output_tokens", usage_.output_tokens);
        take("input_tokens", usage_.input_tokens);
        take("cache_read_input_tokens", usage_.cache_read_input_tokens);
        take("cache_creation_input_tokens", usage_.cache_creation_input_tokens);
      }
      if (e.stop_reason) out.push_back(Chunk(Json::object(), FinishReasonFor(*e.stop_reason)));
      break;
    case T::kMessageStop:
      if (include_usage_) {
        out.push_back({{"id", id_},
                       {"object", "chat.completion.chunk"},
                       {"created", created_},
                       {"model", model_},
                       {"choices", Json::array()},
                       {"usage", openai::ToJson(ChatUsageFrom(usage_))}});
      }
      done_ = true;
      break;
    case T::kError: {
      std::string type = e.error_type.empty() ? "api_error" : e.error_type;
      out.push_back(openai::ErrorJson(e.error_message, type));
      done_ = true;
      failed_ = true;
      break;
    }
    case T::kContentBlockStop:
    case T::kPing:
    case T::kOther:
      break;
  }
}

// ---- OpenAI chunks -> Anthropic stream ----

void ChatToMessagesStream::Start(const openai::ChatChunk& chunk, std::vector<anthropic::StreamEvent>& out) {
  started_ = true;
  id_ = chunk.id.rfind("msg_", 0) == 0 ? chunk.id : "msg_" + chunk.id;
  model_ = chunk.model;
  anthropic::StreamEvent e;
  e.type = anthropic::StreamEvent::Type::kMessageStart;
  e.message.id = id_;
  e.message.model = model_;
  e.message.usage = usage_;
  out.push_back(std::move(e));
}

void ChatToMessagesStream::CloseBlock(std::vector<anthropic::StreamEvent>& out) {
  if (open_ == Open::kNone) return;
  anthropic::StreamEvent e;
  e.type = anthropic::StreamEvent::Type::kContentBlockStop;
  e.index = block_;
  out.push_back(std::move(e));
  open_ = Open::kNone;
}

void ChatToMessagesStream::Feed(const openai::ChatChunk& chunk, std::vector<anthropic::StreamEvent>& out) {
  using T = anthropic::StreamEvent::Type;
  if (finished_) return;
  if (auto err = chunk.extra.find("error"); err != chunk.extra.end() && err->is_object()) {
    anthropic::StreamEvent e;
    e.type = T::kError;
    e.error_type = "api_error";
    e.error_message = std::string(StrField(*err, "message"));
    out.push_back(std::move(e));
    finished_ = true;
    return;
  }
  if (!started_) Start(chunk, out);
  if (chunk.usage) {
    anthropic::Usage u = MessagesUsageFrom(*chunk.usage);
    usage_ = u;
  }
  for (const openai::ChunkChoice& c : chunk.choices) {
    if (c.index != 0) continue;
    std::string text = c.content.value_or("");
    if (text.empty() && c.refusal) text = *c.refusal;
    if (!text.empty()) {
      if (open_ != Open::kText) {
        CloseBlock(out);
        anthropic::StreamEvent s;
        s.type = T::kContentBlockStart;
        s.index = ++block_;
        s.block = anthropic::Block::Text("");
        out.push_back(std::move(s));
        open_ = Open::kText;
      }
      anthropic::StreamEvent d;
      d.type = T::kContentBlockDelta;
      d.index = block_;
      d.delta_type = "text_delta";
      d.delta_text = std::move(text);
      out.push_back(std::move(d));
    }
    for (const openai::ToolCallDelta& td : c.tool_calls) {
      if (open_ != Open::kTool || td.index != tool_ || td.id) {
        CloseBlock(out);
        anthropic::StreamEvent s;
        s.type = T::kContentBlockStart;
        s.index = ++block_;
        s.block.type = anthropic::Block::Type::kToolUse;
        s.block.id = td.id.value_or("toolu_" + id_ + "_" + std::to_string(td.index));
        s.block.name = td.name.value_or("");
        s.block.input = Json::object();
        out.push_back(std::move(s));
        open_ = Open::kTool;
        tool_ = td.index;
      }
      if (td.arguments && !td.arguments->empty()) {
        anthropic::StreamEvent d;
        d.type = T::kContentBlockDelta;
        d.index = block_;
        d.delta_type = "input_json_delta";
        d.delta_text = *td.arguments;
        out.push_back(std::move(d));
      }
    }
    if (c.finish_reason) finish_reason_ = *c.finish_reason;
  }
}

void ChatToMessagesStream::Finish(std::vector<anthropic::StreamEvent>& out) {
  using T = anthropic::StreamEvent::Type;
  if (finished_) return;
  if (!started_) Start(openai::ChatChunk{}, out);
  CloseBlock(out);
  anthropic::StreamEvent d;
  d.type = T::kMessageDelta;
  d.stop_reason = StopReasonFor(finish_reason_.empty() ? "stop" : finish_reason_);
  d.usage = {{"input_tokens", usage_.input_tokens},
             {"cache_read_input_tokens", usage_.cache_read_input_tokens},
             {"output_tokens", usage_.output_tokens}};
  out.push_back(std::move(d));
  anthropic::StreamEvent stop;
  stop.type = T::kMessageStop;
  out.push_back(std::move(stop));
  finished_ = true;
}

}  // namespace govern::gateway
