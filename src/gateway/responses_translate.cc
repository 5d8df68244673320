#include "gateway/responses_translate.h"

#include "gateway/json_util.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;
using detail::StrField;
using openai::ResponseItem;

// A Responses message item's content as Chat Completions content: text parts joined into a string when
// there are only text parts, else parts (images as image_url).
Result<openai::Content> ChatContentFrom(const ResponseItem& item, std::string_view where) {
  bool only_text = true;
  for (const Json& p : item.parts) {
    std::string_view t = StrField(p, "type");
    if (t != "input_text" && t != "output_text" && t != "text") only_text = false;
  }
  if (only_text) return openai::Content::Text(item.text);
  openai::Content c;
  c.kind = openai::Content::Kind::kParts;
  for (size_t i = 0; i < item.parts.size(); ++i) {
    const Json& p = item.parts[i];
    std::string_view t = StrField(p, "type");
    std::string at = std::string(where) + ".content[" + std::to_string(i) + "]";
    if (t == "input_text" || t == "output_text" || t == "text") {
      c.parts.push_back({{"type", "text"}, {"text", std::string(StrField(p, "text"))}});
    } else if (t == "input_image") {
      std::string url(StrField(p, "image_url"));
      if (url.empty()) return InvalidArgument(at + ": input_image without an image_url");
      c.parts.push_back({{"type", "image_url"}, {"image_url", {{"url", url}}}});
    } else {
      return InvalidArgument(at + ": content part type \"" + std::string(t) +
                             "\" cannot be sent to an Anthropic model");
    }
  }
  return c;
}

}  // namespace

Result<openai::ChatRequest> ResponsesToChatRequest(const openai::ResponsesRequest& req) {
  if (!req.previous_response_id.empty())
    return InvalidArgument(
        "previous_response_id cannot be used with an Anthropic model (send the whole input)");
  if (!req.other_tools.empty()) {
    return InvalidArgument("tool type \"" + std::string(StrField(req.other_tools[0], "type")) +
                           "\" cannot be sent to an Anthropic model (function tools only)");
  }
  openai::ChatRequest out;
  out.model = req.model;
  if (!req.instructions.empty()) out.messages.push_back({"system", openai::Content::Text(req.instructions)});
  if (req.input_text) out.messages.push_back({"user", openai::Content::Text(*req.input_text)});
  for (size_t i = 0; i < req.input.size(); ++i) {
    const ResponseItem& item = req.input[i];
    std::string where = "input[" + std::to_string(i) + "]";
    switch (item.type) {
      case ResponseItem::Type::kMessage: {
        openai::ChatMessage m;
        m.role = item.role;
        GOVERN_ASSIGN_OR_RETURN(m.content, ChatContentFrom(item, where));
        out.messages.push_back(std::move(m));
        break;
      }
      case ResponseItem::Type::kFunctionCall: {
        // Calls after assistant text or other calls (parallel tool calls) belong to that turn.
        if (out.messages.empty() || out.messages.back().role != "assistant") {
          openai::ChatMessage m;
          m.role = "assistant";
          out.messages.push_back(std::move(m));
        }
        out.messages.back().tool_calls.push_back({item.call_id, item.name, item.arguments});
        break;
      }
      case ResponseItem::Type::kFunctionCallOutput: {
        openai::ChatMessage m;
        m.role = "tool";
        m.tool_call_id = item.call_id;
        m.content = openai::Content::Text(item.output);
        out.messages.push_back(std::move(m));
        break;
      }
      case ResponseItem::Type::kOther:
        if (StrField(item.raw, "type") == "reasoning") break;  // the provider's own, not portable
        return InvalidArgument(where + ": item type \"" + std::string(StrField(item.raw, "type")) +
                               "\" cannot be sent to an Anthropic model");
    }
  }
  out.tools = req.tools;
  out.tool_choice = req.tool_choice;
  out.stream = req.stream;
  out.max_completion_tokens = req.max_output_tokens;
  out.temperature = req.temperature;
  out.top_p = req.top_p;
  if (auto it = req.extra.find("parallel_tool_calls"); it != req.extra.end() && it->is_boolean())
    out.parallel_tool_calls = it->get<bool>();
  return out;
}

Result<anthropic::MessagesRequest> ResponsesToMessagesRequest(const openai::ResponsesRequest& req,
                                                              const ChatToMessagesOptions& options) {
  GOVERN_ASSIGN_OR_RETURN(openai::ChatRequest chat, ResponsesToChatRequest(req));
  return ChatToMessagesRequest(chat, options);
}

