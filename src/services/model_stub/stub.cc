#include "services/model_stub/stub.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "gateway/anthropic.h"
#include "gateway/json_util.h"
#include "gateway/openai.h"
#include "gateway/sse.h"

namespace govern::model_stub {
namespace {

using Json = nlohmann::json;
using gateway::detail::Dump;
namespace oai = gateway::openai;
namespace ant = gateway::anthropic;

constexpr std::string_view kWords[] = {"Govern", "stub",  "reply", "with", "deterministic", "words",
                                       "and",    "exact", "usage", "for",  "every",         "test"};
constexpr size_t kArgPiece = 8;

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Word i of the answer, with the space before it (none for the first).
std::string Token(int64_t i) {
  std::string t = i == 0 ? "" : " ";
  t += kWords[static_cast<size_t>(i) % std::size(kWords)];
  return t;
}

std::string Join(const std::vector<std::string>& pieces) {
  std::string s;
  for (const auto& p : pieces) s += p;
  return s;
}

std::string ArgumentsFor(const Json& parameters) {
  Json args = Json::object();
  if (parameters.is_object()) {
    auto props = parameters.find("properties");
    if (props != parameters.end() && props->is_object())
      for (auto it = props->begin(); it != props->end(); ++it) args[it.key()] = StubValueFor(it.value());
  }
  return Dump(args);
}

// What the model will say: either text of n tokens, or one tool call.
struct Plan {
  bool tool = false;
  std::string tool_name;
  std::string arguments;
  std::vector<std::string> pieces;  // tool arguments as streamed
  int64_t output_tokens = 0;
  bool truncated = false;  // text cut by max tokens
  int64_t input_tokens = 0;
  int64_t cached_tokens = 0;
  std::vector<std::string> text;  // x-stub-text in pieces; empty: the stub's words
  std::string Piece(int64_t i) const { return text.empty() ? Token(i) : text[static_cast<size_t>(i)]; }
  std::string Text() const { return text.empty() ? StubText(output_tokens) : Join(text); }
};

Plan MakePlan(int64_t input_tokens, std::optional<int64_t> max_tokens, const Faults& f, const StubConfig& cfg,
              bool use_tool, const std::string& tool_name, const Json& tool_params) {
  Plan p;
  p.input_tokens = input_tokens;
  p.cached_tokens = std::clamp<int64_t>(f.cached_tokens, 0, input_tokens);
  if (use_tool) {
    p.tool = true;
    p.tool_name = tool_name;
    p.arguments = ArgumentsFor(tool_params);
    p.pieces = Pieces(p.arguments);
    p.output_tokens = static_cast<int64_t>(p.pieces.size());
    return p;
  }
  if (!f.text.empty()) {  // x-stub-text: this text, in pieces of at most 8 bytes
    p.text = Pieces(f.text);
    p.output_tokens = static_cast<int64_t>(p.text.size());
    return p;
  }
  int64_t n = std::clamp<int64_t>(f.output_tokens.value_or(cfg.default_output_tokens), 0, kMaxOutputTokens);
  if (max_tokens && *max_tokens >= 0 && *max_tokens < n) {
    n = *max_tokens;
    p.truncated = true;
  }
  p.output_tokens = n;
  return p;
}

Reply JsonReply(int status, const Json& j) {
  Reply r;
  r.status = status;
  r.body = Dump(j);
  return r;
}

Reply OpenAiError(int status, std::string_view message) {
  std::string_view type = status == 400   ? "invalid_request_error"
                          : status == 401 ? "authentication_error"
                          : status == 404 ? "not_found_error"
                          : status == 429 ? "rate_limit_exceeded"
                                          : "server_error";
  return JsonReply(status, oai::ErrorJson(message, type));
}

Reply AnthropicError(int status, std::string_view message) {
  std::string_view type = status == 400   ? "invalid_request_error"
                          : status == 401 ? "authentication_error"
                          : status == 403 ? "permission_error"
                          : status == 404 ? "not_found_error"
                          : status == 413 ? "request_too_large"
                          : status == 429 ? "rate_limit_error"
                          : status == 529 ? "overloaded_error"
                                          : "api_error";
  return JsonReply(status, ant::ErrorJson(type, message));
}

// Streams: frames plus the fault handling shared by every format.
struct StreamBuilder {
  Reply reply;
  const Faults& faults;
  bool stopped = false;  // an injected error ended the stream

