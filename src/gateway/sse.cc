#include "gateway/sse.h"

#include <cstring>

namespace govern::gateway {

Status SseParser::Feed(std::string_view bytes, std::vector<SseEvent>& out) {
  if (!error_.ok()) return error_;
  if (at_start_ && !bytes.empty()) {
    // The BOM may itself arrive split; hold back until three bytes (or a mismatch) are seen.
    static constexpr std::string_view kBom = "\xEF\xBB\xBF";
    size_t have = line_.size();
    size_t take = std::min(bytes.size(), kBom.size() - have);
    line_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (kBom.substr(0, line_.size()) != line_) {
      at_start_ = false;
      std::string held = std::move(line_);
      line_.clear();
      Status s = Feed(held, out);
      if (!s.ok()) return s;
    } else if (line_.size() == kBom.size()) {
      at_start_ = false;
      line_.clear();
    } else {
      return OkStatus();  // still a BOM prefix
    }
  }
  if (last_was_cr_ && !bytes.empty()) {
    last_was_cr_ = false;
    if (bytes.front() == '\n') bytes.remove_prefix(1);
  }
  while (!bytes.empty()) {
    const char* start = bytes.data();
    const char* end = start + bytes.size();
    const char* p = start;
    while (p < end && *p != '\n' && *p != '\r') ++p;
    if (p == end) {
      if (line_.size() + bytes.size() > max_event_bytes_) {
        error_ = InvalidArgument("event stream: a line is longer than " + std::to_string(max_event_bytes_) +
                                 " bytes");
        return error_;
      }
      line_.append(bytes);
      return OkStatus();
    }
    std::string_view piece(start, static_cast<size_t>(p - start));
    size_t consumed = piece.size() + 1;
    if (*p == '\r') {
      if (p + 1 < end) {
        if (p[1] == '\n') ++consumed;
      } else {
        last_was_cr_ = true;
      }
    }
    Status s;
    if (line_.empty()) {
      s = Line(piece, out);
    } else {
      if (line_.size() + piece.size() > max_event_bytes_) {
        error_ = InvalidArgument("event stream: a line is longer than " + std::to_string(max_event_bytes_) +
                                 " bytes");
        return error_;
      }
      line_.append(piece);
      std::string whole = std::move(line_);
      line_.clear();
      s = Line(whole, out);
    }
    if (!s.ok()) {
      error_ = s;
      return s;
    }
    bytes.remove_prefix(consumed);
  }
  return OkStatus();
}

Status SseParser::Line(std::string_view line, std::vector<SseEvent>& out) {
  if (line.empty()) {
    if (has_data_) {
      current_.id = last_id_;
      out.push_back(std::move(current_));
    }
    current_ = SseEvent{};
    has_data_ = false;
    pending_fields_ = false;
    return OkStatus();
  }
  if (line.front() == ':') {
    ++comments_;
    return OkStatus();
  }
  pending_fields_ = true;
  std::string_view field = line;
  std::string_view value;
  if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (current_.data.size() + value.size() + 1 > max_event_bytes_)
      return InvalidArgument("event stream: an event is longer than " + std::to_string(max_event_bytes_) +
                             " bytes");
    if (has_data_) current_.data.push_back('\n');
    current_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    current_.event.assign(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) last_id_.assign(value);
  } else if (field == "retry") {
    bool digits = !value.empty() && value.size() <= 18;
    uint64_t n = 0;
    for (char c : value) {
      if (c < '0' || c > '9') {
        digits = false;
        break;
      }
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    if (digits) current_.retry = n;
  }
  // Other fields are ignored, as the standard says.
  return OkStatus();
}

void AppendSseEvent(std::string& out, std::string_view event, std::string_view data) {
  if (!event.empty()) {
    out.append("event: ");
    out.append(event);
    out.push_back('\n');
  }
  // Every line of data is its own data: line, so a payload with newlines survives.
  while (true) {
    size_t nl = data.find_first_of("\r\n");
    out.append("data: ");
    out.append(data.substr(0, nl));
    out.push_back('\n');
    if (nl == std::string_view::npos) break;
    size_t skip = (data[nl] == '\r' && nl + 1 < data.size() && data[nl + 1] == '\n') ? 2 : 1;
    data.remove_prefix(nl + skip);
  }
  out.push_back('\n');
}

std::string FormatSseEvent(std::string_view event, std::string_view data) {
  std::string out;
  out.reserve(event.size() + data.size() + 24);
  AppendSseEvent(out, event, data);
  return out;
}

}  // namespace govern::gateway
