// WalEventShipper, also known as DecisionShipper (see shipper.h).
#include "policy/decisions/shipper.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "base/log.h"
#include "crypto/sha256.h"
#include "net/http_client.h"

namespace govern::policy {
namespace {

constexpr char kShipHex[] = "0123456789abcdef";
// Intake's NDJSON decoder allows 32 levels of nesting per line; the line object and "attributes" take 2.
constexpr int kMaxContextDepth = 28;

void AppendHex(std::string* out, std::string_view bytes) {
  for (char c : bytes) {
    const auto b = static_cast<uint8_t>(c);
    out->push_back(kShipHex[b >> 4]);
    out->push_back(kShipHex[b & 0xf]);
  }
}

// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are not one.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  auto cont = [&](size_t k) { return i + k < s.size() && (static_cast<uint8_t>(s[i + k]) & 0xc0) == 0x80; };
  if (b0 < 0x80) return 1;
  if (b0 >= 0xc2 && b0 <= 0xdf) return cont(1) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    const auto b1 = static_cast<uint8_t>(s[i + 1]);
    if (b0 == 0xe0 && b1 < 0xa0) return 0;   // overlong
    if (b0 == 0xed && b1 >= 0xa0) return 0;  // surrogate
    return 3;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    const auto b1 = static_cast<uint8_t>(s[i + 1]);
    if (b0 == 0xf0 && b1 < 0x90) return 0;   // overlong
    if (b0 == 0xf4 && b1 >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20) {
      out->append("\\u00");
      out->push_back(kShipHex[c >> 4]);
      out->push_back(kShipHex[c & 0xf]);
      ++i;
    } else {
      const size_t n = Utf8Length(s, i);
      if (n == 0) {
        out->append("\xef\xbf\xbd");  // U+FFFD for the bad byte
        ++i;
      } else {
        out->append(s.substr(i, n));
        i += n;
      }
    }
  }
  out->push_back('"');
}

void AppendStringArray(std::string* out, const std::vector<std::string>& v) {
  out->push_back('[');
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendJsonString(out, v[i]);
  }
  out->push_back(']');
}

int Depth(const nlohmann::json& j) {
  int d = 0;
  if (j.is_object() || j.is_array()) {
    for (const auto& item : j) d = std::max(d, Depth(item));
    return d + 1;
  }
  return 0;
}

// Appends everything up to (not including) the context and the closing braces.
void AppendEventHead(const DecisionRecord& r, std::string_view type, std::string* out) {
  out->append("{\"id\":\"");
  out->append(r.id.ToString());
  out->append("\",\"time\":");
  out->append(std::to_string(r.time_ns < 0 ? 0 : r.time_ns));
  out->append(",\"type\":");
  AppendJsonString(out, type);
  out->append(",\"attributes\":{\"organisation\":");
  AppendJsonString(out, r.organisation);
  out->append(",\"principal\":");
  AppendJsonString(out, r.principal);
  out->append(",\"action\":");
  AppendJsonString(out, r.action);
  out->append(",\"resource\":");
  AppendJsonString(out, r.resource);
  out->append(",\"decision\":\"");
  out->append(RecordedDecisionName(r.decision));
  out->append("\",\"determining_policies\":");
  AppendStringArray(out, r.determining_policies);
  out->append(",\"erroring_policies\":");
  AppendStringArray(out, r.erroring_policies);
  out->append(",\"bundle_version\":");
  out->append(std::to_string(r.bundle_version));
}

void AppendContextHash(std::string_view digest, std::string_view omitted, std::string* out) {
  out->append(",\"context_sha256\":\"");
  AppendHex(out, digest);
  out->push_back('"');
  if (!omitted.empty()) {
    out->append(",\"context_omitted\":");
    AppendJsonString(out, omitted);
  }
}

std::string Trim(std::string_view s, size_t n) { return std::string(s.substr(0, std::min(s.size(), n))); }

bool Retryable(int status) { return status == 408 || status == 429 || status >= 500; }
bool RefusedForContent(int status) { return status == 400 || status == 413 || status == 422; }

}  // namespace

