// Temporary AWS credentials for Bedrock deployments, refreshed in the background (docs/gateway.md,
// "AWS Bedrock", "Credentials that expire"). Three sources, as the AWS SDKs' default chain reads them:
//  - kFile: a shared credentials file (`~/.aws/credentials` style: `[profile]` sections with
//    aws_access_key_id, aws_secret_access_key, aws_session_token), re-read when its bytes change (checked
//    every `check_interval`); this is how credential_process/SSO helpers and sidecars hand over keys.
//  - kContainer: the container credentials endpoint (ECS task roles, EKS Pod Identity): GET `url` with an
//    optional Authorization header (a literal token, or a token file re-read at every fetch); the answer
//    is JSON {AccessKeyId, SecretAccessKey, Token, Expiration}.
//  - kImds: EC2 instance metadata, IMDSv2 only: PUT {endpoint}/latest/api/token (header
//    X-aws-ec2-metadata-token-ttl-seconds), then with X-aws-ec2-metadata-token GET
//    /latest/meta-data/iam/security-credentials/ (the role name) and .../security-credentials/{role}
//    (JSON as above, with "Code": "Success").
//
// Promises:
//  - One source per set of options: Start() with options equal to those of a source still alive returns
//    that source (deployments on one role share it; a routes reload keeps it, with no new first fetch).
//  - Never fetched on the request path: Start() fetches once (bounded by the options' timeouts) and then
//    a thread of the source's own refreshes `refresh_before` ahead of Expiration (or half-way through
//    the remaining life when that is shorter; at least 1 s apart), with exponential backoff on failure
//    (min_backoff doubling up to max_backoff). A source with no expiration (a file, an endpoint that
//    gives none) is checked again every `check_interval`; one far ahead, at least daily.
//  - Current() hands out an immutable snapshot (shared_ptr): a refresh swaps the pointer, so a request
//    signs with one whole set, never a mix, and keeps the set it started with.
//  - While refreshing fails the last good set is kept until its Expiration; after it (or before the first
//    success) Current() is Unavailable, naming the source and the last error. Each refresh and each
//    failure is logged (component "gateway"); secrets never appear in errors or logs.
//
//  - Start() locks the registry only to look up and record a source, never over a fetch: Start()s of
//    other options go on while one fetches; a Start() of the same options waits for that fetch and
//    returns its source. The registry keys a literal authorization token by its SHA-256.
//
// Thread-safety: Current(), name() and stats() may be called from any thread. Destroying a source never
// blocks (it may happen on an event-loop thread after a reload): it signals the refresh thread, which
// shares the source's state and ends on its own, after a fetch in progress (bounded by `timeout`).
// A process that is about to exit calls AwaitRefreshThreads() once its sources are gone, so that no
// fetch still uses the HTTP client, OpenSSL or the logger during static destruction.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "storage/objstore/sigv4.h"

namespace govern::gateway {

struct AwsSourceOptions {
  enum class Kind { kFile, kContainer, kImds } kind = Kind::kFile;
  std::string file, profile = "default";  // kFile
  std::string url;                        // kContainer: the endpoint; kImds: the base, http://169.254.169.254
  std::string authorization;              // kContainer: a literal Authorization value
  std::string authorization_file;         // kContainer: a file holding it (wins over `authorization`)
  std::chrono::milliseconds refresh_before{300000};
  std::chrono::milliseconds check_interval{10000};  // no expiration: how often to look again
  std::chrono::milliseconds min_backoff{1000}, max_backoff{60000};
  std::chrono::milliseconds timeout{2000};  // connect, and each HTTP exchange
};

// One fetched set: credentials and their Expiration (Unix milliseconds, > 0; 0: none given).
struct AwsCredentialSet {
  objstore::sigv4::Credentials credentials;
  int64_t expiration_ms = 0;
};

class AwsCredentialSource {
 public:
  static std::shared_ptr<AwsCredentialSource> Start(AwsSourceOptions options);
  ~AwsCredentialSource();
  AwsCredentialSource(const AwsCredentialSource&) = delete;
  AwsCredentialSource& operator=(const AwsCredentialSource&) = delete;

  // The set to sign with, or Unavailable("<source>: ...") when there is none usable.
  Result<std::shared_ptr<const objstore::sigv4::Credentials>> Current() const;
  const std::string& name() const;

  // Waits until the refresh threads of every destroyed source have ended: true, or false at `deadline`.
  // Threads of sources still alive are not waited for.
  static bool AwaitRefreshThreads(std::chrono::steady_clock::time_point deadline);

  struct Stats {
    uint64_t refreshes = 0;  // fetches that gave a new set
    uint64_t failures = 0;   // fetches that failed
  };
  Stats stats() const;

  struct Impl;

 private:
  explicit AwsCredentialSource(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;  // shared with the refresh thread
};

// Parsers and schedules, exposed for tests and the fuzz target. Errors never quote a secret.
// A profile of a shared credentials (or config) file: `[name]` or `[profile name]`, `key = value` lines,
// `#`/`;` comments. aws_access_key_id and aws_secret_access_key are required.
Result<AwsCredentialSet> ParseAwsCredentialsFile(std::string_view text, std::string_view profile);
// A container endpoint's or IMDS's answer. Token and Expiration are optional; "Code" other than
// "Success" (IMDS) is an error carrying the answer's Message; an Expiration not after 1970 is an error.
Result<AwsCredentialSet> ParseAwsCredentialsJson(std::string_view body);
// "2026-12-01T04:05:06Z", with optional fractional seconds and a Z or ±hh:mm offset: Unix milliseconds.
Result<int64_t> ParseIso8601Millis(std::string_view s);
// The container endpoint from AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (wins; under http://169.254.170.2)
// or AWS_CONTAINER_CREDENTIALS_FULL_URI (https, or http to a loopback address, 169.254.170.2,
// 169.254.170.23 or [fd00:ec2::23]). The authority holds only host, port and brackets, and the host
// checked is the one net::ParseUrl (the client's parser) gives.
Result<std::string> ContainerCredentialsUrl(std::string_view full_uri, std::string_view relative_uri);
// The hosts (as net::ParseUrl gives them: IPv6 without brackets) plain http may fetch a token from.
bool AllowedContainerHost(std::string_view host);
// How long after a fetch at `now_ms` to fetch again.
std::chrono::milliseconds AwsRefreshDelay(int64_t now_ms, int64_t expiration_ms, const AwsSourceOptions& o);
std::chrono::milliseconds AwsRetryDelay(int failures, const AwsSourceOptions& o);

}  // namespace govern::gateway
