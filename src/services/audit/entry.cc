// Audit entries over HTTP: the append request parser and the JSON form of stored entries.
#include "services/audit/entry.h"

#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>

namespace govern::audit_service {
namespace {

using json = nlohmann::json;

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool Digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

Status CheckText(std::string_view field, std::string_view value, size_t max, bool required) {
  if (required && value.empty()) return InvalidArgument("'" + std::string(field) + "' is required");
  if (value.size() > max) {
    return InvalidArgument("'" + std::string(field) + "' is longer than " + std::to_string(max) + " bytes");
  }
  if (value.find('\0') != std::string_view::npos) {
    return InvalidArgument("'" + std::string(field) + "' holds a NUL character");
  }
  return OkStatus();
}

Result<std::string> TextField(const json& obj, const char* name, size_t max, bool required) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) {
    if (required) return InvalidArgument(std::string("'") + name + "' is required");
    return std::string();
  }
  if (!it->is_string()) return InvalidArgument(std::string("'") + name + "' must be a string");
  const std::string& s = it->get_ref<const std::string&>();
  GOVERN_RETURN_IF_ERROR(CheckText(name, s, max, required));
  return s;
}

Result<AppendInput> ParseOne(const json& obj, std::optional<std::string_view> header,
                             const ParseLimits& limits) {
  if (!obj.is_object()) return InvalidArgument("an entry must be a JSON object");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    static const char* kKnown[] = {"idempotency_key", "time",    "actor",  "action",
                                   "target",          "outcome", "details"};
    bool known = false;
    for (const char* k : kKnown) known = known || it.key() == k;
    if (!known) return InvalidArgument("unknown field '" + it.key().substr(0, 64) + "'");
  }
  AppendInput in;
  GOVERN_ASSIGN_OR_RETURN(std::string key,
                          TextField(obj, "idempotency_key", audit::kMaxIdempotencyKeyBytes, false));
  if (key.empty() && header) key = std::string(*header);
  if (key.empty()) {
    return InvalidArgument(
        "an idempotency key is required ('idempotency_key' or the Idempotency-Key header)");
  }
  GOVERN_RETURN_IF_ERROR(ValidateIdempotencyKey(key));
  in.idempotency_key = std::move(key);
  GOVERN_ASSIGN_OR_RETURN(in.actor, TextField(obj, "actor", audit::kMaxActorBytes, true));
  GOVERN_ASSIGN_OR_RETURN(in.action, TextField(obj, "action", audit::kMaxActionBytes, true));
  GOVERN_ASSIGN_OR_RETURN(in.target, TextField(obj, "target", audit::kMaxTargetBytes, false));
  GOVERN_ASSIGN_OR_RETURN(in.outcome, TextField(obj, "outcome", audit::kMaxOutcomeBytes, false));
  if (auto t = obj.find("time"); t != obj.end() && !t->is_null()) {
    if (!t->is_string()) return InvalidArgument("'time' must be an RFC 3339 string");
    auto micros = ParseRfc3339Micros(t->get_ref<const std::string&>());
    if (!micros.ok()) return micros.status().WithContext("'time'");
    in.time_micros = *micros;
  }
  if (auto d = obj.find("details"); d != obj.end() && !d->is_null()) {
    if (!d->is_object()) return InvalidArgument("'details' must be a JSON object");
    in.details = d->dump(-1, ' ', false, json::error_handler_t::strict);
    if (in.details.size() > limits.max_details_bytes) {
      return InvalidArgument("'details' is " + std::to_string(in.details.size()) + " bytes; at most " +
                             std::to_string(limits.max_details_bytes) +
                             " are allowed (audit.max_details_bytes)");
    }
  }
  audit::Entry probe{.org = "o",
                     .seq = 1,
                     .time_us = in.time_micros.value_or(0),
                     .actor = in.actor,
                     .action = in.action,
                     .target = in.target,
                     .outcome = in.outcome,
                     .details = in.details,
                     .idempotency_key = in.idempotency_key};
  GOVERN_RETURN_IF_ERROR(audit::ValidateEntryFieldsExceptDetails(probe));
  return in;
}

}  // namespace

