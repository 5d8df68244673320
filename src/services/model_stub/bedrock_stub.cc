#include "services/model_stub/bedrock_stub.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <nlohmann/json.hpp>
#include <vector>

#include "crypto/encoding.h"
#include "crypto/sha256.h"
#include "gateway/eventstream.h"
#include "gateway/json_util.h"
#include "storage/objstore/sigv4.h"

namespace govern::model_stub {
namespace {

using Json = nlohmann::json;
using gateway::detail::Dump;
namespace es = gateway::eventstream;
namespace sigv4 = objstore::sigv4;

Reply Error(int status, std::string message) {
  Reply r;
  r.status = status;
  r.body = Dump(Json{{"message", std::move(message)}});
  return r;
}

int64_t WordsOfBlocks(const Json& blocks) {
  int64_t n = 0;
  if (!blocks.is_array()) return 0;
  for (const Json& b : blocks) {
    if (!b.is_object()) continue;
    if (auto t = b.find("text"); t != b.end() && t->is_string()) n += CountWords(t->get<std::string>());
    if (auto u = b.find("toolUse"); u != b.end() && u->is_object() && u->contains("input"))
      n += CountWords(Dump((*u)["input"]));
    if (auto r = b.find("toolResult"); r != b.end() && r->is_object() && r->contains("content"))
      n += WordsOfBlocks((*r)["content"]);
  }
  return n;
}

// "AWS4-HMAC-SHA256 Credential=AKID/20261130/us-east-1/bedrock/aws4_request, SignedHeaders=a;b,
// Signature=hex" -> its three parts.
struct Authorization {
  std::string credential, signed_headers, signature;
};

bool ParseAuthorization(std::string_view v, Authorization& a) {
  constexpr std::string_view kAlg = "AWS4-HMAC-SHA256 ";
  if (!v.starts_with(kAlg)) return false;
  v.remove_prefix(kAlg.size());
  while (!v.empty()) {
    size_t comma = v.find(',');
    std::string_view part = v.substr(0, comma);
    v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    size_t eq = part.find('=');
    if (eq == std::string_view::npos) return false;
    std::string_view key = part.substr(0, eq), value = part.substr(eq + 1);
    if (key == "Credential") a.credential = value;
    if (key == "SignedHeaders") a.signed_headers = value;
    if (key == "Signature") a.signature = value;
  }
  return !a.credential.empty() && !a.signed_headers.empty() && !a.signature.empty();
}

bool ParseAmzDate(std::string_view d, int64_t& unix) {
  if (d.size() != 16 || d[8] != 'T' || d[15] != 'Z') return false;
  std::tm tm{};
  std::string s(d);
  if (strptime(s.c_str(), "%Y%m%dT%H%M%SZ", &tm) == nullptr) return false;
  unix = static_cast<int64_t>(timegm(&tm));
  return true;
}

es::Message Event(std::string_view type, const Json& payload) {
  es::Message m;
  m.headers.push_back(es::Header::String(":event-type", std::string(type)));
  m.headers.push_back(es::Header::String(":content-type", "application/json"));
  m.headers.push_back(es::Header::String(":message-type", "event"));
  // Bedrock pads every event with a "p" field of varying length (so sizes do not reveal the text).
  Json p = payload;
  p["p"] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0";
  m.payload = Dump(p);
  return m;
}

void Add(Reply& r, const es::Message& m, bool token) {
  auto bytes = es::Encode(m);
  r.events.push_back(bytes.ok() ? std::move(*bytes) : std::string());
  r.token_event.push_back(token);
}

}  // namespace

namespace {

// The model id of /model/{id}/<operation>, percent-decoded.
std::string ModelId(std::string_view path) {
  path.remove_prefix(std::string_view("/model/").size());
  path = path.substr(0, path.rfind('/'));
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    unsigned v = 0;
    if (path[i] == '%' && i + 2 < path.size() &&
        std::from_chars(path.data() + i + 1, path.data() + i + 3, v, 16).ptr == path.data() + i + 3) {
      out.push_back(static_cast<char>(v));
      i += 2;
    } else {
      out.push_back(path[i]);
    }
  }
  return out;
}

// InvokeModel for the embeddings models the gateway speaks to (gateway/bedrock.h): Amazon Titan Text
// Embeddings ({"inputText", "dimensions"} -> {"embedding", "inputTextTokenCount"}) and Cohere Embed
// ({"texts", "input_type", "output_dimension"} -> {"embeddings": [[...]]}, the token count only in the
// X-Amzn-Bedrock-Input-Token-Count header, as Bedrock sends it). Vectors are StubVector's.
Reply Invoke(std::string_view path, std::string_view body, const StubConfig& config) {
  const std::string model = ModelId(path);
  Json req = Json::parse(body, nullptr, false);
  if (req.is_discarded() || !req.is_object()) return Error(400, "Malformed input request");
  int64_t dims = config.default_dimensions;
  Reply r;
  if (model.find("amazon.titan-embed-text") != std::string::npos) {
    auto t = req.find("inputText");
    if (t == req.end() || !t->is_string()) return Error(400, "Malformed input request: inputText");
    if (auto d = req.find("dimensions"); d != req.end()) {
      if (!d->is_number_integer() || (*d != 256 && *d != 512 && *d != 1024))
        return Error(400, "Malformed input request: dimensions");
      dims = d->get<int64_t>();
    }
    std::string text = t->get<std::string>();
    r.body = Dump(Json{{"embedding", StubVector(text, dims)}, {"inputTextTokenCount", CountWords(text)}});
  } else if (model.find("cohere.embed-") != std::string::npos) {
    auto t = req.find("texts");
    if (t == req.end() || !t->is_array() || t->size() > 96)
      return Error(400, "Malformed input request: texts");
    if (!req.contains("input_type")) return Error(400, "Malformed input request: input_type is required");
    if (auto d = req.find("output_dimension"); d != req.end()) {
      if (!d->is_number_integer()) return Error(400, "Malformed input request: output_dimension");
      dims = d->get<int64_t>();
    }
    Json vectors = Json::array();
    int64_t words = 0;
    for (const Json& x : *t) {
      if (!x.is_string()) return Error(400, "Malformed input request: texts");
      vectors.push_back(StubVector(x.get<std::string>(), dims));
      words += CountWords(x.get<std::string>());
    }
    r.body = Dump(Json{{"id", "stub-embed"},
                       {"response_type", "embeddings_floats"},
                       {"texts", *t},
                       {"embeddings", std::move(vectors)}});
    r.headers.emplace_back("X-Amzn-Bedrock-Input-Token-Count", std::to_string(words));
  } else {
    return Error(400, "The stub's InvokeModel knows only Titan and Cohere embeddings, not " + model);
  }
  return r;
}

}  // namespace

