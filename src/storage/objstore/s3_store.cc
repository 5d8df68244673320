// S3Store: request building, signing, retries, error mapping and multipart uploads.
#include "storage/objstore/s3_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <thread>

#include "base/log.h"
#include "crypto/encoding.h"
#include "crypto/sha256.h"
#include "storage/objstore/s3_xml.h"

namespace govern::objstore {
namespace {

constexpr uint64_t kMinPartSize = 5u << 20;
constexpr uint64_t kMaxParts = 10000;
constexpr std::string_view kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

using Params = std::vector<std::pair<std::string, std::string>>;

struct Endpoint {
  std::string scheme;     // "http" or "https"
  std::string authority;  // "host" or "host:port" as the Host header carries it
};

Result<Endpoint> ParseEndpoint(std::string_view url) {
  Endpoint e;
  std::string_view rest;
  if (url.starts_with("http://")) {
    e.scheme = "http";
    rest = url.substr(7);
  } else if (url.starts_with("https://")) {
    e.scheme = "https";
    rest = url.substr(8);
  } else {
    return InvalidArgument("s3: endpoint \"" + std::string(url) + "\" must start with http:// or https://");
  }
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty() || rest.find_first_of("/?#@ ") != std::string_view::npos) {
    return InvalidArgument("s3: endpoint \"" + std::string(url) +
                           "\" must be scheme://host[:port] with no path");
  }
  // The HTTP client leaves the default port out of Host; the signature must see the same value.
  const std::string_view default_port = e.scheme == "http" ? ":80" : ":443";
  if (rest.ends_with(default_port) && rest.find(']') == std::string_view::npos) {
    rest.remove_suffix(default_port.size());
  }
  e.authority = std::string(rest);
  return e;
}

bool ValidBucket(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  for (char c : b) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return b.front() != '-' && b.front() != '.' && b.back() != '-' && b.back() != '.';
}

std::string Quoted(std::string_view key) { return "\"" + std::string(key) + "\""; }

// Maps a non-2xx response to a Status: the S3 error code when the body has one, else the HTTP status.
Status MapError(const net::ClientResponse& resp, std::string_view what) {
  std::string code, message;
  if (!resp.body.empty()) {
    auto err = xml::ParseError(resp.body);
    if (err.ok()) {
      code = err->code;
      message = err->message;
    }
  }
  const std::string text = std::string(what) + ": HTTP " + std::to_string(resp.status) +
                           (code.empty() ? "" : " " + code) + (message.empty() ? "" : ": " + message);
  if (code == "NoSuchKey" || code == "NoSuchBucket" || code == "NoSuchUpload" ||
      (code.empty() && resp.status == 404)) {
    return NotFound(text);
  }
  if (code == "SignatureDoesNotMatch" || code == "InvalidAccessKeyId" || code == "ExpiredToken" ||
      code == "InvalidToken" || code == "AuthorizationHeaderMalformed" || code == "RequestTimeTooSkewed" ||
      resp.status == 401) {
    return Unauthenticated(text);
  }
  if (code == "AccessDenied" || resp.status == 403) return PermissionDenied(text);
  if (code == "InvalidRange" || resp.status == 416) return OutOfRange(text);
  if (code == "SlowDown" || code == "InternalError" || code == "ServiceUnavailable" ||
      code == "RequestTimeout" || resp.status == 429 || resp.status >= 500) {
    return Unavailable(text);
  }
  if (resp.status == 409) return Aborted(text);
  if (resp.status == 400 || resp.status == 411 || resp.status == 413) return InvalidArgument(text);
  return Status(Code::kUnknown, text);
}

}  // namespace

Status LoadCredentialsFromEnv(S3Config& config, const std::function<const char*(const char*)>& getenv) {
  auto fill = [&](std::string& field, const char* name) {
    if (!field.empty()) return;
    if (const char* v = getenv(name)) field = v;
  };
  fill(config.credentials.access_key_id, "AWS_ACCESS_KEY_ID");
  fill(config.credentials.secret_access_key, "AWS_SECRET_ACCESS_KEY");
  fill(config.credentials.session_token, "AWS_SESSION_TOKEN");
  if (config.credentials.access_key_id.empty() || config.credentials.secret_access_key.empty()) {
    return InvalidArgument(
        "s3: no credentials: set them in the configuration or in AWS_ACCESS_KEY_ID "
        "and AWS_SECRET_ACCESS_KEY");
  }
  return OkStatus();
}

struct S3Store::Impl {
  S3Config config;
  Endpoint endpoint;
  net::HttpClient http;

  Impl(S3Config c, Endpoint e) : config(std::move(c)), endpoint(std::move(e)), http(config.http) {}

