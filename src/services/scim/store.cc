// The SCIM store: scim_resources plus the auth directory, one transaction per change.
#include "services/scim/store.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "crypto/random.h"
#include "db/connection.h"
#include "db/error.h"
#include "db/pool.h"
#include "scim/filter.h"
#include "scim/patch.h"
#include "scim/resource.h"

namespace govern::scim_service {

using nlohmann::json;
using scim::Error;

namespace {

constexpr const char* kColumns =
    "SELECT id, name, body::text, version, "
    "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
    "to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), active FROM "
    "scim_resources ";

// A group's version and lastModified are those of its latest change row (the seq, which every change
// of the group takes while it holds the group row's lock, so it grows in commit order), not columns of
// its row: a membership change appends a change row and leaves the group row as it is. Rewriting that
// row on every member added made the few group rows of a sync hot (16 streams left chains of thousands
// of dead row versions that every lookup walked). Found by the partial index scim_changes_group.
constexpr const char* kGroupColumns =
    "SELECT id, name, body::text, COALESCE(c.seq, version), "
    "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
    "to_char(COALESCE(c.at, updated_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), active "
    "FROM scim_resources LEFT JOIN LATERAL (SELECT seq, at FROM scim_changes WHERE kind = 'Group' AND id = "
    "scim_resources.id ORDER BY seq DESC LIMIT 1) c ON true ";

// kById: a resource is looked up as `id = $1 AND (org = $2 AND kind = ...) IS TRUE`, never as `id = $1
// AND org = $2 AND kind = ...`. A pooled connection plans a statement once (its generic plan, at the
// sixth call) and keeps the plan; on a fresh database that happens while the tables are nearly empty,
// and such a plan took the (org, kind, ...) indexes (scim_resources_list, scim_resources_external) and
// looked for the id among every resource of the kind: each call read all users of the organisation,
// so a first sync grew quadratic (8,800 buffers per group PATCH at 9,000 users). Wrapped in IS TRUE,
// org and kind are no index condition, and the primary key is the one index that applies.
//
// Locks a group's row until the transaction ends: every change of a group holds it while it takes
// its change row's seq, so a group's versions grow in commit order. A statement after this one sees
// every change committed before the lock was granted (READ COMMITTED takes a snapshot per statement).
constexpr const char* kLockGroup =
    "SELECT 1 FROM scim_resources WHERE id = $1 AND (org = $2 AND kind = 'Group') IS TRUE FOR UPDATE";

// Appends a group's change row ($1 org, $2 id, $3 action, $4 key) whose version is its seq: the group's
// new version. Run with the group row locked (kLockGroup). Its time is clock_timestamp(), taken after
// the lock, not now() (the transaction's start): a change that waited for the lock, or shares a
// group-commit transaction, must not get an earlier lastModified than the change it followed.
constexpr const char* kGroupChange = R"sql(
WITH n AS MATERIALIZED (SELECT nextval('scim_changes_seq_seq') AS s)
INSERT INTO scim_changes (seq, org, kind, id, action, version, key_id, at)
SELECT n.s, $1, 'Group', $2, $3, n.s, $4, clock_timestamp() FROM n
RETURNING version, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))sql";

// The sentinel a transaction body returns after recording a SCIM error, so the transaction rolls back
// without being retried.
Status Refused() { return InvalidArgument("scim refused"); }

Error Db(const Status& s) {
  if (s.code() == Code::kAlreadyExists) return scim::UniquenessError("a resource with this name exists");
  return scim::Unavailable503("the directory database is unavailable: " + s.message());
}

std::string NewId() {
  uint8_t b[16];
  if (!crypto::RandomBytes(b).ok()) return {};
  b[6] = static_cast<uint8_t>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<uint8_t>((b[8] & 0x3f) | 0x80);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += hex[b[i] >> 4];
    out += hex[b[i] & 15];
  }
  return out;
}

std::string EmailOf(const json& user) {
  const json* emails = scim::FindMember(user, "emails");
  if (emails != nullptr && emails->is_array()) {
    for (const json& e : *emails) {
      if (e.value("primary", false) && e.contains("value")) return e["value"].get<std::string>();
    }
    for (const json& e : *emails) {
      if (e.contains("value")) return e["value"].get<std::string>();
    }
  }
  return user.value("userName", "");
}

std::string DisplayOf(const json& user) {
  if (user.contains("displayName")) return user["displayName"].get<std::string>();
  if (user.contains("name") && user["name"].contains("formatted"))
    return user["name"]["formatted"].get<std::string>();
  return user.value("userName", "");
}

std::string NameOf(const scim::ResourceType& type, const json& r) {
  return r.value(type.name == "User" ? "userName" : "displayName", "");
}

bool IsUser(const scim::ResourceType& type) { return type.name == "User"; }

std::string Columns(const scim::ResourceType& type) { return IsUser(type) ? kColumns : kGroupColumns; }

// Order of the parts of one shared transaction (group_commit.h): new users (they lock nothing others
// wait for), then group PATCHes by group id, then user writes by user id.
constexpr int kOrderCreate = 0;
constexpr int kOrderGroup = 1;
constexpr int kOrderUser = 2;

}  // namespace

struct Store::Row {
  std::string id, name;
  json body;
  int64_t version = 0;
  std::string created, updated;
  bool active = true;
};

namespace {

template <typename RowT>
std::vector<RowT> ReadRows(const db::Rows& r) {
  std::vector<RowT> out;
  out.reserve(static_cast<size_t>(r.size()));
  for (int i = 0; i < r.size(); ++i) {
    RowT row;
    row.id = r.Text(i, 0);
    row.name = r.Text(i, 1);
    row.body = json::parse(r.Text(i, 2), nullptr, false);
    row.version = *r.Int64(i, 3);
    row.created = r.Text(i, 4);
    row.updated = r.Text(i, 5);
    row.active = *r.Bool(i, 6);
    out.push_back(std::move(row));
  }
  return out;
}

template <typename RowT>
json Build(const scim::ResourceType& type, const RowT& row) {
  json r = row.body;
  r["id"] = row.id;
  r["meta"] = {{"resourceType", type.name},
               {"created", row.created},
               {"lastModified", row.updated},
               {"version", Store::ETag(row.version)}};
  return r;
}

// The condition on `column` picking the keys of a page ($2, a JSON array of strings), or nothing (every
// key of the organisation). `= ANY (ARRAY(...))` keeps it an index condition.
std::string KeysCondition(const char* column, const json* keys) {
  if (keys == nullptr) return "";
  return std::string(" AND ") + column + " = ANY (ARRAY(SELECT jsonb_array_elements_text($2::jsonb)))";
}

db::Params KeysParams(const std::string& org, const json* keys) {
  db::Params p(org);
  if (keys != nullptr) p.Add(keys->dump());
  return p;
}

// Members of groups by group name (keys: displayNames; nullptr: every group of the organisation):
// users ("type": "User") and groups inside the group ("type": "Group"), users first.
Result<std::map<std::string, json>> LoadMembers(db::Connection& c, const std::string& org, const json* keys) {
  std::string sql =
      "SELECT m.name, m.user_id, COALESCE(u.body->>'displayName', u.name, ''), 'User' FROM auth_memberships "
      "m "
      "LEFT JOIN scim_resources u ON u.id = m.user_id WHERE m.org = $1" +
      KeysCondition("m.name", keys) +
      " UNION ALL SELECT s.name, g.id, g.name, 'Group' FROM auth_subgroups s JOIN scim_resources g ON g.org "
      "= "
      "s.org AND g.kind = 'Group' AND lower(g.name) = lower(s.subgroup) AND g.name = s.subgroup WHERE s.org "
      "= "
      "$1" +
      KeysCondition("s.name", keys) + " ORDER BY 1, 4 DESC, 2";
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, c.ExecPrepared(sql, KeysParams(org, keys)));
  std::map<std::string, json> out;
  for (int i = 0; i < rows.size(); ++i) {
    json m = {{"value", std::string(rows.Text(i, 1))}, {"type", std::string(rows.Text(i, 3))}};
    if (!rows.Text(i, 2).empty()) m["display"] = std::string(rows.Text(i, 2));
    auto& list = out[std::string(rows.Text(i, 0))];
    if (list.is_null()) list = json::array();
    list.push_back(std::move(m));
  }
  return out;
}

