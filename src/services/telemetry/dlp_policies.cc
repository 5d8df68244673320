// Per-organisation DLP policies: JSON parsing, storage in PostgreSQL, the compiled-rule cache and the
// redaction of a stored event.
#include "services/telemetry/dlp_policies.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "base/log.h"
#include "db/params.h"
#include "services/telemetry/json_text.h"

namespace govern::telemetry {
namespace {

using nlohmann::json;

Status Bad(std::string_view where, std::string_view what) {
  return InvalidArgument(std::string(where) + ": " + std::string(what));
}

Result<std::string> StringMember(const json& v, std::string_view where) {
  if (!v.is_string()) return Bad(where, "must be a string");
  return v.get<std::string>();
}

Result<bool> BoolMember(const json& v, std::string_view where) {
  if (!v.is_boolean()) return Bad(where, "must be true or false");
  return v.get<bool>();
}

Result<dlp::CustomRule> ParseRule(const json& v, const std::string& where) {
  if (!v.is_object()) return Bad(where, "must be an object");
  dlp::CustomRule rule;
  bool has_id = false, has_pattern = false;
  for (const auto& [key, value] : v.items()) {
    std::string at = where + "." + key;
    if (key == "id") {
      GOVERN_ASSIGN_OR_RETURN(rule.id, StringMember(value, at));
      has_id = true;
    } else if (key == "category") {
      GOVERN_ASSIGN_OR_RETURN(rule.category, StringMember(value, at));
    } else if (key == "pattern") {
      GOVERN_ASSIGN_OR_RETURN(rule.pattern, StringMember(value, at));
      has_pattern = true;
    } else if (key == "caseless") {
      GOVERN_ASSIGN_OR_RETURN(rule.caseless, BoolMember(value, at));
    } else if (key == "utf8") {
      GOVERN_ASSIGN_OR_RETURN(rule.utf8, BoolMember(value, at));
    } else if (key == "priority") {
      if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > 1000) {
        return Bad(at, "must be an integer from 0 to 1000");
      }
      rule.priority = static_cast<int>(value.get<int64_t>());
    } else {
      return Bad(at, "unknown member (id, category, pattern, caseless, utf8, priority)");
    }
  }
  if (!has_id) return Bad(where + ".id", "missing");
  if (!has_pattern) return Bad(where + ".pattern", "missing");
  return rule;
}

// has_hash_key: whether the document has a "hash_key" member (SetDlpPolicy keeps the stored key
// otherwise).
Result<dlp::Policy> ParsePolicy(std::string_view text, bool* has_hash_key) {
  *has_hash_key = false;
  if (text.size() > kMaxDlpPolicyBytes) {
    return InvalidArgument("policy: larger than " + std::to_string(kMaxDlpPolicyBytes) + " bytes");
  }
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgument("policy: not valid JSON");
  if (!doc.is_object()) return InvalidArgument("policy: must be a JSON object");
  dlp::Policy policy;
  for (const auto& [key, value] : doc.items()) {
    if (key == "disabled") {
      if (!value.is_array()) return Bad(key, "must be an array of detector ids or categories");
      for (size_t i = 0; i < value.size(); ++i) {
        GOVERN_ASSIGN_OR_RETURN(std::string name,
                                StringMember(value[i], "disabled[" + std::to_string(i) + "]"));
        policy.disabled.push_back(std::move(name));
      }
    } else if (key == "custom_rules") {
      if (!value.is_array()) return Bad(key, "must be an array of rules");
      if (value.size() > kMaxDlpCustomRules) {
        return Bad(key, "more than " + std::to_string(kMaxDlpCustomRules) + " rules");
      }
      for (size_t i = 0; i < value.size(); ++i) {
        GOVERN_ASSIGN_OR_RETURN(dlp::CustomRule rule,
                                ParseRule(value[i], "custom_rules[" + std::to_string(i) + "]"));
        policy.custom_rules.push_back(std::move(rule));
      }
    } else if (key == "actions") {
      if (!value.is_object()) return Bad(key, "must be an object of detector or category -> action");
      for (const auto& [name, action] : value.items()) {
        std::string at = "actions." + name;
        GOVERN_ASSIGN_OR_RETURN(std::string action_name, StringMember(action, at));
        Result<dlp::Action> a = dlp::ParseAction(action_name);
        if (!a.ok()) return Bad(at, a.status().message());
        policy.actions.emplace_back(name, *a);
      }
    } else if (key == "default_action") {
      GOVERN_ASSIGN_OR_RETURN(std::string action_name, StringMember(value, key));
      Result<dlp::Action> a = dlp::ParseAction(action_name);
      if (!a.ok()) return Bad(key, a.status().message());
      policy.default_action = *a;
    } else if (key == "hash_key") {
      GOVERN_ASSIGN_OR_RETURN(policy.hash_key, StringMember(value, key));
      *has_hash_key = true;
    } else if (key == "hash_key_set" || key == "updated_at") {
      // Read-only members of what GetDlpPolicy returns: ignored, so a read document can be written back.
    } else {
      return Bad(key, "unknown member (disabled, custom_rules, actions, default_action, hash_key)");
    }
  }
  return policy;
}

Result<std::shared_ptr<const dlp::RuleSet>> Compile(const dlp::Policy& policy) {
  Result<std::shared_ptr<const dlp::RuleSet>> rules = dlp::RuleSet::Compile(policy);
  if (!rules.ok()) return InvalidArgument(rules.status().message());
  return rules;
}

// updated_at as RFC 3339 with microseconds, UTC: the cache compares it as text.
constexpr const char* kUpdatedAtText =
    "to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')";

}  // namespace

