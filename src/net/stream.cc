// BodyStream and its shared state, server-sent event formatting, the Bearer token helper, and the
// collecting fallback of ResponseSink::OpenStream.
#include <algorithm>

#include "net/http.h"
#include "net/problem.h"
#include "net/stream_state.h"

namespace govern::net {
namespace internal {

StreamState::StreamState(const StreamOptions& options) : opt_(options) {}

void StreamState::SetDriver(const std::shared_ptr<StreamDriver>& driver, bool own) {
  std::lock_guard lock(mu_);
  driver_ = driver;
  if (own) owned_driver_ = driver;
}

bool StreamState::WritableLocked() const {
  return !EndedLocked() && pending_.size() + in_flight_ < opt_.max_buffered_bytes;
}

std::shared_ptr<StreamDriver> StreamState::WakeLocked() {
  if (wake_pending_) return nullptr;
  auto d = driver_.lock();
  if (d) wake_pending_ = true;
  return d;
}

void StreamState::RunCallbacks(std::vector<std::function<void()>> fns) {
  for (auto& fn : fns) fn();
}

bool StreamState::Write(std::string_view data) {
  std::shared_ptr<StreamDriver> wake;
  {
    std::lock_guard lock(mu_);
    if (EndedLocked()) return false;
    pending_.append(data);
    peak_ = std::max(peak_, pending_.size() + in_flight_);
    if (pending_.size() >= opt_.flush_bytes) wake = WakeLocked();
  }
  if (wake) wake->Wake();
  return true;
}

void StreamState::Flush() {
  std::shared_ptr<StreamDriver> wake;
  {
    std::lock_guard lock(mu_);
    if (EndedLocked() || pending_.empty()) return;
    flush_due_ = true;
    wake = WakeLocked();
  }
  if (wake) wake->Wake();
}

void StreamState::Finish() {
  std::shared_ptr<StreamDriver> wake;
  {
    std::lock_guard lock(mu_);
    if (EndedLocked()) return;
    finished_ = true;
    wake = WakeLocked();
  }
  if (wake) wake->Wake();
}

void StreamState::Abort() {
  std::shared_ptr<StreamDriver> wake;
  {
    std::lock_guard lock(mu_);
    if (EndedLocked()) return;
    aborted_ = true;
    wake_pending_ = false;  // an abort must reach the driver even while a write is pending
    wake = WakeLocked();
  }
  if (wake) wake->Wake();
}

bool StreamState::writable() const {
  std::lock_guard lock(mu_);
  return WritableLocked();
}

bool StreamState::closed() const {
  std::lock_guard lock(mu_);
  return EndedLocked();
}

bool StreamState::WaitWritable(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return WritableLocked() || EndedLocked(); });
  return WritableLocked();
}

void StreamState::OnWritable(std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    if (!WritableLocked() && !EndedLocked()) {
      on_writable_.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

size_t StreamState::buffered() const {
  std::lock_guard lock(mu_);
  return pending_.size() + in_flight_;
}

size_t StreamState::peak_buffered() const {
  std::lock_guard lock(mu_);
  return peak_;
}

uint64_t StreamState::bytes_sent() const {
  std::lock_guard lock(mu_);
  return sent_;
}

StreamState::Batch StreamState::Next() {
  std::lock_guard lock(mu_);
  wake_pending_ = false;
  Batch b;
  if (aborted_ && !closed_) {
    b.abort = true;
    return b;
  }
  if (closed_ || finish_taken_) return b;
  if (!pending_.empty() && (finished_ || flush_due_ || pending_.size() >= opt_.flush_bytes)) {
    b.data.swap(pending_);
    in_flight_ += b.data.size();
    flush_due_ = false;
  }
  if (finished_ && pending_.empty()) {
    b.finish = true;
    finish_taken_ = true;
  }
  return b;
}

void StreamState::Sent(size_t n) {
  std::vector<std::function<void()>> fns;
  {
    std::lock_guard lock(mu_);
    in_flight_ -= std::min(n, in_flight_);
    sent_ += n;
    if (WritableLocked()) {
      fns.swap(on_writable_);
      cv_.notify_all();
    }
  }
  RunCallbacks(std::move(fns));
}

void StreamState::Close() {
  std::vector<std::function<void()>> fns;
  std::shared_ptr<StreamDriver> owned;
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    fns.swap(on_writable_);
    owned.swap(owned_driver_);
    cv_.notify_all();
  }
  RunCallbacks(std::move(fns));
  // `owned` (the driver that may be calling this) is released here, after the lock.
}

namespace {

// The fallback driver of ResponseSink::OpenStream: collects the body and delivers it whole at the end.
class CollectingDriver final : public StreamDriver, public std::enable_shared_from_this<CollectingDriver> {
 public:
  CollectingDriver(ResponseSink* sink, uint64_t seq, Response head, std::shared_ptr<StreamState> state)
      : sink_(sink), seq_(seq), head_(std::move(head)), state_(std::move(state)) {}

  void Wake() override {
    auto self = shared_from_this();  // Close() below drops the stream's reference to this driver
    std::lock_guard lock(mu_);
    for (;;) {
      StreamState::Batch b = state_->Next();
      if (b.abort) {
        state_->Close();
        sink_->Deliver(seq_, ProblemResponse(500, "the response stream was aborted"));
        return;
      }
      if (b.data.empty() && !b.finish) return;
      head_.body += b.data;
      state_->Sent(b.data.size());
      if (b.finish) {
        state_->Close();
        sink_->Deliver(seq_, std::move(head_));
        return;
      }
    }
  }

 private:
  std::mutex mu_;
  ResponseSink* sink_;
  uint64_t seq_;
  Response head_;
  std::shared_ptr<StreamState> state_;
};

}  // namespace
}  // namespace internal

