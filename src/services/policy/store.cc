// The bundle server's store: validation, publishing (versioned, signed) and reading back.
#include "services/policy/store.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>

#include "bundle/bundle.h"
#include "crypto/encoding.h"
#include "crypto/sha256.h"
#include "db/connection.h"
#include "policy/cedar.h"
#include "policy/limits.h"
#include "policy/schema.h"
#include "policy/validator.h"

namespace govern::policy_service {
namespace {

// "12:5: message" -> line 12, column 5, "message"; anything else is kept whole as the message.
SourceError PositionedError(std::string file, const std::string& text) {
  SourceError e{std::move(file), 0, 0, text};
  int line = 0;
  int col = 0;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  auto [p1, ec1] = std::from_chars(p, end, line);
  if (ec1 != std::errc() || p1 == end || *p1 != ':') return e;
  auto [p2, ec2] = std::from_chars(p1 + 1, end, col);
  if (ec2 != std::errc() || p2 == end || *p2 != ':') return e;
  e.line = line;
  e.column = col;
  const char* msg = p2 + 1;
  while (msg < end && *msg == ' ') ++msg;
  e.message.assign(msg, end);
  return e;
}

// The bundle's files for a source.
std::map<std::string, std::string> BundleFiles(const PolicySource& s) {
  std::map<std::string, std::string> files;
  if (s.policies_json) {
    files[std::string(kPoliciesJsonFile)] = s.policies;
  } else {
    files[std::string(kPoliciesFile)] = s.policies;
    if (s.links) files[std::string(kLinksFile)] = *s.links;
  }
  files[std::string(kEntitiesFile)] = s.entities;
  if (s.schema) files[std::string(kSchemaFile)] = *s.schema;
  if (s.limits) files[std::string(kLimitsFile)] = *s.limits;
  return files;
}

bool SameSource(const PolicySource& a, const PolicySource& b) {
  return a.policies == b.policies && a.policies_json == b.policies_json && a.links == b.links &&
         a.entities == b.entities && a.schema == b.schema && a.limits == b.limits;
}

// policy_versions.policies_format: how `policies` is written.
const char* FormatName(const PolicySource& s) { return s.policies_json ? "json" : "cedar"; }

std::optional<std::string> OptString(const db::Rows& rows, int r, int c) {
  if (auto t = rows.OptText(r, c)) return std::string(*t);
  return std::nullopt;
}

// A JSON string or, for entities and limits, a JSON value written back as text.
Result<std::optional<std::string>> TextField(const nlohmann::json& body, const char* name, bool value_ok) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return std::optional<std::string>();
  if (it->is_string()) return std::optional<std::string>(it->get<std::string>());
  if (value_ok) return std::optional<std::string>(it->dump());
  return InvalidArgument(std::string("\"") + name + "\" must be a string");
}

// The deepest nesting of arrays and objects in JSON text (strings skipped), without recursion: the JSON
// library's parse is iterative but writing a value back out recurses, so deep input is refused first.
size_t NestingDepth(std::string_view text) {
  size_t depth = 0;
  size_t max = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{')
      max = std::max(max, ++depth);
    else if ((c == ']' || c == '}') && depth > 0)
      --depth;
  }
  return max;
}

constexpr size_t kMaxNesting = 128;

}  // namespace

Result<PolicySource> ParseSourceJson(std::string_view text) {
  if (NestingDepth(text) > kMaxNesting) {
    return InvalidArgument("the body nests arrays and objects deeper than " + std::to_string(kMaxNesting));
  }
  nlohmann::json body = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) {
    return InvalidArgument("the body must be a JSON object {policies, links?, entities, schema?, limits?}");
  }
  for (const auto& [k, v] : body.items()) {
    if (k != "policies" && k != "links" && k != "entities" && k != "schema" && k != "limits") {
      return InvalidArgument("unknown field \"" + k.substr(0, 64) +
                             "\" (expected policies, links, entities, schema, limits)");
    }
  }
  PolicySource src;
  auto pol = body.find("policies");
  if (pol == body.end() || pol->is_null()) {
    return InvalidArgument("\"policies\" (Cedar policy text or a Cedar JSON policy set) is required");
  }
  if (pol->is_string()) {
    src.policies = pol->get<std::string>();
  } else if (pol->is_object()) {
    src.policies = pol->dump();
    src.policies_json = true;
  } else {
    return InvalidArgument("\"policies\" must be Cedar policy text or a Cedar JSON policy set object");
  }
  if (auto it = body.find("links"); it != body.end() && !it->is_null()) {
    if (!it->is_string() && !it->is_array()) {
      return InvalidArgument("\"links\" must be an array of template links or its JSON text");
    }
    if (src.policies_json) {
      return InvalidArgument(
          "\"links\" goes with Cedar policy text; a JSON policy set carries its links in templateLinks");
    }
    GOVERN_ASSIGN_OR_RETURN(src.links, TextField(body, "links", true));
  }
  GOVERN_ASSIGN_OR_RETURN(std::optional<std::string> entities, TextField(body, "entities", true));
  if (entities) src.entities = std::move(*entities);
  if (auto it = body.find("schema");
      it != body.end() && !it->is_null() && !it->is_string() && !it->is_object()) {
    return InvalidArgument("\"schema\" must be Cedar schema text or a JSON schema object");
  }
  GOVERN_ASSIGN_OR_RETURN(src.schema, TextField(body, "schema", true));
  GOVERN_ASSIGN_OR_RETURN(src.limits, TextField(body, "limits", true));
  return src;
}

