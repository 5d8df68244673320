#include "services/gateway/aws_credentials.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "base/ascii.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/time_format.h"
#include "crypto/encoding.h"
#include "crypto/sha256.h"
#include "net/http_client.h"
#include "net/url.h"

namespace govern::gateway {

using Json = nlohmann::json;
namespace sigv4 = objstore::sigv4;

namespace {

int64_t NowMillis() { return Clock::Real().UnixMicros() / 1000; }

// Lines of the credentials file and the bodies of metadata answers may end in CRLF.
std::string_view Trim(std::string_view s) { return TrimAscii(s, " \t\r"); }

std::string FormatIso(int64_t ms) { return FormatRfc3339(ms / 1000); }

constexpr size_t kMaxFileBytes = 64 * 1024;

Status CheckValue(std::string_view what, const std::string& v) {
  if (v.find_first_of("\r\n") != std::string::npos || v.find('\0') != std::string::npos)
    return InvalidArgument(std::string(what) + " holds a line break");
  return OkStatus();
}

// A short, single-line excerpt of an answer's error text (AWS error messages hold no secrets).
std::string Excerpt(std::string_view s) {
  std::string out(s.substr(0, 200));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return out;
}

// The error an HTTP answer other than 200 gives: its status and, when JSON, its code and message.
Status HttpError(std::string_view what, const net::ClientResponse& r) {
  std::string detail;
  try {
    Json j = Json::parse(r.body);
    for (const char* k : {"code", "Code", "message", "Message"}) {
      if (auto it = j.find(k); it != j.end() && it->is_string())
        detail += " " + Excerpt(it->get<std::string>());
    }
  } catch (const std::exception&) {
  }
  return Unavailable(std::string(what) + " answered " + std::to_string(r.status) + detail);
}

// A small regular file (a credentials or token file): opened without blocking (a FIFO or device named
// by mistake must not hang the refresh thread), at most kMaxFileBytes.
Result<std::string> ReadWholeFile(const std::string& path, std::string_view what) {
  const std::string name = std::string(what) + " " + path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return Unavailable(name + " cannot be read");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0) return Unavailable(name + " cannot be read");
  if (!S_ISREG(st.st_mode)) return Unavailable(name + " is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > kMaxFileBytes)
    return Unavailable(name + " is larger than 64 KiB");
  std::string out;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Unavailable(name + " cannot be read");
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxFileBytes) return Unavailable(name + " is larger than 64 KiB");
  }
  return out;
}

Result<net::ClientResponse> Send(net::HttpClient& client, net::Method method, std::string url,
                                 std::vector<std::pair<std::string, std::string>> headers) {
  net::ClientRequest req;
  req.method = method;
  req.url = std::move(url);
  for (auto& [k, v] : headers) req.headers.Set(k, v);
  return client.Send(std::move(req));
}

// A fetch: a new set, nullopt when nothing changed (a file whose bytes are the same), or an error.
using Fetch = std::function<Result<std::optional<AwsCredentialSet>>()>;

Fetch FileFetch(const AwsSourceOptions& o) {
  auto last = std::make_shared<std::string>();
  auto read_once = std::make_shared<bool>(false);
  return [o, last, read_once]() -> Result<std::optional<AwsCredentialSet>> {
    GOVERN_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(o.file, "credentials file"));
    if (*read_once && text == *last) return std::optional<AwsCredentialSet>();
    GOVERN_ASSIGN_OR_RETURN(AwsCredentialSet set, ParseAwsCredentialsFile(text, o.profile));
    *last = std::move(text);
    *read_once = true;
    return std::optional<AwsCredentialSet>(std::move(set));
  };
}

net::ClientOptions ClientOptionsFor(const AwsSourceOptions& o) {
  net::ClientOptions c;
  c.connect_timeout = o.timeout;
  c.request_timeout = o.timeout;
  c.max_response_bytes = 64 * 1024;
  c.max_idle_per_host = 1;
  return c;
}