// The groups of users by user id (keys: user ids; nullptr: every user of the organisation): the groups
// the user is a member of ("type": "direct") and every group containing one of those through groups
// inside groups ("indirect"; RFC 7643 section 4.1.2), each once. GroupsSql's $1 is the organisation,
// $2 the keys.
std::string GroupsSql(const json* keys) {
  return "WITH RECURSIVE ug (user_id, name, direct) AS (SELECT m.user_id, m.name, true FROM auth_memberships "
         "m "
         "WHERE m.org = $1" +
         KeysCondition("m.user_id", keys) +
         " UNION SELECT ug.user_id, s.name, false FROM ug JOIN auth_subgroups s ON s.org = $1 AND s.subgroup "
         "= "
         "ug.name) SELECT ug.user_id, g.id, g.name, bool_or(ug.direct) FROM ug JOIN scim_resources g ON "
         "g.org = "
         "$1 AND g.kind = 'Group' AND lower(g.name) = lower(ug.name) AND g.name = ug.name GROUP BY "
         "ug.user_id, "
         "g.id, g.name ORDER BY ug.user_id, g.name";
}

std::map<std::string, json> GroupsFromRows(const db::Rows& rows) {
  std::map<std::string, json> out;
  for (int i = 0; i < rows.size(); ++i) {
    auto& list = out[std::string(rows.Text(i, 0))];
    if (list.is_null()) list = json::array();
    list.push_back({{"value", std::string(rows.Text(i, 1))},
                    {"display", std::string(rows.Text(i, 2))},
                    {"type", *rows.Bool(i, 3) ? "direct" : "indirect"}});
  }
  return out;
}

Result<std::map<std::string, json>> LoadGroups(db::Connection& c, const std::string& org, const json* keys) {
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, c.ExecPrepared(GroupsSql(keys), KeysParams(org, keys)));
  return GroupsFromRows(rows);
}

// Adds the groups of each user (users) or the members of each group (groups) of a page, in one query
// for the whole page rather than one per resource.
Status CompletePage(db::Connection& c, const scim::ResourceType& type, const std::string& org,
                    std::vector<json>* page) {
  if (page->empty()) return OkStatus();
  const bool user = IsUser(type);
  json keys = json::array();
  for (const json& r : *page) keys.push_back(r.value(user ? "id" : "displayName", ""));
  GOVERN_ASSIGN_OR_RETURN(auto by_key, user ? LoadGroups(c, org, &keys) : LoadMembers(c, org, &keys));
  for (json& r : *page) {
    auto it = by_key.find(r.value(user ? "id" : "displayName", ""));
    if (it != by_key.end()) r[user ? "groups" : "members"] = it->second;
  }
  return OkStatus();
}

// Adds members (groups) or groups (users) to one resource.
Status Complete(db::Connection& c, const scim::ResourceType& type, const std::string& org, json* r) {
  std::vector<json> one{std::move(*r)};
  Status s = CompletePage(c, type, org, &one);
  *r = std::move(one.front());
  return s;
}

// Revokes every refresh-token family of the user and ends their sessions (auth's own tables).
Status RevokeUser(db::Connection& c, const std::string& org, const std::string& user_id, int64_t until) {
  GOVERN_RETURN_IF_ERROR(
      c.ExecPrepared("WITH r AS (UPDATE auth_refresh_families f SET revoked = true FROM auth_users u WHERE "
                     "u.user_id = $2 "
                     "AND f.org = $1 AND f.subject = u.subject AND NOT f.revoked RETURNING f.family) "
                     "INSERT INTO auth_revocations (kind, id, expires_at) SELECT 'sid', family, $3 FROM r "
                     "ON CONFLICT (kind, id) DO NOTHING",
                     db::Params(org, user_id, until))
          .status());
  return c.ExecPrepared("DELETE FROM auth_sessions WHERE user_id = $1", db::Params(user_id)).status();
}

std::set<std::string> MemberIds(const json& r) {
  std::set<std::string> out;
  const json* m = scim::FindMember(r, "members");
  if (m != nullptr && m->is_array()) {
    for (const json& e : *m) {
      if (e.contains("value") && e["value"].is_string()) out.insert(e["value"].get<std::string>());
    }
  }
  return out;
}

// The stored body: the resource without what lives elsewhere.
json BodyOf(const json& r) {
  json body = r;
  body.erase("id");
  body.erase("meta");
  body.erase("members");
  body.erase("groups");
  body.erase("password");  // writeOnly and never stored: people sign in through the IdP (docs/scim.md)
  return body;
}