  // The path as sent and signed. Bucket-level requests use "/bucket" in path style (not "/bucket/":
  // some servers drop the trailing slash from the canonical URI and the signature would not match).
  std::string Path(std::string_view key) const {
    const std::string encoded = sigv4::UriEncode(key, true);
    if (config.addressing == Addressing::kPath) {
      return "/" + config.bucket + (key.empty() ? "" : "/" + encoded);
    }
    return "/" + encoded;
  }
  std::string Authority() const {
    return config.addressing == Addressing::kPath ? endpoint.authority
                                                  : config.bucket + "." + endpoint.authority;
  }

  struct Call {
    net::Method method = net::Method::kGet;
    std::string_view key;  // empty: the bucket
    Params query;
    Params headers;  // beyond host, x-amz-date and x-amz-content-sha256
    std::string_view body;
    std::string what;  // for error messages: "get \"a/b\""
  };

  // Sends with signing and retries. Returns the response for 2xx; a mapped Status otherwise.
  Result<net::ClientResponse> Send(const Call& call) {
    std::string payload_hash(kEmptySha256);
    if (!call.body.empty()) {
      GOVERN_ASSIGN_OR_RETURN(auto digest, crypto::Sha256(call.body));
      payload_hash = crypto::HexEncode(digest);
    }
    const std::string path = Path(call.key);
    const std::string query = sigv4::CanonicalQueryString(call.query);
    const std::string url = endpoint.scheme + "://" + Authority() + path + (query.empty() ? "" : "?" + query);
    auto backoff = config.initial_backoff;
    Status last;
    for (int attempt = 1; attempt <= std::max(1, config.max_attempts); ++attempt) {
      if (attempt > 1) {
        log::Warn("objstore", "s3 request failed, retrying",
                  {{"request", call.what},
                   {"attempt", attempt},
                   {"backoff_ms", backoff.count()},
                   {"error", last.ToString()}});
        if (config.sleep) {
          config.sleep(backoff);
        } else {
          std::this_thread::sleep_for(backoff);
        }
        backoff = std::min(backoff * 2, std::chrono::milliseconds(10000));
      }
      const Clock& clock = config.clock != nullptr ? *config.clock : Clock::Real();
      sigv4::Request sreq;
      sreq.method = std::string(net::MethodName(call.method));
      sreq.canonical_uri = path;
      sreq.query = call.query;
      sreq.headers = call.headers;
      sreq.payload_sha256_hex = payload_hash;
      sreq.headers.emplace_back("host", Authority());
      const std::string amz_date = sigv4::AmzDate(clock.UnixMicros());
      sreq.headers.emplace_back("x-amz-date", amz_date);
      sreq.headers.emplace_back("x-amz-content-sha256", payload_hash);
      if (!config.credentials.session_token.empty()) {
        sreq.headers.emplace_back("x-amz-security-token", config.credentials.session_token);
      }
      GOVERN_ASSIGN_OR_RETURN(auto sig, sigv4::Sign(sreq, config.credentials, config.region, "s3", amz_date));
      net::ClientRequest req;
      req.method = call.method;
      req.url = url;
      for (const auto& [k, v] : sreq.headers) {
        if (k != "host") req.headers.Add(k, v);
      }
      req.headers.Set("Authorization", sig.authorization);
      req.body = std::string(call.body);
      auto resp = http.Send(std::move(req));
      if (!resp.ok()) {
        last = resp.status().WithContext("s3 " + call.what);
        if (last.code() == Code::kUnavailable || last.code() == Code::kDeadlineExceeded) continue;
        return last;
      }
      if (resp->status >= 200 && resp->status < 300) return std::move(resp).value();
      last = MapError(*resp, "s3 " + call.what);
      if (last.code() != Code::kUnavailable) return last;
    }
    return last.WithContext("after " + std::to_string(config.max_attempts) + " attempts");
  }

  Status PutSingle(std::string_view key, std::string_view bytes) {
    Call call{net::Method::kPut,   key, {}, {{"content-type", "application/octet-stream"}}, bytes,
              "put " + Quoted(key)};
    return Send(call).status();
  }

  // Multipart upload; `read_part(offset, n, out)` supplies the bytes.
  Status PutMultipart(std::string_view key, uint64_t size,
                      const std::function<Status(uint64_t, uint64_t, std::string&)>& read_part) {
    const std::string what = "multipart put " + Quoted(key);
    uint64_t part = std::max(config.part_size, kMinPartSize);
    // Stay within S3's 10,000 parts by growing the part size for very large objects.
    if ((size + part - 1) / part > kMaxParts) part = (size + kMaxParts - 1) / kMaxParts;
    Call create{
        net::Method::kPost, key, {{"uploads", ""}}, {{"content-type", "application/octet-stream"}}, {},
        what + " (create)"};
    GOVERN_ASSIGN_OR_RETURN(auto created, Send(create));
    GOVERN_ASSIGN_OR_RETURN(std::string upload_id, xml::ParseInitiateMultipartUpload(created.body));
    Status s = UploadParts(key, upload_id, size, part, read_part, what);
    if (!s.ok()) {
      Call abort{net::Method::kDelete, key, {{"uploadId", upload_id}}, {}, {}, what + " (abort)"};
      (void)Send(abort);  // best effort: the original error is what the caller needs
      return s;
    }
    return OkStatus();
  }