Fetch ContainerFetch(const AwsSourceOptions& o) {
  return [o]() -> Result<std::optional<AwsCredentialSet>> {
    std::string auth = o.authorization;
    if (!o.authorization_file.empty()) {
      GOVERN_ASSIGN_OR_RETURN(auth, ReadWholeFile(o.authorization_file, "authorization token file"));
      auth = std::string(TrimAscii(auth, " \t\r\n"));
    }
    for (char c : auth) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        return InvalidArgument("the authorization token holds a control character");
    }
    net::HttpClient client(ClientOptionsFor(o));
    std::vector<std::pair<std::string, std::string>> headers{{"Accept", "application/json"}};
    if (!auth.empty()) headers.emplace_back("Authorization", auth);
    auto r = Send(client, net::Method::kGet, o.url, std::move(headers));
    if (!r.ok()) return Unavailable("endpoint unreachable: " + r.status().message());
    if (r->status != 200) return HttpError("endpoint", *r);
    GOVERN_ASSIGN_OR_RETURN(AwsCredentialSet set, ParseAwsCredentialsJson(r->body));
    return std::optional<AwsCredentialSet>(std::move(set));
  };
}

Fetch ImdsFetch(const AwsSourceOptions& o) {
  return [o]() -> Result<std::optional<AwsCredentialSet>> {
    net::HttpClient client(ClientOptionsFor(o));
    std::string base = o.url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    auto token = Send(client, net::Method::kPut, base + "/latest/api/token",
                      {{"X-aws-ec2-metadata-token-ttl-seconds", "21600"}});
    if (!token.ok()) return Unavailable("IMDS unreachable: " + token.status().message());
    if (token->status != 200) return HttpError("IMDS token request", *token);
    std::string t(Trim(token->body));
    if (t.empty() || t.find_first_of("\r\n") != std::string::npos)
      return Unavailable("IMDS gave an unusable session token");
    const std::string creds = base + "/latest/meta-data/iam/security-credentials/";
    auto role = Send(client, net::Method::kGet, creds, {{"X-aws-ec2-metadata-token", t}});
    if (!role.ok()) return Unavailable("IMDS unreachable: " + role.status().message());
    if (role->status == 404) return Unavailable("IMDS: the instance has no IAM role");
    if (role->status != 200) return HttpError("IMDS role request", *role);
    std::string name(Trim(std::string_view(role->body).substr(0, role->body.find('\n'))));
    if (name.empty() || name.find_first_of("/?#% ") != std::string::npos)
      return Unavailable("IMDS gave no usable role name");
    auto r = Send(client, net::Method::kGet, creds + name, {{"X-aws-ec2-metadata-token", t}});
    if (!r.ok()) return Unavailable("IMDS unreachable: " + r.status().message());
    if (r->status != 200) return HttpError("IMDS credentials request", *r);
    GOVERN_ASSIGN_OR_RETURN(AwsCredentialSet set, ParseAwsCredentialsJson(r->body));
    return std::optional<AwsCredentialSet>(std::move(set));
  };
}

std::string SourceName(const AwsSourceOptions& o) {
  switch (o.kind) {
    case AwsSourceOptions::Kind::kFile:
      return "shared credentials file " + o.file + " (profile " + o.profile + ")";
    case AwsSourceOptions::Kind::kContainer:
      return "container credentials endpoint " + o.url;
    case AwsSourceOptions::Kind::kImds:
      return "EC2 instance metadata (IMDSv2) at " + o.url;
  }
  return "aws credentials";
}

}  // namespace

struct AwsCredentialSource::Impl {
  AwsSourceOptions options;
  std::string name;
  Fetch fetch;

  mutable std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::shared_ptr<const sigv4::Credentials> current;
  int64_t expiration_ms = 0;
  std::string last_error;
  int failures_in_row = 0;
  Stats stats;
  std::chrono::steady_clock::time_point next;