// Adds users and groups of the organisation to a group (a group member is a row of auth_subgroups).
// 400 invalidValue for an id that is neither, or for a group that contains `group` (or is it): nested
// groups never form a cycle. Runs inside the caller's transaction: the first group added takes the
// organisation's nesting lock, so two requests nesting A in B and B in A cannot both pass the check.
Error AddMembers(db::Connection& c, const std::string& org, const std::string& group,
                 const std::set<std::string>& ids) {
  bool locked = false;
  for (const std::string& id : ids) {
    auto rows = c.ExecPrepared(
        "INSERT INTO auth_memberships (org, name, user_id) SELECT $1, $2, id FROM scim_resources "
        "WHERE id = $3 AND org = $1 AND kind = 'User' ON CONFLICT DO NOTHING",
        db::Params(org, group, id));
    if (!rows.ok()) return Db(rows.status());
    if (rows->affected() != 0) continue;
    auto known = c.ExecPrepared("SELECT kind, name FROM scim_resources WHERE id = $1 AND (org = $2) IS TRUE",
                                db::Params(id, org));
    if (!known.ok()) return Db(known.status());
    if (known->empty())
      return scim::InvalidValue("member \"" + id.substr(0, 100) +
                                "\" is not a user or group of this organisation");
    if (known->Text(0, 0) == "User") continue;  // already a member
    std::string sub(known->Text(0, 1));
    if (!locked) {
      auto lock =
          c.ExecPrepared("SELECT pg_advisory_xact_lock(hashtextextended('govern.scim.subgroups/' || $1, 0))",
                         db::Params(org));
      if (!lock.ok()) return Db(lock.status());
      locked = true;
    }
    // A cycle: `group` is `sub` or lies inside it.
    auto inside = c.ExecPrepared(
        "WITH RECURSIVE d (name) AS (SELECT $2::text UNION SELECT s.subgroup FROM auth_subgroups s JOIN d ON "
        "s.org = $1 AND s.name = d.name) SELECT 1 FROM d WHERE name = $3 LIMIT 1",
        db::Params(org, sub, group));
    if (!inside.ok()) return Db(inside.status());
    if (!inside->empty()) {
      return scim::InvalidValue("group \"" + sub.substr(0, 100) + "\" " +
                                (sub == group ? "cannot be a member of itself"
                                              : "contains \"" + group.substr(0, 100) +
                                                    "\": making it a member would make a cycle"));
    }
    auto ins = c.ExecPrepared(
        "INSERT INTO auth_subgroups (org, name, subgroup) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        db::Params(org, group, sub));
    if (!ins.ok()) return Db(ins.status());
  }
  return Error::Ok();
}

// Removes members (users or groups, by id) from a group.
Status RemoveMembers(db::Connection& c, const std::string& org, const std::string& group,
                     const std::set<std::string>& ids) {
  if (ids.empty()) return OkStatus();
  json list = json::array();
  for (const std::string& id : ids) list.push_back(id);
  return c
      .ExecPrepared(
          "WITH u AS (DELETE FROM auth_memberships WHERE org = $1 AND name = $2 AND user_id = ANY "
          "(ARRAY(SELECT "
          "jsonb_array_elements_text($3::jsonb)))) DELETE FROM auth_subgroups s USING scim_resources g WHERE "
          "s.org = $1 AND s.name = $2 AND g.id = ANY (ARRAY(SELECT jsonb_array_elements_text($3::jsonb))) "
          "AND "
          "g.org = $1 AND g.kind = 'Group' AND s.subgroup = g.name",
          db::Params(org, group, list.dump()))
      .status();
}

}  // namespace

Store::Store(db::Pool* pool, StoreOptions options)
    : pool_(pool), options_(options), clock_(options.clock != nullptr ? options.clock : &Clock::Real()) {
  if (options_.group_commit) {
    GroupCommitOptions gc = options_.group_commit_options;
    if (gc.exclusive_class == -1) gc.exclusive_class = kOrderGroup;
    committer_ = std::make_unique<GroupCommitter>(pool_, gc);
  }
}

std::string Store::ETag(int64_t version) { return "W/\"" + std::to_string(version) + "\""; }

Error Store::EnsureOrg(db::Connection& c, const std::string& org) {
  {
    std::lock_guard lk(mu_);
    if (known_orgs_.count(org) != 0u) return Error::Ok();
  }
  auto rows =
      c.ExecPrepared("INSERT INTO auth_orgs (org) VALUES ($1) ON CONFLICT DO NOTHING", db::Params(org));
  if (!rows.ok()) return Db(rows.status());
  std::lock_guard lk(mu_);
  known_orgs_.insert(org);
  return Error::Ok();
}

Error Store::Create(const std::string& org, const scim::ResourceType& type, const json& body,
                    const std::string& key_id, json* out) {
  json r;
  Error err = scim::NormalizeResource(type, body, &r);
  if (!err.ok()) return err;
  std::string id = NewId();
  if (id.empty()) return scim::ServerError("no randomness for an id");
  std::string name = NameOf(type, r);
  std::set<std::string> members = MemberIds(r);
  json stored = BodyOf(r);
  std::optional<std::string> external;
  if (r.contains("externalId")) external = r["externalId"].get<std::string>();
  bool active = r.value("active", true);
  if (IsUser(type)) {
    // The resource, the auth user and the change row in one pipeline: one round trip, instead of
    // BEGIN, three statements and COMMIT each waiting for the server. Under group commit the pipeline
    // is this request's part of a shared transaction; else one implicit transaction that commits at
    // its sync (or rolls back whole when a statement fails).
    bool org_known;
    {
      std::lock_guard lk(mu_);
      org_known = known_orgs_.count(org) != 0u;
    }
    std::vector<db::Statement> statements;
    if (!org_known) {
      statements.push_back({.sql = "INSERT INTO auth_orgs (org) VALUES ($1) ON CONFLICT DO NOTHING",
                            .params = db::Params(org),
                            .prepared = true});
    }
    const size_t resource = statements.size();
    statements.push_back(
        {.sql = "INSERT INTO scim_resources (id, org, kind, name, external_id, active, body) VALUES ($1, $2, "
                "'User', $3, $4, $5, $6::jsonb) RETURNING id, name, body::text, version, "
                "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
                "to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), active",
         .params = db::Params(id, org, name, external, active, stored.dump()),
         .prepared = true});
    statements.push_back(
        {.sql =
             "INSERT INTO auth_users (user_id, org, email, subject, display_name, disabled) VALUES ($1, $2, "
             "$3, $1, $4, $5)",
         .params = db::Params(id, org, EmailOf(r), DisplayOf(r).substr(0, 200), !active),
         .prepared = true});
    statements.push_back(
        {.sql = "INSERT INTO scim_changes (org, kind, id, action, version, key_id) VALUES ($1, 'User', $2, "
                "'create', 1, $3)",
         .params = db::Params(org, id, key_id),
         .prepared = true});
    auto refused = [&](const Status& f) -> Error {
      if (f.code() == Code::kAlreadyExists) {
        if (f.message().find("auth_users_email") != std::string::npos) {
          return scim::UniquenessError("another user of this organisation has the email " +
                                       EmailOf(r).substr(0, 200));
        }
        return scim::UniquenessError("userName \"" + name.substr(0, 200) + "\" is taken");
      }
      return Db(f);
    };
    auto created = [&](const db::Rows& rows) {
      *out = Build(type, ReadRows<Row>(rows).front());  // a new user is in no group yet
      std::lock_guard lk(mu_);
      known_orgs_.insert(org);
      return Error::Ok();
    };
    if (committer_ != nullptr) {
      db::Rows row;
      Status s = committer_->Run(kOrderCreate, id, statements, [&](std::vector<db::Rows>& results, GroupTx&) {
        row = std::move(results[resource]);
        return OkStatus();
      });
      if (!s.ok()) return refused(s);
      return created(row);
    }
    auto lease = pool_->Checkout();
    if (!lease.ok()) return Db(lease.status());
    for (int attempt = 1;; ++attempt) {
      auto results = (*lease)->Pipeline(statements);
      if (results.ok()) return created((*results)[resource]);
      // A deadlock between two creates (nothing was stored): run it again, as Transact would.
      if (!db::IsRetryableConflict(results.status()) || attempt >= 10) return refused(results.status());
    }
  }
  auto lease = pool_->Checkout();
  if (!lease.ok()) return Db(lease.status());
  db::Connection& c = **lease;
  err = EnsureOrg(c, org);
  if (!err.ok()) return err;
  Status s = c.Transact([&](db::Connection& tx) -> Status {
    err = Error::Ok();
    auto ins = tx.ExecPrepared(
        "INSERT INTO scim_resources (id, org, kind, name, external_id, active, body) VALUES ($1, $2, $3, $4, "
        "$5, "
        "$6, $7::jsonb) RETURNING id, name, body::text, version, "
        "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
        "to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), active",
        db::Params(id, org, type.name, name, external, active, stored.dump()));
    if (!ins.ok() && ins.status().code() == Code::kAlreadyExists) {
      err = scim::UniquenessError("displayName \"" + name.substr(0, 200) + "\" is taken");
      return Refused();
    }
    GOVERN_RETURN_IF_ERROR(ins.status());
    *out = Build(type, ReadRows<Row>(*ins).front());
    {  // a group (users took the pipeline above)
      auto g = tx.ExecPrepared("INSERT INTO auth_groups (org, name) VALUES ($1, $2)", db::Params(org, name));
      if (!g.ok() && g.status().code() == Code::kAlreadyExists) {
        err = scim::UniquenessError("a group named \"" + name.substr(0, 200) + "\" exists");
        return Refused();
      }
      GOVERN_RETURN_IF_ERROR(g.status());
      err = AddMembers(tx, org, name, members);
      if (!err.ok()) return Refused();
    }
    // The group's first version (kGroupChange): nobody else can lock the row before this commits.
    return tx.ExecPrepared(kGroupChange, db::Params(org, id, std::string("create"), key_id)).status();
  });
  if (!err.ok()) return err;
  if (!s.ok()) return Db(s);
  return Get(org, type, id, out);
}

