// Migrator: brings one service's schema up to the version compiled into the binary.
//
// Each service owns an ordered list of migrations (version, name, SQL), kept in the binary. Apply()
// runs the missing ones in order, all inside one transaction that holds a transaction-scoped advisory
// lock keyed by the service name, so several processes starting at once apply each migration exactly
// once (the others wait, then find nothing to do). Applied migrations are recorded in
// govern_migrations(service, version, name, checksum, applied_at); the checksum is the SHA-256 of the
// SQL text. Apply() refuses, with FailedPrecondition and nothing changed, when an applied migration's
// SQL has changed (checksum mismatch) or when the database holds a version this binary does not know
// (it is newer than the binary). A migration's SQL may hold several statements but must be able to
// run inside a transaction (no CREATE INDEX CONCURRENTLY, no VACUUM).
//
// Stateless apart from its list; Apply() may be called from several threads with different connections.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "db/connection.h"

namespace govern::db {

class Pool;

struct Migration {
  int64_t version;   // > 0, strictly increasing through the list
  std::string name;  // a few words, for people reading govern_migrations
  std::string sql;
};

class Migrator {
 public:
  Migrator(std::string service, std::vector<Migration> migrations);

  // Applies what is missing; returns how many migrations this call applied.
  Result<int> Apply(Connection& conn) const;
  Result<int> Apply(Pool& pool) const;

  // Lowercase hex SHA-256 of `sql`.
  static std::string Checksum(std::string_view sql);

 private:
  Status Validate() const;

  std::string service_;
  std::vector<Migration> migrations_;
};

}  // namespace govern::db