  // One fetch; sets the next one's time. The log line's fields are built under the lock (which every
  // request's Current() takes) and written after it.
  void Refresh() {
    auto r = fetch();
    const int64_t now = NowMillis();
    std::unique_lock lock(mu);
    if (stop) return;  // the source is gone: nobody reads the result
    if (!r.ok()) {
      ++stats.failures;
      ++failures_in_row;
      last_error = r.status().message();
      auto delay = AwsRetryDelay(failures_in_row, options);
      next = std::chrono::steady_clock::now() + delay;
      const std::string error = last_error;
      const int failures = failures_in_row;
      const int64_t expiration = expiration_ms;
      lock.unlock();
      log::Warn("gateway", "aws credentials refresh failed",
                {{"source", name},
                 {"error", error},
                 {"failures", failures},
                 {"retry_in_ms", static_cast<int64_t>(delay.count())},
                 {"current_expires", expiration ? FormatIso(expiration) : std::string("never")}});
      return;
    }
    failures_in_row = 0;
    last_error.clear();
    if (*r) {
      current = std::make_shared<const sigv4::Credentials>(std::move((*r)->credentials));
      expiration_ms = (*r)->expiration_ms;
      ++stats.refreshes;
    }
    auto delay = AwsRefreshDelay(now, expiration_ms, options);
    next = std::chrono::steady_clock::now() + delay;
    const int64_t expiration = expiration_ms;
    lock.unlock();
    if (!*r) return;
    log::Info("gateway", "aws credentials refreshed",
              {{"source", name},
               {"expires", expiration ? FormatIso(expiration) : std::string("never")},
               {"next_refresh_in_ms", static_cast<int64_t>(delay.count())}});
  }

  // The refresh thread's loop: it holds the state through `self`, so the source's destructor only
  // signals it and never waits for a fetch in flight.
  static void Run(std::shared_ptr<Impl> self) {
    std::unique_lock lock(self->mu);
    while (!self->stop) {
      if (self->cv.wait_until(lock, self->next, [&] { return self->stop; })) break;
      lock.unlock();
      self->Refresh();
      lock.lock();
    }
  }
};

namespace {

// Sources alive, by their options: deployments on one role share a source and its thread, and a routes
// reload that leaves a deployment's credentials alone keeps its source (no new first fetch, no gap).
// The lock guards only the maps and counters, never a fetch.
struct Registry {
  std::mutex mu;
  std::condition_variable cv;  // a start finished, or a stopped refresh thread ended
  std::map<std::string, std::weak_ptr<AwsCredentialSource>> sources;
  std::set<std::string> starting;  // keys whose first fetch is in progress: later Start()s wait for it
  int draining = 0;                // refresh threads of destroyed sources that have not ended yet
};

Registry& TheRegistry() {
  static Registry* r = new Registry;  // never destroyed: sources may outlive static destruction
  return *r;
}

// The options, with the authorization token hashed (SHA-256): the registry holds no secret.
std::string RegistryKey(const AwsSourceOptions& o) {
  std::string auth;
  if (!o.authorization.empty()) {
    auto digest = crypto::Sha256(o.authorization);
    if (digest.ok()) {
      auth = "sha256:" + crypto::HexEncode(*digest);
    } else {  // never shared, rather than shared by tokens that differ
      static std::atomic<uint64_t> unique{0};
      auth = "unhashed:" + std::to_string(++unique);
    }
  }
  Json j = {static_cast<int>(o.kind),   o.file,
            o.profile,                  o.url,
            auth,                       o.authorization_file,
            o.refresh_before.count(),   o.check_interval.count(),
            o.min_backoff.count(),      o.max_backoff.count(),
            o.timeout.count()};
  return j.dump();
}

}  // namespace

