// Routing from configuration: a model served by several deployments (provider, base URL, key, weight,
// timeouts), load balancing among them, retries with backoff onto another deployment, fallbacks to other
// models, and a circuit breaker per deployment. The proxy (proxy.cc) asks a RoutePlan for each attempt of
// one request; whether an attempt may be made again is the proxy's rule (retries never bill twice: see
// docs/gateway.md), not this file's.
//
// Promises:
//  - Balancing: among the deployments a request may use, those with the fewest calls in flight per unit of
//    weight are preferred; among equals, smooth weighted round robin (nginx's), so over many sequential
//    calls each deployment gets exactly its share of the weight.
//  - A plan tries the model's deployments (untried ones first) up to 1 + retries times, then each fallback
//    model in order with that model's own 1 + retries attempts (a fallback's own fallbacks are not
//    followed). Backoff before attempt k+1 (k >= 1): backoff * 2^(k-1), capped at max_backoff, with
//    equal jitter (half fixed, half random).
//  - Circuit breaker (per deployment, when configured): opens after `consecutive_failures` failures in a
//    row, or when at least `min_calls` of the last `window` outcomes include `failure_ratio` failures or
//    more. While open the deployment is skipped (a request with no other deployment is refused at once,
//    with no connection made); after `cooldown` one request is let through as a probe (half-open), and
//    its outcome closes the breaker or opens it again for another cool-down. Other requests skip the
//    deployment while the probe is in flight.
//  - Configuration is checked whole at load (ParseModelRoute, ValidateRoutes): unknown providers,
//    missing fields, bad weights or thresholds, a model routed twice, a fallback naming an unknown model
//    or itself each give InvalidArgument naming the field.
//
// Thread-safety: RouteTable is shared by every request: Plan() and the RoutePlan methods may run on any
// thread (one mutex guards the deployment state, shared by a table and the tables that replace it on a
// reload; the critical sections are a few comparisons).
// A RoutePlan belongs to one request and is used by one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "net/http.h"

namespace govern::gateway {

enum class WireFormat { kOpenAI, kAnthropic };

// Who serves a deployment, which decides the URL, the authentication header and the wire format.
//  kOpenAI:           base_url + /v1/chat/completions, Authorization: Bearer (format openai)
//  kAnthropic:        base_url + /v1/messages, x-api-key, anthropic-version (format anthropic)
//  kAzure:            base_url + /openai/deployments/{azure_deployment}/chat/completions
//                     ?api-version={api_version}, api-key (format openai)
//  kOpenAICompatible: base_url + /chat/completions (base_url as vLLM or Ollama document it for OpenAI
//                     SDKs, e.g. http://host:8000/v1), Authorization: Bearer only when a key is set
//  kGemini:           base_url + /{api_version}/models/{model}:generateContent (streams:
//                     :streamGenerateContent?alt=sse), x-goog-api-key; the proxy speaks OpenAI to it
//                     through gateway/gemini.h (format openai as far as the rest of the proxy is concerned)
//  kBedrock:          AWS Bedrock Converse / ConverseStream, SigV4-signed (bedrock_provider.h); the proxy
//                     speaks OpenAI to it through gateway/bedrock.h, as for Gemini
enum class Provider { kOpenAI, kAnthropic, kAzure, kOpenAICompatible, kGemini, kBedrock };
std::string_view ProviderName(Provider p);
WireFormat ProviderFormat(Provider p);

struct BreakerConfig {
  bool enabled = false;
  int consecutive_failures = 5;  // 0: off
  double failure_ratio = 0;      // 0: off; else 0 < ratio <= 1 over the last `window` outcomes
  int window = 20;
  int min_calls = 10;
  std::chrono::milliseconds cooldown{30000};
};

struct RetryConfig {
  int retries = 0;  // further attempts after the first within the model's deployments
  std::chrono::milliseconds backoff{50};
  std::chrono::milliseconds max_backoff{2000};
  // Provider answers that count as "not done, not billed" and may be retried elsewhere (before any byte
  // went to the client).
  std::vector<int> on_status = {429, 500, 502, 503, 529};
};

struct BedrockDeployment;  // bedrock_provider.h

struct DeploymentConfig {
  std::string name;  // unique within its model; defaults to "<model>#<index>"
  Provider provider = Provider::kOpenAI;
  std::string base_url;
  std::string api_key;
  std::string model;             // the model name sent to the provider; "" keeps the name the client sent
  int weight = 1;                // 1..1000000
  std::string azure_deployment;  // Azure: defaults to `model`, else the route's model
  std::string api_version;       // Azure (default 2024-10-21), Gemini (default v1beta)
  // Per-deployment provider timeouts; unset: the gateway's upstream settings.
  std::optional<std::chrono::milliseconds> connect_timeout, header_timeout, read_timeout;
  bool stub_fault_headers = false;  // pass x-stub-* test headers (model stub only)
  std::shared_ptr<const BedrockDeployment> bedrock;  // kBedrock: region, credentials, URLs
};

struct ModelRouteConfig {
  std::string model;  // the name clients send
  std::vector<DeploymentConfig> deployments;
  std::vector<std::string> fallbacks;  // other models, tried in order once this one's attempts are spent
  RetryConfig retry;
  BreakerConfig breaker;
};

// One element of "routes" that has "deployments" (see docs/gateway.md, "Routing"). `path` names it in
// errors ("routes[2]").
Result<ModelRouteConfig> ParseModelRoute(const nlohmann::json& route, std::string_view path);
// Cross-route checks: each model once, every fallback a known model other than itself.
Status ValidateRoutes(const std::vector<ModelRouteConfig>& routes);
// The longest a whole (non-streamed) answer can take through any route: every attempt of the route and
// its fallbacks at its connect (times connect_attempts) and header timeouts, plus the longest backoffs.
// The HTTP server's handler timeout must not be shorter.
std::chrono::milliseconds LongestWholeAnswer(const std::vector<ModelRouteConfig>& routes,
                                             std::chrono::milliseconds connect_timeout, int connect_attempts,
                                             std::chrono::milliseconds header_timeout);

// How an attempt ended, for the breaker.
enum class Outcome {
  kSuccess,  // an answer (even a 4xx: the deployment works)
  kFailure,  // connect failed, timed out, 429/5xx, a cut answer
  kNeutral,  // the client left or the gateway stopped: says nothing about the deployment
};

struct Deployment;  // routing.cc
class RouteTable;

// One attempt's target.
struct AttemptTarget {
  std::string model;       // route model this deployment belongs to (the fallback's, on a fallback)
  std::string deployment;  // its name
  Provider provider = Provider::kOpenAI;
  WireFormat format = WireFormat::kOpenAI;
  std::string base_url;
  std::string upstream_model;    // "" keeps the client's model name
  std::string url;               // full request URL
  std::string stream_url;        // Gemini: the URL of a streamed request
  std::string responses_url;     // Azure: the Responses API's URL (v1, or dated by api_version)
  std::string azure_deployment;  // Azure: the deployment, the `model` of a Responses request
  net::Headers auth;             // authentication (and version) headers
  std::optional<std::chrono::milliseconds> connect_timeout, header_timeout, read_timeout;
  bool stub_fault_headers = false;
  std::shared_ptr<const BedrockDeployment> bedrock;  // kBedrock
};

// The attempts of one request.
class RoutePlan {
 public:
  RoutePlan(std::shared_ptr<RouteTable> table, int route_index);
  ~RoutePlan();  // finishes an open attempt as neutral
  RoutePlan(RoutePlan&&) = default;