Error Store::Get(const std::string& org, const scim::ResourceType& type, const std::string& id, json* out) {
  auto lease = pool_->Checkout();
  if (!lease.ok()) return Db(lease.status());
  auto rows = (*lease)->ExecPrepared(Columns(type) + "WHERE id = $1 AND (org = $2 AND kind = $3) IS TRUE",
                                     db::Params(id, org, type.name));
  if (!rows.ok()) return Db(rows.status());
  if (rows->empty()) return scim::NotFoundError(type.name + " " + id.substr(0, 100) + " not found");
  json r = Build(type, ReadRows<Row>(*rows).front());
  Status s = Complete(**lease, type, org, &r);
  if (!s.ok()) return Db(s);
  *out = std::move(r);
  return Error::Ok();
}

Error Store::Write(const std::string& org, const scim::ResourceType& type, const std::string& id,
                   const std::string& if_match, const std::string& key_id, const char* action,
                   const std::function<Error(json* resource)>& change, json* out) {
  if (IsUser(type)) return WriteUser(org, id, if_match, key_id, action, change, out);
  // A group: lock its row, then read it (with its version, from the change log) in a statement of
  // its own, whose snapshot has every change committed before the lock was granted.
  auto lease = pool_->Checkout();
  if (!lease.ok()) return Db(lease.status());
  Error err;
  Status s = (*lease)->Transact([&](db::Connection& tx) -> Status {
    err = Error::Ok();
    GOVERN_ASSIGN_OR_RETURN(db::Rows locked, tx.ExecPrepared(kLockGroup, db::Params(id, org)));
    if (locked.empty()) {
      err = scim::NotFoundError(type.name + " " + id.substr(0, 100) + " not found");
      return Refused();
    }
    GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                            tx.ExecPrepared(std::string(kGroupColumns) + "WHERE id = $1", db::Params(id)));
    Row row = ReadRows<Row>(rows).front();
    if (!if_match.empty() && if_match != "*" && if_match != ETag(row.version)) {
      err = scim::PreconditionFailed("the resource changed: its version is " + ETag(row.version));
      return Refused();
    }
    json current = Build(type, row);
    GOVERN_RETURN_IF_ERROR(Complete(tx, type, org, &current));
    json next = current;
    err = change(&next);
    if (!err.ok()) return Refused();
    next["id"] = row.id;
    std::string name = NameOf(type, next);
    json body = BodyOf(next);
    std::set<std::string> before = MemberIds(current), after = MemberIds(next);
    if (body == row.body && before == after) {  // nothing to write (an IdP re-sending the same state)
      *out = current;
      return OkStatus();
    }
    std::optional<std::string> external;
    if (next.contains("externalId")) external = next["externalId"].get<std::string>();
    auto up = tx.ExecPrepared(
        "UPDATE scim_resources SET name = $2, external_id = $3, active = $4, body = $5::jsonb, updated_at = "
        "now() WHERE id = $1 RETURNING id, name, body::text, version, "
        "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
        "to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), active",
        db::Params(id, name, external, next.value("active", true), body.dump()));
    if (!up.ok() && up.status().code() == Code::kAlreadyExists) {
      err = scim::UniquenessError("displayName \"" + name.substr(0, 200) + "\" is taken");
      return Refused();
    }
    GOVERN_RETURN_IF_ERROR(up.status());
    if (name != row.name) {
      // auth_groups is keyed by name: make the new group, move the memberships and the nesting
      // (both ways) to it, then drop the old one.
      auto g = tx.ExecPrepared("INSERT INTO auth_groups (org, name) VALUES ($1, $2)", db::Params(org, name));
      if (!g.ok() && g.status().code() == Code::kAlreadyExists) {
        err = scim::UniquenessError("a group named \"" + name.substr(0, 200) + "\" exists");
        return Refused();
      }
      GOVERN_RETURN_IF_ERROR(g.status());
      GOVERN_RETURN_IF_ERROR(
          tx.ExecPrepared("WITH m AS (UPDATE auth_memberships SET name = $3 WHERE org = $1 AND name = $2), "
                          "s AS (UPDATE auth_subgroups SET name = $3 WHERE org = $1 AND name = $2) "
                          "UPDATE auth_subgroups SET subgroup = $3 WHERE org = $1 AND subgroup = $2",
                          db::Params(org, row.name, name))
              .status());
      GOVERN_RETURN_IF_ERROR(
          tx.ExecPrepared("DELETE FROM auth_groups WHERE org = $1 AND name = $2", db::Params(org, row.name))
              .status());
    }
    std::set<std::string> gone, added;
    for (const std::string& m : before) {
      if (after.count(m) == 0u) gone.insert(m);
    }
    for (const std::string& m : after) {
      if (before.count(m) == 0u) added.insert(m);
    }
    GOVERN_RETURN_IF_ERROR(RemoveMembers(tx, org, name, gone));
    err = AddMembers(tx, org, name, added);
    if (!err.ok()) return Refused();
    GOVERN_ASSIGN_OR_RETURN(db::Rows changed,
                            tx.ExecPrepared(kGroupChange, db::Params(org, id, std::string(action), key_id)));
    Row written = ReadRows<Row>(*up).front();
    written.version = *changed.Int64(0, 0);
    written.updated = changed.Text(0, 1);
    json r = Build(type, written);
    GOVERN_RETURN_IF_ERROR(Complete(tx, type, org, &r));
    *out = std::move(r);
    return OkStatus();
  });
  if (!err.ok()) return err;
  if (!s.ok()) return Db(s);
  return Error::Ok();
}