AwsCredentialSource::AwsCredentialSource(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::shared_ptr<AwsCredentialSource> AwsCredentialSource::Start(AwsSourceOptions options) {
  const std::string key = RegistryKey(options);
  Registry& registry = TheRegistry();
  {
    std::unique_lock lock(registry.mu);
    for (;;) {
      for (auto it = registry.sources.begin(); it != registry.sources.end();) {
        it = it->second.expired() ? registry.sources.erase(it) : std::next(it);
      }
      if (auto it = registry.sources.find(key); it != registry.sources.end()) {
        if (auto alive = it->second.lock()) return alive;
      }
      // Another Start() of these options is fetching: wait for its source rather than start a second.
      if (!registry.starting.contains(key)) break;
      registry.cv.wait(lock);
    }
    registry.starting.insert(key);
  }
  // Whatever happens below, the key stops being "starting" and its waiters look again.
  struct StartingGuard {
    Registry& registry;
    const std::string& key;
    std::shared_ptr<AwsCredentialSource> source;
    ~StartingGuard() {
      {
        std::lock_guard lock(registry.mu);
        registry.starting.erase(key);
        if (source) registry.sources[key] = source;
      }
      registry.cv.notify_all();
    }
  } guard{registry, key, nullptr};
  auto impl = std::make_shared<Impl>();
  impl->name = SourceName(options);
  switch (options.kind) {
    case AwsSourceOptions::Kind::kFile:
      impl->fetch = FileFetch(options);
      break;
    case AwsSourceOptions::Kind::kContainer:
      impl->fetch = ContainerFetch(options);
      break;
    case AwsSourceOptions::Kind::kImds:
      impl->fetch = ImdsFetch(options);
      break;
  }
  impl->options = std::move(options);
  impl->Refresh();  // the first set before any request needs it; no registry lock held
  std::thread([self = impl]() mutable {
    Impl::Run(std::move(self));  // releases the state when it returns
    Registry& r = TheRegistry();
    {
      std::lock_guard lock(r.mu);
      --r.draining;  // Run returns only once the source's destructor counted it
    }
    r.cv.notify_all();
  }).detach();
  guard.source.reset(new AwsCredentialSource(std::move(impl)));
  return guard.source;
}

AwsCredentialSource::~AwsCredentialSource() {
  {
    // Counted before the stop signal, so the thread's end (which follows it) never comes first.
    Registry& registry = TheRegistry();
    std::lock_guard lock(registry.mu);
    ++registry.draining;
  }
  {
    std::lock_guard lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  // No join: the thread owns the state too and ends on its own, after a fetch in flight if any;
  // AwaitRefreshThreads() waits for it at shutdown.
}

bool AwsCredentialSource::AwaitRefreshThreads(std::chrono::steady_clock::time_point deadline) {
  Registry& registry = TheRegistry();
  std::unique_lock lock(registry.mu);
  return registry.cv.wait_until(lock, deadline, [&] { return registry.draining == 0; });
}

Result<std::shared_ptr<const sigv4::Credentials>> AwsCredentialSource::Current() const {
  std::lock_guard lock(impl_->mu);
  if (impl_->current && (impl_->expiration_ms == 0 || NowMillis() < impl_->expiration_ms))
    return impl_->current;
  const std::string why = impl_->last_error.empty() ? "" : ": " + impl_->last_error;
  if (!impl_->current) return Unavailable(impl_->name + ": no credentials yet" + why);
  return Unavailable(impl_->name + ": credentials expired at " + FormatIso(impl_->expiration_ms) +
                     (why.empty() ? "" : "; refreshing failed" + why));
}

const std::string& AwsCredentialSource::name() const { return impl_->name; }

AwsCredentialSource::Stats AwsCredentialSource::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stats;
}

// ---- parsers and schedules ----

Result<AwsCredentialSet> ParseAwsCredentialsFile(std::string_view text, std::string_view profile) {
  AwsCredentialSet out;
  bool in_profile = false, found = false;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = Trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']') return InvalidArgument("credentials file: a section header lacks its ]");
      std::string_view name = Trim(line.substr(1, line.size() - 2));
      if (name.starts_with("profile ")) name = Trim(name.substr(8));
      in_profile = name == profile;
      found = found || in_profile;
      continue;
    }
    if (!in_profile) continue;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;  // a nested setting's continuation line, or noise
    std::string_view key = Trim(line.substr(0, eq)), value = Trim(line.substr(eq + 1));
    if (key == "aws_access_key_id") out.credentials.access_key_id = std::string(value);
    if (key == "aws_secret_access_key") out.credentials.secret_access_key = std::string(value);
    if (key == "aws_session_token" || (key == "aws_security_token" && out.credentials.session_token.empty()))
      out.credentials.session_token = std::string(value);
  }
  const std::string p(profile);
  if (!found) return NotFound("credentials file: no profile [" + p + "]");
  if (out.credentials.access_key_id.empty() || out.credentials.secret_access_key.empty())
    return InvalidArgument("credentials file: profile [" + p +
                           "] lacks aws_access_key_id or aws_secret_access_key");
  GOVERN_RETURN_IF_ERROR(CheckValue("credentials file: aws_access_key_id", out.credentials.access_key_id));
  GOVERN_RETURN_IF_ERROR(
      CheckValue("credentials file: aws_secret_access_key", out.credentials.secret_access_key));
  GOVERN_RETURN_IF_ERROR(CheckValue("credentials file: aws_session_token", out.credentials.session_token));
  return out;
}

