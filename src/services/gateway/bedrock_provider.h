// AWS Bedrock deployments (provider "bedrock" in the routes file; docs/gateway.md, "AWS Bedrock"): their
// configuration (region, model id, credentials given in the file or named environment variables) and
// the signed Converse / ConverseStream requests the proxy sends. The body translation is
// gateway/bedrock.h; this file adds URLs and authentication.
//
// Promises:
//  - URLs: base_url (default https://bedrock-runtime.{region}.amazonaws.com) + /model/{model id}/converse
//    or /converse-stream (chat, Responses) or /invoke (embeddings), the model id percent-encoded (an id such
//    as "anthropic.claude-3-5-haiku- 20241022-v1:0" or an inference-profile ARN goes as one path segment).
//  - SigV4 (service "bedrock", the deployment's region; objstore/sigv4.h, unchanged): every request is
//    signed when it is built (each attempt, so a retry is signed afresh), over host, content-type,
//    accept, x-amz-date and x-amz-security-token (temporary credentials), and the SHA-256 of the body.
//    The canonical URI is the sent path encoded once more, as SigV4 wants for every service but S3
//    (the ':' of a model id is sent as %3A and signed as %253A).
//  - Or a Bedrock API key (`api_key`): sent as Authorization: Bearer, nothing signed.
//  - Static credentials are read once, when the routes load: a named environment variable that is unset
//    or empty stops the load with the field named. Or `aws_credentials_source` (file, container, imds):
//    temporary credentials refreshed in the background (aws_credentials.h); each signature takes the
//    source's current set, and when there is none usable the request is not built (Unavailable, naming
//    the source and its error; the proxy answers 502). Secrets never appear in errors or logs.
//
// Thread-safety: BedrockDeployment is immutable after parsing (its credential source is thread-safe);
// ParseBedrockFields reads the environment and, for a refreshing source, fetches the first set.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "base/status.h"
#include "gateway/openai.h"
#include "services/gateway/aws_credentials.h"
#include "services/gateway/routing.h"
#include "services/gateway/upstream.h"
#include "storage/objstore/sigv4.h"

namespace govern::gateway {

struct BedrockDeployment {
  std::string region;
  std::string model_id;                               // the deployment's `model`, else the route's model
  objstore::sigv4::Credentials credentials;           // static ones, when `source` is null
  std::shared_ptr<AwsCredentialSource> source;        // refreshed ones (aws_credentials_source)
  std::string api_key;                                // a Bedrock API key instead of SigV4 credentials
  std::string cohere_input_type = "search_document";  // Cohere Embed's input_type (cohere_input_type)
  std::string host;  // the Host header the provider client sends (base_url's host[:port])
  std::string converse_url, stream_url, invoke_url;
  std::string converse_canonical_uri, stream_canonical_uri, invoke_canonical_uri;  // for signing
};

// The deployment fields only a bedrock deployment takes.
inline constexpr const char* kBedrockFields[] = {"region",
                                                 "aws_access_key_id",
                                                 "aws_secret_access_key",
                                                 "aws_session_token",
                                                 "aws_access_key_id_env",
                                                 "aws_secret_access_key_env",
                                                 "aws_session_token_env",
                                                 "aws_credentials_source",
                                                 "aws_credentials_file",
                                                 "aws_profile",
                                                 "aws_imds_endpoint",
                                                 "aws_credentials_refresh_before_ms",
                                                 "aws_credentials_file_check_ms",
                                                 "cohere_input_type"};

// base_url for a bedrock deployment: the given one, else the region's public endpoint.
Result<std::string> BedrockBaseUrl(const nlohmann::json& d, const std::string& path);

// For a bedrock deployment (c.provider == kBedrock, c.base_url and c.api_key already parsed): region,
// credentials and URLs into c.bedrock. For any other provider: an error if a bedrock field is present.
// `route_model` is the route's model (the model id when the deployment gives none).
Status ParseBedrockFields(const nlohmann::json& d, const std::string& path, std::string_view route_model,
                          DeploymentConfig& c);

// The signed Converse (or ConverseStream, `stream`) request for `chat`, at `unix_micros` (x-amz-date).
Result<UpstreamRequest> BedrockRequest(const BedrockDeployment& b, const openai::ChatRequest& chat,
                                       bool stream, int64_t unix_micros);

// The signed InvokeModel request (POST /model/{model id}/invoke, JSON in and out) with `body`, the
// model's own body (embeddings: gateway/bedrock.h FromEmbeddingsRequest).
Result<UpstreamRequest> BedrockInvokeRequest(const BedrockDeployment& b, std::string body,
                                             int64_t unix_micros);

// The credentials to sign with now: the static set, or the source's current one.
Result<std::shared_ptr<const objstore::sigv4::Credentials>> BedrockCredentials(const BedrockDeployment& b);

// SigV4 headers (x-amz-date, x-amz-security-token, Authorization) for a POST of `body` to `canonical_uri`
// with `headers` (content-type, accept) already set; exposed for tests.
Status SignBedrock(const BedrockDeployment& b, std::string_view canonical_uri, std::string_view body,
                   net::Headers& headers, int64_t unix_micros);

// What the client is told for a Bedrock error status: 400, 413 and 429 as they are, 408 (model
// timeout) as 504, and the rest (the gateway's credentials refused, an unknown model, 424 model
// error, 5xx) as 502: they are the gateway's or the provider's failure, not the client's.
int BedrockClientStatus(int upstream_status);

}  // namespace govern::gateway
