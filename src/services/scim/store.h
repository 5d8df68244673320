// Store: SCIM Users and Groups of every organisation in PostgreSQL, written together with the auth
// service's directory so that sign-in follows provisioning.
//
// A User is a row of scim_resources and a row of auth_users with the same id (email: the primary email,
// else the first, else userName; subject: the id; disabled = !active). A Group is a row of
// scim_resources and of auth_groups (name = displayName); its members are auth_memberships (users) and
// auth_subgroups (groups inside it, never in a cycle). Every
// change is one transaction that also appends to scim_changes; deactivating or deleting a user in it
// also revokes the user's refresh-token families (auth_refresh_families.revoked and a 'sid' row in
// auth_revocations, which services pull) and ends their browser sessions, so a leaver can neither sign
// in nor refresh from the moment the answer is sent.
//
// Results are full SCIM resources (id, meta with created/lastModified/version, a user's groups, a
// group's members) without meta.location, which the HTTP layer adds. A user's version counts its
// versions; a group's version and lastModified are those of its latest scim_changes row (its seq), so
// a membership change moves them without rewriting the group's row (docs/scim.md, "Versions of
// groups"): every change of a group takes its change row's seq while holding the group row's lock,
// so the versions grow in commit order. Failures are scim::Error values
// (404, 409 uniqueness, 412 for a stale If-Match, 400s from govern_scim, 503 when PostgreSQL fails).
//
// With StoreOptions::group_commit, creating a user, a members-only group PATCH and a user PATCH or
// PUT go through group commit: concurrent ones share one transaction and one COMMIT, each under its
// own savepoint, so one that fails (409, 412, 400) undoes only its own writes, and none is answered
// before the COMMIT succeeded (when it fails, each of them gets 503 and nothing was applied).
//
// Thread-safe: each call checks a connection out of the pool (the group committer's lanes take one
// each while a group runs). Calls block on PostgreSQL: never call them on an event loop.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "scim/error.h"
#include "scim/schema.h"
#include "services/scim/group_commit.h"

namespace govern::db {
class Pool;
class Connection;
}  // namespace govern::db

namespace govern::scim_service {

struct StoreOptions {
  // Most resources a filter is evaluated over in memory when it cannot use an index (a larger
  // organisation gets 400 tooMany for such filters).
  size_t max_scan = 500000;
  // How long a revocation of a deactivated user's token families stays listed (covers every access
  // token issued before it).
  int64_t revocation_keep_seconds = 86400;
  const Clock* clock = nullptr;  // nullptr: Clock::Real()
  // Group commit (group_commit.h) for the writes IdPs send in bulk: creating a user, a members-only
  // group PATCH, a user PATCH or PUT. Concurrent ones share a transaction, each under its own
  // savepoint; none is answered before the shared COMMIT. Off (the default): each is a transaction
  // of its own. Group commit makes ~5x fewer commits and ~40 % less PostgreSQL CPU per created user,
  // but on 2 shared cores it was slower end to end (docs/scim.md, "Group commit").
  bool group_commit = false;
  // exclusive_class -1 here means members-only group PATCHes run on lane 0 only (they lock the few
  // group rows of a sync); -2: on any lane.
  GroupCommitOptions group_commit_options;
};

struct SearchQuery {
  std::string filter;   // empty: every resource
  std::string sort_by;  // empty: creation order
  bool descending = false;
  int64_t start_index = 1;  // 1-based (RFC 7644 section 3.4.2.4); < 1 is read as 1
  int64_t count = 100;      // 0: only totalResults
};

struct SearchResult {
  int64_t total = 0;
  std::vector<nlohmann::json> resources;  // the page
};

class Store {
 public:
  Store(db::Pool* pool, StoreOptions options = {});

  scim::Error Create(const std::string& org, const scim::ResourceType& type, const nlohmann::json& body,
                     const std::string& key_id, nlohmann::json* out);
  scim::Error Get(const std::string& org, const scim::ResourceType& type, const std::string& id,
                  nlohmann::json* out);
  // PUT. `if_match`: the ETag the client holds (W/"n"), or empty.
  scim::Error Replace(const std::string& org, const scim::ResourceType& type, const std::string& id,
                      const nlohmann::json& body, const std::string& if_match, const std::string& key_id,
                      nlohmann::json* out);
  // A group PATCH that only adds and removes members runs without reading the member list and leaves
  // `out` null: the API answers 204 No Content (RFC 7644 section 3.5.2), as IdPs accept. One that adds
  // a group as a member takes the general path (the cycle check) and answers the group.
  scim::Error Patch(const std::string& org, const scim::ResourceType& type, const std::string& id,
                    const nlohmann::json& request, const std::string& if_match, const std::string& key_id,
                    nlohmann::json* out);
  scim::Error Delete(const std::string& org, const scim::ResourceType& type, const std::string& id,
                     const std::string& if_match, const std::string& key_id);
  scim::Error Search(const std::string& org, const scim::ResourceType& type, const SearchQuery& query,
                     SearchResult* out);

  // The organisation's directory as Cedar entities (the JSON entity format policy bundles take):
  // User::"<id>" with attrs userName, active and email and as parents the groups the user is a direct
  // member of; Group::"<displayName>" (the name the `groups` claim carries) with attr id and as parents
  // the groups it is a member of. Cedar's `in` follows parents transitively, so `principal in
  // Group::"eng"` holds for a member of a group inside eng. Users by id, then groups by name.
  scim::Error PolicyEntities(const std::string& org, nlohmann::json* out);

  // W/"<version>"
  static std::string ETag(int64_t version);

  // The group committer (nullptr when group commit is off), for tests and the benchmark.
  GroupCommitter* group_committer() { return committer_.get(); }

 private:
  struct Row;
  scim::Error PatchMembers(const std::string& org, const std::string& id, const std::set<std::string>& adds,
                           const std::set<std::string>& removes, const std::string& if_match,
                           const std::string& key_id, bool* general);
  scim::Error WriteUser(const std::string& org, const std::string& id, const std::string& if_match,
                        const std::string& key_id, const char* action,
                        const std::function<scim::Error(nlohmann::json* resource)>& change,
                        nlohmann::json* out);
  scim::Error EnsureOrg(db::Connection& c, const std::string& org);
  scim::Error Write(const std::string& org, const scim::ResourceType& type, const std::string& id,
                    const std::string& if_match, const std::string& key_id, const char* action,
                    const std::function<scim::Error(nlohmann::json* resource)>& change, nlohmann::json* out);

  db::Pool* pool_;
  StoreOptions options_;
  const Clock* clock_;
  std::mutex mu_;
  std::set<std::string> known_orgs_;           // organisations known to exist in auth_orgs
  std::unique_ptr<GroupCommitter> committer_;  // last: its lanes stop before the rest goes
};

}  // namespace govern::scim_service