Result<AwsCredentialSet> ParseAwsCredentialsJson(std::string_view body) {
  Json j;
  try {
    j = Json::parse(body);
  } catch (const std::exception&) {
    return InvalidArgument("credentials answer is not JSON");
  }
  if (!j.is_object()) return InvalidArgument("credentials answer is not a JSON object");
  auto str = [&](const char* key) -> std::optional<std::string> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  if (auto code = str("Code"); code && *code != "Success")
    return Unavailable("credentials answer: " + Excerpt(*code) + " " + Excerpt(str("Message").value_or("")));
  AwsCredentialSet out;
  auto id = str("AccessKeyId"), secret = str("SecretAccessKey");
  if (!id || id->empty() || !secret || secret->empty())
    return InvalidArgument("credentials answer lacks AccessKeyId or SecretAccessKey");
  out.credentials.access_key_id = *id;
  out.credentials.secret_access_key = *secret;
  out.credentials.session_token = str("Token").value_or("");
  GOVERN_RETURN_IF_ERROR(CheckValue("AccessKeyId", out.credentials.access_key_id));
  GOVERN_RETURN_IF_ERROR(CheckValue("SecretAccessKey", out.credentials.secret_access_key));
  GOVERN_RETURN_IF_ERROR(CheckValue("Token", out.credentials.session_token));
  if (j.contains("Expiration")) {
    auto exp = str("Expiration");
    if (!exp) return InvalidArgument("credentials answer: Expiration is not a string");
    auto ms = ParseIso8601Millis(*exp);
    if (!ms.ok()) return InvalidArgument("credentials answer: " + ms.status().message());
    if (*ms <= 0)  // 0 would read as "never expires"
      return InvalidArgument("credentials answer: Expiration `" + Excerpt(exp->substr(0, 40)) +
                             "` is not after 1970");
    out.expiration_ms = *ms;
  }
  return out;
}

Result<int64_t> ParseIso8601Millis(std::string_view s) {
  auto t = ParseRfc3339(s);  // base/time_format.h
  if (!t.ok()) return InvalidArgument("Expiration `" + Excerpt(s.substr(0, 40)) + "` is not an ISO 8601 time");
  return t->unix_seconds * 1000 + t->nanos / 1000000;
}