void AppendDecisionEvent(const DecisionRecord& r, std::string_view type, size_t max_line_bytes,
                         std::string* out) {
  const size_t start = out->size();
  AppendEventHead(r, type, out);
  switch (r.context_kind) {
    case ContextKind::kNone:
      break;
    case ContextKind::kHash:
      AppendContextHash(r.context, {}, out);
      break;
    case ContextKind::kFull: {
      std::string_view omitted;
      auto j = nlohmann::json::parse(r.context, nullptr, /*allow_exceptions=*/false);
      std::string text;
      if (j.is_discarded()) {
        omitted = "not a JSON value";
      } else if (Depth(j) > kMaxContextDepth) {
        omitted = "nested deeper than telemetry accepts";
      } else {
        // Re-serialised: integers past 64 bits become doubles, which intake's parser accepts.
        text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        if (out->size() - start + text.size() + 20 > max_line_bytes) omitted = "too large for one event";
      }
      if (omitted.empty()) {
        out->append(",\"context\":");
        out->append(text);
      } else {
        auto d = crypto::Sha256(r.context);
        std::string_view digest;
        if (d.ok()) digest = std::string_view(reinterpret_cast<const char*>(d->data()), d->size());
        AppendContextHash(digest, omitted, out);
      }
      break;
    }
  }
  out->append("}}");
}

struct WalEventShipper::Item {
  uint64_t seq = 0;
  std::string line;     // the NDJSON event; empty when the record did not decode
  std::string raw;      // the record's bytes, kept only when it did not decode
  std::string problem;  // why it did not decode
};

Result<std::unique_ptr<WalEventShipper>> WalEventShipper::Create(DecisionLog* log, ShipperOptions options) {
  if (log == nullptr) return InvalidArgument("decision shipper: no decision log");
  if (options.quarantine_path.empty()) options.quarantine_path = log->dir() + "/quarantine.ndjson";
  EventEncoder encode = [type = options.event_type](std::string_view record, size_t max_line_bytes,
                                                    std::string* line) -> Status {
    GOVERN_ASSIGN_OR_RETURN(DecisionRecord rec, DecodeDecision(record));
    AppendDecisionEvent(rec, type, max_line_bytes, line);
    return OkStatus();
  };
  return Create(&log->wal(), std::move(encode), std::move(options));
}

Result<std::unique_ptr<WalEventShipper>> WalEventShipper::Create(wal::Log* wal, EventEncoder encode,
                                                                 ShipperOptions options) {
  if (wal == nullptr || !encode) return InvalidArgument("decision shipper: no WAL or no event encoder");
  if (options.endpoint.rfind("http://", 0) != 0 && options.endpoint.rfind("https://", 0) != 0) {
    return InvalidArgument("decision shipper: endpoint must be an http:// or https:// URL, got \"" +
                           Trim(options.endpoint, 100) + "\"");
  }
  if (options.key.rfind("gvk_", 0) != 0) {
    return InvalidArgument("decision shipper: the key must be a telemetry ingest key (gvk_...)");
  }
  if (options.batch_events == 0 || options.batch_events > 10000) {
    return InvalidArgument("decision shipper: batch_events must be 1 to 10000");
  }
  if (options.batch_bytes < 1024)
    return InvalidArgument("decision shipper: batch_bytes must be at least 1 KiB");
  if (options.quarantine_path.empty()) return InvalidArgument("decision shipper: no quarantine_path");
  GOVERN_RETURN_IF_ERROR(wal->RegisterCursor(options.cursor));
  return std::unique_ptr<WalEventShipper>(new WalEventShipper(wal, std::move(encode), std::move(options)));
}

Status WalEventShipper::Forget(DecisionLog* log, std::string_view cursor) {
  return Forget(&log->wal(), cursor);
}

Status WalEventShipper::Forget(wal::Log* wal, std::string_view cursor) {
  if (wal->Cursors().count(std::string(cursor)) == 0) return OkStatus();
  log::Info("policy.decisions.shipper", "shipping is off: its cursor no longer holds the log",
            {{"cursor", cursor}});
  return wal->UnregisterCursor(cursor);
}

WalEventShipper::WalEventShipper(wal::Log* wal, EventEncoder encode, ShipperOptions options)
    : wal_(wal), encode_(std::move(encode)), options_(std::move(options)) {
  while (!options_.endpoint.empty() && options_.endpoint.back() == '/') options_.endpoint.pop_back();
  url_ = options_.endpoint + "/v1/events";
  rng_.seed(std::random_device{}());
  auth_ = "Bearer " + options_.key;
  auto pos = wal_->CursorPosition(options_.cursor);
  next_seq_ = pos.ok() ? *pos : 0;
}

WalEventShipper::~WalEventShipper() { Stop(); }

void WalEventShipper::Start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard lk(mu_);
    stop_ = false;
  }
  net::ClientOptions co;
  co.connect_timeout = options_.connect_timeout;
  co.request_timeout = options_.request_timeout;
  co.max_idle_per_host = 1;
  client_ = std::make_unique<net::HttpClient>(co);
  thread_ = std::thread([this] { Run(); });
}

void WalEventShipper::Stop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  client_.reset();
}

