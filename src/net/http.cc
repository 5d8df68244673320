// HTTP message helpers: header lookup, query decoding, and the Responder's once-only delivery.
#include "net/http.h"

#include "base/ascii.h"
#include "net/problem.h"

namespace govern::net {

std::string_view MethodName(Method m) {
  switch (m) {
    case Method::kGet:
      return "GET";
    case Method::kHead:
      return "HEAD";
    case Method::kPost:
      return "POST";
    case Method::kPut:
      return "PUT";
    case Method::kPatch:
      return "PATCH";
    case Method::kDelete:
      return "DELETE";
    case Method::kOptions:
      return "OPTIONS";
    case Method::kOther:
      return "OTHER";
  }
  return "OTHER";
}

Method ParseMethod(std::string_view t) {
  if (t == "GET") return Method::kGet;
  if (t == "POST") return Method::kPost;
  if (t == "PUT") return Method::kPut;
  if (t == "DELETE") return Method::kDelete;
  if (t == "HEAD") return Method::kHead;
  if (t == "PATCH") return Method::kPatch;
  if (t == "OPTIONS") return Method::kOptions;
  return Method::kOther;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x + 32);
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y + 32);
    if (x != y) return false;
  }
  return true;
}

std::optional<std::string_view> Headers::Get(std::string_view name) const {
  for (const auto& [k, v] : fields_) {
    if (EqualsIgnoreCase(k, name)) return std::string_view(v);
  }
  return std::nullopt;
}

void Headers::Set(std::string_view name, std::string_view value) {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (EqualsIgnoreCase(fields_[i].first, name)) {
      fields_[i].second.assign(value);
      // Drop any later duplicates so exactly one field remains.
      for (size_t j = fields_.size(); j-- > i + 1;) {
        if (EqualsIgnoreCase(fields_[j].first, name)) fields_.erase(fields_.begin() + static_cast<long>(j));
      }
      return;
    }
  }
  fields_.emplace_back(name, value);
}

void Headers::Remove(std::string_view name) {
  for (size_t j = fields_.size(); j-- > 0;) {
    if (EqualsIgnoreCase(fields_[j].first, name)) fields_.erase(fields_.begin() + static_cast<long>(j));
  }
}

namespace {

// Calls fn(name, value) for each raw "name=value" pair of a query string.
template <typename Fn>
void ForEachQueryPair(std::string_view query, Fn&& fn) {
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string_view name = pair.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    if (!fn(name, value)) return;
  }
}

}  // namespace

std::string PercentDecode(std::string_view s, bool plus_as_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%' && i + 2 < s.size()) {
      int hi = HexDigitValue(s[i + 1]);
      int lo = HexDigitValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += (plus_as_space && c == '+') ? ' ' : c;
  }
  return out;
}

std::string_view Request::Param(std::string_view name) const {
  for (const auto& [k, v] : params) {
    if (k == name) return v;
  }
  return {};
}

std::optional<std::string> Request::QueryParam(std::string_view name) const {
  std::optional<std::string> found;
  ForEachQueryPair(query, [&](std::string_view k, std::string_view v) {
    if (PercentDecode(k, true) != name) return true;
    found = PercentDecode(v, true);
    return false;
  });
  return found;
}

std::vector<std::pair<std::string, std::string>> Request::QueryParams() const {
  std::vector<std::pair<std::string, std::string>> out;
  ForEachQueryPair(query, [&](std::string_view k, std::string_view v) {
    out.emplace_back(PercentDecode(k, true), PercentDecode(v, true));
    return true;
  });
  return out;
}

Responder& Responder::operator=(Responder&& other) noexcept {
  if (this != &other) {
    if (sink_)
      sink_->Deliver(seq_, ProblemResponse(500, "the handler dropped the request without answering"));
    sink_ = std::move(other.sink_);
    seq_ = other.seq_;
  }
  return *this;
}

Responder::~Responder() {
  if (sink_) sink_->Deliver(seq_, ProblemResponse(500, "the handler dropped the request without answering"));
}

void Responder::Send(Response&& response) {
  if (!sink_) return;
  std::shared_ptr<ResponseSink> sink = std::move(sink_);
  sink_.reset();
  sink->Deliver(seq_, std::move(response));
}

void Responder::OnClose(std::function<void()> on_close) {
  if (sink_) sink_->WatchClose(seq_, std::move(on_close));
}

BodyStream Responder::Stream(Response&& head, const StreamOptions& options) {
  if (!sink_) return BodyStream();
  std::shared_ptr<ResponseSink> sink = std::move(sink_);
  sink_.reset();
  return sink->OpenStream(seq_, std::move(head), options);
}

}  // namespace govern::net