  Status UploadParts(std::string_view key, const std::string& upload_id, uint64_t size, uint64_t part,
                     const std::function<Status(uint64_t, uint64_t, std::string&)>& read_part,
                     const std::string& what) {
    std::vector<std::string> etags;
    std::string buf;
    for (uint64_t offset = 0, number = 1; offset < size; offset += part, ++number) {
      const uint64_t n = std::min(part, size - offset);
      GOVERN_RETURN_IF_ERROR(read_part(offset, n, buf));
      Call up{net::Method::kPut,
              key,
              {{"partNumber", std::to_string(number)}, {"uploadId", upload_id}},
              {},
              buf,
              what + " (part " + std::to_string(number) + ")"};
      GOVERN_ASSIGN_OR_RETURN(auto resp, Send(up));
      const auto etag = resp.headers.Get("ETag");
      if (!etag || etag->empty()) return DataLoss("s3 " + up.what + ": response has no ETag");
      etags.emplace_back(*etag);
    }
    const std::string body = xml::CompleteMultipartUploadBody(etags);
    Call complete{
        net::Method::kPost,  key, {{"uploadId", upload_id}}, {{"content-type", "application/xml"}}, body,
        what + " (complete)"};
    GOVERN_ASSIGN_OR_RETURN(auto done, Send(complete));
    // S3 may answer 200 and still report an error in the body.
    GOVERN_ASSIGN_OR_RETURN(auto root, xml::Parse(done.body));
    if (root.name == "Error") {
      done.status = 500;
      return MapError(done, "s3 " + complete.what);
    }
    return OkStatus();
  }
};

S3Store::S3Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
S3Store::~S3Store() = default;

Result<std::unique_ptr<S3Store>> S3Store::Create(S3Config config) {
  GOVERN_ASSIGN_OR_RETURN(Endpoint endpoint, ParseEndpoint(config.endpoint));
  if (!ValidBucket(config.bucket)) {
    return InvalidArgument("s3: bucket \"" + config.bucket +
                           "\" is not a valid name (3-63 of a-z, 0-9, '-', '.')");
  }
  if (config.region.empty()) return InvalidArgument("s3: region is empty");
  if (config.credentials.access_key_id.empty() || config.credentials.secret_access_key.empty()) {
    return InvalidArgument("s3: access key id and secret access key are required");
  }
  if (config.list_page_size < 1 || config.list_page_size > 1000) {
    return InvalidArgument("s3: list_page_size must be 1..1000");
  }
  if (config.http.max_response_bytes < config.multipart_threshold) {
    config.http.max_response_bytes = config.multipart_threshold;
  }
  return std::unique_ptr<S3Store>(
      new S3Store(std::make_unique<Impl>(std::move(config), std::move(endpoint))));
}

std::string S3Store::ObjectUrl(std::string_view key) const {
  return impl_->endpoint.scheme + "://" + impl_->Authority() + impl_->Path(key);
}

Status S3Store::Put(std::string_view key, std::string_view bytes) {
  GOVERN_RETURN_IF_ERROR(ValidateKey(key));
  if (bytes.size() <= impl_->config.multipart_threshold) return impl_->PutSingle(key, bytes);
  return impl_->PutMultipart(key, bytes.size(), [&](uint64_t offset, uint64_t n, std::string& out) {
    out.assign(bytes.substr(offset, n));
    return OkStatus();
  });
}

Status S3Store::PutFile(std::string_view key, const std::string& path) {
  GOVERN_RETURN_IF_ERROR(ValidateKey(key));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open " + path);
  std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, "stat " + path);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  auto read_at = [&](uint64_t offset, uint64_t n, std::string& out) -> Status {
    out.resize(n);
    uint64_t done = 0;
    while (done < n) {
      const ssize_t r = ::pread(fd, out.data() + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return ErrnoStatus(errno, "read " + path);
      if (r == 0) return DataLoss(path + " shrank while it was being uploaded");
      done += static_cast<uint64_t>(r);
    }
    return OkStatus();
  };
  if (size > impl_->config.multipart_threshold) return impl_->PutMultipart(key, size, read_at);
  std::string bytes;
  GOVERN_RETURN_IF_ERROR(read_at(0, size, bytes));
  return impl_->PutSingle(key, bytes);
}

