// Audit entries over HTTP: the append request parser and the JSON form of stored entries.
#include "services/audit/entry.h"

#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/time_format.h"

namespace govern::audit_service {
namespace {

using json = nlohmann::json;

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
  auto t = ParseRfc3339(s);  // base/time_format.h
  if (!t.ok()) return InvalidArgument("'" + std::string(s.substr(0, 40)) + "' is not an RFC 3339 time");
  if (t->year < 1970) return InvalidArgument("times must be between 1970 and 9999");
  const int64_t secs = t->unix_seconds - (t->second == 60 ? 1 : 0);  // a leap second: :59
  if (secs < 0) return InvalidArgument("times must be after 1970");
  return secs * 1000000 + t->nanos / 1000;
}

Result<audit::Hash> HashFromBytes(std::string_view bytes) {
  if (bytes.size() != 32) return InvalidArgument("a stored hash is not 32 bytes");
  audit::Hash h;
  std::memcpy(h.data(), bytes.data(), 32);
  return h;
}

}  // namespace govern::audit_service