std::vector<SourceError> Validate(const PolicySource& source, std::string* conformed_entities) {
  std::vector<SourceError> errors;
  std::string entities = source.entities;
  Result<policy::PolicySet> policies = InvalidArgument("not parsed");
  if (source.policies_json) {
    // FromJson names the policy in its errors; positions are within the policy's own text.
    policies = policy::PolicySet::FromJson(source.policies);
    if (!policies.ok()) errors.push_back(SourceError{"policies", 0, 0, policies.status().message()});
  } else {
    // The text alone first, so that its errors (with line and column) are told from the links'.
    policies = policy::PolicySet::ParseWithTemplates(source.policies, {});
    if (!policies.ok()) errors.push_back(PositionedError("policies", policies.status().message()));
    if (source.links) {
      auto links = policy::PolicySet::ParseLinks(*source.links);
      if (!links.ok()) {
        errors.push_back(SourceError{"links", 0, 0, links.status().message()});
        policies = links.status();
      } else if (policies.ok()) {
        policies = policy::PolicySet::ParseWithTemplates(source.policies, *links);
        if (!policies.ok()) errors.push_back(SourceError{"links", 0, 0, policies.status().message()});
      }
    }
  }
  std::optional<policy::Schema> schema;
  if (source.schema) {
    auto parsed = policy::Schema::Parse(*source.schema);
    if (parsed.ok()) {
      schema = std::move(*parsed);
    } else {
      errors.push_back(PositionedError("schema", parsed.status().message()));
    }
  }
  if (schema && policies.ok()) {
    policy::ValidationResult v = policy::ValidatePolicies(*schema, *policies);
    for (const policy::ValidationIssue& issue : v.errors) {
      errors.push_back(SourceError{"policies", static_cast<int>(issue.line), static_cast<int>(issue.col),
                                   issue.message, /*schema_violation=*/true});
    }
  }
  bool entities_parse = true;
  if (auto e = policy::Entities::FromJson(source.entities); !e.ok()) {
    entities_parse = false;
    errors.push_back(SourceError{"entities", 0, 0, e.status().message()});
  }
  if (schema && entities_parse) {
    auto conformed = policy::ConformEntitiesJson(*schema, source.entities);
    if (conformed.ok()) {
      entities = std::move(*conformed);
    } else {
      errors.push_back(
          SourceError{"entities", 0, 0, conformed.status().message(), /*schema_violation=*/true});
    }
  }
  if (source.limits) {
    if (auto l = policy::Limits::Parse(*source.limits); !l.ok()) {
      errors.push_back(SourceError{"limits", 0, 0, l.status().message()});
    }
  }
  if (errors.empty()) {
    // What the sidecar will build from the bundle: the files together (e.g. @require_approval on a
    // forbid is refused there), so nothing is published that a sidecar would refuse.
    PolicySource as_bundled = source;
    as_bundled.entities = entities;
    std::map<std::string, std::string> files = BundleFiles(as_bundled);
    if (auto d = policy::Decider::FromFiles(files); !d.ok()) {
      errors.push_back(SourceError{"bundle", 0, 0, d.status().message()});
    }
  }
  if (conformed_entities) *conformed_entities = errors.empty() ? std::move(entities) : source.entities;
  return errors;
}

