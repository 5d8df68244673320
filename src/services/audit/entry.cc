// Audit entries over HTTP: the append request parser and the JSON form of stored entries.
#include "services/audit/entry.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>

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

// ---- The fast path: one entry of plain fields, without a JSON tree ----------------------------------
//
// Appends are the service's hot path and nearly all of them are one entry of short ASCII strings with
// a flat details object. FastParseOne reads exactly such a body in one pass and builds what ParseOne
// would; for anything else (escapes, non-ASCII text, nesting, floats, duplicate or unknown names, a
// batch, any invalid field) it gives up and the tree parser runs, so every refusal, and every accepted
// body outside the subset, is the tree parser's. Inside the subset the two agree byte for byte
// (AppendRequestTest.FastPathAgreesWithTheTreeParser and the fuzz target compare them): details are
// written as nlohmann::json::dump writes them (names sorted bytewise, no spaces).
class FastReader {
 public:
  explicit FastReader(std::string_view s) : s_(s) {}
  void Space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool Eat(char c) {
    Space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool AtEnd() {
    Space();
    return i_ == s_.size();
  }
  char Peek() {
    Space();
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  // A string of printable ASCII without escapes (the contents, without quotes); false otherwise.
  bool PlainString(std::string_view* out) {
    if (!Eat('"')) return false;
    const size_t begin = i_;
    for (; i_ < s_.size(); ++i_) {
      const unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        *out = s_.substr(begin, i_ - begin);
        ++i_;
        return true;
      }
      if (c < 0x20 || c > 0x7e || c == '\\') return false;
    }
    return false;
  }
  // A JSON value nlohmann writes back unchanged: a plain string (with its quotes), an integer of at
  // most 18 digits without a leading zero or "-0", true, false or null. False otherwise.
  bool Scalar(std::string_view* out) {
    const char c = Peek();
    const size_t begin = i_;
    if (c == '"') {
      std::string_view body;
      if (!PlainString(&body)) return false;
      *out = s_.substr(begin, i_ - begin);
      return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      size_t j = i_ + (c == '-' ? 1 : 0);
      const size_t digits_at = j;
      while (j < s_.size() && s_[j] >= '0' && s_[j] <= '9') ++j;
      const size_t digits = j - digits_at;
      if (digits == 0 || digits > 18 || (s_[digits_at] == '0' && (digits > 1 || c == '-'))) return false;
      if (j < s_.size() && (s_[j] == '.' || s_[j] == 'e' || s_[j] == 'E')) return false;
      i_ = j;
      *out = s_.substr(begin, j - begin);
      return true;
    }
    for (std::string_view word : {"true", "false", "null"}) {
      if (s_.substr(i_, word.size()) == word) {
        i_ += word.size();
        *out = word;
        return true;
      }
    }
    return false;
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

// Details: a flat object of plain names and Scalar values, written sorted as nlohmann does.
bool FastDetails(FastReader& r, std::string* out) {
  if (!r.Eat('{')) return false;
  std::vector<std::pair<std::string_view, std::string_view>> members;
  if (!r.Eat('}')) {
    do {
      std::string_view name, value;
      if (!r.PlainString(&name) || !r.Eat(':') || !r.Scalar(&value)) return false;
      members.emplace_back(name, value);
    } while (r.Eat(','));
    if (!r.Eat('}')) return false;
  }
  std::sort(members.begin(), members.end());
  for (size_t i = 1; i < members.size(); ++i) {
    if (members[i].first == members[i - 1].first) return false;  // nlohmann keeps the last: not here
  }
  out->clear();
  out->push_back('{');
  for (size_t i = 0; i < members.size(); ++i) {
    if (i > 0) out->push_back(',');
    out->push_back('"');
    out->append(members[i].first);
    out->append("\":");
    out->append(members[i].second);
  }
  out->push_back('}');
  return true;
}

// One entry's body in the fast subset, valid in every respect: the AppendInput ParseOne would build.
// nullopt: not in the subset, or not valid (the tree parser then says what is wrong).
std::optional<AppendInput> FastParseOne(std::string_view body, std::optional<std::string_view> header,
                                        const ParseLimits& limits) {
  FastReader r(body);
  if (!r.Eat('{')) return std::nullopt;
  enum Field { kKey, kTime, kActor, kAction, kTarget, kOutcome, kDetails, kFields };
  static constexpr std::string_view kNames[kFields] = {"idempotency_key", "time",    "actor",  "action",
                                                       "target",          "outcome", "details"};
  bool seen[kFields] = {};
  std::optional<std::string_view> text[kFields];  // string fields; nullopt: absent or null
  AppendInput in;
  bool has_details = false;
  if (!r.Eat('}')) {
    do {
      std::string_view name;
      if (!r.PlainString(&name) || !r.Eat(':')) return std::nullopt;
      int f = 0;
      while (f < kFields && kNames[f] != name) ++f;
      if (f == kFields || seen[f]) return std::nullopt;  // unknown ("entries" too) or repeated
      seen[f] = true;
      if (r.Peek() == 'n') {
        std::string_view v;
        if (!r.Scalar(&v) || v != "null") return std::nullopt;
        continue;
      }
      if (f == kDetails) {
        if (!FastDetails(r, &in.details)) return std::nullopt;
        has_details = true;
        continue;
      }
      std::string_view v;
      if (!r.PlainString(&v)) return std::nullopt;
      text[f] = v;
    } while (r.Eat(','));
    if (!r.Eat('}')) return std::nullopt;
  }
  if (!r.AtEnd()) return std::nullopt;
  // ParseOne's checks, in its order; any failure: the tree parser reports it.
  std::string_view key = text[kKey].value_or("");
  if (key.size() > audit::kMaxIdempotencyKeyBytes) return std::nullopt;
  if (key.empty() && header) key = *header;
  if (key.empty() || !ValidateIdempotencyKey(key).ok()) return std::nullopt;
  auto fits = [&](Field f, size_t max, bool required) {
    return text[f] ? (text[f]->size() <= max && !(required && text[f]->empty())) : !required;
  };
  if (!fits(kActor, audit::kMaxActorBytes, true) || !fits(kAction, audit::kMaxActionBytes, true) ||
      !fits(kTarget, audit::kMaxTargetBytes, false) || !fits(kOutcome, audit::kMaxOutcomeBytes, false)) {
    return std::nullopt;
  }
  if (text[kTime]) {
    auto micros = ParseRfc3339Micros(*text[kTime]);
    if (!micros.ok()) return std::nullopt;
    in.time_micros = *micros;
  }
  if (has_details && in.details.size() > limits.max_details_bytes) return std::nullopt;
  in.idempotency_key = std::string(key);
  in.actor = std::string(*text[kActor]);
  in.action = std::string(*text[kAction]);
  in.target = std::string(text[kTarget].value_or(""));
  in.outcome = std::string(text[kOutcome].value_or(""));
  // The core's field rules, as ParseOne checks them (the strings move in and back out).
  audit::Entry probe{.org = "o",
                     .seq = 1,
                     .time_us = in.time_micros.value_or(0),
                     .actor = std::move(in.actor),
                     .action = std::move(in.action),
                     .target = std::move(in.target),
                     .outcome = std::move(in.outcome),
                     .details = {},
                     .idempotency_key = std::move(in.idempotency_key)};
  const bool valid = audit::ValidateEntryFieldsExceptDetails(probe).ok();
  in.actor = std::move(probe.actor);
  in.action = std::move(probe.action);
  in.target = std::move(probe.target);
  in.outcome = std::move(probe.outcome);
  in.idempotency_key = std::move(probe.idempotency_key);
  if (!valid) return std::nullopt;
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
  if (std::optional<AppendInput> one = FastParseOne(body, idempotency_header, limits)) {
    ParsedAppend out;
    out.entries.push_back(std::move(*one));
    return out;
  }
  return internal::ParseAppendRequestTree(body, idempotency_header, limits);
}

Result<ParsedAppend> internal::ParseAppendRequestTree(std::string_view body,
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
