// The bundle server's store: each organisation's policy sets, one version per accepted change (history
// kept), each with the signed bundle built from it when it was published.
//
// Publish validates the source (policies parse, entities parse, limits are a JSON object), then in one
// transaction locks the organisation's policy_heads row, takes the next version, builds and signs the
// bundle and stores both. Concurrent publishes for one organisation therefore queue on that row and
// get distinct, increasing versions. Publishing a set identical to the latest one makes no new version.
// A version's bundle bytes are built once and never change, so its digest (the ETag) is stable.
//
// Free functions on a Connection (one thread at a time per Connection); Validate is pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bundle/keys.h"

namespace govern::db {
class Connection;
}  // namespace govern::db

namespace govern::policy_service {

// The files of a policy bundle (the sidecar reads these names).
inline constexpr std::string_view kPoliciesFile = "policies.cedar";
inline constexpr std::string_view kPoliciesJsonFile = "policies.json";  // instead of policies.cedar
inline constexpr std::string_view kLinksFile = "links.json";            // with policies.cedar only
inline constexpr std::string_view kEntitiesFile = "entities.json";
inline constexpr std::string_view kSchemaFile = "schema.cedarschema";
inline constexpr std::string_view kLimitsFile = "limits.json";
inline constexpr std::string_view kBundleKind = "policy";
inline constexpr std::string_view kBundleName = "default";

// An organisation's policy set as published. The bundle holds policies.cedar (+ links.json when there
// are links) for Cedar text, or policies.json for a JSON policy set.
struct PolicySource {
  std::string policies;         // Cedar policy text (static policies and templates), or see policies_json
  std::string entities = "[]";  // Cedar JSON entities
  std::optional<std::string>
      schema;  // Cedar schema, Cedar syntax or JSON; policies and entities must conform
  std::optional<std::string> limits;  // a JSON object (rate limits, budgets), carried as given
  // The template links of the Cedar text (links.json: a JSON array of cedar-wasm TemplateLink objects),
  // carried as given. Never set with policies_json (a JSON policy set has its own templateLinks).
  std::optional<std::string> links;
  // `policies` is a Cedar JSON policy set (PolicySet::FromJson), as compact JSON text.
  bool policies_json = false;
};

// Parses a publish request body: {"policies": "<Cedar text>" or {Cedar JSON policy set}, "links": [...]
// or "<JSON text>", "entities": [...] or "<JSON text>", "schema": "<Cedar schema text>" or {JSON schema},
// "limits": [...] or "<JSON text>"}; only policies is required (entities default to []). "links" goes
// with Cedar text only. Links, entities, schema and limits given as JSON values, and a JSON policy set,
// are kept as their compact JSON text. InvalidArgument names the problem. Pure; the body comes from
// outside (fuzzed by policy_source_fuzz).
Result<PolicySource> ParseSourceJson(std::string_view body);

// One problem with a published source.
struct SourceError {
  std::string file;  // "policies", "links", "entities", "schema", "limits", "bundle"
  int line = 0;      // 1-based, 0 when unknown
  int column = 0;
  std::string message;
  // The file is well formed but does not conform to the schema (HTTP 422 rather than 400).
  bool schema_violation = false;
};

// Every problem found (empty: valid). Policies (with their links) and entities are parsed with the
// engine the sidecar decides with, so a bundle the server accepts is one the sidecar can load. Cedar
// text is parsed first alone (its errors are "policies" with line and column), then linked (a link's
// error is "links", naming the link). When the source has a schema, it must parse, and the policies,
// templates and links are validated against it as the reference's strict validator does (every error
// of every policy, each with its line and column; warnings do not refuse), and the entities must
// conform to it (the first that does not is reported).
//
// `conformed_entities`, when given and the source is valid with a schema, receives the entities
// written the way the engine reads them with that schema (validator.h ConformEntitiesJson: a string
// where the schema expects an extension value or an entity becomes one), since the sidecar decides
// from entities.json without the schema; otherwise it receives source.entities.
std::vector<SourceError> Validate(const PolicySource& source, std::string* conformed_entities = nullptr);

struct PublishResult {
  uint64_t version = 0;
  std::string digest;      // lower-case hex SHA-256 of the bundle's manifest (the ETag)
  bool unchanged = false;  // identical to the latest version, which is returned
};

// Stores `source` (which must have passed Validate) as the next version of `org`, with a bundle signed
// by every key in `keys` (at least one). `created` is the bundle's creation time (seconds).
Result<PublishResult> Publish(db::Connection& conn, std::string_view org, const PolicySource& source,
                              const std::vector<const bundle::SigningKey*>& keys, int64_t created);

// What a fetch needs to know before sending bytes.
struct Head {
  uint64_t version = 0;
  std::string digest;
};
// The latest version of `org`; NotFound when it has none.
Result<Head> Latest(db::Connection& conn, std::string_view org);

struct StoredVersion {
  uint64_t version = 0;
  std::string digest;
  std::string signed_by;   // comma-separated key ids
  std::string created_at;  // RFC 3339 UTC
  PolicySource source;
  std::string bundle;  // the signed archive (.tar.gz)
};
// A version of `org` (0: the latest); NotFound when there is none. `with_bundle` false leaves
// StoredVersion::bundle empty (reading the source back).
Result<StoredVersion> Read(db::Connection& conn, std::string_view org, uint64_t version, bool with_bundle);

}  // namespace govern::policy_service