Error Store::WriteUser(const std::string& org, const std::string& id, const std::string& if_match,
                       const std::string& key_id, const char* action,
                       const std::function<Error(json* resource)>& change, json* out) {
  const scim::ResourceType& type = scim::UserResourceType();
  // Two round trips instead of a transaction of seven or more: read the user and their groups (one
  // pipeline), apply the change in memory, then write everything in one statement whose UPDATE only
  // matches the version that was read. A change made in between leaves the statement without a row
  // and nothing written: read again (If-Match then answers 412, as it would have under a row lock).
  // One statement is one transaction, so the resource, auth_users, the revocations and the change
  // row are all written or none. Under group commit the statement is this request's part of a shared
  // transaction (and no connection is held between the read and the write).
  json user_keys = json::array({id});
  for (int attempt = 1;; ++attempt) {
    const db::Statement reads[] = {
        {.sql = std::string(kColumns) + "WHERE id = $1 AND (org = $2 AND kind = 'User') IS TRUE",
         .params = db::Params(id, org),
         .prepared = true},
        {.sql = GroupsSql(&user_keys), .params = db::Params(org, user_keys.dump()), .prepared = true},
    };
    auto read = [&]() -> Result<std::vector<db::Rows>> {
      GOVERN_ASSIGN_OR_RETURN(auto lease, pool_->Checkout());
      return lease->Pipeline(reads);
    }();
    if (!read.ok()) return Db(read.status());
    if ((*read)[0].empty()) return scim::NotFoundError("User " + id.substr(0, 100) + " not found");
    Row row = ReadRows<Row>((*read)[0]).front();
    if (!if_match.empty() && if_match != "*" && if_match != ETag(row.version)) {
      return scim::PreconditionFailed("the resource changed: its version is " + ETag(row.version));
    }
    json current = Build(type, row);
    json next = current;
    Error err = change(&next);
    if (!err.ok()) return err;
    next["id"] = row.id;
    json body = BodyOf(next);
    // A user write never changes their groups (readOnly): the ones read are the ones answered.
    auto groups = GroupsFromRows((*read)[1]);
    auto with_groups = [&](json* r) {
      auto it = groups.find(id);
      if (it != groups.end()) (*r)["groups"] = it->second;
      return Error::Ok();
    };
    if (body == row.body) {  // nothing to write (an IdP re-sending the same state)
      *out = std::move(current);
      return with_groups(out);
    }
    bool active = next.value("active", true);
    std::string name = NameOf(type, next);
    std::optional<std::string> external;
    if (next.contains("externalId")) external = next["externalId"].get<std::string>();
    bool auth_changed =
        EmailOf(next) != EmailOf(current) || DisplayOf(next) != DisplayOf(current) || active != row.active;
    bool revoke = !active && row.active;
    // Every data-modifying CTE runs to completion even when unreferenced; each is tied to `up` so a
    // stale version writes nothing at all. Only the parts this change needs are in the statement (a
    // re-sync that changes an attribute auth does not keep is the UPDATE and the change row): a
    // statement with every part behind boolean parameters was planned afresh on each call (its custom
    // plans, with the unused parts folded away, looked cheaper than the generic one), costing more CPU
    // than the round trips it saved.
    std::string sql = R"sql(
WITH up AS (
  UPDATE scim_resources SET name = $4, external_id = $5, active = $6, body = $7::jsonb,
    version = version + 1, updated_at = now()
  WHERE id = $1 AND (org = $2 AND kind = 'User') IS TRUE AND version = $3
  RETURNING id, name, body::text, version,
    to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), active),
ch AS (
  INSERT INTO scim_changes (org, kind, id, action, version, key_id)
  SELECT $2, 'User', $1, $8, up.version, $9 FROM up))sql";
    db::Params params(id, org, row.version, name, external, active, body.dump(), std::string(action), key_id);
    if (auth_changed) {
      sql += R"sql(,
au AS (
  UPDATE auth_users SET email = $10, display_name = $11, disabled = NOT $6
  WHERE user_id = $1 AND EXISTS (SELECT 1 FROM up)))sql";
      params.Add(EmailOf(next));
      params.Add(DisplayOf(next).substr(0, 200));
    }
    if (revoke) {  // implies auth_changed (active changed)
      sql += R"sql(,
rf AS (
  UPDATE auth_refresh_families f SET revoked = true FROM auth_users u
  WHERE EXISTS (SELECT 1 FROM up) AND u.user_id = $1 AND f.org = $2 AND f.subject = u.subject
    AND NOT f.revoked
  RETURNING f.family),
rv AS (
  INSERT INTO auth_revocations (kind, id, expires_at) SELECT 'sid', family, $12 FROM rf
  ON CONFLICT (kind, id) DO NOTHING),
se AS (
  DELETE FROM auth_sessions WHERE user_id = $1 AND EXISTS (SELECT 1 FROM up)))sql";
      params.Add(clock_->UnixMicros() / 1000000 + options_.revocation_keep_seconds);
    }
    sql += "\nSELECT * FROM up";
    Result<db::Rows> written = Internal("not written");
    if (committer_ != nullptr) {
      bool stale = false;
      db::Rows got;
      const std::vector<db::Statement> statement{{.sql = sql, .params = params, .prepared = true}};
      Status s = committer_->Run(kOrderUser, id, statement, [&](std::vector<db::Rows>& rows, GroupTx&) {
        stale = rows.front().empty();  // changed since it was read: nothing written
        if (stale) return Refused();
        got = std::move(rows.front());
        return OkStatus();
      });
      if (stale) {
        written = db::Rows();
      } else if (s.ok()) {
        written = std::move(got);
      } else {
        written = s;
      }
    } else {
      auto lease = pool_->Checkout();
      if (!lease.ok()) return Db(lease.status());
      written = (*lease)->ExecPrepared(sql, params);
    }
    if (!written.ok()) {
      const Status& f = written.status();
      if (f.code() == Code::kAlreadyExists) {
        if (f.message().find("auth_users_email") != std::string::npos) {
          return scim::UniquenessError("another user of this organisation has the email " +
                                       EmailOf(next).substr(0, 200));
        }
        return scim::UniquenessError("userName \"" + name.substr(0, 200) + "\" is taken");
      }
      if (!db::IsRetryableConflict(f) || attempt >= 10) return Db(f);
      continue;  // a deadlock: nothing applied
    }
    if (written->empty()) {  // changed or deleted since it was read: each miss is another's success
      if (attempt >= 50) return scim::Unavailable503("the user kept changing; try again");
      continue;
    }
    *out = Build(type, ReadRows<Row>(*written).front());
    return with_groups(out);
  }
}

Error Store::Replace(const std::string& org, const scim::ResourceType& type, const std::string& id,
                     const json& body, const std::string& if_match, const std::string& key_id, json* out) {
  json normalized;
  Error err = scim::NormalizeResource(type, body, &normalized);
  if (!err.ok()) return err;
  return Write(
      org, type, id, if_match, key_id, "replace",
      [&](json* r) {
        *r = normalized;
        return Error::Ok();
      },
      out);
}