Result<PublishResult> Publish(db::Connection& conn, std::string_view org, const PolicySource& source,
                              const std::vector<const bundle::SigningKey*>& keys, int64_t created) {
  if (keys.empty()) return FailedPrecondition("no signing key");
  std::string signed_by;
  for (const bundle::SigningKey* k : keys) {
    if (!signed_by.empty()) signed_by += ",";
    signed_by += k->key_id();
  }
  PublishResult out;
  Status s = conn.Transact([&](db::Connection& c) -> Status {
    out = PublishResult{};
    // The head row is the per-organisation lock: a second publisher waits here until the first commits,
    // then sees its version.
    GOVERN_RETURN_IF_ERROR(
        c.Exec("INSERT INTO policy_heads (org, version) VALUES ($1, 0) ON CONFLICT (org) DO NOTHING",
               db::Params(org))
            .status());
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows head, c.Exec("SELECT version FROM policy_heads WHERE org = $1 FOR UPDATE", db::Params(org)));
    GOVERN_ASSIGN_OR_RETURN(int64_t current, head.Int64(0, 0));
    if (current > 0) {
      GOVERN_ASSIGN_OR_RETURN(db::Rows latest,
                              c.Exec("SELECT policies, entities, schema, limits, digest, links, "
                                     "policies_format = 'json' FROM policy_versions "
                                     "WHERE org = $1 AND version = $2",
                                     db::Params(org, current)));
      if (!latest.empty()) {
        PolicySource prev{std::string(latest.Text(0, 0)), std::string(latest.Text(0, 1)),
                          OptString(latest, 0, 2), OptString(latest, 0, 3), OptString(latest, 0, 5)};
        GOVERN_ASSIGN_OR_RETURN(prev.policies_json, latest.Bool(0, 6));
        if (SameSource(prev, source)) {
          out.version = static_cast<uint64_t>(current);
          out.digest = std::string(latest.Text(0, 4));
          out.unchanged = true;
          return OkStatus();
        }
      }
    }
    uint64_t next = static_cast<uint64_t>(current) + 1;
    bundle::BuildInput in;
    in.kind = std::string(kBundleKind);
    in.name = std::string(kBundleName);
    in.org = std::string(org);
    in.version = next;
    in.created = created;
    in.files = BundleFiles(source);
    GOVERN_ASSIGN_OR_RETURN(std::string archive, bundle::Build(in, keys));
    bundle::Inspection ins;
    bundle::Verdict v = bundle::Inspect(archive, &ins);
    if (!v.ok()) return Internal("the bundle just built does not read back: " + v.ToString());
    GOVERN_ASSIGN_OR_RETURN(crypto::Sha256Digest digest, crypto::Sha256(ins.manifest_bytes));
    out.version = next;
    out.digest = crypto::HexEncode(digest);
    GOVERN_RETURN_IF_ERROR(c.Exec("UPDATE policy_heads SET version = $2 WHERE org = $1",
                                  db::Params(org, static_cast<int64_t>(next)))
                               .status());
    return c
        .Exec(
            "INSERT INTO policy_versions (org, version, policies, policies_format, links, entities, schema, "
            "limits, bundle, digest, signed_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            db::Params(org, static_cast<int64_t>(next), source.policies, FormatName(source), source.links,
                       source.entities, source.schema, source.limits, db::Bytea{archive}, out.digest,
                       signed_by))
        .status();
  });
  if (!s.ok()) return s.WithContext("publish");
  return out;
}

Result<Head> Latest(db::Connection& conn, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                          conn.ExecPrepared("SELECT version, digest FROM policy_versions WHERE org = $1 "
                                            "ORDER BY version DESC LIMIT 1",
                                            db::Params(org)));
  if (rows.empty()) return NotFound("organisation '" + std::string(org) + "' has published no policy set");
  GOVERN_ASSIGN_OR_RETURN(int64_t v, rows.Int64(0, 0));
  return Head{static_cast<uint64_t>(v), std::string(rows.Text(0, 1))};
}

Result<StoredVersion> Read(db::Connection& conn, std::string_view org, uint64_t version, bool with_bundle) {
  std::string sql =
      std::string("SELECT version, digest, signed_by, ") +
      R"(to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), )" +
      "policies, entities, schema, limits, " + (with_bundle ? "bundle" : "NULL::bytea") +
      ", links, policies_format = 'json'" +
      " FROM policy_versions WHERE org = $1 AND ($2 = 0 OR version = $2) ORDER BY version DESC LIMIT 1";
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                          conn.ExecPrepared(sql, db::Params(org, static_cast<int64_t>(version))));
  if (rows.empty()) {
    if (version == 0) return NotFound("organisation '" + std::string(org) + "' has published no policy set");
    return NotFound("organisation '" + std::string(org) + "' has no version " + std::to_string(version));
  }
  StoredVersion out;
  GOVERN_ASSIGN_OR_RETURN(int64_t v, rows.Int64(0, 0));
  out.version = static_cast<uint64_t>(v);
  out.digest = rows.Text(0, 1);
  out.signed_by = rows.Text(0, 2);
  out.created_at = rows.Text(0, 3);
  out.source.policies = rows.Text(0, 4);
  out.source.links = OptString(rows, 0, 9);
  GOVERN_ASSIGN_OR_RETURN(out.source.policies_json, rows.Bool(0, 10));
  out.source.entities = rows.Text(0, 5);
  out.source.schema = OptString(rows, 0, 6);
  out.source.limits = OptString(rows, 0, 7);
  if (with_bundle) {
    GOVERN_ASSIGN_OR_RETURN(out.bundle, rows.Bytes(0, 8));
  }
  return out;
}

}  // namespace govern::policy_service