WalEventShipper::Stats WalEventShipper::GetStats() const {
  Stats s;
  s.events_shipped = events_shipped_.load();
  s.batches_shipped = batches_shipped_.load();
  s.requests = requests_.load();
  s.retries = retries_.load();
  s.quarantined = quarantined_.load();
  s.next_seq = next_seq_.load();
  std::lock_guard lk(error_mu_);
  s.last_error = last_error_;
  return s;
}

bool WalEventShipper::SleepUnlessStopped(std::chrono::milliseconds d) {
  std::unique_lock lk(mu_);
  return !cv_.wait_for(lk, d, [&] { return stop_; });
}

void WalEventShipper::NoteError(std::string error) {
  std::lock_guard lk(error_mu_);
  last_error_ = std::move(error);
}

void WalEventShipper::Run() {
  std::unique_ptr<wal::Reader> reader;
  std::vector<Item> batch;
  std::optional<Item> carry;  // read but left for the next batch (it did not fit, or does not decode)
  auto backoff = options_.initial_backoff;
  auto stopping = [&] {
    std::lock_guard lk(mu_);
    return stop_;
  };
  while (!stopping()) {
    if (reader == nullptr) {
      auto r = wal_->NewCursorReader(options_.cursor);
      if (!r.ok()) {
        NoteError(r.status().ToString());
        log::Error(options_.log_component, "cannot read the log", {{"error", r.status().ToString()}});
        if (!SleepUnlessStopped(options_.max_backoff)) return;
        continue;
      }
      reader = std::move(*r);
      carry.reset();
    }
    batch.clear();
    size_t bytes = 0;
    bool read_failed = false;
    if (carry) {
      bytes = carry->line.size() + 1;
      batch.push_back(std::move(*carry));
      carry.reset();
    }
    // An undecodable record travels alone (it goes to quarantine, not to intake).
    while (batch.size() < options_.batch_events && (batch.empty() || !batch.front().line.empty())) {
      auto next = reader->Next(batch.empty() ? options_.idle_wait : std::chrono::milliseconds(0));
      if (!next.ok()) {
        // DataLoss (a record unreadable on disk) or OutOfRange (deleted under us): both mean the WAL
        // is not what the cursor expects. Start again from the cursor after a pause.
        NoteError(next.status().ToString());
        log::Error(options_.log_component, "reading the log failed", {{"error", next.status().ToString()}});
        read_failed = true;
        break;
      }
      if (!next->has_value()) break;
      Item item;
      item.seq = (*next)->seq;
      if (Status enc = encode_((*next)->data, options_.max_line_bytes, &item.line); !enc.ok()) {
        item.line.clear();
        item.raw.assign((*next)->data);
        item.problem = enc.message();
      }
      const bool fits =
          item.line.empty() ? batch.empty() : bytes + item.line.size() + 1 <= options_.batch_bytes;
      if (!batch.empty() && (!fits || item.line.empty())) {
        carry = std::move(item);
        break;
      }
      bytes += item.line.size() + 1;
      batch.push_back(std::move(item));
    }
    if (read_failed) {
      reader.reset();
      if (!SleepUnlessStopped(options_.max_backoff)) return;
      continue;
    }
    if (batch.empty()) continue;
    const bool full = batch.size() >= options_.batch_events;
    Status st = ShipRange(batch, 0, batch.size());
    if (!st.ok()) {
      if (st.code() == Code::kCancelled) return;
      // The cursor did not move past what failed: read again from it.
      NoteError(st.ToString());
      log::Error(options_.log_component, "shipping stopped on an error; resuming from the cursor",
                 {{"error", st.ToString()}});
      reader.reset();
      if (!SleepUnlessStopped(backoff)) return;
      backoff = std::min(backoff * 2, options_.max_backoff);
      continue;
    }
    backoff = options_.initial_backoff;
    if (!full && options_.linger.count() > 0 && !carry && !SleepUnlessStopped(options_.linger)) return;
  }
}

Status WalEventShipper::Advance(uint64_t next_seq) {
  Status st = wal_->CommitCursor(options_.cursor, next_seq);
  if (!st.ok()) return st.WithContext("decision shipper: commit the cursor");
  next_seq_.store(next_seq);
  return OkStatus();
}