Result<std::string> S3Store::Get(std::string_view key) {
  GOVERN_RETURN_IF_ERROR(ValidateKey(key));
  Impl::Call call{net::Method::kGet, key, {}, {}, {}, "get " + Quoted(key)};
  GOVERN_ASSIGN_OR_RETURN(auto resp, impl_->Send(call));
  return std::move(resp.body);
}

Result<std::string> S3Store::GetRange(std::string_view key, uint64_t offset, uint64_t length) {
  GOVERN_RETURN_IF_ERROR(ValidateKey(key));
  if (length == 0) {
    // A zero-length range cannot be expressed; still report a missing key or a bad offset.
    GOVERN_ASSIGN_OR_RETURN(auto info, Head(key));
    if (offset >= info.size) {
      return OutOfRange("object " + Quoted(key) + ": offset " + std::to_string(offset) +
                        " is at or past its end");
    }
    return std::string();
  }
  const uint64_t last = length > UINT64_MAX - offset ? UINT64_MAX - 1 : offset + length - 1;
  Impl::Call call{net::Method::kGet,
                  key,
                  {},
                  {{"range", "bytes=" + std::to_string(offset) + "-" + std::to_string(last)}},
                  {},
                  "get " + Quoted(key) + " bytes " + std::to_string(offset) + "+" + std::to_string(length)};
  GOVERN_ASSIGN_OR_RETURN(auto resp, impl_->Send(call));
  // A server that ignores Range answers 200 with the whole object: cut the range out ourselves.
  if (resp.status == 200) {
    if (offset >= resp.body.size()) {
      return OutOfRange("object " + Quoted(key) + ": offset " + std::to_string(offset) +
                        " is at or past its end");
    }
    return resp.body.substr(offset, length);
  }
  if (resp.body.size() > length) return DataLoss("s3 " + call.what + ": server sent more than asked");
  return std::move(resp.body);
}

Result<ObjectInfo> S3Store::Head(std::string_view key) {
  GOVERN_RETURN_IF_ERROR(ValidateKey(key));
  Impl::Call call{net::Method::kHead, key, {}, {}, {}, "head " + Quoted(key)};
  GOVERN_ASSIGN_OR_RETURN(auto resp, impl_->Send(call));
  ObjectInfo info;
  info.key = std::string(key);
  const auto len = resp.headers.Get("Content-Length");
  if (!len) return DataLoss("s3 " + call.what + ": response has no Content-Length");
  auto [p, ec] = std::from_chars(len->data(), len->data() + len->size(), info.size);
  if (ec != std::errc() || p != len->data() + len->size()) {
    return DataLoss("s3 " + call.what + ": bad Content-Length \"" + std::string(*len) + "\"");
  }
  std::string etag(resp.headers.Get("ETag").value_or(""));
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  info.etag = std::move(etag);
  return info;
}

Result<std::vector<ObjectInfo>> S3Store::List(std::string_view prefix) {
  GOVERN_RETURN_IF_ERROR(ValidatePrefix(prefix));
  std::vector<ObjectInfo> out;
  std::string token;
  for (int page = 0;; ++page) {
    Impl::Call call{net::Method::kGet,
                    {},
                    {{"list-type", "2"},
                     {"prefix", std::string(prefix)},
                     {"max-keys", std::to_string(impl_->config.list_page_size)}},
                    {},
                    {},
                    "list " + Quoted(prefix) + " page " + std::to_string(page + 1)};
    if (!token.empty()) call.query.emplace_back("continuation-token", token);
    GOVERN_ASSIGN_OR_RETURN(auto resp, impl_->Send(call));
    GOVERN_ASSIGN_OR_RETURN(auto parsed, xml::ParseListObjectsV2(resp.body));
    for (auto& o : parsed.objects) out.push_back(std::move(o));
    if (!parsed.is_truncated) break;
    if (parsed.next_continuation_token == token) {
      return DataLoss("s3 " + call.what + ": the server repeated its continuation token");
    }
    token = std::move(parsed.next_continuation_token);
  }
  std::sort(out.begin(), out.end(), [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return out;
}

Status S3Store::Delete(std::string_view key) {
  GOVERN_RETURN_IF_ERROR(ValidateKey(key));
  Impl::Call call{net::Method::kDelete, key, {}, {}, {}, "delete " + Quoted(key)};
  auto resp = impl_->Send(call);
  if (!resp.ok() && resp.status().code() == Code::kNotFound &&
      resp.status().message().find("NoSuchKey") != std::string::npos) {
    return OkStatus();
  }
  return resp.status();
}

}  // namespace govern::objstore