  explicit StreamBuilder(const Faults& f) : faults(f) {
    reply.stream = true;
    reply.content_type = "text/event-stream";
  }
  // Returns false once an injected error has replaced the rest of the stream.
  bool Add(std::string_view event, const Json& data, bool token, const Json& error_data) {
    if (stopped) return false;
    if (faults.error_after >= 0 && static_cast<int64_t>(reply.events.size()) == faults.error_after) {
      reply.events.push_back(gateway::FormatSseEvent(event.empty() ? "" : "error", Dump(error_data)));
      reply.token_event.push_back(false);
      stopped = true;
      return false;
    }
    reply.events.push_back(gateway::FormatSseEvent(event, Dump(data)));
    reply.token_event.push_back(token);
    return true;
  }
  void AddRaw(std::string frame) {
    if (stopped) return;
    reply.events.push_back(std::move(frame));
    reply.token_event.push_back(false);
  }
  Reply Done() {
    if (faults.cut_after >= 0) reply.truncate_at = faults.cut_after;
    return std::move(reply);
  }
};

// ---- OpenAI chat ----

int64_t ChatInputWords(const oai::ChatRequest& r) {
  int64_t n = 0;
  for (const auto& m : r.messages) {
    n += CountWords(m.content.AllText());
    for (const auto& tc : m.tool_calls) n += CountWords(tc.arguments);
  }
  return n;
}

oai::Usage ChatUsage(const Plan& p) {
  return {p.input_tokens, p.output_tokens, p.input_tokens + p.output_tokens, p.cached_tokens, 0};
}

Reply Chat(std::string_view body, const Faults& f, const StubConfig& cfg, int64_t now) {
  auto req = oai::ParseChatRequest(body);
  if (!req.ok()) return OpenAiError(400, req.status().message());
  bool last_is_tool = !req->messages.empty() && req->messages.back().role == "tool";
  bool use_tool =
      !req->tools.empty() && req->tool_choice.mode != oai::ToolChoice::Mode::kNone && !last_is_tool;
  std::string tool_name;
  Json params;
  if (use_tool) {
    const oai::FunctionTool* t = &req->tools.front();
    if (req->tool_choice.mode == oai::ToolChoice::Mode::kFunction) {
      t = nullptr;
      for (const auto& x : req->tools)
        if (x.name == req->tool_choice.function) t = &x;
      if (t == nullptr) return OpenAiError(400, "tool_choice names a function that is not in tools");
    }
    tool_name = t->name;
    params = t->parameters;
  }
  Plan p = MakePlan(ChatInputWords(*req),
                    req->max_completion_tokens ? req->max_completion_tokens : req->max_tokens, f, cfg,
                    use_tool, tool_name, params);
  std::string id = "chatcmpl-stub" + Hex(Fnv1a(body));
  std::string call_id = "call_stub" + Hex(Fnv1a(body) ^ 1);
  std::string finish = p.tool ? "tool_calls" : p.truncated ? "length" : "stop";

  if (!req->stream) {
    oai::ChatResponse resp;
    resp.id = id;
    resp.created = now;
    resp.model = req->model;
    oai::ChatChoice c;
    if (p.tool)
      c.tool_calls.push_back({call_id, p.tool_name, p.arguments});
    else
      c.content = p.Text();
    c.finish_reason = finish;
    resp.choices.push_back(std::move(c));
    resp.usage = ChatUsage(p);
    resp.extra["system_fingerprint"] = "fp_govern_stub";
    Reply r = JsonReply(200, oai::ToJson(resp));
    if (f.cut_after >= 0) r.truncate_at = static_cast<int64_t>(r.body.size() / 2);
    return r;
  }

  bool include_usage = req->include_usage.value_or(false);
  Json error = oai::ErrorJson("injected stream error", "server_error");
  StreamBuilder s(f);
  auto chunk = [&](Json delta, std::optional<std::string> fin) {
    Json c = {{"id", id},
              {"object", "chat.completion.chunk"},
              {"created", now},
              {"model", req->model},
              {"system_fingerprint", "fp_govern_stub"},
              {"choices", Json::array({{{"index", 0},
                                        {"delta", std::move(delta)},
                                        {"logprobs", nullptr},
                                        {"finish_reason", fin ? Json(*fin) : Json(nullptr)}}})}};
    if (include_usage) c["usage"] = nullptr;
    return c;
  };
  s.Add("", chunk({{"role", "assistant"}, {"content", ""}, {"refusal", nullptr}}, std::nullopt), false,
        error);
  if (p.tool) {
    s.Add("",
          chunk({{"tool_calls", Json::array({{{"index", 0},
                                              {"id", call_id},
                                              {"type", "function"},
                                              {"function", {{"name", p.tool_name}, {"arguments", ""}}}}})}},
                std::nullopt),
          false, error);
    for (const std::string& piece : p.pieces)
      s.Add("",
            chunk({{"tool_calls", Json::array({{{"index", 0}, {"function", {{"arguments", piece}}}}})}},
                  std::nullopt),
            true, error);
  } else {
    for (int64_t i = 0; i < p.output_tokens; ++i)
      s.Add("", chunk({{"content", p.Piece(i)}}, std::nullopt), true, error);
  }
  s.Add("", chunk(Json::object(), finish), false, error);
  if (include_usage) {
    Json u = {{"id", id},
              {"object", "chat.completion.chunk"},
              {"created", now},
              {"model", req->model},
              {"system_fingerprint", "fp_govern_stub"},
              {"choices", Json::array()},
              {"usage", oai::ToJson(ChatUsage(p))}};
    s.Add("", u, false, error);
  }
  s.AddRaw(std::string(gateway::kSseDone));
  return s.Done();
}

// ---- OpenAI Responses ----

Reply Responses(std::string_view body, const Faults& f, const StubConfig& cfg, int64_t now) {
  auto req = oai::ParseResponsesRequest(body);
  if (!req.ok()) return OpenAiError(400, req.status().message());
  int64_t words = CountWords(req->instructions);
  if (req->input_text) words += CountWords(*req->input_text);
  for (const auto& it : req->input)
    words += CountWords(it.text) + CountWords(it.arguments) + CountWords(it.output);
  bool last_is_output =
      !req->input.empty() && req->input.back().type == oai::ResponseItem::Type::kFunctionCallOutput;
  bool use_tool =
      !req->tools.empty() && req->tool_choice.mode != oai::ToolChoice::Mode::kNone && !last_is_output;
  std::string tool_name;
  Json params;
  if (use_tool) {
    const oai::FunctionTool* t = &req->tools.front();
    if (req->tool_choice.mode == oai::ToolChoice::Mode::kFunction) {
      t = nullptr;
      for (const auto& x : req->tools)
        if (x.name == req->tool_choice.function) t = &x;
      if (t == nullptr) return OpenAiError(400, "tool_choice names a function that is not in tools");
    }
    tool_name = t->name;
    params = t->parameters;
  }
  Plan p = MakePlan(words, req->max_output_tokens, f, cfg, use_tool, tool_name, params);
  uint64_t h = Fnv1a(body);
  std::string id = "resp_stub" + Hex(h);
  std::string item_id = (p.tool ? "fc_stub" : "msg_stub") + Hex(h ^ 2);
  std::string call_id = "call_stub" + Hex(h ^ 1);
  std::string text = p.tool ? "" : p.Text();

  oai::ResponsesResponse final;
  final.id = id;
  final.created_at = now;
  final.model = req->model;
  final.status = p.truncated ? "incomplete" : "completed";
  oai::ResponseItem item;
  item.id = item_id;
  item.status = "completed";
  if (p.tool) {
    item.type = oai::ResponseItem::Type::kFunctionCall;
    item.call_id = call_id;
    item.name = p.tool_name;
    item.arguments = p.arguments;
  } else {
    item.type = oai::ResponseItem::Type::kMessage;
    item.role = "assistant";
    item.text = text;
  }
  final.output.push_back(item);
  final.usage = oai::ResponsesUsage{p.input_tokens, p.output_tokens, p.input_tokens + p.output_tokens,
                                    p.cached_tokens, 0};
  final.extra = {
      {"instructions", req->instructions.empty() ? Json(nullptr) : Json(req->instructions)},
      {"incomplete_details", p.truncated ? Json{{"reason", "max_output_tokens"}} : Json(nullptr)},
      {"error", nullptr},
      {"max_output_tokens", req->max_output_tokens ? Json(*req->max_output_tokens) : Json(nullptr)},
      {"parallel_tool_calls", true},
      {"previous_response_id", nullptr},
      {"tool_choice", "auto"},
      {"tools", Json::array()},
      {"text", {{"format", {{"type", "text"}}}}}};

  if (!req->stream) {
    Reply r = JsonReply(200, oai::ToJson(final));
    if (f.cut_after >= 0) r.truncate_at = static_cast<int64_t>(r.body.size() / 2);
    return r;
  }

  StreamBuilder s(f);
  int64_t seq = 0;
  Json error = {
      {"type", "error"}, {"code", "server_error"}, {"message", "injected stream error"}, {"param", nullptr}};
  auto add = [&](std::string type, Json data, bool token) {
    data["type"] = type;
    data["sequence_number"] = seq++;
    Json err = error;
    err["sequence_number"] = seq - 1;
    s.Add(type, data, token, err);
  };
  oai::ResponsesResponse progress = final;
  progress.status = "in_progress";
  progress.output.clear();
  progress.usage.reset();
  progress.extra["incomplete_details"] = nullptr;
  add("response.created", {{"response", oai::ToJson(progress)}}, false);
  add("response.in_progress", {{"response", oai::ToJson(progress)}}, false);
  oai::ResponseItem open = item;
  open.status = "in_progress";
  if (p.tool) {
    open.arguments = "";
    add("response.output_item.added", {{"output_index", 0}, {"item", oai::ToJson(open)}}, false);
    for (const std::string& piece : p.pieces)
      add("response.function_call_arguments.delta",
          {{"item_id", item_id}, {"output_index", 0}, {"delta", piece}}, true);
    add("response.function_call_arguments.done",
        {{"item_id", item_id}, {"output_index", 0}, {"arguments", p.arguments}}, false);
  } else {
    Json open_json = oai::ToJson(open);
    open_json["content"] = Json::array();
    add("response.output_item.added", {{"output_index", 0}, {"item", open_json}}, false);
    Json empty_part = {{"type", "output_text"}, {"text", ""}, {"annotations", Json::array()}};
    add("response.content_part.added",
        {{"item_id", item_id}, {"output_index", 0}, {"content_index", 0}, {"part", empty_part}}, false);
    for (int64_t i = 0; i < p.output_tokens; ++i)
      add("response.output_text.delta",
          {{"item_id", item_id},
           {"output_index", 0},
           {"content_index", 0},
           {"delta", p.Piece(i)},
           {"logprobs", Json::array()}},
          true);
    add("response.output_text.done",
        {{"item_id", item_id},
         {"output_index", 0},
         {"content_index", 0},
         {"text", text},
         {"logprobs", Json::array()}},
        false);
    Json part = {{"type", "output_text"}, {"text", text}, {"annotations", Json::array()}};
    add("response.content_part.done",
        {{"item_id", item_id}, {"output_index", 0}, {"content_index", 0}, {"part", part}}, false);
  }
  add("response.output_item.done", {{"output_index", 0}, {"item", oai::ToJson(item)}}, false);
  add(p.truncated ? "response.incomplete" : "response.completed", {{"response", oai::ToJson(final)}}, false);
  return s.Done();
}

// ---- OpenAI embeddings ----

Reply Embeddings(std::string_view body, const StubConfig& cfg) {
  auto req = oai::ParseEmbeddingsRequest(body);
  if (!req.ok()) return OpenAiError(400, req.status().message());
  int64_t dims = req->dimensions.value_or(cfg.default_dimensions);
  oai::EmbeddingsResponse resp;
  resp.model = req->model;
  resp.base64 = req->encoding_format == "base64";
  auto vec = [&](std::string_view key) { return StubVector(key, dims); };
  for (const std::string& s : req->input) {
    resp.data.push_back(vec(s));
    resp.prompt_tokens += CountWords(s);
  }
  for (const auto& t : req->input_tokens) {
    resp.data.push_back(vec(Dump(Json(t))));
    resp.prompt_tokens += static_cast<int64_t>(t.size());
  }
  resp.total_tokens = resp.prompt_tokens;
  return JsonReply(200, oai::ToJson(resp));
}

// ---- Anthropic messages ----

Reply Messages(std::string_view body, const Faults& f, const StubConfig& cfg) {
  auto req = ant::ParseMessagesRequest(body);
  if (!req.ok()) return AnthropicError(400, req.status().message());
  int64_t words = CountWords(req->system_text);
  bool last_is_result = false;
  for (const auto& m : req->messages) {
    last_is_result = false;
    for (const auto& b : m.content) {
      if (b.type == ant::Block::Type::kText) words += CountWords(b.text);
      if (b.type == ant::Block::Type::kToolUse) words += CountWords(Dump(b.input));
      if (b.type == ant::Block::Type::kToolResult) {
        words += CountWords(b.result_text);
        last_is_result = true;
      }
    }
  }
  bool use_tool =
      !req->tools.empty() && req->tool_choice.mode != ant::ToolChoice::Mode::kNone && !last_is_result;
  std::string tool_name;
  Json params;
  if (use_tool) {
    const ant::Tool* t = &req->tools.front();
    if (req->tool_choice.mode == ant::ToolChoice::Mode::kTool) {
      t = nullptr;
      for (const auto& x : req->tools)
        if (x.name == req->tool_choice.name) t = &x;
      if (t == nullptr) return AnthropicError(400, "tool_choice names a tool that is not in tools");
    }
    tool_name = t->name;
    params = t->input_schema;
  }
  Plan p = MakePlan(words, req->max_tokens, f, cfg, use_tool, tool_name, params);
  uint64_t h = Fnv1a(body);
  std::string id = "msg_stub" + Hex(h);
  std::string tool_id = "toolu_stub" + Hex(h ^ 1);
  std::string stop = p.tool ? "tool_use" : p.truncated ? "max_tokens" : "end_turn";
  ant::Usage usage{p.input_tokens - p.cached_tokens, p.output_tokens, 0, p.cached_tokens};

  if (!req->stream) {
    ant::MessagesResponse resp;
    resp.id = id;
    resp.model = req->model;
    if (p.tool) {
      ant::Block b;
      b.type = ant::Block::Type::kToolUse;
      b.id = tool_id;
      b.name = p.tool_name;
      b.input = Json::parse(p.arguments, nullptr, false);
      resp.content.push_back(std::move(b));
    } else {
      resp.content.push_back(ant::Block::Text(p.Text()));
    }
    resp.stop_reason = stop;
    resp.usage = usage;
    Reply r = JsonReply(200, ant::ToJson(resp));
    if (f.cut_after >= 0) r.truncate_at = static_cast<int64_t>(r.body.size() / 2);
    return r;
  }

  StreamBuilder s(f);
  Json error = ant::ErrorJson("overloaded_error", "injected stream error");
  auto add = [&](const ant::StreamEvent& e, bool token) { s.Add(e.name(), ant::ToJson(e), token, error); };
  using T = ant::StreamEvent::Type;
  ant::StreamEvent start;
  start.type = T::kMessageStart;
  start.message.id = id;
  start.message.model = req->model;
  start.message.usage = usage;
  start.message.usage.output_tokens = 1;
  add(start, false);
  ant::StreamEvent block_start;
  block_start.type = T::kContentBlockStart;
  block_start.index = 0;
  if (p.tool) {
    block_start.block.type = ant::Block::Type::kToolUse;
    block_start.block.id = tool_id;
    block_start.block.name = p.tool_name;
  } else {
    block_start.block = ant::Block::Text("");
  }
  add(block_start, false);
  ant::StreamEvent ping;
  ping.type = T::kPing;
  add(ping, false);
  if (p.tool) {
    for (const std::string& piece : p.pieces) {
      ant::StreamEvent d;
      d.type = T::kContentBlockDelta;
      d.delta_type = "input_json_delta";
      d.delta_text = piece;
      add(d, true);
    }
  } else {
    for (int64_t i = 0; i < p.output_tokens; ++i) {
      ant::StreamEvent d;
      d.type = T::kContentBlockDelta;
      d.delta_type = "text_delta";
      d.delta_text = p.Piece(i);
      add(d, true);
    }
  }
  ant::StreamEvent block_stop;
  block_stop.type = T::kContentBlockStop;
  add(block_stop, false);
  ant::StreamEvent delta;
  delta.type = T::kMessageDelta;
  delta.stop_reason = stop;
  delta.usage = ant::ToJson(usage);
  add(delta, false);
  ant::StreamEvent end;
  end.type = T::kMessageStop;
  add(end, false);
  return s.Done();
}

bool ParseInt(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::vector<std::string> Pieces(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    size_t n = std::min(kArgPiece, s.size());
    while (n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) ++n;
    out.emplace_back(s.substr(0, n));
    s.remove_prefix(n);
  }
  return out;
}

int64_t CountWords(std::string_view text) {
  int64_t n = 0;
  bool in = false;
  for (char c : text) {
    bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
    if (!space && !in) ++n;
    in = !space;
  }
  return n;
}

std::string StubText(int64_t n) {
  std::string s;
  for (int64_t i = 0; i < n; ++i) s += Token(i);
  return s;
}

std::vector<std::string> StubWords(int64_t n) {
  std::string all = StubText(n);
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 1; i <= all.size(); ++i) {
    if (i == all.size() || all[i] == ' ') {
      out.push_back(all.substr(start, i - start));
      start = i;
    }
  }
  return out;
}

Json StubValueFor(const Json& schema) {
  std::string_view type = gateway::detail::StrField(schema, "type");
  if (type == "string" || type == "STRING") return "stub";
  if (type == "integer" || type == "number" || type == "INTEGER" || type == "NUMBER") return 1;
  if (type == "boolean" || type == "BOOLEAN") return true;
  if (type == "array" || type == "ARRAY") return Json::array();
  if (type == "object" || type == "OBJECT") return Json::object();
  return nullptr;
}

std::vector<float> StubVector(std::string_view text, int64_t dims) {
  std::vector<float> v(static_cast<size_t>(std::clamp<int64_t>(dims, 0, 65536)));
  uint64_t h = Fnv1a(text);
  double norm = 0;
  for (auto& x : v) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    x = static_cast<float>(static_cast<double>(h % 2001) / 1000.0 - 1.0);
    norm += static_cast<double>(x) * x;
  }
  if (norm > 0)
    for (auto& x : v) x = static_cast<float>(x / std::sqrt(norm));
  return v;
}