namespace {

// A group PATCH that only adds and removes members (what IdPs send for every assignment): the member
// ids to add and remove, so it can run without reading the group's whole member list. False for
// anything else.
bool MemberOnlyPatch(const json& request, std::set<std::string>* adds, std::set<std::string>* removes) {
  const json* ops = request.is_object() ? scim::FindMember(request, "Operations") : nullptr;
  if (ops == nullptr || !ops->is_array() || ops->empty() || ops->size() > scim::kMaxPatchOperations)
    return false;
  if (const json* schemas = scim::FindMember(request, "schemas")) {
    if (!schemas->is_array() || schemas->size() != 1 || (*schemas)[0] != scim::kPatchOpSchema) return false;
  }
  for (const json& op : *ops) {
    if (!op.is_object()) return false;
    const json* name = scim::FindMember(op, "op");
    const json* path = scim::FindMember(op, "path");
    const json* value = scim::FindMember(op, "value");
    if (name == nullptr || !name->is_string() || path == nullptr || !path->is_string()) return false;
    bool add = scim::EqualsIgnoreCase(name->get<std::string>(), "add");
    bool remove = scim::EqualsIgnoreCase(name->get<std::string>(), "remove");
    const std::string& p = path->get_ref<const std::string&>();
    auto value_ids = [&](std::set<std::string>* into) {
      if (value == nullptr || !value->is_array()) return false;
      for (const json& m : *value) {
        const json* v = m.is_object() ? scim::FindMember(m, "value") : nullptr;
        if (v == nullptr || !v->is_string()) return false;
        for (auto it = m.begin(); it != m.end(); ++it) {
          if (!scim::GroupSchema().Find("members")->Sub(it.key())) return false;
        }
        into->insert(v->get<std::string>());
      }
      return true;
    };
    if (scim::EqualsIgnoreCase(p, "members")) {
      if (add && value_ids(adds)) continue;
      if (remove && value_ids(removes)) continue;
      return false;
    }
    // remove members[value eq "id"]
    if (!remove || p.size() < 9 || !scim::EqualsIgnoreCase(p.substr(0, 8), "members[") || p.back() != ']')
      return false;
    std::unique_ptr<scim::Filter> f;
    if (!scim::ParseValueFilter(scim::GroupResourceType(), *scim::GroupSchema().Find("members"),
                                std::string_view(p).substr(8, p.size() - 9), &f)
             .ok()) {
      return false;
    }
    if (f->kind != scim::Filter::Kind::kCompare || f->op != scim::CompareOp::kEq || !f->value.is_string() ||
        f->path.attr->name != "value") {
      return false;
    }
    removes->insert(f->value.get<std::string>());
  }
  for (const std::string& id : *adds) {
    if (removes->count(id) != 0u) return false;  // order would matter: take the general path
  }
  return true;
}

}  // namespace

Error Store::Patch(const std::string& org, const scim::ResourceType& type, const std::string& id,
                   const json& request, const std::string& if_match, const std::string& key_id, json* out) {
  std::set<std::string> adds, removes;
  if (!IsUser(type) && MemberOnlyPatch(request, &adds, &removes)) {
    bool general = false;
    Error err = PatchMembers(org, id, adds, removes, if_match, key_id, &general);
    if (!general) {
      *out = json();
      return err;
    }
    // A group added as a member: the general path checks for cycles under the nesting lock.
  }
  return Write(
      org, type, id, if_match, key_id, "patch", [&](json* r) { return scim::ApplyPatch(type, request, r); },
      out);
}

Error Store::PatchMembers(const std::string& org, const std::string& id, const std::set<std::string>& adds,
                          const std::set<std::string>& removes, const std::string& if_match,
                          const std::string& key_id, bool* general) {
  json add_ids = json::array(), remove_ids = json::array();
  for (const std::string& a : adds) add_ids.push_back(a);
  for (const std::string& r : removes) remove_ids.push_back(r);
  // One statement, so one round trip (and its own transaction, or this request's part of a shared
  // one under group commit): lock the group row, check that every added id is a user of the
  // organisation (`ok` is empty otherwise, and nothing is written), apply the removals and additions,
  // and only when a membership changed append the change row, whose seq is the group's new version
  // (kGroupColumns). The group row itself is only locked, never rewritten: a lock leaves no dead row
  // version behind, where an UPDATE of the version on every member added left chains of them on the
  // few hot group rows of a sync. Every data-modifying CTE runs even when unreferenced. The id lists
  // are `= ANY (ARRAY(...))` so they are index conditions: with `IN (SELECT ...)` the removal scanned
  // every member of the group on each call (a cost growing with the group).
  //
  // With an If-Match, kLockGroup runs first in the same pipeline (still one round trip): this
  // statement's snapshot is then taken after the lock was granted, so the version it compares is the
  // latest committed one. In a single statement a writer that waited for the lock would compare the
  // version of its snapshot, from before the change it waited for, and two PATCHes holding the same
  // ETag could both apply.
  const bool check = !if_match.empty() && if_match != "*";
  //
  // Every resource is found by its id alone (kById; `known` counts the right ones after the lookup).
  // The removal CTEs are left out when nothing is removed (a user's first group, as IdPs send it):
  // their generic plan, made on near-empty tables, scanned every member of the group.
  const bool removing = !removes.empty();
  std::string sql = R"sql(
WITH g AS (
  SELECT name FROM scim_resources WHERE id = $1 AND (org = $2 AND kind = 'Group') IS TRUE FOR UPDATE),
known AS (
  SELECT count(*) FILTER (WHERE org = $2 AND kind = 'User') AS n FROM scim_resources
  WHERE id = ANY (ARRAY(SELECT jsonb_array_elements_text($4::jsonb)))),)sql";
  sql += check ? R"sql(
v AS (
  SELECT COALESCE((SELECT seq FROM scim_changes WHERE kind = 'Group' AND id = $1 ORDER BY seq DESC LIMIT 1),
    (SELECT version FROM scim_resources WHERE id = $1), 0) AS version),  -- as kGroupColumns
ok AS (
  SELECT g.name FROM g, known, v
  WHERE $3 = 'W/"' || v.version || '"' AND known.n = jsonb_array_length($4::jsonb)),)sql"
               : R"sql(
v AS (SELECT 0::bigint AS version, $3::text AS if_match),  -- $3 unused, but typed
ok AS (
  SELECT g.name FROM g, known WHERE known.n = jsonb_array_length($4::jsonb)),)sql";
  sql += removing ? R"sql(
rg AS MATERIALIZED (
  SELECT name, org, kind FROM scim_resources
  WHERE id = ANY (ARRAY(SELECT jsonb_array_elements_text($5::jsonb)))),
del AS (
  DELETE FROM auth_memberships m USING ok
  WHERE m.org = $2 AND m.name = ok.name
    AND m.user_id = ANY (ARRAY(SELECT jsonb_array_elements_text($5::jsonb)))
  RETURNING 1),
dels AS (
  DELETE FROM auth_subgroups s USING ok, rg
  WHERE rg.org = $2 AND rg.kind = 'Group' AND s.org = $2 AND s.name = ok.name AND s.subgroup = rg.name
  RETURNING 1),)sql"
                  : R"sql(
del AS (SELECT 1 WHERE $5::jsonb IS NULL),  -- nothing removed; $5 unused, but typed
dels AS (SELECT 1 WHERE false),)sql";
  sql += R"sql(