Result<std::string> ContainerCredentialsUrl(std::string_view full_uri, std::string_view relative_uri) {
  if (!relative_uri.empty()) {
    if (relative_uri.front() != '/' || relative_uri.find_first_of(" \r\n") != std::string_view::npos)
      return InvalidArgument("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI must be a path starting with /");
    return "http://169.254.170.2" + std::string(relative_uri);
  }
  if (full_uri.empty())
    return InvalidArgument(
        "neither AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor AWS_CONTAINER_CREDENTIALS_FULL_URI is set");
  if (full_uri.find_first_of(" \r\n") != std::string_view::npos)
    return InvalidArgument("AWS_CONTAINER_CREDENTIALS_FULL_URI holds a space or line break");
  if (!full_uri.starts_with("http://") && !full_uri.starts_with("https://"))
    return InvalidArgument("AWS_CONTAINER_CREDENTIALS_FULL_URI must be an http:// or https:// URL");
  // The authority as the HTTP client reads it (up to the first '/'): only host, port and an IPv6
  // literal's brackets, so that no `?`, `#`, `@` or `\` makes the check below see another host than
  // the one the token is sent to.
  const std::string_view rest = full_uri.substr(full_uri.find("://") + 3);
  const std::string_view authority = rest.substr(0, rest.find('/'));
  for (char c : authority) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '-' || c == ':' || c == '[' || c == ']';
    if (!ok)
      return InvalidArgument(
          "AWS_CONTAINER_CREDENTIALS_FULL_URI must hold only a host and port before its path (no user "
          "information, query or fragment)");
  }
  auto url = net::ParseUrl(full_uri);
  if (!url.ok()) return InvalidArgument("AWS_CONTAINER_CREDENTIALS_FULL_URI: " + url.status().message());
  if (url->tls) return std::string(full_uri);
  if (!AllowedContainerHost(url->host))
    return InvalidArgument(
        "AWS_CONTAINER_CREDENTIALS_FULL_URI over plain http must name a loopback address, 169.254.170.2, "
        "169.254.170.23 or [fd00:ec2::23] (as the AWS SDKs require); use https otherwise");
  return std::string(full_uri);
}

bool AllowedContainerHost(std::string_view host) {
  if (host == "localhost" || host == "::1" || host == "169.254.170.2" || host == "169.254.170.23" ||
      host == "fd00:ec2::23")
    return true;
  if (!host.starts_with("127.")) return false;
  // 127.a.b.c: four decimal octets 0..255 without leading zeros (which resolvers may read as octal).
  int octets = 0;
  while (!host.empty()) {
    const size_t dot = host.find('.');
    const std::string_view o = host.substr(0, dot);
    if (o.empty() || o.size() > 3 || o.find_first_not_of("0123456789") != std::string_view::npos ||
        (o.size() > 1 && o[0] == '0') || std::stoi(std::string(o)) > 255)
      return false;
    ++octets;
    if (dot == std::string_view::npos) break;
    host.remove_prefix(dot + 1);
    if (host.empty()) return false;  // a trailing dot
  }
  return octets == 4;
}

std::chrono::milliseconds AwsRefreshDelay(int64_t now_ms, int64_t expiration_ms, const AwsSourceOptions& o) {
  using std::chrono::milliseconds;
  if (expiration_ms == 0) return o.check_interval;
  const int64_t remaining = expiration_ms - now_ms;
  int64_t delay = remaining - o.refresh_before.count();
  if (delay < remaining / 2) delay = remaining / 2;  // short-lived sets: half-way through their life
  // A far-future Expiration (9999-12-31) is looked at again within a day: a steady_clock time point
  // that far ahead would overflow.
  const int64_t most = std::max<int64_t>(86400000, o.check_interval.count());
  return milliseconds(std::clamp<int64_t>(delay, 1000, most));
}

std::chrono::milliseconds AwsRetryDelay(int failures, const AwsSourceOptions& o) {
  int64_t delay = o.min_backoff.count();
  for (int i = 1; i < failures && delay < o.max_backoff.count(); ++i) delay *= 2;
  return std::chrono::milliseconds(std::min<int64_t>(delay, o.max_backoff.count()));
}

}  // namespace govern::gateway
