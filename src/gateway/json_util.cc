#include "gateway/json_util.h"

#include "gateway/openai.h"

namespace govern::gateway::detail {

Result<Json> ParseJson(std::string_view bytes, std::string_view what) {
  Json j = Json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(std::string(what) + ": not valid JSON");
  return j;
}

namespace {
std::string Where(std::string_view path, const char* key) {
  std::string s(path);
  if (!s.empty()) s.push_back('.');
  s.append(key);
  return s;
}
}  // namespace

Result<std::optional<std::string>> OptString(const Json& obj, const char* key, std::string_view path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) return InvalidArgument(Where(path, key) + " must be a string");
  return std::optional<std::string>(it->get<std::string>());
}

Result<std::optional<int64_t>> OptInt(const Json& obj, const char* key, std::string_view path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::optional<int64_t>();
  if (it->is_number_integer()) return std::optional<int64_t>(it->get<int64_t>());
  if (it->is_number_float()) {
    double d = it->get<double>();
    if (d >= -9.0e18 && d <= 9.0e18 && static_cast<double>(static_cast<int64_t>(d)) == d)
      return std::optional<int64_t>(static_cast<int64_t>(d));
  }
  return InvalidArgument(Where(path, key) + " must be an integer");
}

Result<std::optional<double>> OptNumber(const Json& obj, const char* key, std::string_view path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::optional<double>();
  if (!it->is_number()) return InvalidArgument(Where(path, key) + " must be a number");
  return std::optional<double>(it->get<double>());
}

Result<std::optional<bool>> OptBool(const Json& obj, const char* key, std::string_view path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::optional<bool>();
  if (!it->is_boolean()) return InvalidArgument(Where(path, key) + " must be true or false");
  return std::optional<bool>(it->get<bool>());
}

Result<std::string> ReqString(const Json& obj, const char* key, std::string_view path) {
  GOVERN_ASSIGN_OR_RETURN(auto v, OptString(obj, key, path));
  if (!v) return InvalidArgument(Where(path, key) + " is required");
  return std::move(*v);
}

Json Extras(const Json& obj, std::initializer_list<const char*> known) {
  Json out = Json::object();
  if (!obj.is_object()) return out;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool is_known = false;
    for (const char* k : known) {
      if (it.key() == k) {
        is_known = true;
        break;
      }
    }
    if (!is_known) out[it.key()] = it.value();
  }
  return out;
}

void MergeExtras(Json& obj, const Json& extras) {
  if (!extras.is_object()) return;
  for (auto it = extras.begin(); it != extras.end(); ++it)
    if (!obj.contains(it.key())) obj[it.key()] = it.value();
}

std::string_view StrField(const Json& obj, const char* key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return {};
  return it->get_ref<const std::string&>();
}

Result<int64_t> Count(const Json& obj, const char* key, std::string_view path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return int64_t{0};
  if (!it->is_number_integer() || it->get<int64_t>() < 0)
    return InvalidArgument(Where(path, key) + " must be a non-negative integer");
  return it->get<int64_t>();
}

Json JsonOrText(const std::string& s) {
  auto j = ParseJson(s, "arguments");
  if (j.ok()) return std::move(*j);
  return Json(s);
}

Result<std::string> TextOf(const openai::Content& c, std::string_view path, std::string_view provider) {
  if (c.kind != openai::Content::Kind::kParts) return c.text;
  std::string text;
  for (const Json& p : c.parts) {
    if (!p.is_object() || StrField(p, "type") != "text")
      return InvalidArgument(std::string(path) + ": only text parts can be sent to a " +
                             std::string(provider) + " deployment");
    auto t = p.find("text");
    if (t != p.end() && t->is_string()) text += t->get<std::string>();
  }
  return text;
}

Json CamelCaseSampling(const openai::ChatRequest& req, const char* max_tokens_key) {
  Json out = Json::object();
  if (req.max_completion_tokens) {
    out[max_tokens_key] = *req.max_completion_tokens;
  } else if (req.max_tokens) {
    out[max_tokens_key] = *req.max_tokens;
  }
  if (req.temperature) out["temperature"] = *req.temperature;
  if (req.top_p) out["topP"] = *req.top_p;
  if (!req.stop.empty()) out["stopSequences"] = req.stop;
  return out;
}

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace govern::gateway::detail