ins AS (
  INSERT INTO auth_memberships (org, name, user_id)
  SELECT $2, ok.name, u FROM ok, jsonb_array_elements_text($4::jsonb) AS u
  ON CONFLICT DO NOTHING RETURNING 1),
n AS MATERIALIZED (
  SELECT nextval('scim_changes_seq_seq') AS s
  WHERE (SELECT count(*) FROM del) + (SELECT count(*) FROM dels) + (SELECT count(*) FROM ins) > 0),
ch AS (
  INSERT INTO scim_changes (seq, org, kind, id, action, version, key_id, at)
  SELECT n.s, $2, 'Group', $1, 'patch', n.s, $6, clock_timestamp() FROM n)
SELECT v.version, (SELECT count(*) FROM ok), (SELECT n FROM known) FROM g, v)sql";
  // One try inside whatever transaction `exec` runs statements in. A refusal is recorded in `err`
  // (nothing was written: `ok` was empty); `again` asks for another try (a member made meanwhile).
  Error err;
  const db::Params params(id, org, if_match, add_ids.dump(), remove_ids.dump(), key_id);
  std::vector<db::Statement> statements;
  if (check) statements.push_back({.sql = kLockGroup, .params = db::Params(id, org), .prepared = true});
  statements.push_back({.sql = sql, .params = params, .prepared = true});
  // `rows`: the statement's answer; `exec` runs the follow-up reads.
  auto once = [&](const db::Rows& rows, auto&& exec, bool* again) -> Status {
    err = Error::Ok();
    *again = false;
    if (rows.empty()) {
      err = scim::NotFoundError("Group " + id.substr(0, 100) + " not found");
      return Refused();
    }
    if (*rows.Int64(0, 1) > 0) return OkStatus();
    int64_t version = *rows.Int64(0, 0);
    if (check && if_match != ETag(version)) {
      err = scim::PreconditionFailed("the resource changed: its version is " + ETag(version));
      return Refused();
    }
    // Some added id is no user of the organisation: a group (the general path adds it), or neither
    // (name the first).
    for (const std::string& m : adds) {
      GOVERN_ASSIGN_OR_RETURN(
          db::Rows known,
          exec("SELECT kind FROM scim_resources WHERE id = $1 AND (org = $2) IS TRUE", db::Params(m, org)));
      if (known.empty()) {
        err = scim::InvalidValue("member \"" + m.substr(0, 100) +
                                 "\" is not a user or group of this organisation");
        return Refused();
      }
      if (known.Text(0, 0) == "Group") {
        *general = true;
        return Refused();
      }
    }
    *again = true;  // every member was known a moment later (a user made meanwhile)
    return Refused();
  };
  auto finish = [&](const Status& s) -> Error {
    if (*general) return Error::Ok();
    if (!err.ok()) return err;
    if (!s.ok()) return Db(s);
    return Error::Ok();
  };
  if (committer_ != nullptr) {
    bool again = false;
    for (int attempt = 1;; ++attempt) {
      *general = false;
      Status s = committer_->Run(kOrderGroup, id, statements, [&](std::vector<db::Rows>& rows, GroupTx& tx) {
        return once(
            rows.back(), [&](std::string_view q, const db::Params& p) { return tx.ExecPrepared(q, p); },
            &again);
      });
      if (!again) return finish(s);
      if (attempt >= 10) return scim::Unavailable503("the group's members kept changing; try again");
    }
  }
  auto lease = pool_->Checkout();
  if (!lease.ok()) return Db(lease.status());
  for (int attempt = 1;; ++attempt) {
    bool again = false;
    *general = false;
    auto exec = [&](std::string_view q, const db::Params& p) { return (*lease)->ExecPrepared(q, p); };
    // Without If-Match one statement (its own implicit transaction); with it the lock and the
    // statement as one pipelined implicit transaction.
    Result<db::Rows> rows = Internal("not run");
    if (check) {
      auto all = (*lease)->Pipeline(statements);
      rows = all.ok() ? Result<db::Rows>(std::move(all->back())) : Result<db::Rows>(all.status());
    } else {
      rows = exec(sql, params);
    }
    Status s = rows.ok() ? once(*rows, exec, &again) : rows.status();
    // A deadlock: nothing applied (one transaction), try again.
    if (!s.ok() && err.ok() && !*general && db::IsRetryableConflict(s) && attempt < 10) continue;
    if (!again) return finish(s);
    if (attempt >= 10) return scim::Unavailable503("the group's members kept changing; try again");
  }
}

Error Store::Delete(const std::string& org, const scim::ResourceType& type, const std::string& id,
                    const std::string& if_match, const std::string& key_id) {
  auto lease = pool_->Checkout();
  if (!lease.ok()) return Db(lease.status());
  Error err;
  Status s = (*lease)->Transact([&](db::Connection& tx) -> Status {
    err = Error::Ok();
    db::Rows rows;
    if (IsUser(type)) {
      GOVERN_ASSIGN_OR_RETURN(
          rows, tx.ExecPrepared(std::string(kColumns) +
                                    "WHERE id = $1 AND (org = $2 AND kind = 'User') IS TRUE FOR UPDATE",
                                db::Params(id, org)));
    } else {  // lock first, then read the version (as in Write)
      GOVERN_ASSIGN_OR_RETURN(db::Rows locked, tx.ExecPrepared(kLockGroup, db::Params(id, org)));
      if (!locked.empty()) {
        GOVERN_ASSIGN_OR_RETURN(
            rows, tx.ExecPrepared(std::string(kGroupColumns) + "WHERE id = $1", db::Params(id)));
      }
    }
    if (rows.empty()) {
      err = scim::NotFoundError(type.name + " " + id.substr(0, 100) + " not found");
      return Refused();
    }
    Row row = ReadRows<Row>(rows).front();
    if (!if_match.empty() && if_match != "*" && if_match != ETag(row.version)) {
      err = scim::PreconditionFailed("the resource changed: its version is " + ETag(row.version));
      return Refused();
    }
    if (IsUser(type)) {
      GOVERN_RETURN_IF_ERROR(
          RevokeUser(tx, org, id, clock_->UnixMicros() / 1000000 + options_.revocation_keep_seconds));
      GOVERN_RETURN_IF_ERROR(
          tx.ExecPrepared("DELETE FROM auth_users WHERE user_id = $1", db::Params(id)).status());
    } else {
      GOVERN_RETURN_IF_ERROR(
          tx.ExecPrepared("DELETE FROM auth_groups WHERE org = $1 AND name = $2", db::Params(org, row.name))
              .status());
    }
    GOVERN_RETURN_IF_ERROR(
        tx.ExecPrepared("DELETE FROM scim_resources WHERE id = $1", db::Params(id)).status());
    if (!IsUser(type)) {
      return tx.ExecPrepared(kGroupChange, db::Params(org, id, std::string("delete"), key_id)).status();
    }
    return tx
        .ExecPrepared(
            "INSERT INTO scim_changes (org, kind, id, action, version, key_id) VALUES ($1, 'User', $2, "
            "'delete', $3, $4)",
            db::Params(org, id, row.version + 1, key_id))
        .status();
  });
  if (!err.ok()) return err;
  if (!s.ok()) return Db(s);
  return Error::Ok();
}