  // The next attempt, or nullopt when none is left (`why_none` says whether circuits were open). The
  // attempt counts as in flight until Finish.
  std::optional<AttemptTarget> Next(std::string* why_none);
  // Ends the current attempt (idempotent).
  void Finish(Outcome outcome);
  // Backoff to wait before the next attempt (0 before the first); includes jitter.
  std::chrono::milliseconds NextBackoff();
  // Whether Next() would give another attempt now (without taking it).
  bool HasNext() const;
  int attempts() const { return attempts_; }
  // The most attempts this plan can make (the model's and its fallbacks' 1 + retries).
  int max_attempts() const { return max_attempts_; }
  const RetryConfig& retry() const;  // of the model being tried

 private:
  std::shared_ptr<RouteTable> table_;
  std::vector<int> models_;  // route indexes: the model, then its fallbacks
  size_t model_pos_ = 0;
  int used_in_model_ = 0;
  std::vector<Deployment*> tried_;  // in the current model
  Deployment* current_ = nullptr;
  bool current_probe_ = false;
  int attempts_ = 0;
  int max_attempts_ = 0;
};

class RouteTable : public std::enable_shared_from_this<RouteTable> {
 public:
  // `previous` (a reload): every deployment of it still configured (same model, name, provider and
  // base_url) keeps its calls in flight and breaker state, which plans of both tables then share; a
  // plan keeps the table it was made from, so requests in flight finish on the routes they began with.
  static Result<std::shared_ptr<RouteTable>> Create(std::vector<ModelRouteConfig> routes,
                                                    const RouteTable* previous = nullptr);
  ~RouteTable();

  // A plan for `model`, or nullopt when the model is not routed.
  std::optional<RoutePlan> Plan(std::string_view model);
  const std::vector<ModelRouteConfig>& routes() const;

  // For tests and metrics: whether `deployment` of `model` is open (refusing), and its calls in flight.
  struct DeploymentState {
    bool open = false;
    bool half_open = false;
    int in_flight = 0;
  };
  std::optional<DeploymentState> State(std::string_view model, std::string_view deployment) const;

 private:
  friend class RoutePlan;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  RouteTable();
  static void CarryHealth(const RouteTable& from, RouteTable& to);
};

}  // namespace govern::gateway