Result<dlp::Policy> ParseDlpPolicy(std::string_view json_text) {
  bool has_hash_key = false;
  return ParsePolicy(json_text, &has_hash_key);
}

Result<std::shared_ptr<const dlp::RuleSet>> CompileDlpPolicy(std::string_view json_text) {
  GOVERN_ASSIGN_OR_RETURN(dlp::Policy policy, ParseDlpPolicy(json_text));
  return Compile(policy);
}

std::string DlpPolicyJson(const dlp::Policy& policy, bool include_hash_key) {
  json doc = json::object();
  doc["disabled"] = policy.disabled;
  json rules = json::array();
  for (const dlp::CustomRule& r : policy.custom_rules) {
    rules.push_back({{"id", r.id},
                     {"category", r.category},
                     {"pattern", r.pattern},
                     {"caseless", r.caseless},
                     {"utf8", r.utf8},
                     {"priority", r.priority}});
  }
  doc["custom_rules"] = std::move(rules);
  json actions = json::object();
  for (const auto& [name, action] : policy.actions) actions[name] = std::string(dlp::ActionName(action));
  doc["actions"] = std::move(actions);
  doc["default_action"] = std::string(dlp::ActionName(policy.default_action));
  if (include_hash_key) {
    if (!policy.hash_key.empty()) doc["hash_key"] = policy.hash_key;
  } else {
    doc["hash_key_set"] = !policy.hash_key.empty();
  }
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::string> SetDlpPolicy(db::Connection& conn, std::string_view org, std::string_view json_text) {
  bool has_hash_key = false;
  GOVERN_ASSIGN_OR_RETURN(dlp::Policy policy, ParsePolicy(json_text, &has_hash_key));
  std::string stored;
  Status st = conn.Transact([&](db::Connection& c) -> Status {
    if (!has_hash_key) {
      // Keep the stored key: GetDlpPolicy never shows it, so an edited document comes back without it.
      GOVERN_ASSIGN_OR_RETURN(
          db::Rows old,
          c.ExecPrepared("SELECT policy->>'hash_key' FROM telemetry_dlp_policies WHERE org = $1 FOR UPDATE",
                         db::Params(org)));
      policy.hash_key = old.empty() ? std::string() : std::string(old.Text(0, 0));
    }
    GOVERN_RETURN_IF_ERROR(Compile(policy).status());
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows rows,
        c.ExecPrepared(std::string("INSERT INTO telemetry_dlp_policies AS p (org, policy, updated_at) "
                                   "VALUES ($1, $2::jsonb, clock_timestamp()) "
                                   "ON CONFLICT (org) DO UPDATE SET policy = EXCLUDED.policy, "
                                   // Strictly later than before even if the clock stepped back.
                                   "updated_at = greatest(clock_timestamp(), "
                                   "p.updated_at + interval '1 microsecond') RETURNING ") +
                           kUpdatedAtText,
                       db::Params(org, DlpPolicyJson(policy, true))));
    std::string shown = DlpPolicyJson(policy, false);
    shown.pop_back();  // append "updated_at" inside the object
    shown += ",\"updated_at\":\"" + std::string(rows.Text(0, 0)) + "\"}";
    stored = std::move(shown);
    return OkStatus();
  });
  GOVERN_RETURN_IF_ERROR(st);
  return stored;
}

Result<std::optional<std::string>> GetDlpPolicy(db::Connection& conn, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                          conn.ExecPrepared(std::string("SELECT policy::text, ") + kUpdatedAtText +
                                                " FROM telemetry_dlp_policies WHERE org = $1",
                                            db::Params(org)));
  if (rows.empty()) return std::optional<std::string>();
  bool has_hash_key = false;
  Result<dlp::Policy> policy = ParsePolicy(rows.Text(0, 0), &has_hash_key);
  if (!policy.ok()) return Internal("stored DLP policy does not parse: " + policy.status().message());
  std::string shown = DlpPolicyJson(*policy, false);
  shown.pop_back();
  shown += ",\"updated_at\":\"" + std::string(rows.Text(0, 1)) + "\"}";
  return std::optional<std::string>(std::move(shown));
}

Result<bool> DeleteDlpPolicy(db::Connection& conn, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows, conn.ExecPrepared("DELETE FROM telemetry_dlp_policies WHERE org = $1", db::Params(org)));
  return rows.affected() > 0;
}

