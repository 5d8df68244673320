// S3Store: objects in a bucket of an S3-compatible server (AWS S3, MinIO, Ceph RGW, s3rver), over
// HTTP(S) through net::HttpClient, signed with AWS Signature Version 4.
//
// Put sends one PUT up to `multipart_threshold` bytes and a multipart upload above it (parts of
// `part_size` bytes, at least 5 MiB as S3 requires, the last one smaller); any failure aborts the
// upload so no parts linger. A Put is durable when the server acknowledged it. Every request is
// retried with exponential backoff on 5xx, SlowDown and connection failures (kUnavailable), up to
// `max_attempts`; other errors are returned at once. S3 error bodies become Status codes: NoSuchKey ->
// kNotFound, AccessDenied -> kPermissionDenied, SignatureDoesNotMatch/InvalidAccessKeyId ->
// kUnauthenticated, SlowDown/5xx -> kUnavailable, each message carrying the S3 code.
//
// Thread-safe: one HttpClient with a keep-alive pool serves concurrent calls.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "base/clock.h"
#include "net/http_client.h"
#include "storage/objstore/sigv4.h"
#include "storage/objstore/store.h"

namespace govern::objstore {

enum class Addressing {
  kPath,           // http://host:port/bucket/key (local servers, MinIO)
  kVirtualHosted,  // http://bucket.host/key (AWS default)
};

struct S3Config {
  std::string endpoint;  // scheme and authority, no path: "http://127.0.0.1:9000",
                         // "https://s3.eu-west-1.amazonaws.com"
  std::string region = "us-east-1";
  std::string bucket;
  Addressing addressing = Addressing::kPath;
  sigv4::Credentials credentials;
  uint64_t multipart_threshold = 16u << 20;        // above this, Put uses a multipart upload
  uint64_t part_size = 8u << 20;                   // raised to 5 MiB if lower (S3's minimum)
  int list_page_size = 1000;                       // max-keys per ListObjectsV2 request
  int max_attempts = 4;                            // per request, the first try included
  std::chrono::milliseconds initial_backoff{100};  // doubled after each retry
  net::ClientOptions http;
  const Clock* clock = nullptr;  // for x-amz-date; nullptr: the real clock
  // How to wait between retries; empty: std::this_thread::sleep_for. Tests make it record, not sleep.
  std::function<void(std::chrono::milliseconds)> sleep;
};

// Fills credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN as returned by
// `getenv` (pass std::getenv), leaving fields that are already set. kInvalidArgument if either key is
// still missing afterwards.
Status LoadCredentialsFromEnv(S3Config& config, const std::function<const char*(const char*)>& getenv);

class S3Store final : public Store {
 public:
  // Checks the configuration (no request is sent).
  static Result<std::unique_ptr<S3Store>> Create(S3Config config);
  ~S3Store() override;

  Status Put(std::string_view key, std::string_view bytes) override;
  Status PutFile(std::string_view key, const std::string& path) override;
  Result<std::string> Get(std::string_view key) override;
  Result<std::string> GetRange(std::string_view key, uint64_t offset, uint64_t length) override;
  Result<ObjectInfo> Head(std::string_view key) override;
  Result<std::vector<ObjectInfo>> List(std::string_view prefix) override;
  Status Delete(std::string_view key) override;

  // The URL an object is at (tests and logs).
  std::string ObjectUrl(std::string_view key) const;

 private:
  struct Impl;
  explicit S3Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::objstore