bool IsBedrockPath(std::string_view path) { return path.starts_with("/model/"); }

std::string BedrockSignatureError(std::string_view method, std::string_view path,
                                  const std::function<std::string_view(std::string_view)>& header,
                                  std::string_view body, const StubConfig& config, int64_t now_unix) {
  Authorization a;
  if (!ParseAuthorization(header("authorization"), a))
    return "missing or malformed AWS4-HMAC-SHA256 Authorization";
  // Credential=AKID/date/region/service/aws4_request
  std::vector<std::string_view> scope;
  std::string_view c = a.credential;
  for (size_t pos; (pos = c.find('/')) != std::string_view::npos; c.remove_prefix(pos + 1))
    scope.push_back(c.substr(0, pos));
  scope.push_back(c);
  if (scope.size() != 5 || scope[4] != "aws4_request") return "malformed credential scope";
  if (scope[0] != config.aws_access_key_id) return "unknown access key id";
  if (scope[3] != "bedrock") return "credential scope is not for service bedrock";
  if (!config.aws_region.empty() && scope[2] != config.aws_region)
    return "credential scope is for another region";
  std::string_view amz_date = header("x-amz-date");
  int64_t signed_at = 0;
  if (!ParseAmzDate(amz_date, signed_at)) return "missing or malformed x-amz-date";
  if (amz_date.substr(0, 8) != scope[1]) return "credential scope date differs from x-amz-date";
  if (signed_at < now_unix - 300 || signed_at > now_unix + 300)
    return "signature expired (x-amz-date too far from now)";
  sigv4::Request req;
  req.method = std::string(method);
  req.canonical_uri = sigv4::UriEncode(path, /*keep_slash=*/true);
  bool has_host = false, has_date = false, has_token = false;
  std::string_view names = a.signed_headers;
  while (!names.empty()) {
    size_t semi = names.find(';');
    std::string_view name = names.substr(0, semi);
    names = semi == std::string_view::npos ? std::string_view() : names.substr(semi + 1);
    has_host = has_host || name == "host";
    has_date = has_date || name == "x-amz-date";
    has_token = has_token || name == "x-amz-security-token";
    req.headers.emplace_back(std::string(name), std::string(header(name)));
  }
  if (!has_host || !has_date) return "host and x-amz-date must be signed";
  if (!config.aws_session_token.empty() &&
      (!has_token || header("x-amz-security-token") != config.aws_session_token))
    return "the security token is missing or invalid";
  auto digest = crypto::Sha256(body);
  if (!digest.ok()) return "hashing failed";
  req.payload_sha256_hex = crypto::HexEncode(*digest);
  sigv4::Credentials creds{config.aws_access_key_id, config.aws_secret_access_key, config.aws_session_token};
  auto sig = sigv4::Sign(req, creds, scope[2], "bedrock", amz_date);
  if (!sig.ok()) return sig.status().message();
  if (sig->signature != a.signature)
    return "The request signature we calculated does not match the signature you provided. Check your AWS "
           "Secret Access Key and signing method.";
  return "";
}

