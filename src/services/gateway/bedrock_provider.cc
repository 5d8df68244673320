#include "services/gateway/bedrock_provider.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "crypto/encoding.h"
#include "crypto/sha256.h"
#include "gateway/bedrock.h"
#include "gateway/json_util.h"

namespace govern::gateway {

using Json = nlohmann::json;
namespace sigv4 = objstore::sigv4;

namespace {

bool RegionName(std::string_view r) {
  return !r.empty() && r.size() <= 64 &&
         r.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string_view::npos;
}

// A credential from `<key>` (literal) or `<key>_env` (the name of an environment variable), never both.
Result<std::string> Credential(const Json& d, const std::string& path, const std::string& key,
                               bool required) {
  GOVERN_ASSIGN_OR_RETURN(auto literal, detail::OptString(d, key.c_str(), path));
  const std::string env_key = key + "_env";
  GOVERN_ASSIGN_OR_RETURN(auto env, detail::OptString(d, env_key.c_str(), path));
  if (literal && env) return InvalidArgument(path + ": give " + key + " or " + env_key + ", not both");
  std::string value;
  if (literal) {
    value = *literal;
    if (value.empty()) return InvalidArgument(path + "." + key + " must not be empty");
  } else if (env) {
    if (env->empty()) return InvalidArgument(path + "." + env_key + " must name an environment variable");
    const char* v = std::getenv(env->c_str());
    if (v == nullptr || *v == '\0')
      return InvalidArgument(path + "." + env_key + " names `" + *env + "`, which is not set");
    value = v;
  } else if (required) {
    return InvalidArgument(path + ": " + key + " or " + env_key +
                           " is required for provider bedrock (or api_key)");
  }
  if (value.find_first_of("\r\n") != std::string::npos)
    return InvalidArgument(path + "." + key + " must not hold line breaks");
  return value;
}

// The path of base_url (after the authority), "" when none.
std::string_view BasePath(std::string_view base_url) {
  size_t scheme = base_url.find("://");
  size_t slash = base_url.find('/', scheme == std::string_view::npos ? 0 : scheme + 3);
  return slash == std::string_view::npos ? std::string_view() : base_url.substr(slash);
}

std::string_view Authority(std::string_view base_url) {
  size_t scheme = base_url.find("://");
  std::string_view rest = scheme == std::string_view::npos ? base_url : base_url.substr(scheme + 3);
  return rest.substr(0, rest.find('/'));
}

}  // namespace

Result<std::string> BedrockBaseUrl(const Json& d, const std::string& path) {
  GOVERN_ASSIGN_OR_RETURN(auto base, detail::OptString(d, "base_url", path));
  if (base) return *base;
  GOVERN_ASSIGN_OR_RETURN(auto region, detail::OptString(d, "region", path));
  if (!region || !RegionName(*region))
    return InvalidArgument(path + ".region is required for provider bedrock (like us-east-1)");
  return "https://bedrock-runtime." + *region + ".amazonaws.com";
}

Status ParseBedrockFields(const Json& d, const std::string& path, std::string_view route_model,
                          DeploymentConfig& c) {
  if (c.provider != Provider::kBedrock) {
    for (const char* f : kBedrockFields) {
      if (d.contains(f)) return InvalidArgument(path + ": " + f + " is for provider bedrock only");
    }
    return OkStatus();
  }
  auto b = std::make_shared<BedrockDeployment>();
  GOVERN_ASSIGN_OR_RETURN(auto region, detail::OptString(d, "region", path));
  if (!region || !RegionName(*region))
    return InvalidArgument(path + ".region is required for provider bedrock (like us-east-1)");
  b->region = *region;
  b->model_id = c.model.empty() ? std::string(route_model) : c.model;
  if (b->model_id.empty() || b->model_id.size() > 2048 ||
      b->model_id.find_first_of(std::string_view("\0\r\n\t ", 5)) != std::string::npos)
    return InvalidArgument(path + ".model must be a Bedrock model id or ARN");
  b->api_key = c.api_key;
  const bool keyless = b->api_key.empty();
  GOVERN_ASSIGN_OR_RETURN(b->credentials.access_key_id, Credential(d, path, "aws_access_key_id", keyless));
  GOVERN_ASSIGN_OR_RETURN(b->credentials.secret_access_key,
                          Credential(d, path, "aws_secret_access_key", keyless));
  GOVERN_ASSIGN_OR_RETURN(b->credentials.session_token, Credential(d, path, "aws_session_token", false));
  if (!keyless && (!b->credentials.access_key_id.empty() || !b->credentials.secret_access_key.empty() ||
                   !b->credentials.session_token.empty()))
    return InvalidArgument(path + ": give api_key (a Bedrock API key) or AWS credentials, not both");
  b->host = std::string(Authority(c.base_url));
  const std::string prefix =
      std::string(BasePath(c.base_url)) + "/model/" + sigv4::UriEncode(b->model_id, /*keep_slash=*/false);
  const std::string converse = prefix + "/converse", stream = prefix + "/converse-stream",
                    invoke = prefix + "/invoke";
  const std::string origin = c.base_url.substr(0, c.base_url.size() - BasePath(c.base_url).size());
  b->converse_url = origin + converse;
  b->stream_url = origin + stream;
  b->invoke_url = origin + invoke;
  b->converse_canonical_uri = sigv4::UriEncode(converse, /*keep_slash=*/true);
  b->stream_canonical_uri = sigv4::UriEncode(stream, /*keep_slash=*/true);
  b->invoke_canonical_uri = sigv4::UriEncode(invoke, /*keep_slash=*/true);
  c.bedrock = std::move(b);
  return OkStatus();
}

Status SignBedrock(const BedrockDeployment& b, std::string_view canonical_uri, std::string_view body,
                   net::Headers& headers, int64_t unix_micros) {
  const std::string amz_date = sigv4::AmzDate(unix_micros);
  headers.Set("x-amz-date", amz_date);
  if (!b.credentials.session_token.empty()) headers.Set("x-amz-security-token", b.credentials.session_token);
  sigv4::Request req;
  req.method = "POST";
  req.canonical_uri = std::string(canonical_uri);
  req.headers.emplace_back("host", b.host);
  for (const char* name : {"content-type", "accept", "x-amz-date", "x-amz-security-token"}) {
    if (auto v = headers.Get(name)) req.headers.emplace_back(name, std::string(*v));
  }
  GOVERN_ASSIGN_OR_RETURN(auto digest, crypto::Sha256(body));
  req.payload_sha256_hex = crypto::HexEncode(digest);
  GOVERN_ASSIGN_OR_RETURN(auto sig, sigv4::Sign(req, b.credentials, b.region, "bedrock", amz_date));
  headers.Set("Authorization", sig.authorization);
  return OkStatus();
}

Result<UpstreamRequest> BedrockRequest(const BedrockDeployment& b, const openai::ChatRequest& chat,
                                       bool stream, int64_t unix_micros) {
  GOVERN_ASSIGN_OR_RETURN(Json body, bedrock::FromChatRequest(chat));
  UpstreamRequest up;
  up.body = detail::Dump(body);
  up.url = stream ? b.stream_url : b.converse_url;
  up.headers.Set("Content-Type", "application/json");
  up.headers.Set("Accept", stream ? "application/vnd.amazon.eventstream" : "application/json");
  if (!b.api_key.empty()) {
    up.headers.Set("Authorization", "Bearer " + b.api_key);
    return up;
  }
  GOVERN_RETURN_IF_ERROR(SignBedrock(b, stream ? b.stream_canonical_uri : b.converse_canonical_uri, up.body,
                                     up.headers, unix_micros));
  return up;
}

Result<UpstreamRequest> BedrockInvokeRequest(const BedrockDeployment& b, std::string body,
                                             int64_t unix_micros) {
  UpstreamRequest up;
  up.body = std::move(body);
  up.url = b.invoke_url;
  up.headers.Set("Content-Type", "application/json");
  up.headers.Set("Accept", "application/json");
  if (!b.api_key.empty()) {
    up.headers.Set("Authorization", "Bearer " + b.api_key);
    return up;
  }
  GOVERN_RETURN_IF_ERROR(SignBedrock(b, b.invoke_canonical_uri, up.body, up.headers, unix_micros));
  return up;
}

int BedrockClientStatus(int s) {
  if (s == 400 || s == 413 || s == 429) return s;
  if (s == 408) return 504;
  return 502;
}

}  // namespace govern::gateway