namespace {

openai::ResponsesUsage ResponsesUsageFrom(const anthropic::Usage& u) {
  openai::Usage c = ChatUsageFrom(u);
  return {c.prompt_tokens, c.completion_tokens, c.prompt_tokens + c.completion_tokens, c.cached_tokens, 0};
}

// The fields the OpenAI SDKs expect on every response object beside the modelled ones.
void SetResponseExtras(openai::ResponsesResponse& r, const std::optional<std::string>& stop_reason) {
  bool incomplete = stop_reason == "max_tokens";
  r.status = incomplete ? "incomplete" : r.status;
  r.extra = {{"incomplete_details", incomplete ? Json{{"reason", "max_output_tokens"}} : Json(nullptr)},
             {"error", nullptr},
             {"parallel_tool_calls", true},
             {"tools", Json::array()},
             {"text", {{"format", {{"type", "text"}}}}}};
}

ResponseItem MessageItem(std::string id, std::string text, std::string status) {
  ResponseItem m;
  m.type = ResponseItem::Type::kMessage;
  m.id = std::move(id);
  m.role = "assistant";
  m.text = std::move(text);
  m.status = std::move(status);
  return m;
}

ResponseItem CallItem(const std::string& tool_use_id, std::string name, std::string arguments,
                      std::string status) {
  ResponseItem c;
  c.type = ResponseItem::Type::kFunctionCall;
  c.id = "fc_" + tool_use_id;
  c.call_id = tool_use_id;
  c.name = std::move(name);
  c.arguments = std::move(arguments);
  c.status = std::move(status);
  return c;
}

Json OutputTextPart(const std::string& text) {
  return {{"type", "output_text"}, {"text", text}, {"annotations", Json::array()}};
}

}  // namespace

openai::ResponsesResponse MessagesToResponsesResponse(const anthropic::MessagesResponse& resp,
                                                      int64_t created_at) {
  openai::ResponsesResponse out;
  out.id = "resp_" + resp.id;
  out.created_at = created_at;
  out.model = resp.model;
  out.status = "completed";
  ResponseItem message = MessageItem("msg_" + resp.id, "", "completed");
  for (const anthropic::Block& b : resp.content) {
    if (b.type == anthropic::Block::Type::kText) {
      message.text += b.text;
      message.parts.push_back(OutputTextPart(b.text));
    } else if (b.type == anthropic::Block::Type::kToolUse) {
      if (!message.parts.empty()) {
        out.output.push_back(std::move(message));
        message = MessageItem("msg_" + resp.id + "_" + std::to_string(out.output.size()), "", "completed");
      }
      out.output.push_back(CallItem(b.id, b.name, detail::Dump(b.input), "completed"));
    }
  }
  if (!message.parts.empty() || out.output.empty()) {
    if (message.parts.empty()) message.parts.push_back(OutputTextPart(""));
    out.output.push_back(std::move(message));
  }
  out.usage = ResponsesUsageFrom(resp.usage);
  SetResponseExtras(out, resp.stop_reason);
  return out;
}

// ---- The stream ----

void MessagesToResponsesStream::Emit(std::string type, Json body, std::vector<Json>& out) {
  body["type"] = std::move(type);
  body["sequence_number"] = seq_++;
  out.push_back(std::move(body));
}

openai::ResponsesResponse MessagesToResponsesStream::Snapshot(std::string status) const {
  openai::ResponsesResponse r;
  r.id = "resp_" + id_;
  r.created_at = created_at_;
  r.model = model_;
  r.status = std::move(status);
  r.output = output_;
  SetResponseExtras(r, stop_reason_);
  return r;
}

void MessagesToResponsesStream::CloseBlock(std::vector<Json>& out) {
  int64_t index = static_cast<int64_t>(output_.size());
  if (open_ == Open::kText) {
    Json part = OutputTextPart(text_);
    Emit("response.output_text.done",
         {{"item_id", item_.id},
          {"output_index", index},
          {"content_index", 0},
          {"text", text_},
          {"logprobs", Json::array()}},
         out);
    Emit("response.content_part.done",
         {{"item_id", item_.id}, {"output_index", index}, {"content_index", 0}, {"part", part}}, out);
    item_.text = text_;
    item_.parts = {part};
  } else if (open_ == Open::kTool) {
    if (text_.empty()) text_ = "{}";
    Emit("response.function_call_arguments.done",
         {{"item_id", item_.id}, {"output_index", index}, {"arguments", text_}}, out);
    item_.arguments = text_;
  }
  if (open_ == Open::kText || open_ == Open::kTool) {
    item_.status = "completed";
    Emit("response.output_item.done", {{"output_index", index}, {"item", openai::ToJson(item_)}}, out);
    output_.push_back(std::move(item_));
  }
  item_ = {};
  text_.clear();
  open_ = Open::kNone;
}