Faults FaultsFrom(const std::function<std::string_view(std::string_view)>& header) {
  Faults f;
  int64_t v = 0;
  if (ParseInt(header("x-stub-status"), v) && v >= 100 && v <= 599) f.status = static_cast<int>(v);
  if (ParseInt(header("x-stub-fail-call"), v) && v > 0) f.fail_call = v;
  if (ParseInt(header("x-stub-delay-ms"), v) && v >= 0 && v <= 600000) f.delay_ms = v;
  if (ParseInt(header("x-stub-cut-after"), v) && v >= 0) f.cut_after = v;
  if (ParseInt(header("x-stub-error-after"), v) && v >= 0) f.error_after = v;
  if (ParseInt(header("x-stub-output-tokens"), v) && v >= 0 && v <= kMaxOutputTokens) f.output_tokens = v;
  if (ParseInt(header("x-stub-cached-tokens"), v) && v >= 0) f.cached_tokens = v;
  f.drop = header("x-stub-drop") == "1";
  f.text = std::string(header("x-stub-text"));
  return f;
}

Reply Answer(std::string_view method, std::string_view path, std::string_view body, const Faults& faults,
             const StubConfig& config, int64_t now_unix) {
  bool anthropic = path == "/v1/messages";
  if (path == "/healthz") return Reply{200, "text/plain; charset=utf-8", "ok\n"};
  if (faults.status >= 400) {
    std::string msg = "injected status " + std::to_string(faults.status);
    return anthropic ? AnthropicError(faults.status, msg) : OpenAiError(faults.status, msg);
  }
  if (method == "GET" && path == "/v1/models") {
    std::vector<oai::Model> models;
    for (const std::string& m : config.models) models.push_back({m, 1700000000, "govern-stub"});
    return JsonReply(200, oai::ModelsListJson(models));
  }
  if (method != "POST") {
    return anthropic ? AnthropicError(405, "use POST")
                     : OpenAiError(path.rfind("/v1/", 0) == 0 ? 405 : 404, "not found");
  }
  if (path == "/v1/chat/completions") return Chat(body, faults, config, now_unix);
  if (path == "/v1/responses") return Responses(body, faults, config, now_unix);
  if (path == "/v1/embeddings") return Embeddings(body, config);
  if (anthropic) return Messages(body, faults, config);
  return OpenAiError(404, "no such endpoint: " + std::string(path));
}