DlpPolicyCache::DlpPolicyCache(const Clock* clock, std::chrono::milliseconds recheck)
    : clock_(clock), recheck_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(recheck).count()) {}

Result<std::shared_ptr<const dlp::RuleSet>> DlpPolicyCache::Get(db::Connection& conn,
                                                                const std::string& org) {
  int64_t now = clock_->MonotonicNanos();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(org);
    if (it != entries_.end() && now - it->second.checked_ns < recheck_ns_) return it->second.rules;
  }
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                          conn.ExecPrepared(std::string("SELECT ") + kUpdatedAtText +
                                                ", policy::text FROM telemetry_dlp_policies WHERE org = $1",
                                            db::Params(org)));
  std::string updated_at = rows.empty() ? std::string() : std::string(rows.Text(0, 0));
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(org);
    if (it != entries_.end() && it->second.updated_at == updated_at) {
      it->second.checked_ns = now;
      return it->second.rules;
    }
  }
  std::shared_ptr<const dlp::RuleSet> rules;
  if (rows.empty()) {
    GOVERN_ASSIGN_OR_RETURN(rules, dlp::RuleSet::Compile(dlp::Policy{}));
  } else {
    Result<std::shared_ptr<const dlp::RuleSet>> compiled = CompileDlpPolicy(rows.Text(0, 1));
    if (!compiled.ok()) {
      log::Error("telemetry.query", "stored DLP policy does not compile; queries fail until it is fixed",
                 {{"org", org}, {"error", compiled.status().message()}});
      return Internal("the organisation's DLP policy does not compile: " + compiled.status().message());
    }
    rules = std::move(compiled).value();
  }
  std::lock_guard<std::mutex> lock(mu_);
  entries_[org] = Entry{rules, std::move(updated_at), now};
  return rules;
}

void DlpPolicyCache::Invalidate(const std::string& org) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(org);
}

RedactedEvent RedactEvent(const dlp::RuleSet& rules, StoredEvent event) {
  RedactedEvent r;
  r.stored = std::move(event);
  Event& e = r.stored.event;
  std::string out;
  auto text = [&](std::string& s, uint32_t field) {
    if (s.empty()) return;
    dlp::Outcome o = rules.Redact(s, &out);
    if (o.dropped) {
      s.clear();
      r.null_fields |= field;
      r.redacted = true;
    } else if (o.changed) {
      s.swap(out);
    }
  };
  auto json_value = [&](std::string& s) {
    Result<dlp::Outcome> o = rules.RedactJson(s, &out);
    if (!o.ok()) {  // not JSON (cannot come from storage, but never return what was not scanned)
      s = "null";
      r.redacted = true;
      return;
    }
    if (o->changed) s.swap(out);
    if (o->dropped) r.redacted = true;
  };
  if (e.body_kind == BodyKind::kString) {
    text(e.body, RedactedEvent::kBody);
  } else if (e.body_kind == BodyKind::kJson) {
    json_value(e.body);
  }
  // One document per attribute set: one scan instead of one per value, and the keys give context.
  auto object = [&](std::vector<Attribute>& attrs, std::string* doc) {
    auto member = [](std::string* to, const Attribute& a) {
      internal::AppendJsonString(*to, a.key);
      to->push_back(':');
      to->append(a.value_json.empty() ? "null" : a.value_json);
    };
    doc->assign("{");
    for (size_t i = 0; i < attrs.size(); ++i) {
      if (i > 0) doc->push_back(',');
      member(doc, attrs[i]);
    }
    doc->push_back('}');
    Result<dlp::Outcome> o = rules.RedactJson(*doc, &out);
    if (o.ok()) {
      if (o->changed) doc->swap(out);
      if (o->dropped) r.redacted = true;
    } else {
      // Some value is not JSON: redact member by member, so only the bad ones become null.
      doc->assign("{");
      std::string one;
      for (size_t i = 0; i < attrs.size(); ++i) {
        if (i > 0) doc->push_back(',');
        one.assign("{");
        member(&one, attrs[i]);
        one.push_back('}');
        if (Result<dlp::Outcome> m = rules.RedactJson(one, &out); m.ok()) {
          if (m->changed) one.swap(out);
          if (m->dropped) r.redacted = true;
          doc->append(one, 1, one.size() - 2);
        } else {
          internal::AppendJsonString(*doc, attrs[i].key);
          doc->append(":null");
          r.redacted = true;
        }
      }
      doc->push_back('}');
    }
    attrs.clear();
  };
  object(e.attributes, &r.attributes_json);
  object(e.resource_attributes, &r.resource_attributes_json);
  text(e.type, RedactedEvent::kType);
  text(e.severity_text, RedactedEvent::kSeverityText);
  text(e.service_name, RedactedEvent::kServiceName);
  text(e.scope_name, RedactedEvent::kScopeName);
  text(e.scope_version, RedactedEvent::kScopeVersion);
  return r;
}

}  // namespace govern::telemetry
