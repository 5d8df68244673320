#include "services/gateway/aws_credentials.h"

#include <algorithm>
#include <condition_variable>
#include <ctime>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "base/log.h"
#include "net/http_client.h"

namespace govern::gateway {

using Json = nlohmann::json;
namespace sigv4 = objstore::sigv4;

namespace {

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string FormatIso(int64_t ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

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

Result<std::string> ReadWholeFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Unavailable(std::string(what) + " " + path + " cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return Unavailable(std::string(what) + " " + path + " cannot be read");
  return s.str();
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
      auth = std::string(Trim(auth));
      while (!auth.empty() && auth.back() == '\n') auth = std::string(Trim(auth.substr(0, auth.size() - 1)));
    }
    if (auth.find_first_of("\r\n") != std::string::npos)
      return InvalidArgument("the authorization token holds a line break");
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
  std::thread thread;

  // One fetch; sets the next one's time.
  void Refresh() {
    auto r = fetch();
    const int64_t now = NowMillis();
    std::lock_guard lock(mu);
    if (!r.ok()) {
      ++stats.failures;
      ++failures_in_row;
      last_error = r.status().message();
      auto delay = AwsRetryDelay(failures_in_row, options);
      next = std::chrono::steady_clock::now() + delay;
      log::Warn("gateway", "aws credentials refresh failed",
                {{"source", name},
                 {"error", last_error},
                 {"failures", failures_in_row},
                 {"retry_in_ms", static_cast<int64_t>(delay.count())},
                 {"current_expires", expiration_ms ? FormatIso(expiration_ms) : std::string("never")}});
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
    if (*r) {
      log::Info("gateway", "aws credentials refreshed",
                {{"source", name},
                 {"expires", expiration_ms ? FormatIso(expiration_ms) : std::string("never")},
                 {"next_refresh_in_ms", static_cast<int64_t>(delay.count())}});
    }
  }

  void Run() {
    std::unique_lock lock(mu);
    while (!stop) {
      if (cv.wait_until(lock, next, [this] { return stop; })) break;
      lock.unlock();
      Refresh();
      lock.lock();
    }
  }
};

AwsCredentialSource::AwsCredentialSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::shared_ptr<AwsCredentialSource> AwsCredentialSource::Start(AwsSourceOptions options) {
  auto impl = std::make_unique<Impl>();
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
  impl->Refresh();  // the first set before any request needs it
  Impl* raw = impl.get();
  raw->thread = std::thread([raw] { raw->Run(); });
  return std::shared_ptr<AwsCredentialSource>(new AwsCredentialSource(std::move(impl)));
}

AwsCredentialSource::~AwsCredentialSource() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
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
    out.expiration_ms = *ms;
  }
  return out;
}

Result<int64_t> ParseIso8601Millis(std::string_view s) {
  auto bad = [&] {
    return InvalidArgument("Expiration `" + Excerpt(s.substr(0, 40)) + "` is not an ISO 8601 time");
  };
  auto digits = [&](size_t pos, size_t n, int& v) {
    if (pos + n > s.size()) return false;
    v = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      v = v * 10 + (s[i] - '0');
    }
    return true;
  };
  int year, mon, day, hour, min, sec;
  if (!digits(0, 4, year) || s.size() < 19 || s[4] != '-' || !digits(5, 2, mon) || s[7] != '-' ||
      !digits(8, 2, day) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(11, 2, hour) ||
      s[13] != ':' || !digits(14, 2, min) || s[16] != ':' || !digits(17, 2, sec))
    return bad();
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60) return bad();
  size_t pos = 19;
  int millis = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int n = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (n < 3) millis = millis * 10 + (s[pos] - '0');
      ++n;
      ++pos;
    }
    if (n == 0) return bad();
    for (int i = n; i < 3; ++i) millis *= 10;
  }
  int offset_min = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!digits(pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' || !digits(pos + 4, 2, om) ||
        oh > 23 || om > 59)
      return bad();
    offset_min = (oh * 60 + om) * (s[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return bad();
  }
  if (pos != s.size()) return bad();
  // Days from the civil date (Howard Hinnant's algorithm), so no locale or time zone is involved.
  const int y = year - (mon <= 2 ? 1 : 0);
  const int era = y / 400;
  const int yoe = y - era * 400;
  const int doy = (153 * (mon + (mon > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = static_cast<int64_t>(era) * 146097 + doe - 719468;
  const int64_t secs = days * 86400 + hour * 3600 + min * 60 + sec - static_cast<int64_t>(offset_min) * 60;
  return secs * 1000 + millis;
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
  if (full_uri.starts_with("https://")) return std::string(full_uri);
  if (!full_uri.starts_with("http://"))
    return InvalidArgument("AWS_CONTAINER_CREDENTIALS_FULL_URI must be an http:// or https:// URL");
  std::string_view rest = full_uri.substr(7);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (size_t at = authority.rfind('@'); at != std::string_view::npos)
    return InvalidArgument("AWS_CONTAINER_CREDENTIALS_FULL_URI must not hold user information");
  std::string_view host = authority;
  if (host.starts_with("[")) {
    host = host.substr(0, host.find(']') + 1);
  } else {
    host = host.substr(0, host.find(':'));
  }
  bool allowed = host == "localhost" || host == "[::1]" || host == "169.254.170.2" ||
                 host == "169.254.170.23" || host == "[fd00:ec2::23]";
  if (!allowed && host.starts_with("127.")) {
    int dots = 0;
    allowed = host.find_first_not_of("0123456789.") == std::string_view::npos;
    for (char c : host) dots += c == '.' ? 1 : 0;
    allowed = allowed && dots == 3;
  }
  if (!allowed)
    return InvalidArgument(
        "AWS_CONTAINER_CREDENTIALS_FULL_URI over plain http must name a loopback address, 169.254.170.2, "
        "169.254.170.23 or [fd00:ec2::23] (as the AWS SDKs require); use https otherwise");
  return std::string(full_uri);
}

std::chrono::milliseconds AwsRefreshDelay(int64_t now_ms, int64_t expiration_ms, const AwsSourceOptions& o) {
  using std::chrono::milliseconds;
  if (expiration_ms == 0) return o.check_interval;
  const int64_t remaining = expiration_ms - now_ms;
  int64_t delay = remaining - o.refresh_before.count();
  if (delay < remaining / 2) delay = remaining / 2;  // short-lived sets: half-way through their life
  return milliseconds(std::max<int64_t>(delay, 1000));
}

std::chrono::milliseconds AwsRetryDelay(int failures, const AwsSourceOptions& o) {
  int64_t delay = o.min_backoff.count();
  for (int i = 1; i < failures && delay < o.max_backoff.count(); ++i) delay *= 2;
  return std::chrono::milliseconds(std::min<int64_t>(delay, o.max_backoff.count()));
}

}  // namespace govern::gateway