bool IsAzurePath(std::string_view path) { return path.starts_with("/openai/"); }

Reply AzureAnswer(std::string_view method, std::string_view target,
                  const std::function<std::string_view(std::string_view)>& header, std::string_view body,
                  const Faults& faults, const StubConfig& config, int64_t now_unix) {
  if (header("api-key").empty() && header("authorization").empty())
    return OpenAiError(401, "Access denied due to invalid subscription key or wrong API endpoint.");
  const size_t q = target.find('?');
  std::string_view path = target.substr(0, q);
  std::string_view query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  bool versioned = false;
  for (size_t at = 0; at <= query.size();) {
    size_t end = query.find('&', at);
    if (end == std::string_view::npos) end = query.size();
    std::string_view param = query.substr(at, end - at);
    if (param.starts_with("api-version=") && param.size() > 12) versioned = true;
    at = end + 1;
  }
  std::string_view openai_path;
  constexpr std::string_view kDeployments = "/openai/deployments/";
  if (path == "/openai/v1/responses") {
    openai_path = "/v1/responses";
  } else if (path == "/openai/responses" && versioned) {
    openai_path = "/v1/responses";
  } else if (path.starts_with(kDeployments) && versioned) {
    std::string_view rest = path.substr(kDeployments.size());
    size_t slash = rest.find('/');
    if (slash != 0 && slash != std::string_view::npos) {
      rest = rest.substr(slash);
      if (rest == "/chat/completions") openai_path = "/v1/chat/completions";
      if (rest == "/embeddings") openai_path = "/v1/embeddings";
    }
  }
  if (openai_path.empty()) return OpenAiError(404, "Resource not found");
  return Answer(method, openai_path, body, faults, config, now_unix);
}

}  // namespace govern::model_stub