Reply BedrockAnswer(std::string_view method, std::string_view path,
                    const std::function<std::string_view(std::string_view)>& header, std::string_view body,
                    const Faults& faults, const StubConfig& config, int64_t now_unix) {
  const bool stream = path.ends_with("/converse-stream");
  const bool invoke = path.ends_with("/invoke");
  if (!stream && !invoke && !path.ends_with("/converse")) return Error(404, "unknown operation");
  if (method != "POST") return Error(405, "use POST");
  if (!config.aws_secret_access_key.empty()) {
    std::string why = BedrockSignatureError(method, path, header, body, config, now_unix);
    if (!why.empty()) return Error(403, why);
  }
  if (faults.status >= 400) return Error(faults.status, "injected status " + std::to_string(faults.status));
  if (invoke) {
    Reply r = Invoke(path, body, config);
    if (faults.cut_after >= 0) r.truncate_at = static_cast<int64_t>(r.body.size() / 2);
    if (!faults.text.empty() && r.status == 200) r.body = faults.text;  // a malformed answer, for tests
    return r;
  }
  Json req = Json::parse(body, nullptr, false);
  if (req.is_discarded() || !req.is_object() || !req.contains("messages") || !req["messages"].is_array())
    return Error(400, "messages is required");
  int64_t input = 0;
  if (req.contains("system")) input += WordsOfBlocks(req["system"]);
  bool last_is_result = false;
  for (const Json& m : req["messages"]) {
    if (!m.is_object() || !m.contains("content")) return Error(400, "a message needs content");
    input += WordsOfBlocks(m["content"]);
    last_is_result = false;
    if (m["content"].is_array()) {
      for (const Json& b : m["content"]) last_is_result = b.is_object() && b.contains("toolResult");
    }
  }
  std::optional<int64_t> max_tokens;
  if (auto ic = req.find("inferenceConfig"); ic != req.end() && ic->is_object()) {
    if (auto mt = ic->find("maxTokens"); mt != ic->end() && mt->is_number_integer())
      max_tokens = mt->get<int64_t>();
  }
  // One tool call when tools are offered and the last message is not a tool's result.
  std::string tool_name;
  Json tool_params;
  if (auto tc = req.find("toolConfig"); tc != req.end() && tc->is_object() && !last_is_result) {
    const Json& tools = (*tc)["tools"];
    std::string forced;
    if (auto choice = tc->find("toolChoice");
        choice != tc->end() && choice->is_object() && choice->contains("tool"))
      forced = gateway::detail::StrField((*choice)["tool"], "name");
    if (tools.is_array()) {
      for (const Json& t : tools) {
        if (!t.is_object() || !t.contains("toolSpec")) continue;
        const Json& spec = t["toolSpec"];
        std::string name(gateway::detail::StrField(spec, "name"));
        if (tool_name.empty() || name == forced) {
          tool_name = name;
          tool_params = spec.contains("inputSchema") ? spec["inputSchema"].value("json", Json()) : Json();
        }
      }
    }
  }
  std::vector<std::string> pieces;
  std::string stop = "end_turn";
  std::string arguments;
  if (!tool_name.empty()) {
    Json args = Json::object();
    if (tool_params.is_object() && tool_params.contains("properties") &&
        tool_params["properties"].is_object())
      for (auto it = tool_params["properties"].begin(); it != tool_params["properties"].end(); ++it)
        args[it.key()] = StubValueFor(it.value());
    arguments = Dump(args);
    pieces = Pieces(arguments);
    stop = "tool_use";
  } else if (!faults.text.empty()) {
    pieces = Pieces(faults.text);
  } else {
    int64_t n =
        std::clamp<int64_t>(faults.output_tokens.value_or(config.default_output_tokens), 0, kMaxOutputTokens);
    if (max_tokens && *max_tokens >= 0 && *max_tokens < n) {
      n = *max_tokens;
      stop = "max_tokens";
    }
    pieces = StubWords(n);
  }
  const int64_t output = static_cast<int64_t>(pieces.size());
  const int64_t cached = std::clamp<int64_t>(faults.cached_tokens, 0, input);
  Json usage = {{"inputTokens", input - cached},
                {"outputTokens", output},
                {"totalTokens", input + output},
                {"cacheReadInputTokens", cached},
                {"cacheWriteInputTokens", 0}};
  if (!stream) {
    Json block;
    if (!tool_name.empty()) {
      block = {{"toolUse",
                {{"toolUseId", "tooluse_stub0"},
                 {"name", tool_name},
                 {"input", Json::parse(arguments, nullptr, false)}}}};
    } else {
      std::string text;
      for (const auto& p : pieces) text += p;
      block = {{"text", text}};
    }
    Reply r;
    r.body = Dump(Json{{"output", {{"message", {{"role", "assistant"}, {"content", Json::array({block})}}}}},
                       {"stopReason", stop},
                       {"usage", usage},
                       {"metrics", {{"latencyMs", 1}}}});
    if (faults.cut_after >= 0) r.truncate_at = static_cast<int64_t>(r.body.size() / 2);
    return r;
  }
  Reply r;
  r.stream = true;
  r.content_type = "application/vnd.amazon.eventstream";
  Add(r, Event("messageStart", {{"role", "assistant"}}), false);
  if (!tool_name.empty()) {
    Add(r,
        Event("contentBlockStart",
              {{"start", {{"toolUse", {{"toolUseId", "tooluse_stub0"}, {"name", tool_name}}}}},
               {"contentBlockIndex", 0}}),
        false);
    for (const auto& p : pieces)
      Add(r, Event("contentBlockDelta", {{"delta", {{"toolUse", {{"input", p}}}}}, {"contentBlockIndex", 0}}),
          true);
  } else {
    for (const auto& p : pieces)
      Add(r, Event("contentBlockDelta", {{"delta", {{"text", p}}}, {"contentBlockIndex", 0}}), true);
  }
  Add(r, Event("contentBlockStop", {{"contentBlockIndex", 0}}), false);
  Add(r, Event("messageStop", {{"stopReason", stop}}), false);
  Add(r, Event("metadata", {{"usage", usage}, {"metrics", {{"latencyMs", 1}}}}), false);
  if (faults.error_after >= 0 && static_cast<size_t>(faults.error_after) < r.events.size()) {
    r.events.resize(static_cast<size_t>(faults.error_after));
    r.token_event.resize(r.events.size());
    es::Message ex;
    ex.headers.push_back(es::Header::String(":exception-type", "modelStreamErrorException"));
    ex.headers.push_back(es::Header::String(":content-type", "application/json"));
    ex.headers.push_back(es::Header::String(":message-type", "exception"));
    ex.payload = Dump(Json{{"message", "injected stream error"}});
    Add(r, ex, false);
  }
  if (faults.cut_after >= 0) r.truncate_at = faults.cut_after;
  return r;
}

}  // namespace govern::model_stub