Error Store::Search(const std::string& org, const scim::ResourceType& type, const SearchQuery& q,
                    SearchResult* out) {
  std::unique_ptr<scim::Filter> filter;
  if (!q.filter.empty()) {
    Error err = scim::ParseFilter(type, q.filter, &filter);
    if (!err.ok()) return err;
  }
  scim::AttrPath sort_by;
  if (!q.sort_by.empty()) {
    Error err = scim::ParseSortBy(type, q.sort_by, &sort_by);
    if (!err.ok()) return err;
  }
  int64_t start = std::max<int64_t>(q.start_index, 1);
  int64_t count = std::max<int64_t>(q.count, 0);
  auto lease = pool_->Checkout();
  if (!lease.ok()) return Db(lease.status());
  db::Connection& c = **lease;
  *out = SearchResult{};

  if (filter == nullptr && q.sort_by.empty()) {
    // Plain paging in creation order: straight from the index.
    auto total = c.ExecPrepared("SELECT count(*) FROM scim_resources WHERE org = $1 AND kind = $2",
                                db::Params(org, type.name));
    if (!total.ok()) return Db(total.status());
    out->total = *total->Int64(0, 0);
    if (count == 0) return Error::Ok();
    auto rows = c.ExecPrepared(
        Columns(type) + "WHERE org = $1 AND kind = $2 ORDER BY created_at, id OFFSET $3 LIMIT $4",
        db::Params(org, type.name, start - 1, count));
    if (!rows.ok()) return Db(rows.status());
    for (const Row& row : ReadRows<Row>(*rows)) out->resources.push_back(Build(type, row));
    Status s = CompletePage(c, type, org, &out->resources);
    if (!s.ok()) return Db(s);
    return Error::Ok();
  }

  // Candidates: by index when the filter is one eq on an indexed attribute (what IdPs send), else all.
  std::string sql = Columns(type) + "WHERE org = $1 AND kind = $2";
  db::Params params(org, type.name);
  if (filter != nullptr && filter->kind == scim::Filter::Kind::kCompare &&
      filter->op == scim::CompareOp::kEq && filter->value.is_string() && filter->path.extension == nullptr &&
      filter->path.sub == nullptr) {
    const std::string& attr = filter->path.attr->name;
    if (attr == (IsUser(type) ? "userName" : "displayName")) {
      sql += " AND lower(name) = lower($3)";
      params.Add(filter->value.get<std::string>());
    } else if (attr == "externalId") {
      sql += " AND external_id = $3";
      params.Add(filter->value.get<std::string>());
    } else if (attr == "id") {
      sql += " AND id = $3";
      params.Add(filter->value.get<std::string>());
    }
  }
  sql += " ORDER BY created_at, id LIMIT " + std::to_string(options_.max_scan + 1);
  auto rows = c.ExecPrepared(sql, params);
  if (!rows.ok()) return Db(rows.status());
  if (static_cast<size_t>(rows->size()) > options_.max_scan) {
    return scim::TooMany("the filter would be evaluated over more than " + std::to_string(options_.max_scan) +
                         " resources: filter on userName, externalId or id");
  }
  std::vector<Row> candidates = ReadRows<Row>(*rows);
  std::map<std::string, json> extra;  // members by group name, or groups by user id
  bool need_extra = !IsUser(type) || q.filter.find("groups") != std::string::npos ||
                    q.filter.find("Groups") != std::string::npos ||
                    q.sort_by.find("groups") != std::string::npos;
  if (need_extra && candidates.size() > 20) {
    auto loaded = IsUser(type) ? LoadGroups(c, org, nullptr) : LoadMembers(c, org, nullptr);
    if (!loaded.ok()) return Db(loaded.status());
    extra = std::move(*loaded);
  }
  std::vector<json> matched;
  for (const Row& row : candidates) {
    json r = Build(type, row);
    if (need_extra) {
      if (candidates.size() > 20) {
        auto it = extra.find(IsUser(type) ? row.id : row.name);
        if (it != extra.end()) r[IsUser(type) ? "groups" : "members"] = it->second;
      } else {
        Status s = Complete(c, type, org, &r);
        if (!s.ok()) return Db(s);
      }
    }
    if (filter == nullptr || scim::Matches(*filter, r)) matched.push_back(std::move(r));
  }
  if (!q.sort_by.empty()) scim::SortResources(sort_by, q.descending, &matched);
  out->total = static_cast<int64_t>(matched.size());
  for (int64_t i = start - 1; i < out->total && static_cast<int64_t>(out->resources.size()) < count; ++i) {
    out->resources.push_back(std::move(matched[static_cast<size_t>(i)]));
  }
  if (!need_extra) {  // the page's users' groups, in one query
    Status s = CompletePage(c, type, org, &out->resources);
    if (!s.ok()) return Db(s);
  }
  return Error::Ok();
}

Error Store::PolicyEntities(const std::string& org, json* out) {
  auto lease = pool_->Checkout();
  if (!lease.ok()) return Db(lease.status());
  const db::Statement reads[] = {
      {.sql =
           "SELECT r.id, r.name, r.active, COALESCE(u.email, ''), COALESCE((SELECT json_agg(m.name ORDER BY "
           "m.name) FROM auth_memberships m WHERE m.user_id = r.id)::text, '[]') FROM scim_resources r LEFT "
           "JOIN auth_users u ON u.user_id = r.id WHERE r.org = $1 AND r.kind = 'User' ORDER BY r.id",
       .params = db::Params(org)},
      {.sql =
           "SELECT g.id, g.name, COALESCE((SELECT json_agg(s.name ORDER BY s.name) FROM auth_subgroups s "
           "WHERE s.org = g.org AND s.subgroup = g.name)::text, '[]') FROM scim_resources g WHERE g.org = $1 "
           "AND g.kind = 'Group' ORDER BY g.name",
       .params = db::Params(org)},
  };
  auto rows = (*lease)->Pipeline(reads);
  if (!rows.ok()) return Db(rows.status());
  auto parents = [](std::string_view names) {
    json list = json::array();
    for (const json& n : json::parse(names, nullptr, false)) list.push_back({{"type", "Group"}, {"id", n}});
    return list;
  };
  json entities = json::array();
  const db::Rows& users = (*rows)[0];
  for (int i = 0; i < users.size(); ++i) {
    entities.push_back({{"uid", {{"type", "User"}, {"id", std::string(users.Text(i, 0))}}},
                        {"attrs",
                         {{"userName", std::string(users.Text(i, 1))},
                          {"active", *users.Bool(i, 2)},
                          {"email", std::string(users.Text(i, 3))}}},
                        {"parents", parents(users.Text(i, 4))}});
  }
  const db::Rows& groups = (*rows)[1];
  for (int i = 0; i < groups.size(); ++i) {
    entities.push_back({{"uid", {{"type", "Group"}, {"id", std::string(groups.Text(i, 1))}}},
                        {"attrs", {{"id", std::string(groups.Text(i, 0))}}},
                        {"parents", parents(groups.Text(i, 2))}});
  }
  *out = std::move(entities);
  return Error::Ok();
}

}  // namespace govern::scim_service