Status WalEventShipper::Quarantine(const Item& item, int status, std::string_view reason) {
  nlohmann::json q;
  q["seq"] = item.seq;
  if (status != 0) q["status"] = status;
  q["reason"] = std::string(reason);
  std::string line = q.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line.pop_back();  // the closing brace: the event (or the raw record) goes in as text we already have
  if (!item.line.empty()) {
    line += ",\"event\":" + item.line + "}\n";
  } else {
    std::string hex;
    AppendHex(&hex, item.raw);
    line += ",\"record_hex\":\"" + hex + "\"}\n";
  }
  const int fd = ::open(options_.quarantine_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(errno, "decision shipper: open " + options_.quarantine_path);
  size_t off = 0;
  Status st;
  while (off < line.size()) {
    const ssize_t n = ::write(fd, line.data() + off, line.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      st = ErrnoStatus(errno, "decision shipper: write " + options_.quarantine_path);
      break;
    }
    off += static_cast<size_t>(n);
  }
  if (st.ok() && ::fdatasync(fd) != 0)
    st = ErrnoStatus(errno, "decision shipper: sync " + options_.quarantine_path);
  ::close(fd);
  if (!st.ok()) return st;
  quarantined_.fetch_add(1);
  log::Error(options_.log_component, "record quarantined: telemetry will never accept it",
             {{"seq", item.seq}, {"status", status}, {"reason", reason}, {"file", options_.quarantine_path}});
  return OkStatus();
}

Status WalEventShipper::ShipRange(std::vector<Item>& items, size_t lo, size_t hi) {
  if (items[lo].line.empty()) {  // an undecodable record, alone
    GOVERN_RETURN_IF_ERROR(Quarantine(items[lo], 0, "the record does not decode: " + items[lo].problem));
    return Advance(items[lo].seq + 1);
  }
  std::string body;
  size_t size = 0;
  for (size_t i = lo; i < hi; ++i) size += items[i].line.size() + 1;
  body.reserve(size);
  for (size_t i = lo; i < hi; ++i) {
    body.append(items[i].line);
    body.push_back('\n');
  }
  const uint64_t next_seq = items[hi - 1].seq + 1;
  auto backoff = options_.initial_backoff;
  for (bool first = true;; first = false) {
    {
      std::lock_guard lk(mu_);
      if (stop_) return Cancelled("decision shipper: stopping");
    }
    if (!first) retries_.fetch_add(1);
    net::ClientRequest req;
    req.method = net::Method::kPost;
    req.url = url_;
    req.headers.Set("Content-Type", "application/x-ndjson");
    req.headers.Set("Authorization", auth_);
    req.body = body;
    requests_.fetch_add(1);
    auto resp = client_->Send(std::move(req));
    std::chrono::milliseconds wait = backoff;
    if (resp.ok() && resp->status == 200) {
      if (options_.after_send_probe) options_.after_send_probe(next_seq);
      GOVERN_RETURN_IF_ERROR(Advance(next_seq));
      events_shipped_.fetch_add(hi - lo);
      batches_shipped_.fetch_add(1);
      return OkStatus();
    }
    if (resp.ok() && RefusedForContent(resp->status)) {
      if (hi - lo > 1) {  // find the events it refuses: halves, each shipped (or split) on its own
        const size_t mid = lo + (hi - lo) / 2;
        GOVERN_RETURN_IF_ERROR(ShipRange(items, lo, mid));
        return ShipRange(items, mid, hi);
      }
      GOVERN_RETURN_IF_ERROR(Quarantine(items[lo], resp->status, Trim(resp->body, 2000)));
      return Advance(next_seq);
    }
    std::string error;
    if (!resp.ok()) {
      error = resp.status().ToString();
    } else {
      error = "telemetry answered " + std::to_string(resp->status) + ": " + Trim(resp->body, 500);
      if (!Retryable(resp->status)) {
        wait = options_.max_backoff;  // a configuration fault (key, URL): no record can fix it
        log::Error(options_.log_component,
                   "telemetry refuses the shipper; fix the configuration (records are kept)",
                   {{"status", resp->status}, {"url", url_}});
      }
      if (auto ra = resp->headers.Get("Retry-After"); ra.has_value()) {
        char* end = nullptr;
        const std::string text(*ra);
        const long secs = std::strtol(text.c_str(), &end, 10);
        if (end != text.c_str() && *end == '\0' && secs >= 0 && secs <= 3600) {
          wait = std::chrono::milliseconds(secs * 1000);
        }
      }
    }
    NoteError(error);
    log::Warn(options_.log_component, "sending events failed; will retry",
              {{"error", error}, {"events", hi - lo}, {"retry_in_ms", wait.count()}});
    // Jitter keeps many agents from retrying in step after an outage; only upward, so a Retry-After
    // is never cut short.
    const auto jittered = wait + std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(
                                     0, std::max<int64_t>(wait.count() / 4, 0))(rng_));
    if (!SleepUnlessStopped(jittered)) return Cancelled("decision shipper: stopping");
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

}  // namespace govern::policy