void MessagesToResponsesStream::Feed(const anthropic::StreamEvent& e, std::vector<Json>& out) {
  using T = anthropic::StreamEvent::Type;
  if (done_) return;
  switch (e.type) {
    case T::kMessageStart: {
      if (started_) return;
      started_ = true;
      id_ = e.message.id;
      model_ = e.message.model;
      usage_ = e.message.usage;
      Json r = openai::ToJson(Snapshot("in_progress"));
      Emit("response.created", {{"response", r}}, out);
      Emit("response.in_progress", {{"response", r}}, out);
      return;
    }
    case T::kContentBlockStart: {
      CloseBlock(out);
      int64_t index = static_cast<int64_t>(output_.size());
      if (e.block.type == anthropic::Block::Type::kText) {
        open_ = Open::kText;
        item_ = MessageItem("msg_" + id_ + "_" + std::to_string(e.index), "", "in_progress");
        Json added = openai::ToJson(item_);
        added["content"] = Json::array();
        Emit("response.output_item.added", {{"output_index", index}, {"item", added}}, out);
        Emit("response.content_part.added",
             {{"item_id", item_.id},
              {"output_index", index},
              {"content_index", 0},
              {"part", OutputTextPart("")}},
             out);
        if (!e.block.text.empty()) {
          text_ = e.block.text;
          Emit("response.output_text.delta",
               {{"item_id", item_.id},
                {"output_index", index},
                {"content_index", 0},
                {"delta", text_},
                {"logprobs", Json::array()}},
               out);
        }
      } else if (e.block.type == anthropic::Block::Type::kToolUse) {
        open_ = Open::kTool;
        item_ = CallItem(e.block.id, e.block.name, "", "in_progress");
        Emit("response.output_item.added", {{"output_index", index}, {"item", openai::ToJson(item_)}}, out);
        // A provider that sends the whole input at the start (not in deltas).
        if (e.block.input.is_object() && !e.block.input.empty()) {
          text_ = detail::Dump(e.block.input);
          Emit("response.function_call_arguments.delta",
               {{"item_id", item_.id}, {"output_index", index}, {"delta", text_}}, out);
        }
      } else {
        open_ = Open::kSkipped;  // thinking and unknown blocks are not part of the Responses output
      }
      return;
    }
    case T::kContentBlockDelta: {
      int64_t index = static_cast<int64_t>(output_.size());
      if (open_ == Open::kText && e.delta_type == "text_delta") {
        text_ += e.delta_text;
        Emit("response.output_text.delta",
             {{"item_id", item_.id},
              {"output_index", index},
              {"content_index", 0},
              {"delta", e.delta_text},
              {"logprobs", Json::array()}},
             out);
      } else if (open_ == Open::kTool && e.delta_type == "input_json_delta") {
        text_ += e.delta_text;
        Emit("response.function_call_arguments.delta",
             {{"item_id", item_.id}, {"output_index", index}, {"delta", e.delta_text}}, out);
      }
      return;
    }
    case T::kContentBlockStop:
      CloseBlock(out);
      return;
    case T::kMessageDelta: {
      if (e.stop_reason) stop_reason_ = e.stop_reason;
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
      return;
    }
    case T::kMessageStop: {
      CloseBlock(out);
      openai::ResponsesResponse r = Snapshot("completed");
      r.usage = ResponsesUsageFrom(usage_);
      Emit(r.status == "incomplete" ? "response.incomplete" : "response.completed",
           {{"response", openai::ToJson(r)}}, out);
      done_ = true;
      return;
    }
    case T::kError: {
      std::string message = e.error_message.empty() ? "provider stream error" : e.error_message;
      std::string code = e.error_type.empty() ? "api_error" : e.error_type;
      Emit("error",
           {{"code", code},
            {"message", message},
            {"param", nullptr},
            {"error", openai::ErrorJson(message, code)["error"]}},
           out);
      done_ = true;
      failed_ = true;
      return;
    }
    case T::kPing:
    case T::kOther:
      return;
  }
}

// ---- Chat (Gemini, Bedrock) -> Responses, through the Anthropic shape ----

openai::ResponsesResponse ChatToResponsesResponse(const openai::ChatResponse& resp, int64_t created_at) {
  return MessagesToResponsesResponse(ChatToMessagesResponse(resp), created_at);
}

void ChatToResponsesStream::Pass(std::vector<openai::Json>& out) {
  for (const anthropic::StreamEvent& e : events_) responses_.Feed(e, out);
  events_.clear();
}

void ChatToResponsesStream::Feed(const openai::ChatChunk& chunk, std::vector<openai::Json>& out) {
  chat_.Feed(chunk, events_);
  Pass(out);
}

void ChatToResponsesStream::Finish(std::vector<openai::Json>& out) {
  chat_.Finish(events_);
  Pass(out);
}

}  // namespace govern::gateway