BodyStream& BodyStream::operator=(BodyStream&& other) noexcept {
  if (this != &other) {
    if (state_) state_->Abort();
    state_ = std::move(other.state_);
  }
  return *this;
}

BodyStream::~BodyStream() {
  if (state_) state_->Abort();
}

bool BodyStream::Write(std::string_view data) { return state_ && state_->Write(data); }
void BodyStream::Flush() {
  if (state_) state_->Flush();
}
void BodyStream::Finish() {
  if (state_) state_->Finish();
}
void BodyStream::Abort() {
  if (state_) state_->Abort();
}
bool BodyStream::writable() const { return state_ && state_->writable(); }
bool BodyStream::closed() const { return !state_ || state_->closed(); }
bool BodyStream::WaitWritable(std::chrono::milliseconds timeout) {
  return state_ && state_->WaitWritable(timeout);
}
void BodyStream::OnWritable(std::function<void()> fn) {
  if (!state_) return fn();
  state_->OnWritable(std::move(fn));
}
size_t BodyStream::buffered() const { return state_ ? state_->buffered() : 0; }
size_t BodyStream::peak_buffered() const { return state_ ? state_->peak_buffered() : 0; }
uint64_t BodyStream::bytes_sent() const { return state_ ? state_->bytes_sent() : 0; }

BodyStream ResponseSink::OpenStream(uint64_t seq, Response&& head, const StreamOptions& options) {
  auto state = std::make_shared<internal::StreamState>(options);
  std::string first = std::move(head.body);
  head.body.clear();
  auto driver = std::make_shared<internal::CollectingDriver>(this, seq, std::move(head), state);
  // Nothing else holds the collecting driver: the stream owns it until it is closed (finished or
  // aborted, at the latest when the BodyStream is destroyed).
  state->SetDriver(driver, /*own=*/true);
  BodyStream out(state);
  if (!first.empty()) out.Write(first);
  return out;
}

std::string FormatSseEvent(std::string_view data, std::string_view event, std::string_view id) {
  auto clean = [](std::string_view v) { return v.find_first_of("\r\n") == std::string_view::npos; };
  std::string out;
  out.reserve(data.size() + event.size() + id.size() + 32);
  if (!event.empty() && clean(event)) {
    out += "event: ";
    out += event;
    out += '\n';
  }
  if (!id.empty() && clean(id)) {
    out += "id: ";
    out += id;
    out += '\n';
  }
  // Every line of the data is its own field; CRLF, CR and LF all end a line in the SSE grammar.
  size_t start = 0;
  for (;;) {
    size_t end = data.find_first_of("\r\n", start);
    out += "data: ";
    out += data.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    out += '\n';
    if (end == std::string_view::npos) break;
    start = end + ((data[end] == '\r' && end + 1 < data.size() && data[end + 1] == '\n') ? 2 : 1);
  }
  out += '\n';
  return out;
}

Response SseResponseHead() {
  Response r;
  r.status = 200;
  r.headers.Set("Content-Type", "text/event-stream");
  r.headers.Set("Cache-Control", "no-store");
  return r;
}

std::optional<std::string_view> BearerToken(const Request& req) {
  auto h = req.headers.Get("Authorization");
  if (!h) return std::nullopt;
  std::string_view v = *h;
  constexpr std::string_view kScheme = "Bearer";
  if (v.size() <= kScheme.size() || !EqualsIgnoreCase(v.substr(0, kScheme.size()), kScheme) ||
      v[kScheme.size()] != ' ') {
    return std::nullopt;
  }
  v.remove_prefix(kScheme.size());
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  if (v.empty()) return std::nullopt;
  // b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
  size_t i = 0;
  auto token_char = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
  };
  while (i < v.size() && token_char(v[i])) ++i;
  if (i == 0) return std::nullopt;
  while (i < v.size() && v[i] == '=') ++i;
  if (i != v.size()) return std::nullopt;
  return v;
}

}  // namespace govern::net
