#include "services/gateway/bedrock_provider.h"

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

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

// A refreshing source from aws_credentials_source and the fields that go with it; nullopt when none.
Result<std::optional<AwsSourceOptions>> SourceOptions(const Json& d, const std::string& path) {
  GOVERN_ASSIGN_OR_RETURN(auto kind, detail::OptString(d, "aws_credentials_source", path));
  GOVERN_ASSIGN_OR_RETURN(auto file, detail::OptString(d, "aws_credentials_file", path));
  GOVERN_ASSIGN_OR_RETURN(auto profile, detail::OptString(d, "aws_profile", path));
  GOVERN_ASSIGN_OR_RETURN(auto imds, detail::OptString(d, "aws_imds_endpoint", path));
  GOVERN_ASSIGN_OR_RETURN(auto before, detail::OptInt(d, "aws_credentials_refresh_before_ms", path));
  GOVERN_ASSIGN_OR_RETURN(auto check, detail::OptInt(d, "aws_credentials_file_check_ms", path));
  auto only_with = [&](bool present, const char* field, const char* kinds) -> Status {
    if (present) return InvalidArgument(path + "." + field + " needs aws_credentials_source " + kinds);
    return OkStatus();
  };
  const bool is_file = kind && *kind == "file", is_imds = kind && *kind == "imds";
  GOVERN_RETURN_IF_ERROR(only_with(file && !is_file, "aws_credentials_file", "file"));
  GOVERN_RETURN_IF_ERROR(only_with(profile && !is_file, "aws_profile", "file"));
  GOVERN_RETURN_IF_ERROR(only_with(check && !is_file, "aws_credentials_file_check_ms", "file"));
  GOVERN_RETURN_IF_ERROR(only_with(imds && !is_imds, "aws_imds_endpoint", "imds"));
  GOVERN_RETURN_IF_ERROR(only_with(before && !kind, "aws_credentials_refresh_before_ms", "(any)"));
  if (!kind) return std::optional<AwsSourceOptions>();
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v == nullptr ? std::string() : std::string(v);
  };
  AwsSourceOptions o;
  if (before) {
    if (*before < 10000 || *before > 86400000)  // 0 would refresh only when the set has expired
      return InvalidArgument(path +
                             ".aws_credentials_refresh_before_ms must be 10000..86400000 (at least 10 s "
                             "before the credentials expire)");
    o.refresh_before = std::chrono::milliseconds(*before);
  }
  if (*kind == "file") {
    o.kind = AwsSourceOptions::Kind::kFile;
    o.file = file.value_or(env("AWS_SHARED_CREDENTIALS_FILE"));
    if (o.file.empty()) {
      const std::string home = env("HOME");
      if (home.empty())
        return InvalidArgument(path +
                               ": aws_credentials_file is required (HOME and "
                               "AWS_SHARED_CREDENTIALS_FILE are not set)");
      o.file = home + "/.aws/credentials";
    }
    o.profile = profile.value_or(env("AWS_PROFILE"));
    if (o.profile.empty()) o.profile = "default";
    if (o.profile.find_first_of("[]\r\n") != std::string::npos)
      return InvalidArgument(path + ".aws_profile must not hold brackets or line breaks");
    if (check) {
      if (*check < 100 || *check > 86400000)
        return InvalidArgument(path + ".aws_credentials_file_check_ms must be 100..86400000");
      o.check_interval = std::chrono::milliseconds(*check);
    }
  } else if (*kind == "container") {
    o.kind = AwsSourceOptions::Kind::kContainer;
    auto url = ContainerCredentialsUrl(env("AWS_CONTAINER_CREDENTIALS_FULL_URI"),
                                       env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"));
    if (!url.ok())
      return InvalidArgument(path + ": aws_credentials_source container: " + url.status().message());
    o.url = *url;
    o.authorization_file = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    o.authorization = env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    if (o.authorization.find_first_of("\r\n") != std::string::npos)
      return InvalidArgument(path + ": AWS_CONTAINER_AUTHORIZATION_TOKEN holds a line break");
    o.check_interval = std::chrono::minutes(15);
    o.timeout = std::chrono::milliseconds(5000);
  } else if (*kind == "imds") {
    o.kind = AwsSourceOptions::Kind::kImds;
    o.url = imds.value_or(env("AWS_EC2_METADATA_SERVICE_ENDPOINT"));
    if (o.url.empty()) o.url = "http://169.254.169.254";
    if ((!o.url.starts_with("http://") && !o.url.starts_with("https://")) ||
        o.url.find_first_of(" \t\r\n?#") != std::string::npos)
      return InvalidArgument(path + ".aws_imds_endpoint must be an http:// or https:// URL");
    o.check_interval = std::chrono::minutes(15);
    o.timeout = std::chrono::milliseconds(1000);
  } else {
    return InvalidArgument(path + ".aws_credentials_source must be file, container or imds (not `" + *kind +
                           "`)");
  }
  return std::optional<AwsSourceOptions>(std::move(o));
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
  GOVERN_ASSIGN_OR_RETURN(auto input_type, detail::OptString(d, "cohere_input_type", path));
  if (input_type) {
    if (*input_type != "search_document" && *input_type != "search_query" &&
        *input_type != "classification" && *input_type != "clustering")
      return InvalidArgument(path +
                             ".cohere_input_type must be search_document, search_query, classification or "
                             "clustering");
    b->cohere_input_type = *input_type;
  }
  b->api_key = c.api_key;
  const bool keyless = b->api_key.empty();
  GOVERN_ASSIGN_OR_RETURN(auto source, SourceOptions(d, path));
  const bool static_keys = keyless && !source;
  GOVERN_ASSIGN_OR_RETURN(b->credentials.access_key_id,
                          Credential(d, path, "aws_access_key_id", static_keys));
  GOVERN_ASSIGN_OR_RETURN(b->credentials.secret_access_key,
                          Credential(d, path, "aws_secret_access_key", static_keys));
  GOVERN_ASSIGN_OR_RETURN(b->credentials.session_token, Credential(d, path, "aws_session_token", false));
  const bool any_static = !b->credentials.access_key_id.empty() ||
                          !b->credentials.secret_access_key.empty() || !b->credentials.session_token.empty();
  if (!keyless && (any_static || source))
    return InvalidArgument(path + ": give api_key (a Bedrock API key) or AWS credentials, not both");
  if (source && any_static)
    return InvalidArgument(path +
                           ": give aws_credentials_source or aws_access_key_id/aws_secret_access_key, "
                           "not both");
  if (source) b->source = AwsCredentialSource::Start(std::move(*source));
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

Result<std::shared_ptr<const sigv4::Credentials>> BedrockCredentials(const BedrockDeployment& b) {
  if (b.source) return b.source->Current();
  // Static credentials: an aliasing pointer into the deployment, which the caller holds.
  return std::shared_ptr<const sigv4::Credentials>(std::shared_ptr<const sigv4::Credentials>(),
                                                   &b.credentials);
}

Status SignBedrock(const BedrockDeployment& b, std::string_view canonical_uri, std::string_view body,
                   net::Headers& headers, int64_t unix_micros) {
  GOVERN_ASSIGN_OR_RETURN(auto creds, BedrockCredentials(b));
  const std::string amz_date = sigv4::AmzDate(unix_micros);
  headers.Set("x-amz-date", amz_date);
  if (!creds->session_token.empty()) headers.Set("x-amz-security-token", creds->session_token);
  sigv4::Request req;
  req.method = "POST";
  req.canonical_uri = std::string(canonical_uri);
  req.headers.emplace_back("host", b.host);
  for (const char* name : {"content-type", "accept", "x-amz-date", "x-amz-security-token"}) {
    if (auto v = headers.Get(name)) req.headers.emplace_back(name, std::string(*v));
  }
  GOVERN_ASSIGN_OR_RETURN(auto digest, crypto::Sha256(body));
  req.payload_sha256_hex = crypto::HexEncode(digest);
  GOVERN_ASSIGN_OR_RETURN(auto sig, sigv4::Sign(req, *creds, b.region, "bedrock", amz_date));
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