Status ValidateIdempotencyKey(std::string_view key) {
  if (key.empty() || key.size() > audit::kMaxIdempotencyKeyBytes) {
    return InvalidArgument("the idempotency key must be 1-128 characters");
  }
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == ':' || c == '/' || c == '+' || c == '=' || c == '@' || c == '-';
    if (!ok) return InvalidArgument("the idempotency key may hold only A-Z a-z 0-9 . _ : / + = @ -");
  }
  return OkStatus();
}

Result<ParsedAppend> ParseAppendRequest(std::string_view body,
                                        std::optional<std::string_view> idempotency_header,
                                        const ParseLimits& limits) {
  json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgument("the body is not valid JSON");
  if (!doc.is_object())
    return InvalidArgument("the body must be a JSON object (one entry, or {\"entries\": [...]})");
  ParsedAppend out;
  auto entries = doc.find("entries");
  if (entries == doc.end()) {
    GOVERN_ASSIGN_OR_RETURN(AppendInput one, ParseOne(doc, idempotency_header, limits));
    out.entries.push_back(std::move(one));
    return out;
  }
  out.batch = true;
  if (doc.size() != 1) return InvalidArgument("a batch body holds only \"entries\"");
  if (!entries->is_array()) return InvalidArgument("'entries' must be an array");
  if (entries->empty()) return InvalidArgument("'entries' is empty");
  if (entries->size() > limits.max_entries) {
    return InvalidArgument("'entries' holds " + std::to_string(entries->size()) + " entries; at most " +
                           std::to_string(limits.max_entries) + " per request");
  }
  out.entries.reserve(entries->size());
  for (size_t i = 0; i < entries->size(); ++i) {
    auto one = ParseOne((*entries)[i], std::nullopt, limits);
    if (!one.ok()) return one.status().WithContext("entries[" + std::to_string(i) + "]");
    out.entries.push_back(std::move(*one));
  }
  return out;
}

Result<int64_t> ParseRfc3339Micros(std::string_view s) {
  auto bad = [&] {
    return InvalidArgument("'" + std::string(s.substr(0, 40)) + "' is not an RFC 3339 time");
  };
  int y, mo, d, h, mi, sec;
  if (!Digits(s, 0, 4, &y) || s.size() < 20 || s[4] != '-' || !Digits(s, 5, 2, &mo) || s[7] != '-' ||
      !Digits(s, 8, 2, &d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !Digits(s, 11, 2, &h) ||
      s[13] != ':' || !Digits(s, 14, 2, &mi) || s[16] != ':' || !Digits(s, 17, 2, &sec)) {
    return bad();
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return bad();
  size_t pos = 19;
  int64_t frac = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (digits < 6) frac = frac * 10 + (s[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return bad();
    for (size_t i = digits; i < 6; ++i) frac *= 10;
  }
  int64_t offset = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!Digits(s, pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !Digits(s, pos + 4, 2, &om) || oh > 23 || om > 59) {
      return bad();
    }
    offset = (s[pos] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    pos += 6;
  } else {
    return bad();
  }
  if (pos != s.size()) return bad();
  if (y < 1970 || y > 9999) return InvalidArgument("times must be between 1970 and 9999");
  int64_t secs = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 +
                 mi * 60 + std::min(sec, 59) - offset;
  if (secs < 0) return InvalidArgument("times must be after 1970");
  return secs * 1000000 + frac;
}

Result<audit::Hash> HashFromBytes(std::string_view bytes) {
  if (bytes.size() != 32) return InvalidArgument("a stored hash is not 32 bytes");
  audit::Hash h;
  std::memcpy(h.data(), bytes.data(), 32);
  return h;
}

}  // namespace govern::audit_service
