// Migrator: versioned schema changes under an advisory lock.
#include "db/migrator.h"

#include <openssl/evp.h>

#include <map>

#include "base/log.h"
#include "db/pool.h"

namespace govern::db {
namespace {

// First key of the two-int advisory locks taken here ('G' 'O' 'V' 'M'); the second is a hash of the
// service name, or 0 for creating the shared table.
constexpr int32_t kLockSpace = 0x474f564d;

constexpr std::string_view kCreateTable = R"sql(
CREATE TABLE IF NOT EXISTS govern_migrations (
  service    text        NOT NULL,
  version    bigint      NOT NULL,
  name       text        NOT NULL,
  checksum   text        NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (service, version)
))sql";

}  // namespace

Migrator::Migrator(std::string service, std::vector<Migration> migrations)
    : service_(std::move(service)), migrations_(std::move(migrations)) {}

std::string Migrator::Checksum(std::string_view sql) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(sql.data(), sql.size(), md, &n, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 15]);
  }
  return out;
}

Status Migrator::Validate() const {
  if (service_.empty()) return InvalidArgument("migrations need a service name");
  int64_t prev = 0;
  for (const Migration& m : migrations_) {
    if (m.version <= prev) {
      return InvalidArgument("migrations of " + service_ + " must have increasing versions above 0; v" +
                             std::to_string(m.version) + " follows v" + std::to_string(prev));
    }
    prev = m.version;
  }
  return OkStatus();
}

Result<int> Migrator::Apply(Pool& pool) const {
  GOVERN_ASSIGN_OR_RETURN(auto lease, pool.Checkout());
  return Apply(*lease);
}

Result<int> Migrator::Apply(Connection& conn) const {
  GOVERN_RETURN_IF_ERROR(Validate());
  // The shared table is created under its own lock: concurrent CREATE TABLE IF NOT EXISTS can still
  // collide in the catalog.
  Status created = conn.Transact([](Connection& c) -> Status {
    GOVERN_RETURN_IF_ERROR(c.Exec("SELECT pg_advisory_xact_lock($1, 0)", Params(kLockSpace)).status());
    return c.Exec(kCreateTable).status();
  });
  if (!created.ok()) return created.WithContext("creating govern_migrations");

  int applied = 0;
  Status s = conn.Transact([&](Connection& c) -> Status {
    applied = 0;
    GOVERN_RETURN_IF_ERROR(
        c.Exec("SELECT pg_advisory_xact_lock($1, hashtext($2))", Params(kLockSpace, service_)).status());
    GOVERN_ASSIGN_OR_RETURN(
        Rows rows,
        c.Exec("SELECT version, name, checksum FROM govern_migrations WHERE service = $1 ORDER BY version",
               Params(service_)));
    std::map<int64_t, std::pair<std::string, std::string>> done;  // version -> (name, checksum)
    for (int r = 0; r < rows.size(); ++r) {
      GOVERN_ASSIGN_OR_RETURN(int64_t v, rows.Int64(r, 0));
      done[v] = {std::string(rows.Text(r, 1)), std::string(rows.Text(r, 2))};
    }
    std::map<int64_t, const Migration*> known;
    for (const Migration& m : migrations_) known[m.version] = &m;
    for (const auto& [v, entry] : done) {
      if (!known.count(v)) {
        int64_t latest = migrations_.empty() ? 0 : migrations_.back().version;
        return FailedPrecondition("the database holds migration v" + std::to_string(v) + " (" + entry.first +
                                  ") of " + service_ + ", which this binary does not know (its latest is v" +
                                  std::to_string(latest) + "): the database is newer than the binary");
      }
    }
    for (const Migration& m : migrations_) {
      std::string sum = Checksum(m.sql);
      auto it = done.find(m.version);
      if (it != done.end()) {
        if (it->second.second != sum) {
          return FailedPrecondition("migration v" + std::to_string(m.version) + " (" + m.name + ") of " +
                                    service_ + " was applied with checksum " +
                                    it->second.second.substr(0, 12) + "... but this binary's SQL has " +
                                    sum.substr(0, 12) +
                                    "...: an applied migration must never change; add a new one");
        }
        continue;
      }
      Status ms = c.ExecScript(m.sql);
      if (!ms.ok()) {
        return ms.WithContext("migration v" + std::to_string(m.version) + " (" + m.name + ") of " + service_);
      }
      GOVERN_RETURN_IF_ERROR(c.Exec("INSERT INTO govern_migrations (service, version, name, checksum) "
                                    "VALUES ($1, $2, $3, $4)",
                                    Params(service_, m.version, m.name, sum))
                                 .status());
      ++applied;
    }
    return OkStatus();
  });
  if (!s.ok()) return s;
  if (applied > 0) log::Info("db", "migrations applied", {{"service", service_}, {"count", applied}});
  return applied;
}

}  // namespace govern::db
